package ranger

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func loadTestdata(t testing.TB) (*ServicePolicies, *Roles) {
	t.Helper()
	data, err := os.ReadFile("testdata/hms_hive-policies.json")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := ParseServicePolicies(data)
	if err != nil {
		t.Fatal(err)
	}
	rdata, err := os.ReadFile("testdata/hms_hive-roles.json")
	if err != nil {
		t.Fatal(err)
	}
	roles, err := ParseRoles(rdata)
	if err != nil {
		t.Fatal(err)
	}
	return sp, roles
}

// operatorCases are checks against testdata/hms_hive-policies.json, the
// policies an operator would write; the expected answers follow Ranger's
// rules (and TestOracleOperatorPolicies has the Java engine confirm them).
var operatorCases = []struct {
	name   string
	req    Request
	allow  bool
	policy int64
}{
	{"an analyst reads a marketing table", Request{User: "alice", Groups: []string{"analysts"}, Database: "marketing", Table: "campaigns", Access: "select"}, true, 10},
	{"an analyst may not alter it", Request{User: "alice", Groups: []string{"analysts"}, Database: "marketing", Table: "campaigns", Access: "alter"}, false, -1},
	{"names are matched ignoring case", Request{User: "alice", Groups: []string{"analysts"}, Database: "MARKETING", Table: "Campaigns", Access: "select"}, true, 10},
	{"a policy on every table and column (table=*, column=*) covers the database itself", Request{User: "alice", Groups: []string{"analysts"}, Database: "marketing", Access: "select"}, true, 10},
	{"a policy on one database's tmp_ tables does not cover the database (select on it)", Request{User: "hive", Groups: []string{"public"}, Database: "tmp_db", Access: "select"}, true, 1},
	{"but the database is visible to SHOW DATABASES (any access below it)", Request{User: "alice", Groups: []string{"analysts"}, Database: "marketing", Access: AccessAny}, true, 10},
	{"sales stays hidden from the analyst", Request{User: "alice", Groups: []string{"analysts"}, Database: "sales", Access: AccessAny}, false, -1},
	{"etl may update sales", Request{User: "bob", Groups: []string{"etl"}, Database: "sales", Table: "orders", Access: "update"}, true, 11},
	{"etl may not drop: deny item", Request{User: "bob", Groups: []string{"etl"}, Database: "sales", Table: "orders", Access: "drop"}, false, 11},
	{"carol may drop: deny exception", Request{User: "carol", Groups: []string{"etl"}, Database: "sales", Table: "orders", Access: "drop"}, true, 11},
	{"override deny on tmp_ tables beats the etl grant", Request{User: "bob", Groups: []string{"etl"}, Database: "sales", Table: "tmp_load", Access: "select"}, false, 12},
	{"hive is excepted from the override deny", Request{User: "hive", Database: "sales", Table: "tmp_load", Access: "select"}, true, 1},
	{"a disabled policy grants nothing", Request{User: "zed", Groups: []string{"staff"}, Database: "hr", Table: "emp", Access: "select"}, false, -1},
	{"{USER}: a user's own database", Request{User: "zed", Database: "zed", Table: "notes", Access: "drop"}, true, 14},
	{"{USER}: not someone else's", Request{User: "zed", Database: "alice", Table: "notes", Access: "select"}, false, -1},
	{"role member reads hr", Request{User: "dave", Database: "hr", Table: "emp", Access: "select"}, true, 15},
	{"member of a nested role reads hr", Request{User: "erin", Database: "hr", Table: "emp", Access: "select"}, true, 15},
	{"roles given by the identity replace the downloaded ones", Request{User: "erin", Roles: []string{"other"}, Database: "hr", Table: "emp", Access: "select"}, false, -1},
	{"hive: all implies select", Request{User: "hive", Database: "x", Table: "y", Column: "z", Access: "select"}, true, 1},
	{"udf policy", Request{User: "hive", Database: "x", UDF: "f", Access: "create"}, true, 2},
}

func TestOperatorPolicies(t *testing.T) {
	sp, roles := loadTestdata(t)
	at := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	e, err := NewEngine(sp, roles, EngineOptions{Location: time.UTC, Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range operatorCases {
		d := e.Decide(&c.req)
		if d.Allowed != c.allow || d.PolicyID != c.policy {
			t.Errorf("%s: got allowed=%v by %d (%s), want allowed=%v by %d", c.name, d.Allowed, d.PolicyID, d.Reason, c.allow, c.policy)
		}
	}
}

// Validity schedules follow the injected clock (and a request's own time).
func TestValiditySchedule(t *testing.T) {
	sp, roles := loadTestdata(t)
	p := sp.Policies[2] // marketing for analysts
	p.ValiditySchedules = []*ValiditySchedule{{StartTime: "2026/03/10 09:00:00", EndTime: "2026/03/10 17:00:00", TimeZone: "Europe/Berlin"}}
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC) // 13:00 in Berlin
	e, err := NewEngine(sp, roles, EngineOptions{Location: time.UTC, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	q := Request{User: "alice", Groups: []string{"analysts"}, Database: "marketing", Table: "campaigns", Access: "select"}
	if d := e.Decide(&q); !d.Allowed {
		t.Fatalf("inside the validity period: %+v", d)
	}
	now = time.Date(2026, 3, 10, 16, 30, 0, 0, time.UTC) // 17:30 in Berlin
	if d := e.Decide(&q); d.Allowed {
		t.Fatalf("after the validity period: %+v", d)
	}
	q.Time = time.Date(2026, 3, 10, 8, 30, 0, 0, time.UTC) // 09:30 in Berlin, given by the request
	if d := e.Decide(&q); !d.Allowed {
		t.Fatalf("a request's own time inside the period: %+v", d)
	}
}

// What the engine cannot evaluate is applied deny-biased, never allow-biased.
func TestDenyBiased(t *testing.T) {
	sp, roles := loadTestdata(t)
	sp.ServiceDef.PolicyConditions = []*ConditionDef{{Name: "ip-range"}}
	// a grant with a condition: not granted
	sp.Policies[2].PolicyItems[0].Conditions = []*Condition{{Type: "ip-range", Values: []string{"10.0.0.0/8"}}}
	// a deny whose exception has a condition: the exception does not apply
	sp.Policies[3].DenyExceptions[0].Conditions = []*Condition{{Type: "ip-range", Values: []string{"10.0.0.0/8"}}}
	// a recurring schedule on the override deny: the deny applies always
	sp.Policies[4].ValiditySchedules = []*ValiditySchedule{{Recurrences: []json.RawMessage{[]byte(`{"schedule":{"minute":"0"},"interval":{"hours":1}}`)}}}
	e, err := NewEngine(sp, roles, EngineOptions{Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		q     Request
		allow bool
	}{
		{Request{User: "alice", Groups: []string{"analysts"}, Database: "marketing", Table: "campaigns", Access: "select"}, false},
		{Request{User: "carol", Groups: []string{"etl"}, Database: "sales", Table: "orders", Access: "drop"}, false},
		{Request{User: "bob", Groups: []string{"etl"}, Database: "sales", Table: "tmp_x", Access: "select"}, false},
		{Request{User: "bob", Groups: []string{"etl"}, Database: "sales", Table: "orders", Access: "select"}, true},
	} {
		if d := e.Decide(&c.q); d.Allowed != c.allow {
			t.Errorf("%+v: allowed=%v (%s), want %v", c.q, d.Allowed, d.Reason, c.allow)
		}
	}
	if len(e.biased) != 3 {
		t.Errorf("deny-biased policies: %q", e.biased)
	}
}

// Security zones and policy deltas are refused, naming why.
func TestRefusedPolicySets(t *testing.T) {
	sp, roles := loadTestdata(t)
	sp.SecurityZones = map[string]json.RawMessage{"finance": []byte(`{}`)}
	if _, err := NewEngine(sp, roles, EngineOptions{}); err == nil || !strings.Contains(err.Error(), "security zones (finance)") {
		t.Fatalf("zones: %v", err)
	}
	sp.SecurityZones = nil
	sp.ServiceDef = nil
	if _, err := NewEngine(sp, roles, EngineOptions{}); err == nil || !strings.Contains(err.Error(), "no service definition") {
		t.Fatalf("no service def: %v", err)
	}
}

func BenchmarkDecideTable(b *testing.B) {
	sp, roles := loadTestdata(b)
	e, err := NewEngine(sp, roles, EngineOptions{Location: time.UTC})
	if err != nil {
		b.Fatal(err)
	}
	q := Request{User: "alice", Groups: []string{"analysts", "staff"}, Database: "marketing", Table: "campaigns", Access: AccessAny, Time: time.Now()}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if !e.Decide(&q).Allowed {
			b.Fatal("denied")
		}
	}
}

func BenchmarkDecideDenied(b *testing.B) {
	sp, roles := loadTestdata(b)
	e, err := NewEngine(sp, roles, EngineOptions{Location: time.UTC})
	if err != nil {
		b.Fatal(err)
	}
	q := Request{User: "alice", Groups: []string{"analysts", "staff"}, Database: "sales", Table: "orders", Access: "select", Time: time.Now()}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if e.Decide(&q).Allowed {
			b.Fatal("allowed")
		}
	}
}

// A policy set of a large installation: 2000 databases with their own
// policies, 20 wildcard policies, and SHOW TABLES of one database with 1000
// tables (one _any check per table).
func BenchmarkShowTablesLargePolicySet(b *testing.B) {
	sp, roles := loadTestdata(b)
	for i := 0; i < 2000; i++ {
		id := int64(1000 + i)
		sp.Policies = append(sp.Policies, &Policy{ID: &id, Name: "db" + strconv.Itoa(i), Resources: map[string]*PolicyResource{
			"database": {Values: strps([]string{"db" + strconv.Itoa(i)})}, "table": {Values: strps([]string{"*"})}, "column": {Values: strps([]string{"*"})}},
			PolicyItems: []*PolicyItem{{Accesses: []*ItemAccess{{Type: "select"}}, Groups: strps([]string{"team" + strconv.Itoa(i%50)})}}})
	}
	for i := 0; i < 20; i++ {
		id := int64(5000 + i)
		sp.Policies = append(sp.Policies, &Policy{ID: &id, Name: "wild" + strconv.Itoa(i), Resources: map[string]*PolicyResource{
			"database": {Values: strps([]string{"db1*"})}, "table": {Values: strps([]string{"t" + strconv.Itoa(i) + "*"})}, "column": {Values: strps([]string{"*"})}},
			DenyPolicyItems: []*PolicyItem{{Accesses: []*ItemAccess{{Type: "all"}}, Groups: strps([]string{"contractors"})}}})
	}
	e, err := NewEngine(sp, roles, EngineOptions{Location: time.UTC})
	if err != nil {
		b.Fatal(err)
	}
	tables := make([]string, 1000)
	for i := range tables {
		tables[i] = "t" + strconv.Itoa(i)
	}
	q := Request{User: "u1", Groups: []string{"team7", "staff"}, Database: "db7", Access: AccessAny, Time: time.Now()}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, t := range tables {
			q.Table = t
			if !e.Decide(&q).Allowed {
				b.Fatal("denied")
			}
		}
	}
}
