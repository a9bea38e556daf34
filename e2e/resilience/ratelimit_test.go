package resilience

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/router"
	"github.com/hms-proxy/hms-proxy/security"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Rate limits, one scope at a time, in real time (no test clock: the
// proxy's own limiter decides): a burst of calls on the limited subject for
// a short window, about 10x the limit from 2 connections (bounded: at most
// 3,000 attempts), while another subject's calls run beside it. The limited
// subject gets through what a token bucket of the configured limit lets
// through the same attempts, within 10 % (on an idle machine that is
// burst + rate × window); the other subject is never throttled. Every scope
// gets its own proxy, so no other bucket takes part.

const (
	rlRate   = 50 // requests per second
	rlBurst  = 10
	rlWindow = 2 * time.Second
)

// caller makes one call and reports its error ("" subject: a throttled
// call is a MetaException naming the rate limit).
type caller func() error

// dialFrom opens a client to the proxy from a given loopback source
// address (127.0.0.0/8 is all local on Linux).
func dialFrom(t *testing.T, uri, src string) *thriftgen.Client {
	t.Helper()
	d := net.Dialer{Timeout: 10 * time.Second}
	if src != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(src)}
	}
	conn, err := d.Dial("tcp", strings.TrimPrefix(uri, "thrift://"))
	if err != nil {
		t.Fatalf("connect from %s: %v", src, err)
	}
	cfg := &thrift.TConfiguration{SocketTimeout: 60 * time.Second}
	trans := thrift.NewTBufferedTransport(thrift.NewTSocketFromConnConf(conn, cfg), 64<<10)
	t.Cleanup(func() { trans.Close() })
	proto := thrift.NewTBinaryProtocolConf(trans, cfg)
	return thriftgen.NewClient(thrift.NewTStandardClient(proto, proto))
}

// throttled: the MetaException of a refused call, or the
// TApplicationException of one whose RPC declares no MetaException
// (check_lock).
func throttled(err error) bool {
	var me *thriftgen.MetaException
	var ae thrift.TApplicationException
	return errors.As(err, &me) && strings.Contains(me.Message, "rate limit exceeded") ||
		errors.As(err, &ae) && strings.Contains(ae.Error(), "rate limit exceeded")
}

// burst runs limited (from several callers at once) for the window and
// other beside it; it returns how many limited calls got through, how many
// were throttled, and the start times of the attempts; it fails the test on
// any throttled call of other.
func burst(t *testing.T, limited []caller, other caller) (allowed, refused int, starts []time.Time) {
	t.Helper()
	var a, r, attempts atomic.Int64
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, call := range limited {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for attempts.Add(1) <= 3000 {
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Millisecond): // ~500 calls/s per caller: 10x the limit
				}
				start := time.Now()
				err := call()
				mu.Lock()
				starts = append(starts, start)
				mu.Unlock()
				switch {
				case err == nil:
					a.Add(1)
				case throttled(err):
					r.Add(1)
				default: // an answer of the metastore: the limit let it through
					a.Add(1)
				}
			}
		}()
	}
	var otherCalls, otherThrottled atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := other(); throttled(err) {
				if otherThrottled.Add(1) == 1 {
					t.Logf("another scope's call throttled: %v", err)
				}
			}
			otherCalls.Add(1)
			// 40 calls/s: under the limit, which the other subject of a
			// per-key scope (another principal, address) has too.
			time.Sleep(25 * time.Millisecond)
		}
	}()
	time.Sleep(rlWindow)
	close(stop)
	wg.Wait()
	if n := otherThrottled.Load(); n > 0 {
		t.Errorf("%d of %d calls of another scope were throttled", n, otherCalls.Load())
	}
	if otherCalls.Load() < 10 {
		t.Errorf("only %d calls of another scope ran beside the burst", otherCalls.Load())
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	return int(a.Load()), int(r.Load()), starts
}

// bucketAllows replays attempts through a token bucket of the configured
// limit: how many it lets through. Arrivals are what they were (a machine
// that stalls the callers makes fewer attempts, and a bucket that is full
// during a stall saves no more than its burst), so the comparison holds on
// a loaded machine too.
func bucketAllows(starts []time.Time) int {
	tokens, n := float64(rlBurst), 0
	var last time.Time
	for i, at := range starts {
		if i > 0 {
			tokens = math.Min(rlBurst, tokens+at.Sub(last).Seconds()*rlRate)
		}
		last = at
		if tokens >= 1 {
			tokens--
			n++
		}
	}
	return n
}

// within10 asserts allowed is what the limit lets through the attempts
// made, within 10 %.
func within10(t *testing.T, scope string, allowed, refused int, starts []time.Time) {
	t.Helper()
	want := float64(bucketAllows(starts))
	window := time.Duration(0)
	if len(starts) > 1 {
		window = starts[len(starts)-1].Sub(starts[0])
	}
	t.Logf("%s: %d calls let through, %d throttled, over %v; the limit (rate %d/s, burst %d) allows %.0f of these attempts (burst + rate x window: %.0f)",
		scope, allowed, refused, window.Round(time.Millisecond), rlRate, rlBurst, want, rlBurst+rlRate*window.Seconds())
	if math.Abs(float64(allowed)-want) > 0.1*want {
		t.Errorf("%s: %d calls let through; the limit allows %.0f of the %d attempts (±10 %%)", scope, allowed, want, len(starts))
	}
	if refused == 0 {
		t.Errorf("%s: nothing was throttled", scope)
	}
}

func limitProps(prefix string, extra ...string) map[string]string {
	return props(append([]string{
		prefix + ".requests-per-second=" + fmt.Sprint(rlRate),
		prefix + ".burst=" + fmt.Sprint(rlBurst),
	}, extra...)...)
}

func TestRateLimitPerScope(t *testing.T) {
	needHive(t)
	bg := context.Background()
	getDB := func(c *thriftgen.Client, name string) caller {
		return func() error { _, err := c.GetDatabase(bg, name); return err }
	}
	cases := []struct {
		scope, prefix   string
		extra           []string
		limited         func(uri string) []caller
		other           func(uri string) caller
		dimension, name string
	}{
		{scope: "catalog", prefix: "rate-limit.catalog.catalog2", dimension: "catalog", name: "catalog2",
			limited: func(uri string) []caller {
				return []caller{getDB(dialFrom(t, uri, ""), "catalog2__default"), getDB(dialFrom(t, uri, ""), "catalog2__default")}
			},
			other: func(uri string) caller { return getDB(dialFrom(t, uri, ""), "default") }},
		{scope: "method family", prefix: "rate-limit.method-family.metadata_read", dimension: "method_family", name: "metadata_read",
			limited: func(uri string) []caller {
				return []caller{getDB(dialFrom(t, uri, ""), "default"), getDB(dialFrom(t, uri, ""), "catalog2__default")}
			},
			other: func(uri string) caller {
				c := dialFrom(t, uri, "")
				return func() error { _, err := c.GetAllFunctions(bg); return err }
			}},
		{scope: "rpc class", prefix: "rate-limit.rpc-class.lock", dimension: "rpc_class", name: "lock",
			limited: func(uri string) []caller {
				var out []caller
				for i := 0; i < 2; i++ {
					c := dialFrom(t, uri, "")
					out = append(out, func() error { _, err := c.CheckLock(bg, &thriftgen.CheckLockRequest{Lockid: 987654321}); return err })
				}
				return out
			},
			other: func(uri string) caller { return getDB(dialFrom(t, uri, ""), "default") }},
		{scope: "source", prefix: "rate-limit.source", dimension: "source", name: "default",
			limited: func(uri string) []caller {
				return []caller{getDB(dialFrom(t, uri, "127.0.0.2"), "default"), getDB(dialFrom(t, uri, "127.0.0.2"), "default")}
			},
			other: func(uri string) caller { return getDB(dialFrom(t, uri, "127.0.0.3"), "default") }},
		{scope: "source CIDR", prefix: "rate-limit.source-cidr.pool", extra: []string{"rate-limit.source-cidr.pool.cidrs=127.0.0.8/29"},
			dimension: "source_cidr", name: "pool",
			limited: func(uri string) []caller { // two addresses of the rule share its one bucket
				return []caller{getDB(dialFrom(t, uri, "127.0.0.9"), "default"), getDB(dialFrom(t, uri, "127.0.0.10"), "default")}
			},
			other: func(uri string) caller { return getDB(dialFrom(t, uri, "127.0.0.3"), "default") }},
	}
	for _, tc := range cases {
		t.Run(tc.scope, func(t *testing.T) {
			p := proxytest.Start(t, limitProps(tc.prefix, tc.extra...))
			allowed, refused, starts := burst(t, tc.limited(p.URI("primary")), tc.other(p.URI("primary")))
			within10(t, tc.scope, allowed, refused, starts)
			if got := p.Metric(t, "hms_proxy_rate_limited_total", "dimension", tc.dimension, "scope", tc.name); int(got) != refused {
				t.Errorf("hms_proxy_rate_limited_total{dimension=%s,scope=%s} = %v, %d calls were throttled", tc.dimension, tc.name, got, refused)
			}
			if got := p.Metric(t, "hms_proxy_requests_total", "status", "throttled"); int(got) != refused {
				t.Errorf("hms_proxy_requests_total{status=throttled} = %v, %d calls were throttled", got, refused)
			}
		})
	}
}

// The principal scope applies to callers the front door authenticated. The
// calls go into the proxy's router with the identity the SASL front door
// binds to a Kerberos connection (a KDC-backed client would add minutes and
// test the handshake, not the limit): alice is limited, bob is not, and a
// set_ugi user of the same name takes no token at all.
func TestRateLimitPerPrincipal(t *testing.T) {
	needHive(t)
	p := proxytest.Start(t, limitProps("rate-limit.principal"))
	conn := func(id *security.Identity) *router.ConnInfo {
		c := &router.ConnInfo{Remote: "127.0.0.1:40000"}
		c.SetIdentity(id)
		return c
	}
	args := wire.Struct(wire.Field{ID: 1, V: wire.Str("default")})
	msg := wire.AppendMessage(nil, wire.Header{Name: "get_database", Type: wire.Call, SeqID: 1}, &args)
	call := func(c *router.ConnInfo) caller {
		return func() error {
			m, err := wire.ParseMessage(msg, 1<<20)
			if err != nil {
				return err
			}
			out := p.Router.Handle(context.Background(), c, m, nil)
			reply, err := wire.ParseMessage(out, 16<<20)
			if err != nil {
				return err
			}
			v, err := wire.DecodeStruct(reply.Body())
			if err != nil {
				return err
			}
			for _, f := range v.Fields {
				if f.ID != 0 { // an exception of get_database's result
					return &thriftgen.MetaException{Message: f.V.Field(1).String()}
				}
			}
			return nil
		}
	}
	kerberos := func(user string) *security.Identity {
		return &security.Identity{User: user, Mechanism: security.Kerberos, Principal: user + "@EXAMPLE.COM"}
	}
	alice := conn(kerberos("alice"))
	allowed, refused, starts := burst(t, []caller{call(alice), call(alice)}, call(conn(kerberos("bob"))))
	within10(t, "principal", allowed, refused, starts)
	if got := p.Metric(t, "hms_proxy_rate_limited_total", "dimension", "principal", "scope", "default"); int(got) != refused {
		t.Errorf("hms_proxy_rate_limited_total{dimension=principal} = %v, %d calls were throttled", got, refused)
	}
	ugi := conn(&security.Identity{User: "alice", Mechanism: security.SetUGI})
	for i := 0; i < 3*rlBurst; i++ {
		if err := call(ugi)(); err != nil {
			t.Fatalf("a set_ugi caller named alice, call %d: %v", i, err)
		}
	}
}

// A fan-out takes one token of every catalog it asks: with catalog2 at one
// call per 10 s, the first get_all_databases passes, the second is
// throttled naming catalog2, and catalog1's own calls are not affected.
func TestRateLimitFanOutTakesATokenOfEachCatalog(t *testing.T) {
	needHive(t)
	p := proxytest.Start(t, props("rate-limit.catalog.catalog2.requests-per-second=1", "rate-limit.catalog.catalog2.burst=1",
		"rate-limit.catalog.catalog1.requests-per-second=1000"))
	c := proxytest.Client(t, p.URI("primary"))
	if _, err := c.GetAllDatabases(ctx(t)); err != nil {
		t.Fatalf("first fan-out: %v", err)
	}
	_, err := c.GetAllDatabases(ctx(t))
	metaErr(t, err, "rate limit exceeded for catalog 'catalog2'", "get_all_databases")
	for i := 0; i < 20; i++ {
		if _, err := c.GetDatabase(ctx(t), "default"); err != nil {
			t.Fatalf("catalog1 after catalog2 ran dry: %v", err)
		}
	}
	if got := p.Metric(t, "hms_proxy_rate_limited_total", "dimension", "catalog", "scope", "catalog2", "catalog", "catalog2", "method", "get_all_databases"); got != 1 {
		t.Errorf("hms_proxy_rate_limited_total{catalog2, get_all_databases} = %v, want 1", got)
	}
	if n := len(auditRecords(t, p, `"method":"get_all_databases"`, `"status":"throttled"`)); n != 1 {
		t.Errorf("%d audit records of a throttled get_all_databases, want 1", n)
	}
}
