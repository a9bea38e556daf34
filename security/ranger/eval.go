package ranger

import (
	"fmt"
	"time"
)

// reqCtx is one request, prepared for matching: names in Java string form,
// resource values by resource index, the macro tokens, the access types to
// decide. It lives on the caller's stack.
type reqCtx struct {
	user    string
	hasUser bool
	groups  []string
	roles   []string // explicit roles
	values  [8]jstr
	present [8]bool
	nKeys   int
	toks    tokens
	any     bool
	access  string
	accIdx  int // index of access in the definition, -1 if not there
	at      time.Time
	// the per-access-type results of the request (Ranger's
	// ALL_ACCESS_TYPE_RESULTS), indexed by position in the walk order
	order []int
	res   [64]oneResult
	n     int
}

type oneResult struct {
	set, allowed, determined bool
	priority                 int
	policy                   int64
	decider                  *cpolicy
}

type result struct {
	allowed, determined bool
	priority            int
	policy              int64
	decider             *cpolicy
	reason              string
}

// Decide evaluates a request.
func (e *Engine) Decide(r *Request) Decision {
	var c reqCtx
	if err := e.prepare(r, &c); err != nil {
		return Decision{PolicyID: -1, Reason: err.Error()}
	}
	res := e.evaluate(&c)
	return Decision{Allowed: res.allowed, PolicyID: res.policy, Reason: res.reason}
}

func (e *Engine) prepare(r *Request, c *reqCtx) error {
	d := e.def
	c.user, c.hasUser = r.User, r.User != ""
	c.groups, c.roles = r.Groups, r.Roles
	c.toks = tokens{user: r.User, hasUser: r.User != "", owner: r.Owner, hasOwner: r.Owner != ""}
	set := func(name, v string) error {
		if v == "" {
			return nil
		}
		i, ok := d.resIndex[name]
		if !ok {
			return fmt.Errorf("ranger: service definition %q has no resource %q", d.def.Name, name)
		}
		if i >= len(c.values) {
			return fmt.Errorf("ranger: resource %q is beyond the resources hms-proxy evaluates", name)
		}
		c.values[i], c.present[i] = newJstr(v), true
		c.nKeys++
		return nil
	}
	for _, kv := range [...][2]string{{"database", r.Database}, {"table", r.Table}, {"column", r.Column}, {"udf", r.UDF}} {
		if err := set(kv[0], kv[1]); err != nil {
			return err
		}
	}
	if r.Access == "_admin" || r.Access == "_super_user" {
		return fmt.Errorf("ranger: access type %s is Ranger's grant/revoke check, which hms-proxy does not make", r.Access)
	}
	c.access = r.Access
	c.any = r.Access == AccessAny || r.Access == ""
	if c.any {
		c.order = d.anyOrder
		c.n = len(d.anyOrder)
	} else {
		c.accIdx = d.accessIndex(r.Access)
		c.n = 1
	}
	c.at = r.Time
	if c.at.IsZero() {
		c.at = e.now()
	}
	return nil
}

// accessAt is the access type index of the i-th requested type (-1: the
// request's type, which the definition lacks).
func (c *reqCtx) accessAt(i int) int {
	if c.any {
		return c.order[i]
	}
	return c.accIdx
}

func (e *Engine) isSuper(c *reqCtx) bool {
	if c.hasUser && e.superUsers[c.user] {
		return true
	}
	for _, g := range c.groups {
		if e.superGroups[g] {
			return true
		}
	}
	return false
}

// evaluate is RangerPolicyEngineImpl's evaluation of resource policies.
func (e *Engine) evaluate(c *reqCtx) result {
	ret := result{policy: -1}
	if e.isSuper(c) {
		ret = result{allowed: true, determined: true, policy: -1, priority: 1 << 30, reason: "superuser"}
	}
	ret.determined = false
	var a, b []*cpolicy
	if e.dbIdx >= 0 && e.dbIdx < len(c.values) {
		a, b = e.candidates(c.values[e.dbIdx], c.present[e.dbIdx])
	} else {
		a = e.policies
	}
	for {
		var p *cpolicy
		switch {
		case len(a) > 0 && (len(b) == 0 || a[0].pos < b[0].pos):
			p, a = a[0], a[1:]
		case len(b) > 0:
			p, b = b[0], b[1:]
		}
		if p == nil {
			break
		}
		if !p.applicable(c.at) {
			continue
		}
		if ret.allowed && ret.priority > p.priority {
			ret.determined = true
		}
		matched := e.evaluatePolicy(p, c, &ret)
		// Ranger only walks the policies its resource index finds for the
		// resource; one that does not match is not there to end the walk
		if matched && ret.allowed && !p.hasDeny {
			ret.determined = true
		}
		if ret.determined {
			break // later policies only touch audit, which the proxy does not take from here
		}
	}
	if ret.reason == "" {
		switch {
		case ret.decider != nil && ret.allowed:
			ret.reason = ret.decider.allowWhy
		case ret.decider != nil:
			ret.reason = ret.decider.denyWhy
		default:
			ret.reason = "no policy grants the access"
		}
	}
	return ret
}

func (p *cpolicy) applicable(at time.Time) bool {
	if len(p.schedules) == 0 {
		return true
	}
	for _, s := range p.schedules {
		if s.applicable(at) {
			return true
		}
	}
	return false
}

// evaluatePolicy is RangerDefaultPolicyEvaluator.evaluate.
func (e *Engine) evaluatePolicy(p *cpolicy, c *reqCtx, ret *result) (anyMatch bool) {
	for _, cr := range p.resources {
		if ret.determined {
			return anyMatch
		}
		mt := e.matchType(cr, c)
		var matched bool
		if c.any {
			matched = mt != matchNone
		} else {
			matched = mt == matchSelf || mt == matchSelfAndAllDescendants
		}
		if mt != matchNone {
			anyMatch = true
		}
		if matched && p.hasAny {
			e.evaluateItems(p, mt, c, ret)
		}
	}
	return anyMatch
}

// evaluateItems decides each requested access type with the policy's
// items, merges the outcome into the request's per-type results with
// Ranger's priority rules, and sets ret from them.
func (e *Engine) evaluateItems(p *cpolicy, mt matchType, c *reqCtx, ret *result) {
	for i := 0; i < c.n; i++ {
		acc := c.accessAt(i)
		var one oneResult
		item, deny := e.matchingItem(p, c, acc)
		switch {
		case item != nil:
			updateOne(&one, p, mt, !deny)
		case p.denyAll:
			updateOne(&one, p, mt, false)
		}
		isAllow := one.allowed
		isDeny := !one.allowed && one.determined
		if !isAllow && !isDeny {
			continue
		}
		one.set = true
		old := &c.res[i]
		if e.trace != nil {
			e.trace(fmt.Sprintf("policy %d mt %d access %s: allow=%v deny=%v old=%+v", p.id, mt, e.def.accessNames[acc], isAllow, isDeny, *old))
		}
		switch {
		case !old.set:
			*old = one
		case old.allowed:
			if isDeny {
				if p.priority >= old.priority {
					*old = one
				}
			} else if p.priority > old.priority {
				*old = one
			}
		default:
			if p.priority >= old.priority && isAllow && c.any {
				*old = one
			} else if p.priority > old.priority && isDeny {
				*old = one
			}
		}
		if c.any && isAllow {
			break
		}
	}
	// the composite over all requested types
	determined, denied := true, false
	var deniedRes *oneResult
	for i := 0; i < c.n; i++ {
		r := &c.res[i]
		if !r.set {
			determined = false
			continue
		}
		if r.allowed {
			ret.allowed, ret.determined, ret.priority, ret.policy, ret.decider = true, r.determined, r.priority, r.policy, r.decider
			return
		}
		denied = true
		if deniedRes == nil {
			deniedRes = r
		}
	}
	if determined && denied {
		ret.allowed, ret.determined, ret.priority, ret.policy, ret.decider = false, deniedRes.determined, deniedRes.priority, deniedRes.policy, deniedRes.decider
	}
}

func updateOne(one *oneResult, p *cpolicy, mt matchType, allowed bool) {
	if !allowed {
		if mt != matchDescendant {
			one.allowed, one.determined, one.priority, one.policy, one.decider = false, true, p.priority, p.id, p
		}
		return
	}
	if !one.allowed && mt != matchAncestor {
		one.allowed, one.priority, one.policy, one.decider = true, p.priority, p.id, p
	}
}

// matchingItem finds the deciding item for one access type: a deny item no
// deny-exception cancels, else an allow item no allow-exception cancels.
func (e *Engine) matchingItem(p *cpolicy, c *reqCtx, acc int) (item *citem, deny bool) {
	if it := e.firstMatch(p.deny, c, acc); it != nil && e.firstMatch(p.denyExc, c, acc) == nil {
		return it, true
	}
	if it := e.firstMatch(p.allow, c, acc); it != nil && e.firstMatch(p.allowExc, c, acc) == nil {
		return it, false
	}
	return nil, false
}

func (e *Engine) firstMatch(items []*citem, c *reqCtx, acc int) *citem {
	for _, it := range items {
		if it.matchesAccess(c, acc) && e.matchesPrincipal(it, c) {
			return it
		}
	}
	return nil
}

func (it *citem) matchesAccess(c *reqCtx, acc int) bool {
	if acc >= 0 {
		return it.mask&(1<<uint(acc)) != 0
	}
	a := newJstr(c.access)
	for _, o := range it.other {
		if jEquals(newJstr(o), a, true) {
			return true
		}
	}
	return false
}

// matchesPrincipal is matchUserGroupAndOwner.
func (e *Engine) matchesPrincipal(it *citem, c *reqCtx) bool {
	if c.hasUser {
		if it.hasCurrentUser {
			return true
		}
		if _, ok := it.users[c.user]; ok {
			return true
		}
	}
	if it.hasPublic {
		return true
	}
	for _, g := range c.groups {
		if _, ok := it.groups[g]; ok {
			return true
		}
	}
	if len(it.roles) > 0 {
		for _, r := range it.roles {
			if e.hasRole(c, r) {
				return true
			}
		}
	}
	return it.hasOwner && c.hasUser && c.toks.hasOwner && c.user == c.toks.owner
}

func (e *Engine) hasRole(c *reqCtx, role string) bool {
	if len(c.roles) > 0 {
		for _, r := range c.roles {
			if r == role {
				return true
			}
		}
		return false
	}
	return e.roles.member(role, c.user, c.hasUser, c.groups)
}

// matchType is RangerDefaultPolicyResourceMatcher.getMatchType.
func (e *Engine) matchType(cr *cresource, c *reqCtx) matchType {
	if cr.nKeys == 0 && c.nKeys == 0 {
		return matchSelf
	}
	if !cr.ok {
		return matchNone
	}
	h := e.matchingHierarchy(cr, c)
	if len(h) == 0 {
		return matchNone
	}
	lastNonAny, n := -1, 0
	for _, r := range h {
		m := cr.matchers[r]
		if m == nil {
			break
		}
		if !m.matchAny {
			lastNonAny = n
		}
		n++
	}
	ret := matchNone
	if c.nKeys == 0 {
		ret = matchSelf
	}
	for _, r := range h {
		m := cr.matchers[r]
		present := r < len(c.present) && c.present[r]
		if m != nil {
			if present || m.matchAny {
				var v jstr
				if present {
					v = c.values[r]
				}
				if m.match(v, present, &c.toks) {
					ret = matchSelf
				} else {
					ret = matchNone
					break
				}
			}
		} else {
			if present {
				ret = matchAncestor
			}
			break
		}
	}
	if ret == matchSelf && c.nKeys < cr.nKeys {
		if c.nKeys > lastNonAny {
			return matchSelfAndAllDescendants
		}
		return matchDescendant
	}
	return ret
}

// matchingHierarchy is getMatchingHierarchy(resource).
func (e *Engine) matchingHierarchy(cr *cresource, c *reqCtx) []int {
	if c.nKeys == 0 {
		if cr.valid != nil {
			return cr.valid
		}
		return e.def.shortestHierarchy(cr.keys)
	}
	var keys [8]int
	k := keys[:0]
	for i := range c.present {
		if c.present[i] {
			k = append(k, i)
		}
	}
	var h []int
	if cr.valid != nil {
		if hierarchyHas(cr.valid, k) {
			h = cr.valid
		}
	} else if containsAll(cr.keys, k) {
		h = e.def.shortestHierarchy(cr.keys)
	} else if containsAll(k, cr.keys) {
		h = e.def.shortestHierarchy(k)
	}
	if h == nil {
		return nil
	}
	skipped := false
	for _, r := range h {
		if !(r < len(c.present) && c.present[r]) {
			skipped = true
		} else if skipped {
			return nil
		}
	}
	return h
}

func containsAll(set, sub []int) bool {
	for _, s := range sub {
		found := false
		for _, x := range set {
			if x == s {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
