// Package ratelimit is the proxy's overload protection (rate-limit.*): local
// token buckets, built on golang.org/x/time/rate, for six scopes:
//
//   - principal: one bucket per authenticated principal (only when the front
//     door authenticated the caller; a set_ugi name is not a principal);
//   - source: one bucket per exact client IP;
//   - source_cidr: one aggregate bucket per rule, shared by every address of
//     its prefixes; an address inside several rules uses every one of them;
//   - method_family: one bucket per configured family;
//   - catalog: one bucket per configured catalog, used by every catalog a
//     request resolves to or touches (a fan-out uses one token of each);
//   - rpc_class: one bucket per configured class (write, ddl, txn, lock); a
//     call in several classes uses each of them.
//
// A request passes only when every bucket that applies to it has a token.
// When one refuses, the request takes no token from any bucket: tokens are
// first checked, then reserved one bucket after the other, and if a bucket
// runs dry in between (a concurrent request took its last token) the
// reservations already made are cancelled at the same instant, which
// x/time/rate turns into returning the token.
//
// Memory: the per-principal and per-source tables are bounded. A bucket is
// forgotten only when it is full again (a forgotten bucket and a new one are
// then the same thing), after IdleTTL without use, or, when the table holds
// MaxKeys buckets, as soon as it is full. When the table is full of buckets
// that are not full (more clients are being limited right now than the table
// holds), a new key is charged to one shared overflow bucket of that
// dimension with the same limit instead of getting a fresh bucket: spraying
// names or addresses therefore never buys more than one extra bucket's worth
// of tokens, and no limited client's bucket is ever reset.
package ratelimit

import (
	"fmt"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Request is what the limiter needs to know about one call.
type Request struct {
	Method    string     // RPC name (for the message)
	Family    string     // the method's family
	Classes   []string   // the method's RPC classes
	Principal string     // the front-door-authenticated principal; "" when none
	Source    netip.Addr // the client IP; the zero Addr when unknown
	Catalogs  []string   // every catalog the call resolves to or will ask
}

// Decision is the outcome of Allow. When Allowed is false the other fields
// say which bucket refused.
type Decision struct {
	Allowed   bool
	Dimension string // DimPrincipal, DimSource, ... (hms_proxy_rate_limited_total's dimension)
	Scope     string // DefaultScope, the CIDR rule, family, catalog or class (its scope label)
	Subject   string // the principal, address, rule, family, catalog or class that ran out
	Key       string // the configuration key prefix of the limit, e.g. rate-limit.catalog.catalog2
	Limit     Limit  // the limit (burst filled in)
	Method    string
	// Overflow: the subject was charged to the dimension's shared overflow
	// bucket because its table was full.
	Overflow bool
}

// Message is the MetaException text for a refused request: it names the
// scope, the subject and the limit.
func (d Decision) Message() string {
	if d.Allowed {
		return ""
	}
	what := map[string]string{DimPrincipal: "principal", DimSource: "source IP", DimSourceCIDR: "source CIDR rule",
		DimMethodFamily: "method family", DimCatalog: "catalog", DimRPCClass: "RPC class"}[d.Dimension]
	s := fmt.Sprintf("rate limit exceeded for %s '%s' while handling '%s': %s allows %s requests/s, burst %d",
		what, d.Subject, d.Method, d.Key, strconv.FormatFloat(d.Limit.RPS, 'f', -1, 64), d.Limit.Burst)
	if d.Overflow {
		s += fmt.Sprintf(" (more %ss are being limited than the proxy tracks one by one: this one shares the overflow bucket)", what)
	}
	return s
}

// Limiter applies the configured limits. It is safe for concurrent use.
type Limiter struct {
	principal, source *keyed
	cidrs             []*cidrBucket
	families          map[string]*fixed
	catalogs          map[string]*fixed
	classes           map[string]*fixed
	now               func() time.Time
	enabled           bool
}

// fixed is the one bucket of a named rule.
type fixed struct {
	dim, scope, key string
	limit           Limit
	lim             *rate.Limiter
}

type cidrBucket struct {
	fixed
	prefixes []netip.Prefix
}

func newFixed(dim, scope, key string, l Limit) *fixed {
	l = l.effective()
	return &fixed{dim: dim, scope: scope, key: key, limit: l, lim: rate.NewLimiter(rate.Limit(l.RPS), l.Burst)}
}

// New validates opt and builds the limiter.
func New(opt Options) (*Limiter, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	l := &Limiter{now: opt.Now, enabled: opt.Enabled(),
		families: map[string]*fixed{}, catalogs: map[string]*fixed{}, classes: map[string]*fixed{}}
	if l.now == nil {
		l.now = time.Now
	}
	b := bounds{idle: opt.IdleTTL, max: opt.MaxKeys, sweep: opt.SweepInterval}
	if b.idle == 0 {
		b.idle = DefaultIdleTTL
	}
	if b.max == 0 {
		b.max = DefaultMaxKeys
	}
	if b.sweep == 0 {
		b.sweep = DefaultSweepInterval
	}
	if opt.Principal != nil {
		l.principal = newKeyed(DimPrincipal, "rate-limit.principal", *opt.Principal, b, opt.Metrics)
	}
	if opt.Source != nil {
		l.source = newKeyed(DimSource, "rate-limit.source", *opt.Source, b, opt.Metrics)
	}
	for _, r := range opt.SourceCIDRs {
		l.cidrs = append(l.cidrs, &cidrBucket{fixed: *newFixed(DimSourceCIDR, r.Name, "rate-limit.source-cidr."+r.Name, r.Limit),
			prefixes: append([]netip.Prefix(nil), r.Prefixes...)})
	}
	for name, lim := range opt.MethodFamily {
		l.families[name] = newFixed(DimMethodFamily, name, "rate-limit.method-family."+name, lim)
	}
	for name, lim := range opt.Catalog {
		l.catalogs[name] = newFixed(DimCatalog, name, "rate-limit.catalog."+name, lim)
	}
	for name, lim := range opt.RPCClass {
		l.classes[name] = newFixed(DimRPCClass, name, "rate-limit.rpc-class."+name, lim)
	}
	return l, nil
}

// Enabled reports whether any limit is configured (a router can skip the
// call otherwise; Allow is cheap either way).
func (l *Limiter) Enabled() bool { return l != nil && l.enabled }

// Allow decides req now. A nil Limiter allows everything.
func (l *Limiter) Allow(req Request) Decision {
	if !l.Enabled() {
		return Decision{Allowed: true}
	}
	return l.AllowAt(l.now(), req)
}

// candidate is one bucket that applies to a request.
type candidate struct {
	f        *fixed
	lim      *rate.Limiter
	subject  string
	overflow bool
}

// AllowAt decides req at the instant now (tests pass a simulated clock).
func (l *Limiter) AllowAt(now time.Time, req Request) Decision {
	if !l.Enabled() {
		return Decision{Allowed: true}
	}
	var buf [16]candidate
	cands := buf[:0]
	if l.principal != nil && req.Principal != "" {
		lim, of := l.principal.bucket(req.Principal, now)
		cands = append(cands, candidate{f: &l.principal.fixed, lim: lim, subject: req.Principal, overflow: of})
	}
	if req.Source.IsValid() {
		src := req.Source.Unmap()
		if l.source != nil {
			lim, of := l.source.bucket(src.String(), now)
			cands = append(cands, candidate{f: &l.source.fixed, lim: lim, subject: src.String(), overflow: of})
		}
		for _, c := range l.cidrs {
			for _, p := range c.prefixes {
				if p.Contains(src) {
					cands = append(cands, candidate{f: &c.fixed, lim: c.lim, subject: c.scope})
					break
				}
			}
		}
	}
	if f := l.families[req.Family]; f != nil {
		cands = append(cands, candidate{f: f, lim: f.lim, subject: f.scope})
	}
	for _, cl := range req.Classes {
		if f := l.classes[cl]; f != nil {
			cands = append(cands, candidate{f: f, lim: f.lim, subject: f.scope})
		}
	}
	for i, cat := range req.Catalogs {
		if f := l.catalogs[cat]; f != nil && !seenBefore(req.Catalogs[:i], cat) {
			cands = append(cands, candidate{f: f, lim: f.lim, subject: f.scope})
		}
	}
	// Look first: a request one bucket refuses takes nothing from the others
	// (and reserves nothing, so it cannot make a concurrent request fail).
	for i := range cands {
		if cands[i].lim.TokensAt(now) < 1 {
			return refusal(cands[i], req.Method)
		}
	}
	// Then take one token from each; a bucket emptied meanwhile by another
	// request gives its reservations back.
	var held [16]*rate.Reservation
	taken := held[:0]
	for i := range cands {
		r := cands[i].lim.ReserveN(now, 1)
		if !r.OK() || r.DelayFrom(now) > 0 {
			r.CancelAt(now)
			for _, t := range taken {
				t.CancelAt(now)
			}
			return refusal(cands[i], req.Method)
		}
		taken = append(taken, r)
	}
	return Decision{Allowed: true}
}

func seenBefore(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func refusal(c candidate, method string) Decision {
	return Decision{Dimension: c.f.dim, Scope: c.f.scope, Subject: c.subject, Key: c.f.key, Limit: c.f.limit,
		Method: method, Overflow: c.overflow}
}

type bounds struct {
	idle  time.Duration
	max   int
	sweep time.Duration
}

// keyed is a dimension with one bucket per key (principal, source).
type keyed struct {
	fixed // dim, scope (DefaultScope), key, limit; lim is the overflow bucket
	b     bounds
	m     *Metrics

	mu        sync.Mutex
	buckets   map[string]*entry
	lastSweep time.Time
}

type entry struct {
	lim  *rate.Limiter
	last time.Time
}

func newKeyed(dim, key string, l Limit, b bounds, m *Metrics) *keyed {
	return &keyed{fixed: *newFixed(dim, DefaultScope, key, l), b: b, m: m, buckets: map[string]*entry{}}
}

// bucket returns k's bucket, creating it when there is room; overflow says
// the shared overflow bucket was returned instead.
func (k *keyed) bucket(key string, now time.Time) (lim *rate.Limiter, overflow bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if e := k.buckets[key]; e != nil {
		if now.After(e.last) {
			e.last = now
		}
		return e.lim, false
	}
	if now.Sub(k.lastSweep) >= k.b.sweep {
		k.sweepLocked(now, len(k.buckets) >= k.b.max)
	}
	if len(k.buckets) >= k.b.max {
		k.m.overflowed(k.dim)
		return k.lim, true
	}
	e := &entry{lim: rate.NewLimiter(rate.Limit(k.limit.RPS), k.limit.Burst), last: now}
	k.buckets[key] = e
	k.m.tracked(k.dim, len(k.buckets))
	return e.lim, false
}

// sweepLocked forgets full buckets idle for IdleTTL, or, when the table is
// at capacity, every full bucket not used within the last sweep interval. A
// full bucket is exactly what a new one would be, so nobody gains a token.
func (k *keyed) sweepLocked(now time.Time, atCapacity bool) {
	k.lastSweep = now
	idle := k.b.idle
	if atCapacity {
		idle = k.b.sweep
	}
	removed := false
	for key, e := range k.buckets {
		if now.Sub(e.last) >= idle && e.lim.TokensAt(now) >= float64(e.lim.Burst()) {
			delete(k.buckets, key)
			removed = true
		}
	}
	if removed {
		k.m.tracked(k.dim, len(k.buckets))
	}
}

// Tracked returns how many per-key buckets the principal and source tables
// hold (tests, diagnostics).
func (l *Limiter) Tracked() (principals, sources int) {
	return l.principal.size(), l.source.size()
}

func (k *keyed) size() int {
	if k == nil {
		return 0
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.buckets)
}
