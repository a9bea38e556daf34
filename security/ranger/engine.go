package ranger

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Access types of the Hive service definition the proxy asks about, and the
// pseudo access types of Ranger's engine.
const (
	AccessSelect = "select"
	AccessUpdate = "update"
	AccessCreate = "create"
	AccessDrop   = "drop"
	AccessAlter  = "alter"
	AccessIndex  = "index"
	AccessLock   = "lock"
	AccessAll    = "all"
	AccessRead   = "read"
	AccessWrite  = "write"
	// AccessAny is "any access" (Ranger's "_any"): what Hive's SHOW
	// DATABASES / SHOW TABLES ask, allowed when any access type is allowed
	// on the object or on anything below it.
	AccessAny = "_any"
)

// Request is one access check. Names are the backend's (policies in Ranger
// Admin name backend databases and tables, never the proxy's prefixed
// ones). An empty field is absent (Java's null).
type Request struct {
	User   string
	Groups []string
	// Roles, when not empty, are the caller's roles as given; otherwise they
	// come from the roles download (user, groups and the "public" group).
	Roles    []string
	Owner    string // owner of the object, for {OWNER}
	Database string
	Table    string
	Column   string
	UDF      string
	Access   string // an access type of the service definition, or AccessAny
	// Time is the access time for validity schedules (zero: the engine's
	// clock).
	Time time.Time
}

// Decision is the outcome of a check.
type Decision struct {
	Allowed bool
	// PolicyID is the policy that decided (-1: none matched; a superuser).
	PolicyID int64
	// Reason says why, for audit records and logs.
	Reason string
}

// EngineOptions configure an engine.
type EngineOptions struct {
	// Location is the zone validity schedules without a timeZone are read
	// in (Ranger reads them in the JVM's default zone); nil = time.Local.
	Location *time.Location
	// Now is the clock for requests without a Time; nil = time.Now.
	Now func() time.Time
	// SuperUsers and SuperGroups are the plugin's own super users
	// (ranger.plugin.hive.super.users/groups of ranger.config-dir), beside
	// those of the service configuration Admin sends.
	SuperUsers, SuperGroups []string
}

// Engine evaluates one immutable policy set. Safe for concurrent use.
type Engine struct {
	def         *defInfo
	policies    []*cpolicy
	resourceAny bool // there are resource policies at all
	version     int64
	service     string
	superUsers  map[string]bool
	superGroups map[string]bool
	roles       *roleIndex
	now         func() time.Time
	// Biased lists the policies evaluated deny-biased, with why.
	biased             []string
	ignoredTagPolicies int
	trace              func(string) // tests
	// byDB lists, per database name, the policies whose every database
	// value is that literal name; wildDB the policies any database may
	// match. A request walks the two merged, in evaluation order.
	byDB   map[string][]*cpolicy
	wildDB []*cpolicy
	dbIdx  int  // index of the "database" resource (-1: none)
	dbCI   bool // database names compare ignoring case
}

// compiled policy
type cpolicy struct {
	pos       int32 // position in evaluation order
	id        int64
	name      string
	allowWhy  string // Decision.Reason when it decides
	denyWhy   string
	priority  int
	hasDeny   bool
	hasAny    bool // has allow or deny items (hasMatchablePolicyItem)
	denyAll   bool
	evalOrder int
	resources []*cresource
	allow     []*citem
	deny      []*citem
	allowExc  []*citem
	denyExc   []*citem
	schedules []*schedule
}

// compiled resource set of a policy (RangerDefaultPolicyResourceMatcher)
type cresource struct {
	ok       bool
	keys     []int // resource indexes the policy names
	matchers []*resourceMatcher
	valid    []int // the one valid hierarchy, if exactly one
	nKeys    int
	keyNames map[int]bool
}

// compiled policy item
type citem struct {
	users          map[string]struct{}
	groups         map[string]struct{}
	roles          []string
	hasCurrentUser bool
	hasOwner       bool
	hasPublic      bool
	mask           uint64   // allowed access types of the definition, implied grants included
	other          []string // allowed access types the definition lacks
}

// match type of a resource against a policy resource set
type matchType uint8

const (
	matchNone matchType = iota
	matchSelf
	matchSelfAndAllDescendants
	matchAncestor
	matchDescendant
)

// NewEngine compiles a policy set (and the roles download, nil for none).
func NewEngine(sp *ServicePolicies, roles *Roles, o EngineOptions) (*Engine, error) {
	if sp == nil {
		return nil, fmt.Errorf("ranger: no policies")
	}
	if len(sp.SecurityZones) > 0 {
		names := make([]string, 0, len(sp.SecurityZones))
		for n := range sp.SecurityZones {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("ranger: service %s is in security zones (%s); hms-proxy does not evaluate zone policies, and evaluating the service's other policies instead would apply the wrong ones", sp.ServiceName, strings.Join(names, ", "))
	}
	if len(sp.PolicyDeltas) > 0 {
		return nil, fmt.Errorf("ranger: service %s: the download carries policy deltas, which hms-proxy never asks for (supportsPolicyDeltas=false)", sp.ServiceName)
	}
	def, err := newDefInfo(sp.ServiceDef)
	if err != nil {
		return nil, fmt.Errorf("%w (service %s)", err, sp.ServiceName)
	}
	if len(def.accessNames) > 64 {
		return nil, fmt.Errorf("ranger: service definition %q has %d access types; hms-proxy evaluates at most 64", def.def.Name, len(def.accessNames))
	}
	loc := o.Location
	if loc == nil {
		loc = time.Local
	}
	e := &Engine{def: def, version: sp.Version(), service: sp.ServiceName, now: o.Now,
		superUsers:  toSet(sp.ServiceConfig["ranger.plugin.super.users"]),
		superGroups: toSet(sp.ServiceConfig["ranger.plugin.super.groups"]),
		roles:       newRoleIndex(roles)}
	if e.now == nil {
		e.now = time.Now
	}
	for _, u := range o.SuperUsers {
		e.superUsers[u] = true
	}
	for _, g := range o.SuperGroups {
		e.superGroups[g] = true
	}
	if sp.TagPolicies != nil {
		e.ignoredTagPolicies = len(sp.TagPolicies.Policies)
	}
	for _, p := range sp.Policies {
		if p == nil || !p.enabled() || p.policyType() != PolicyTypeAccess {
			continue // masking and row-filter policies do not decide access
		}
		e.resourceAny = true
		cp, why := e.compile(p, loc)
		if why != "" {
			e.biased = append(e.biased, fmt.Sprintf("policy %d (%s): %s", cp.id, cp.name, why))
		}
		e.policies = append(e.policies, cp)
	}
	sort.SliceStable(e.policies, func(i, j int) bool { return evalBefore(e.policies[i], e.policies[j]) })
	for i, p := range e.policies {
		p.pos = int32(i)
		p.allowWhy = fmt.Sprintf("allowed by policy %d (%s)", p.id, p.name)
		p.denyWhy = fmt.Sprintf("denied by policy %d (%s)", p.id, p.name)
	}
	e.buildIndex()
	return e, nil
}

// evalBefore is Ranger's evaluation order: override priority first, then
// policies with deny items, then the cheaper to evaluate, then by name.
func evalBefore(a, b *cpolicy) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	if a.hasDeny != b.hasDeny {
		return a.hasDeny
	}
	if a.evalOrder != b.evalOrder {
		return a.evalOrder < b.evalOrder
	}
	return compareJava(a.name, b.name) < 0
}

func toSet(csv string) map[string]bool {
	out := map[string]bool{}
	for _, s := range strings.Split(csv, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out[s] = true
		}
	}
	return out
}

// compile builds one policy's evaluator. A policy using what the proxy
// cannot evaluate (custom conditions the definition declares, recurring
// validity schedules, ${{...}} expressions) is compiled deny-biased: its
// denials and allow-exceptions apply unconditionally, its grants and
// deny-exceptions never; why says what.
func (e *Engine) compile(p *Policy, loc *time.Location) (*cpolicy, string) {
	cp := &cpolicy{id: p.id(), name: p.Name, priority: p.priority(), denyAll: p.denyAllElse()}
	cp.hasDeny = cp.denyAll || len(p.DenyPolicyItems) > 0
	cp.hasAny = len(p.PolicyItems) > 0 || cp.hasDeny
	var why []string
	known := map[string]bool{}
	for _, c := range e.def.def.PolicyConditions {
		if c != nil {
			known[c.Name] = true
		}
	}
	conds := func(cs []*Condition) int {
		n := 0
		for _, c := range cs {
			if c != nil && known[c.Type] {
				n++
			}
		}
		return n
	}
	if conds(p.Conditions) > 0 {
		why = append(why, "policy conditions")
	}
	dynamic := false
	sets := append([]map[string]*PolicyResource{p.Resources}, p.AdditionalResources...)
	for _, rs := range sets {
		cr, unsup := e.compileResources(rs)
		if unsup {
			why = append(why, "${{...}} expressions in resources")
		}
		for _, m := range cr.matchers {
			if m != nil && m.dynamic {
				dynamic = true
			}
		}
		cp.resources = append(cp.resources, cr)
	}
	for _, s := range p.ValiditySchedules {
		if s == nil {
			continue
		}
		sc, err := newSchedule(s, loc)
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		cp.schedules = append(cp.schedules, sc)
	}
	biased := len(why) > 0
	if biased {
		cp.schedules = nil
	}
	itemConds := 0
	build := func(items []*PolicyItem, grant bool) []*citem {
		var out []*citem
		for _, it := range items {
			if it == nil {
				continue
			}
			n := conds(it.Conditions)
			itemConds += n
			if (biased || n > 0) && grant {
				if n > 0 && !biased {
					why = append(why, "conditions on items")
				}
				continue
			}
			out = append(out, e.compileItem(it))
		}
		return out
	}
	cp.allow = build(p.PolicyItems, true)
	if e.def.denyEnabled {
		cp.deny = build(p.DenyPolicyItems, false)
		cp.allowExc = build(p.AllowExceptions, false)
		cp.denyExc = build(p.DenyExceptions, true)
	}
	cp.evalOrder = e.evalOrder(p, dynamic, itemConds)
	return cp, strings.Join(uniq(why), ", ")
}

func uniq(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func (e *Engine) compileResources(rs map[string]*PolicyResource) (*cresource, bool) {
	d := e.def
	cr := &cresource{matchers: make([]*resourceMatcher, len(d.def.Resources)), keyNames: map[int]bool{}}
	unsupported := false
	unknown := false
	present := map[int]bool{}
	for name, pr := range rs {
		idx, ok := d.resIndex[name]
		if !ok {
			unknown = true
			continue
		}
		cr.keys = append(cr.keys, idx)
		cr.keyNames[idx] = true
		if pr != nil {
			present[idx] = true
			m, unsup := newResourceMatcher(pr, d.opts[idx])
			if unsup {
				unsupported = true
				m.values, m.matchAny = nil, true // deny-biased: the policy's denials cover every value
			}
			cr.matchers[idx] = m
		}
	}
	sort.Ints(cr.keys)
	cr.nKeys = len(rs)
	if unknown || len(rs) == 0 {
		return cr, unsupported // never matches (Ranger: no valid hierarchy)
	}
	var valid [][]int
	for _, h := range d.hierarchies {
		if hierarchyHas(h, cr.keys) && noGaps(h, present) {
			valid = append(valid, h)
		}
	}
	if len(valid) == 0 {
		return cr, unsupported
	}
	if len(valid) == 1 {
		cr.valid = valid[0]
	}
	cr.ok = true
	return cr, unsupported
}

// noGaps is isHierarchyValidForResources: once a resource of the hierarchy
// is missing, none after it may be present.
func noGaps(h []int, present map[int]bool) bool {
	if h == nil {
		return false
	}
	skipped := false
	for _, r := range h {
		if !present[r] {
			skipped = true
		} else if skipped {
			return false
		}
	}
	return true
}

func (e *Engine) compileItem(it *PolicyItem) *citem {
	c := &citem{users: map[string]struct{}{}, groups: map[string]struct{}{}}
	for _, u := range nonNil(it.Users) {
		c.users[u] = struct{}{}
		switch u {
		case "{USER}":
			c.hasCurrentUser = true
		case "{OWNER}":
			c.hasOwner = true
		}
	}
	for _, g := range nonNil(it.Groups) {
		c.groups[g] = struct{}{}
		if g == "public" {
			c.hasPublic = true
		}
	}
	for _, r := range it.Roles {
		if r != nil {
			c.roles = append(c.roles, *r)
		}
	}
	// accesses with the definition's implied grants (one round, as Ranger)
	type acc struct {
		typ     string
		allowed bool
	}
	var accs []*acc
	find := func(t string) *acc {
		for _, a := range accs {
			if jEquals(newJstr(a.typ), newJstr(t), true) {
				return a
			}
		}
		return nil
	}
	for _, a := range it.Accesses {
		if a != nil {
			accs = append(accs, &acc{typ: a.Type, allowed: a.allowed()})
		}
	}
	if len(accs) > 0 {
		for _, name := range e.def.accessNames {
			grants, ok := e.def.implied[name]
			if !ok {
				continue
			}
			a := find(name)
			if a == nil {
				continue
			}
			for _, g := range grants {
				if ia := find(g); ia == nil {
					accs = append(accs, &acc{typ: g, allowed: a.allowed})
				} else if !ia.allowed {
					ia.allowed = a.allowed
				}
			}
		}
	}
	for _, a := range accs {
		if !a.allowed {
			continue
		}
		if i := e.def.accessIndex(a.typ); i >= 0 {
			c.mask |= 1 << uint(i)
		} else {
			c.other = append(c.other, a.typ)
		}
	}
	return c
}

// evalOrder is RangerOptimizedPolicyEvaluator's score: lower evaluates
// first among policies of the same priority and deny-ness.
func (e *Engine) evalOrder(p *Policy, dynamic bool, itemConds int) int {
	order := 10000
	type lvl struct {
		level int
		pr    *PolicyResource
	}
	var ls []lvl
	for name, pr := range p.Resources {
		if pr == nil || len(pr.Values) == 0 {
			continue
		}
		if i, ok := e.def.resIndex[name]; ok {
			ls = append(ls, lvl{e.def.def.Resources[i].Level, pr})
		}
	}
	sort.SliceStable(ls, func(i, j int) bool { return ls[i].level < ls[j].level })
	discount := 0
	for _, l := range ls {
		star, question, any := false, false, false
		for _, v := range l.pr.Values {
			s := ""
			if v != nil {
				s = *v
			}
			if s == "" || s == "*" {
				any = true
				break
			} else if strings.Contains(s, "*") {
				star = true
			} else if strings.Contains(s, "?") {
				question = true
			}
		}
		if any {
			discount += 25
			continue
		}
		if star {
			discount += 10
		} else if question {
			discount += 5
		}
		if l.pr.IsExcludes {
			discount += 5
		}
		if l.pr.IsRecursive {
			discount += 5
		}
	}
	if dynamic {
		order += 20
	}
	order -= min(100, discount)
	users, groups := map[string]bool{}, map[string]bool{}
	hasPublic, hasCurrent := p.denyAllElse(), false
	for _, items := range [][]*PolicyItem{p.PolicyItems, p.DenyPolicyItems, p.AllowExceptions, p.DenyExceptions} {
		for _, it := range items {
			if it == nil {
				continue
			}
			for _, u := range it.Users {
				if u != nil {
					users[*u] = true
					if strings.EqualFold(*u, "{USER}") {
						hasCurrent = true
					}
				}
			}
			for _, g := range it.Groups {
				if g != nil {
					groups[*g] = true
					if strings.EqualFold(*g, "public") && !p.denyAllElse() {
						hasPublic = true
					}
				}
			}
		}
	}
	// masking and row-filter items count too, but they never reach here (access policies only)
	if hasPublic || hasCurrent {
		order -= 25
	} else {
		order -= min(len(groups)+len(users), 25)
	}
	// Ranger's score also discounts by the access types a policy grants, but
	// the set it counts them in is never filled before the score is taken
	// (RangerOptimizedPolicyEvaluator.preprocessPolicyItems drops the set
	// its helper returns): the discount is always 0, and so it is here.
	if d := 25 - 5*itemConds; d > 0 {
		order -= d
	}
	return order
}

// buildIndex files each policy under the database names it can match. A
// policy is filed under names only when every resource set naming a
// database lists literal names (no wildcard, macro or excludes); a resource
// set without a database never matches a request that names one.
func (e *Engine) buildIndex() {
	e.byDB, e.dbIdx = map[string][]*cpolicy{}, -1
	i, ok := e.def.resIndex["database"]
	if !ok {
		e.wildDB = e.policies
		return
	}
	e.dbIdx, e.dbCI = i, e.def.opts[i].ignoreCase
	for _, p := range e.policies {
		var names []string
		literal := true
		for _, cr := range p.resources {
			if !cr.ok || !cr.keyNames[i] {
				continue
			}
			m := cr.matchers[i]
			if m == nil || m.matchAny || m.excludes || m.dynamic {
				literal = false
				break
			}
			for _, v := range m.values {
				if v.kind != kindExact || v.value.u != nil || v.quoted {
					literal = false
					break
				}
				n := v.value.s
				if e.dbCI {
					n = strings.ToLower(n)
				}
				names = append(names, n)
			}
		}
		if !literal {
			e.wildDB = append(e.wildDB, p)
			continue
		}
		seen := map[string]bool{}
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				e.byDB[n] = append(e.byDB[n], p)
			}
		}
	}
}

// candidates returns the policies that may match a request for database db
// (two lists to merge by position); all policies when db cannot be looked up.
func (e *Engine) candidates(db jstr, present bool) (a, b []*cpolicy) {
	if e.dbIdx < 0 || !present || db.u != nil {
		return e.policies, nil
	}
	key := db.s
	if e.dbCI {
		for k := 0; k < len(key); k++ {
			if c := key[k]; 'A' <= c && c <= 'Z' {
				key = strings.ToLower(key)
				break
			}
		}
	}
	return e.byDB[key], e.wildDB
}
