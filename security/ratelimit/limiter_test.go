package ratelimit

import (
	"fmt"
	"math"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func lim(rps float64, burst int) *Limit { return &Limit{RPS: rps, Burst: burst} }

func mustNew(t *testing.T, o Options) *Limiter {
	t.Helper()
	l, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

// flood sends n requests from gen, one every step starting at start, and
// returns how many were allowed and the last refusal.
func flood(l *Limiter, start time.Time, step time.Duration, n int, gen func(i int) Request) (allowed int, last Decision) {
	for i := 0; i < n; i++ {
		d := l.AllowAt(start.Add(time.Duration(i)*step), gen(i))
		if d.Allowed {
			allowed++
		} else {
			last = d
		}
	}
	return allowed, last
}

// TestEachScopeHoldsItsLimit floods one scope for 10 simulated seconds at
// 1,000 requests/s: what passes must be burst + rate x 10 s within 10 %, the
// refusal must name the scope, and a request of the same kind that the scope
// does not cover must still get a whole burst of its own (or be unlimited).
func TestEachScopeHoldsItsLimit(t *testing.T) {
	const n, step = 10000, time.Millisecond // 10 s at 1,000 req/s
	read := func(r Request) Request {
		if r.Family == "" {
			r.Family = "metadata_read"
		}
		return r
	}
	cases := []struct {
		name      string
		opt       Options
		hot       func(i int) Request // the flood
		rps       float64
		burst     int
		dim       string
		scope     string
		key       string
		control   Request // another subject: a full burst (or unlimited) must remain
		ctrlBurst int     // 0: unlimited
	}{
		{name: "principal", opt: Options{Principal: lim(50, 100)},
			hot: func(int) Request { return read(Request{Principal: "alice@EXAMPLE.COM"}) },
			rps: 50, burst: 100, dim: DimPrincipal, scope: DefaultScope, key: "rate-limit.principal",
			control: read(Request{Principal: "bob@EXAMPLE.COM"}), ctrlBurst: 100},
		{name: "principal ignores unauthenticated callers", opt: Options{Principal: lim(50, 100)},
			hot: func(int) Request { return read(Request{Principal: "alice@EXAMPLE.COM"}) },
			rps: 50, burst: 100, dim: DimPrincipal, scope: DefaultScope, key: "rate-limit.principal",
			control: read(Request{}), ctrlBurst: 0},
		{name: "source", opt: Options{Source: lim(30, 60)},
			hot: func(int) Request { return read(Request{Source: addr("10.1.2.3")}) },
			rps: 30, burst: 60, dim: DimSource, scope: DefaultScope, key: "rate-limit.source",
			control: read(Request{Source: addr("10.1.2.4")}), ctrlBurst: 60},
		{name: "source-cidr is one bucket for the whole rule",
			opt: Options{SourceCIDRs: []CIDRRule{{Name: "hs2-pool", Limit: Limit{RPS: 200, Burst: 300},
				Prefixes: []netip.Prefix{netip.MustParsePrefix("10.10.0.0/16"), netip.MustParsePrefix("10.20.0.0/16")}}}},
			hot: func(i int) Request { // every request from another address of the rule
				return read(Request{Source: netip.AddrFrom4([4]byte{10, byte(10 + 10*(i%2)), byte(i >> 8), byte(i)})})
			},
			rps: 200, burst: 300, dim: DimSourceCIDR, scope: "hs2-pool", key: "rate-limit.source-cidr.hs2-pool",
			control: read(Request{Source: addr("10.30.0.1")}), ctrlBurst: 0},
		{name: "method-family", opt: Options{MethodFamily: map[string]Limit{"metadata_read": {RPS: 600, Burst: 1000}}},
			hot: func(int) Request { return read(Request{}) },
			rps: 600, burst: 1000, dim: DimMethodFamily, scope: "metadata_read", key: "rate-limit.method-family.metadata_read",
			control: Request{Family: "metadata_write"}, ctrlBurst: 0},
		{name: "catalog", opt: Options{Catalog: map[string]Limit{"catalog1": {RPS: 300}, "catalog2": {RPS: 120}}},
			hot: func(int) Request { return read(Request{Catalogs: []string{"catalog2"}}) },
			rps: 120, burst: 120, dim: DimCatalog, scope: "catalog2", key: "rate-limit.catalog.catalog2",
			control: read(Request{Catalogs: []string{"catalog1"}}), ctrlBurst: 300},
		{name: "rpc-class", opt: Options{RPCClass: map[string]Limit{"ddl": {RPS: 15}, "write": {RPS: 80}}},
			hot: func(int) Request { return Request{Family: "metadata_write", Classes: []string{"write", "ddl"}} },
			rps: 15, burst: 15, dim: DimRPCClass, scope: "ddl", key: "rate-limit.rpc-class.ddl",
			// the flood's refused calls took nothing from write's bucket
			control: Request{Family: "metadata_write", Classes: []string{"write"}}, ctrlBurst: 80},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := mustNew(t, c.opt)
			allowed, last := flood(l, t0, step, n, c.hot)
			want := float64(c.burst) + c.rps*float64(n)*step.Seconds()
			if math.Abs(float64(allowed)-want) > 0.1*want {
				t.Errorf("%d of %d passed, want %.0f within 10%%", allowed, n, want)
			}
			if allowed > c.burst+int(c.rps*float64(n)*step.Seconds())+1 {
				t.Errorf("%d passed: more than burst + rate x time", allowed)
			}
			if last.Allowed || last.Dimension != c.dim || last.Scope != c.scope || last.Key != c.key {
				t.Errorf("refusal %+v, want dimension %s scope %s key %s", last, c.dim, c.scope, c.key)
			}
			if last.Limit.RPS != c.rps || last.Limit.Burst != c.burst {
				t.Errorf("refusal reports limit %+v, want %v/%d", last.Limit, c.rps, c.burst)
			}
			// The control subject, at the instant the flood ended.
			end := t0.Add(time.Duration(n) * step)
			tries := c.ctrlBurst + 50
			if c.ctrlBurst == 0 {
				tries = 5000
			}
			got, _ := flood(l, end, 0, tries, func(int) Request { return c.control })
			wantCtrl := c.ctrlBurst
			if c.ctrlBurst == 0 {
				wantCtrl = tries
			}
			if got != wantCtrl {
				t.Errorf("control %+v: %d of %d passed at once, want %d (a scope the flood did not touch must be unaffected)",
					c.control, got, tries, wantCtrl)
			}
		})
	}
}

// TestRefusedRequestTakesNoTokens: requests one bucket refuses must leave
// every other bucket untouched.
func TestRefusedRequestTakesNoTokens(t *testing.T) {
	l := mustNew(t, Options{Principal: lim(10, 10),
		MethodFamily: map[string]Limit{"metadata_read": {RPS: 100, Burst: 100}}})
	alice := Request{Method: "get_table", Family: "metadata_read", Principal: "alice"}
	got, last := flood(l, t0, 0, 50, func(int) Request { return alice })
	if got != 10 || last.Dimension != DimPrincipal {
		t.Fatalf("alice: %d passed (want 10), last refusal %+v", got, last)
	}
	// 40 refused calls of alice must not have used metadata_read tokens: the
	// family bucket has 100 - 10 = 90 left for everyone else.
	anon := Request{Method: "get_table", Family: "metadata_read"}
	got, last = flood(l, t0, 0, 200, func(int) Request { return anon })
	if got != 90 || last.Dimension != DimMethodFamily {
		t.Fatalf("unauthenticated callers got %d of the family's bucket, want 90 (refusal %+v)", got, last)
	}

	// The other way round: the family refuses, the principal's bucket (which
	// is checked first) must keep its tokens.
	l = mustNew(t, Options{Principal: lim(1, 100),
		MethodFamily: map[string]Limit{"metadata_read": {RPS: 1, Burst: 10}}})
	got, last = flood(l, t0, 0, 50, func(int) Request { return alice })
	if got != 10 || last.Dimension != DimMethodFamily {
		t.Fatalf("alice's reads: %d passed (want 10), last refusal %+v", got, last)
	}
	write := Request{Method: "alter_table", Family: "metadata_write", Principal: "alice"}
	got, last = flood(l, t0, 0, 200, func(int) Request { return write })
	if got != 90 || last.Dimension != DimPrincipal {
		t.Fatalf("alice's writes got %d of her bucket, want 100 - 10 = 90 (refusal %+v)", got, last)
	}
}

// TestConcurrentRequestsNeverExceedAnyBucket races many goroutines at one
// frozen instant over two buckets: exactly the smaller burst passes, and the
// larger bucket gets back the tokens of the refused requests.
func TestConcurrentRequestsNeverExceedAnyBucket(t *testing.T) {
	l := mustNew(t, Options{Catalog: map[string]Limit{"c1": {RPS: 1, Burst: 300}},
		RPCClass: map[string]Limit{"write": {RPS: 1, Burst: 50}}})
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if l.AllowAt(t0, Request{Family: "metadata_write", Classes: []string{"write"}, Catalogs: []string{"c1"}}).Allowed {
					allowed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if allowed.Load() != 50 {
		t.Fatalf("%d writes passed, want the write burst of 50", allowed.Load())
	}
	got, _ := flood(l, t0, 0, 400, func(int) Request { return Request{Family: "metadata_read", Catalogs: []string{"c1"}} })
	if got != 250 {
		t.Fatalf("reads of c1 got %d tokens after the race, want 300 - 50 = 250", got)
	}
}

func TestFanOutUsesOneTokenPerCatalog(t *testing.T) {
	l := mustNew(t, Options{Catalog: map[string]Limit{"c1": {RPS: 1, Burst: 10}, "c2": {RPS: 1, Burst: 4}}})
	fan := Request{Method: "get_all_databases", Family: "metadata_read", Catalogs: []string{"c1", "c2", "c3", "c1"}}
	got, last := flood(l, t0, 0, 20, func(int) Request { return fan })
	if got != 4 || last.Scope != "c2" {
		t.Fatalf("fan-out passed %d times, want 4 (c2's burst); refusal %+v", got, last)
	}
	got, _ = flood(l, t0, 0, 20, func(int) Request { return Request{Catalogs: []string{"c1"}} })
	if got != 6 {
		t.Fatalf("c1 alone got %d, want 10 - 4 = 6 (one token per fan-out, a repeated catalog counts once)", got)
	}
}

func TestSourceAddressesAreNormalized(t *testing.T) {
	l := mustNew(t, Options{Source: lim(1, 2),
		SourceCIDRs: []CIDRRule{{Name: "lan", Limit: Limit{RPS: 1, Burst: 100},
			Prefixes: mustPrefixes(t, "rate-limit.source-cidr.lan.cidrs", "192.168.0.0/16")}}})
	mapped := netip.MustParseAddr("::ffff:192.168.1.7")
	plain := addr("192.168.1.7")
	for i, a := range []netip.Addr{mapped, plain} {
		if d := l.AllowAt(t0, Request{Source: a}); !d.Allowed {
			t.Fatalf("request %d refused: %+v", i, d)
		}
	}
	d := l.AllowAt(t0, Request{Source: mapped})
	if d.Allowed || d.Dimension != DimSource || d.Subject != "192.168.1.7" {
		t.Fatalf("an IPv4-mapped address must share its IPv4 address's bucket; got %+v", d)
	}
	for _, c := range []struct {
		in   string
		want string
	}{{"10.0.0.1:51000", "10.0.0.1"}, {"[::ffff:10.0.0.1]:51000", "10.0.0.1"}, {"[2001:db8::1]:9083", "2001:db8::1"}, {"10.0.0.2", "10.0.0.2"}} {
		a, ok := SourceAddr(c.in)
		if !ok || a.String() != c.want {
			t.Errorf("SourceAddr(%q) = %v %v, want %s", c.in, a, ok, c.want)
		}
	}
	if _, ok := SourceAddr("pipe"); ok {
		t.Error("SourceAddr(pipe) found an address")
	}
}

// TestEvictionNeverResetsALimitedClient fills the principal table while
// alice is being limited: her bucket must survive (she does not get a fresh
// burst), new names go to the shared overflow bucket, and spraying names buys
// no more than one overflow burst.
func TestEvictionNeverResetsALimitedClient(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	l := mustNew(t, Options{Principal: lim(1, 5), MaxKeys: 3, IdleTTL: time.Minute, SweepInterval: time.Second, Metrics: m})
	req := func(p string) Request { return Request{Method: "get_table", Family: "metadata_read", Principal: p} }
	if got, _ := flood(l, t0, 0, 10, func(int) Request { return req("alice") }); got != 5 {
		t.Fatalf("alice's first burst: %d, want 5", got)
	}
	// Two seconds later alice has earned 2 tokens; 1,000 other names arrive.
	t1 := t0.Add(2 * time.Second)
	sprayed, _ := flood(l, t1, 0, 1000, func(i int) Request { return req(fmt.Sprintf("user%04d", i)) })
	// 2 names fit in the table (1 token each: their buckets are no longer full,
	// so they stay), the other 998 share one overflow bucket of burst 5.
	if sprayed != 2+5 {
		t.Errorf("1,000 sprayed names got %d tokens, want 7 (2 tracked + one overflow burst)", sprayed)
	}
	if got, _ := flood(l, t1, 0, 10, func(int) Request { return req("alice") }); got != 2 {
		t.Errorf("alice got %d tokens after the spray, want the 2 she earned: her bucket was reset", got)
	}
	d := l.AllowAt(t1, req("user0999"))
	if d.Allowed || !d.Overflow || !strings.Contains(d.Message(), "overflow") {
		t.Errorf("an untracked name must be refused from the overflow bucket, got %+v %q", d, d.Message())
	}
	if p, _ := l.Tracked(); p != 3 {
		t.Errorf("%d principals tracked, want the cap of 3", p)
	}
	// 1.5 s later a capacity sweep may run. user0000 and user0001 are full
	// again (a full bucket is the same as a new one, so they are forgotten
	// and dave gets a bucket of his own); alice (1.5 of 5 tokens) is not, so
	// she stays tracked with exactly what she earned.
	t15 := t1.Add(1500 * time.Millisecond)
	if d := l.AllowAt(t15, req("dave")); !d.Allowed || d.Overflow {
		t.Errorf("dave after the sweep: %+v", d)
	}
	if p, _ := l.Tracked(); p != 2 {
		t.Errorf("%d principals tracked after the capacity sweep, want 2 (alice, dave)", p)
	}
	if got, _ := flood(l, t15, 0, 10, func(int) Request { return req("alice") }); got != 1 {
		t.Errorf("alice got %d tokens after a capacity sweep, want the 1 she earned", got)
	}
	if v := testutil.ToFloat64(m.trackedKeys.WithLabelValues(DimPrincipal)); v != 2 {
		t.Errorf("%s = %v, want 2", MetricTrackedKeys, v)
	}
}

func TestIdleBucketsAreForgottenOnlyWhenFull(t *testing.T) {
	l := mustNew(t, Options{Source: lim(0.01, 3), IdleTTL: time.Minute, SweepInterval: time.Second})
	a := Request{Source: addr("10.0.0.1")}
	flood(l, t0, 0, 3, func(int) Request { return a }) // empty: refills in 300 s
	l.AllowAt(t0.Add(2*time.Minute), Request{Source: addr("10.0.0.2")})
	if _, s := l.Tracked(); s != 2 {
		t.Fatalf("after 2 min idle (not yet refilled) 10.0.0.1 must still be tracked: %d sources", s)
	}
	if d := l.AllowAt(t0.Add(2*time.Minute), a); !d.Allowed { // 1.2 tokens earned
		t.Fatalf("10.0.0.1 after 2 min: %+v", d)
	}
	if d := l.AllowAt(t0.Add(2*time.Minute), a); d.Allowed {
		t.Fatal("10.0.0.1 got a second token after 2 min: its bucket was reset")
	}
	// Ten minutes later every bucket is full and idle: forgotten.
	l.AllowAt(t0.Add(12*time.Minute), Request{Source: addr("10.0.0.3")})
	if _, s := l.Tracked(); s != 1 {
		t.Fatalf("%d sources tracked after every bucket refilled and idled, want 1", s)
	}
}

func TestMessageNamesScopeSubjectAndLimit(t *testing.T) {
	l := mustNew(t, Options{Catalog: map[string]Limit{"catalog2": {RPS: 2.5}}})
	r := Request{Method: "get_all_databases", Catalogs: []string{"catalog2"}}
	flood(l, t0, 0, 3, func(int) Request { return r })
	d := l.AllowAt(t0, r)
	want := "rate limit exceeded for catalog 'catalog2' while handling 'get_all_databases': rate-limit.catalog.catalog2 allows 2.5 requests/s, burst 3"
	if d.Message() != want {
		t.Fatalf("message\n got %q\nwant %q", d.Message(), want)
	}
}

func TestDisabledAndNilLimitersAllowEverything(t *testing.T) {
	var nilLim *Limiter
	if !nilLim.Allow(Request{Principal: "x"}).Allowed {
		t.Fatal("nil limiter refused")
	}
	l := mustNew(t, Options{})
	if l.Enabled() || !l.Allow(Request{Principal: "x"}).Allowed {
		t.Fatal("an empty configuration must allow everything")
	}
}

func TestValidateNamesTheKey(t *testing.T) {
	bad := Options{
		Principal:    &Limit{RPS: 0},
		Source:       &Limit{RPS: 10, Burst: -1},
		SourceCIDRs:  []CIDRRule{{Name: "pool", Limit: Limit{RPS: 5}}, {Name: "pool", Limit: Limit{RPS: 5}, Prefixes: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}},
		MethodFamily: map[string]Limit{"metadata_reads": {RPS: 1}},
		Catalog:      map[string]Limit{"catalog9": {RPS: 1}},
		RPCClass:     map[string]Limit{"admin": {RPS: 1}},
		Catalogs:     []string{"catalog1"},
	}
	_, err := New(bad)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		"rate-limit.principal.requests-per-second=0",
		"rate-limit.source.burst=-1",
		"rate-limit.source-cidr.pool.cidrs: missing",
		"rate-limit.source-cidr.pool: rule defined twice",
		`rate-limit.method-family.metadata_reads: unknown method family "metadata_reads"`,
		`rate-limit.catalog.catalog9: unknown catalog; not in catalogs= "catalog9"`,
		`rate-limit.rpc-class.admin: unknown RPC class "admin"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestParsePrefixes(t *testing.T) {
	got := mustPrefixes(t, "k", " 10.10.0.0/16, 10.20.3.4/16 ,192.168.1.1,2001:db8::/64,::ffff:10.1.0.0/112")
	want := []string{"10.10.0.0/16", "10.20.0.0/16", "192.168.1.1/32", "2001:db8::/64", "10.1.0.0/16"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("prefix %d = %s, want %s", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"", "10.0.0.0/33", "hs2-host", "10.0.0.0/8,nope"} {
		if _, err := ParsePrefixes("rate-limit.source-cidr.x.cidrs", bad); err == nil || !strings.Contains(err.Error(), "rate-limit.source-cidr.x.cidrs") {
			t.Errorf("ParsePrefixes(%q): %v", bad, err)
		}
	}
}

func mustPrefixes(t *testing.T, key, v string) []netip.Prefix {
	t.Helper()
	p, err := ParsePrefixes(key, v)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
