package ranger

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"testing"
	"time"
)

// The generator writes policy sets the way an operator builds them in Ranger
// Admin (allow and deny items, exceptions, overrides, wildcards, excludes,
// macros, roles, disabled policies, validity periods) over a small universe
// of names, so that generated requests hit them often.

var (
	genDBs     = []string{"sales", "marketing", "hr", "tmp_1", "sales_eu", "default"}
	genTables  = []string{"orders", "campaigns", "emp", "t1", "tmp_x", "alice"}
	genColumns = []string{"id", "name", "ssn"}
	genUDFs    = []string{"f1", "mask"}
	genUsers   = []string{"alice", "bob", "carol", "dave", "hive"}
	genGroups  = []string{"analysts", "admins", "etl", "hr", "public"}
	genRoles   = []string{"r_analyst", "r_admin", "r_etl", "r_none"}
	genAccess  = []string{"select", "update", "create", "drop", "alter", "index", "lock", "all", "read", "write", "repladmin", "serviceadmin", "tempudfadmin", "refresh"}
	// genBase is the access time most cases use; schedules are placed around it
	genBase = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
)

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.Intn(len(xs))] }

func subset[T any](r *rand.Rand, xs []T, max int) []T {
	n := r.Intn(max + 1)
	var out []T
	for _, i := range r.Perm(len(xs))[:min(n, len(xs))] {
		out = append(out, xs[i])
	}
	return out
}

func strp(s string) *string { return &s }

func strps(ss []string) []*string {
	out := make([]*string, len(ss))
	for i := range ss {
		out[i] = strp(ss[i])
	}
	return out
}

// genValue is a policy value for a resource with names from names.
func genValue(r *rand.Rand, names []string) string {
	n := pick(r, names)
	switch r.Intn(16) {
	case 0:
		return "*"
	case 1:
		return n[:1] + "*"
	case 2:
		return "*" + n[len(n)-1:]
	case 3:
		if len(n) > 2 {
			return n[:1] + "?" + n[2:]
		}
		return n + "?"
	case 4:
		return "*" + n[1:2] + "*"
	case 5:
		return "{USER}"
	case 6:
		return strings.ToUpper(n)
	case 7:
		return "{OWNER}"
	case 8:
		return n[:1] + "*" + n[len(n)-1:]
	case 9:
		return "*?"
	case 10:
		return "{USER}*"
	default:
		return n
	}
}

func genResource(r *rand.Rand, names []string) *PolicyResource {
	vals := []string{genValue(r, names)}
	for r.Intn(3) == 0 {
		vals = append(vals, genValue(r, names))
	}
	return &PolicyResource{Values: strps(vals), IsExcludes: r.Intn(9) == 0}
}

func genResources(r *rand.Rand) map[string]*PolicyResource {
	res := map[string]*PolicyResource{"database": genResource(r, genDBs)}
	switch r.Intn(6) {
	case 0: // database-level policy
	case 1:
		res["udf"] = genResource(r, genUDFs)
	case 2, 3:
		res["table"] = genResource(r, genTables)
	default:
		res["table"] = genResource(r, genTables)
		res["column"] = genResource(r, genColumns)
	}
	return res
}

func genItem(r *rand.Rand) *PolicyItem {
	it := &PolicyItem{DelegateAdmin: r.Intn(5) == 0}
	for _, a := range subset(r, genAccess, 4) {
		acc := &ItemAccess{Type: a}
		if r.Intn(12) == 0 {
			f := false
			acc.IsAllowed = &f
		}
		it.Accesses = append(it.Accesses, acc)
	}
	if len(it.Accesses) == 0 {
		it.Accesses = []*ItemAccess{{Type: pick(r, genAccess)}}
	}
	users := subset(r, genUsers, 2)
	switch r.Intn(8) {
	case 0:
		users = append(users, "{USER}")
	case 1:
		users = append(users, "{OWNER}")
	}
	groups := subset(r, genGroups, 2)
	roles := subset(r, genRoles, 1)
	if len(users)+len(groups)+len(roles) == 0 {
		users = []string{pick(r, genUsers)}
	}
	it.Users, it.Groups, it.Roles = strps(users), strps(groups), strps(roles)
	return it
}

func genItems(r *rand.Rand, max int) []*PolicyItem {
	var out []*PolicyItem
	for i := r.Intn(max + 1); i > 0; i-- {
		out = append(out, genItem(r))
	}
	return out
}

func genPolicy(r *rand.Rand, id int64) *Policy {
	p := &Policy{ID: &id, Name: fmt.Sprintf("p%02d-%s", id, pick(r, []string{"sales", "etl", "deny", "hr", "all"})),
		Service: "hms_hive", Resources: genResources(r)}
	en := r.Intn(10) != 0
	p.IsEnabled = &en
	if r.Intn(6) == 0 {
		pr := PriorityOverride
		p.PolicyPriority = &pr
	}
	p.PolicyItems = genItems(r, 3)
	if r.Intn(2) == 0 {
		p.DenyPolicyItems = genItems(r, 2)
	}
	if r.Intn(3) == 0 {
		p.AllowExceptions = genItems(r, 2)
	}
	if r.Intn(3) == 0 {
		p.DenyExceptions = genItems(r, 2)
	}
	if r.Intn(20) == 0 {
		t := true
		p.IsDenyAllElse = &t
	}
	if r.Intn(10) == 0 {
		p.AdditionalResources = []map[string]*PolicyResource{genResources(r)}
	}
	if r.Intn(8) == 0 {
		s := &ValiditySchedule{}
		f := "2006/01/02 15:04:05"
		switch r.Intn(3) {
		case 0:
			s.StartTime = genBase.Add(-time.Hour).Format(f)
			s.EndTime = genBase.Add(time.Hour).Format(f)
		case 1:
			s.EndTime = genBase.Add(-time.Minute).Format(f)
		default:
			s.StartTime = genBase.Add(30 * time.Minute).Format(f)
		}
		if r.Intn(2) == 0 {
			s.TimeZone = pick(r, []string{"Europe/Berlin", "America/New_York", "UTC", "Asia/Kolkata"})
		}
		p.ValiditySchedules = []*ValiditySchedule{s}
	}
	return p
}

func genRolesDoc(r *rand.Rand) *Roles {
	v := int64(1)
	mk := func(name string) *Role {
		ro := &Role{Name: name}
		for _, u := range subset(r, genUsers, 2) {
			ro.Users = append(ro.Users, &RoleMember{Name: u})
		}
		for _, g := range subset(r, genGroups, 1) {
			ro.Groups = append(ro.Groups, &RoleMember{Name: g})
		}
		return ro
	}
	roles := &Roles{ServiceName: "hms_hive", RoleVersion: &v}
	for _, n := range genRoles[:3] {
		roles.RangerRoles = append(roles.RangerRoles, mk(n))
	}
	// nesting: r_admin contains r_etl
	roles.RangerRoles[1].Roles = []*RoleMember{{Name: "r_etl"}}
	return roles
}

// hiveDef is the Hive service definition the test bed serves.
func hiveDef(t testing.TB) *ServiceDef {
	t.Helper()
	b, err := os.ReadFile("testdata/hive-servicedef.json")
	if err != nil {
		t.Fatal(err)
	}
	var d ServiceDef
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

func genPolicySet(t testing.TB, r *rand.Rand, n int) *ServicePolicies {
	v := int64(r.Intn(100) + 1)
	sp := &ServicePolicies{ServiceName: "hms_hive", PolicyVersion: &v, ServiceDef: hiveDef(t)}
	// now and then another definition: denials switched off, case-sensitive
	// or quoted-case-sensitive names, no wildcards for tables
	switch r.Intn(14) {
	case 0:
		sp.ServiceDef.Options = StringMap{"enableDenyAndExceptionsInPolicies": "false"}
	case 1:
		sp.ServiceDef.Resources[0].MatcherOptions["ignoreCase"] = "false"
	case 2:
		sp.ServiceDef.Resources[1].MatcherOptions["quotedCaseSensitive"] = "true"
	case 3:
		sp.ServiceDef.Resources[1].MatcherOptions["wildCard"] = "false"
	}
	if r.Intn(12) == 0 {
		sp.ServiceConfig = map[string]string{"ranger.plugin.super.users": "hive", "ranger.plugin.super.groups": "admins"}
	}
	for i := 1; i <= n; i++ {
		sp.Policies = append(sp.Policies, genPolicy(r, int64(i)))
	}
	return sp
}

// genCase is one request.
func genCase(r *rand.Rand) Request {
	q := Request{Time: genBase}
	if r.Intn(15) != 0 {
		q.User = pick(r, genUsers)
	}
	q.Groups = subset(r, genGroups[:4], 2)
	if r.Intn(10) == 0 {
		q.Roles = subset(r, genRoles, 2)
	}
	switch r.Intn(4) {
	case 0:
		q.Owner = q.User
	case 1:
		q.Owner = pick(r, genUsers)
	}
	name := func(xs []string) string {
		n := pick(r, xs)
		if r.Intn(8) == 0 {
			n = strings.ToUpper(n[:1]) + n[1:]
		}
		return n
	}
	q.Database = name(genDBs)
	switch r.Intn(5) {
	case 0:
	case 1:
		q.UDF = name(genUDFs)
	case 2, 3:
		q.Table = name(genTables)
	default:
		q.Table, q.Column = name(genTables), name(genColumns)
	}
	switch r.Intn(10) {
	case 0, 1, 2:
		q.Access = AccessAny
	default:
		q.Access = pick(r, genAccess)
	}
	if r.Intn(6) == 0 {
		q.Time = genBase.Add(time.Duration(r.Intn(240)-120) * time.Minute)
	}
	return q
}

// caseLine is the oracle's input line for a request.
func caseLine(q Request) string {
	return strings.Join([]string{q.User, strings.Join(q.Groups, ","), strings.Join(q.Roles, ","), q.Owner,
		q.Database, q.Table, q.Column, q.UDF, q.Access, fmt.Sprint(q.Time.UnixMilli())}, "\t")
}
