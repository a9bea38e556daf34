package routing

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/hms-proxy/hms-proxy/bench/proc"
	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed/difftest"
	"github.com/hms-proxy/hms-proxy/wire"
)

// The front-door storm (issue 9): the real hms-proxy binary, a child process with its own configuration, in front
// of a real Hive 3.1.3 metastore, is hit with at least 200,000 frames over many connections: mostly hostile calls
// the strict reader refuses, frames that declare huge sizes and send a little, and pipelined valid calls whose
// answers are checked, while idle connections stay open. Its memory (VmRSS / VmHWM of the child) stays within
// 2 x server.max-message-size + 100 MiB, returns near its baseline afterwards, and a normal client is answered.

const (
	stormMaxMessage = 16 << 20 // server.max-message-size of the storm: small, so the memory bound means something
	stormFrames     = 200_000
	// stormDeadline bounds the storm, not its speed: the 200,000 frames took
	// 2 min 8 s on this 2-core machine at a load average of 20 (other
	// engineers' builds and metastores); a quieter run takes a fraction.
	stormDeadline = 12 * time.Minute
	stormWorkers  = 32
	stormIdle     = 300
)

var proxyBinary struct {
	once sync.Once
	path string
	err  error
}

// buildProxy builds cmd/hms-proxy once per test binary.
func buildProxy(t *testing.T) string {
	t.Helper()
	proxyBinary.once.Do(func() {
		dir, err := os.MkdirTemp("", "hms-proxy-e2e-bin-")
		if err != nil {
			proxyBinary.err = err
			return
		}
		proxyBinary.path = filepath.Join(dir, "hms-proxy")
		out, err := exec.Command("go", "build", "-o", proxyBinary.path, "github.com/hms-proxy/hms-proxy/cmd/hms-proxy").CombinedOutput()
		if err != nil {
			proxyBinary.err = fmt.Errorf("go build ./cmd/hms-proxy: %v\n%s", err, out)
		}
	})
	if proxyBinary.err != nil {
		t.Fatal(proxyBinary.err)
	}
	return proxyBinary.path
}

// childProxy is the real binary running as a child process.
type childProxy struct {
	*proc.Child
	addr, mgmt string
	dir        string
}

// startChildProxy writes props (plus loopback ports, an audit file in the test's folder) and starts the binary
// with env (KEY=VALUE) added to its environment.
func startChildProxy(t *testing.T, props map[string]string, env ...string) *childProxy {
	t.Helper()
	bin := buildProxy(t)
	dir := t.TempDir()
	port, mport := proxytest.FreePort(t), proxytest.FreePort(t)
	p := map[string]string{
		"server.bind-host":     "127.0.0.1",
		"server.port":          strconv.Itoa(port),
		"management.enabled":   "true",
		"management.bind-host": "127.0.0.1",
		"management.port":      strconv.Itoa(mport),
		"audit.enabled":        "true",
		"audit.file":           filepath.Join(dir, "audit.log"),
	}
	for k, v := range props {
		p[k] = v
	}
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + p[k] + "\n")
	}
	file := filepath.Join(dir, "hms-proxy.properties")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	// env(1) execs the binary in place: the child keeps its pid and process group, and gets env on top of ours.
	args := append(append([]string{}, env...), bin, file)
	c, err := proc.StartWait("hms-proxy", filepath.Join(dir, "hms-proxy.log"), 30*time.Second, func() error {
		cn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		return cn.Close()
	}, "/usr/bin/env", args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			t.Logf("hms-proxy log (last lines):\n%s", proc.Tail(filepath.Join(dir, "hms-proxy.log"), 30))
		}
	})
	return &childProxy{Child: c, addr: addr, mgmt: "127.0.0.1:" + strconv.Itoa(mport), dir: dir}
}

func (c *childProxy) mem(t *testing.T) proc.Memory {
	t.Helper()
	m, err := proc.Mem(c.Pid())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// metric sums the samples of a counter or gauge on the child's /metrics whose labels include labels.
func (c *childProxy) metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + c.mgmt + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for i := 0; i+1 < len(labels); i += 2 {
			if !strings.Contains(line, labels[i]+`="`+labels[i+1]+`"`) {
				ok = false
			}
		}
		if f := strings.Fields(line); ok && len(f) >= 2 {
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err == nil {
				sum += v
			}
		}
	}
	return sum
}

// refusedFrames are hostile variants of one call per method (testbed/difftest's mutations) that the strict reader
// refuses before accepting any call: nothing of them may reach the metastore.
func refusedFrames(t *testing.T) [][]byte {
	t.Helper()
	strict, err := wire.NewStrictSchema(0)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, f := range difftest.Mutations(difftest.Generated(), rand.New(rand.NewPCG(5, 5)), 12, 1) {
		rd := wire.NewLazyReader(bytes.NewReader(f.Raw), stormMaxMessage, nil)
		var m wire.Message
		err := rd.NextCall(&m, strict)
		rd.Close()
		if err != nil && !errors.Is(err, io.EOF) && len(f.Raw) < stormMaxMessage && !isHTTPLike(f.Raw) {
			out = append(out, f.Raw)
		}
	}
	return out
}

func isHTTPLike(b []byte) bool {
	for _, m := range []string{"GET ", "POST", "PUT ", "HEAD", "OPTI", "DELE", "PATC", "CONN"} {
		if bytes.HasPrefix(b, []byte(m)) {
			return true
		}
	}
	return false
}

// getDatabase is a get_database("default") call with sequence id seq.
func getDatabase(seq int32) []byte {
	args := wire.Struct(wire.Field{ID: 1, V: wire.Str("default")})
	return wire.AppendMessage(nil, wire.Header{Name: "get_database", Type: wire.Call, SeqID: seq}, &args)
}

// checkDatabaseReply verifies an answer to getDatabase(seq): a REPLY with that sequence id whose Database is
// named default.
func checkDatabaseReply(m *wire.Message, seq int32) error {
	if m.Type != wire.Reply || m.Name != "get_database" || m.SeqID != seq {
		return fmt.Errorf("want the REPLY of get_database #%d, got type %d %q #%d", seq, m.Type, m.Name, m.SeqID)
	}
	v, err := wire.DecodeStruct(m.Body())
	if err != nil {
		return err
	}
	db := v.Field(0)
	if db == nil || db.Field(1).String() != "default" {
		return fmt.Errorf("get_database #%d answered %+v", seq, v)
	}
	return nil
}

type stormStats struct {
	frames, refused, huge, valid, conns atomic.Int64
}

// stormObserve is when memory is logged after the storm (HMS_PROXY_STORM_OBSERVE=150s observes longer).
func stormObserve() []time.Duration {
	out := []time.Duration{time.Second, 5 * time.Second, 10 * time.Second}
	if d, err := time.ParseDuration(os.Getenv("HMS_PROXY_STORM_OBSERVE")); err == nil {
		for at := 30 * time.Second; at <= d; at += 30 * time.Second {
			out = append(out, at)
		}
	}
	return out
}

func TestFrontDoorStormRealBinary(t *testing.T) {
	e2eutil.NeedHive(t)
	env := []string{}
	if v := os.Getenv("HMS_PROXY_STORM_GOMEMLIMIT"); v != "" {
		env = append(env, "GOMEMLIMIT="+v)
	}
	c := startChildProxy(t, map[string]string{
		"catalogs": "catalog1", "routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": e2eutil.HMS1.URI,
		"server.max-message-size":                   strconv.Itoa(stormMaxMessage),
		// one warning per refused connection would be 200,000 log lines
		"logging.level": "ERROR",
	}, env...)
	frames := refusedFrames(t)
	if len(frames) < 2000 {
		t.Fatalf("only %d refused frames", len(frames))
	}

	// Baseline: after a few valid calls, settled.
	if err := pipelined(c.addr, 1, 20); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	base := c.mem(t)
	t.Logf("baseline: VmRSS %d KiB, VmHWM %d KiB; %d distinct refused frames", base.RSSKiB, base.PeakKiB, len(frames))

	idle := make([]net.Conn, 0, stormIdle)
	t.Cleanup(func() {
		for _, cn := range idle {
			cn.Close()
		}
	})
	for i := 0; i < stormIdle; i++ {
		cn, err := net.DialTimeout("tcp", c.addr, 5*time.Second)
		if err != nil {
			t.Fatalf("idle connection %d: %v", i, err)
		}
		idle = append(idle, cn)
	}

	var st stormStats
	var failures sync.Map
	var nfail atomic.Int64
	fail := func(err error) {
		if nfail.Add(1) <= 10 {
			failures.Store(nfail.Load(), err.Error())
		}
	}
	start := time.Now()
	deadline := start.Add(stormDeadline)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < stormWorkers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 77))
			for st.frames.Load() < stormFrames && time.Now().Before(deadline) && nfail.Load() == 0 {
				i := next.Add(1)
				switch k := i % 100; {
				case k < 94:
					if err := sendRefused(c.addr, frames[int(i)%len(frames)]); err != nil {
						fail(err)
					}
					st.refused.Add(1)
					st.frames.Add(1)
				case k < 99:
					if err := sendHuge(c.addr, rng); err != nil {
						fail(err)
					}
					st.huge.Add(1)
					st.frames.Add(1)
				default:
					if err := pipelined(c.addr, int32(i*100), 10); err != nil {
						fail(err)
					}
					st.valid.Add(10)
					st.frames.Add(10)
				}
				st.conns.Add(1)
			}
		}(w)
	}
	wg.Wait()
	took := time.Since(start)
	failures.Range(func(_, v any) bool { t.Error(v); return true })
	during := c.mem(t)
	t.Logf("storm: %d frames (%d refused, %d huge declared sizes, %d valid pipelined calls answered) over %d connections in %v; VmHWM %d KiB",
		st.frames.Load(), st.refused.Load(), st.huge.Load(), st.valid.Load(), st.conns.Load(), took.Round(time.Millisecond), during.PeakKiB)
	if st.frames.Load() < stormFrames {
		t.Errorf("only %d frames within %v", st.frames.Load(), stormDeadline)
	}
	bound := int64(2*stormMaxMessage+100<<20) >> 10
	if during.PeakKiB > bound {
		t.Errorf("peak RSS %d KiB is above 2 x max-message-size + 100 MiB = %d KiB", during.PeakKiB, bound)
	}

	// The idle connections are still served.
	for i, cn := range idle[:10] {
		if err := pipelinedOn(cn, int32(9000+i), 1); err != nil {
			t.Errorf("idle connection %d after the storm: %v", i, err)
		}
	}
	for _, cn := range idle {
		cn.Close()
	}
	idle = idle[:0]

	// Memory goes back near the baseline: the proxy's reclaimer (app/reclaim.go) returns a burst's memory once
	// allocation has been quiet for a period of 5 s.
	settleStart := time.Now()
	var after proc.Memory
	for {
		after = c.mem(t)
		if after.RSSKiB <= base.RSSKiB+32<<10 || time.Since(settleStart) > 3*time.Minute {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("after: VmRSS %d KiB (baseline %d KiB) %v after the storm", after.RSSKiB, base.RSSKiB, time.Since(settleStart).Round(time.Millisecond))
	if after.RSSKiB > base.RSSKiB+32<<10 {
		t.Errorf("RSS %d KiB 3 minutes after the storm, more than 32 MiB above the baseline %d KiB", after.RSSKiB, base.RSSKiB)
	}
	// How far it goes on returning (logged, not asserted: the runtime's scavenger paces itself).
	for _, at := range stormObserve() {
		time.Sleep(at - time.Since(settleStart))
		t.Logf("%v after the storm: VmRSS %d KiB; Go heap in use %.1f MiB, idle %.1f MiB of which released %.1f MiB, stacks %.1f MiB",
			at, c.mem(t).RSSKiB, c.metric(t, "go_memstats_heap_inuse_bytes")/(1<<20), c.metric(t, "go_memstats_heap_idle_bytes")/(1<<20),
			c.metric(t, "go_memstats_heap_released_bytes")/(1<<20), c.metric(t, "go_memstats_stack_inuse_bytes")/(1<<20))
	}

	bad := c.metric(t, "hms_proxy_bad_frames_total")
	if want := float64(st.refused.Load() + st.huge.Load()); bad < want {
		t.Errorf("hms_proxy_bad_frames_total = %v, want at least the %v refused frames", bad, want)
	}
	cl := proxytest.Client(t, "thrift://"+c.addr)
	db, err := cl.GetDatabase(e2eutil.Ctx(t), "default")
	if err != nil || db.Name != "default" {
		t.Fatalf("a normal client after the storm: %v %v", db, err)
	}
}

// sendRefused sends one refused frame on its own connection, half-closes, and expects at most a
// TApplicationException before the proxy closes the connection.
func sendRefused(addr string, frame []byte) error {
	cn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return err
	}
	defer cn.Close()
	_ = cn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := cn.Write(frame); err != nil && !isReset(err) {
		return err
	}
	_ = cn.(*net.TCPConn).CloseWrite()
	r := bufio.NewReader(cn)
	m, err := wire.ReadMessage(r, wire.Limits{MaxMessage: 1 << 20}, nil)
	switch {
	case errors.Is(err, io.EOF) || isReset(err):
		return nil
	case err != nil:
		return fmt.Errorf("a refused frame: reading the answer: %v (frame %x)", err, clipBytes(frame))
	case m.Type != wire.Exception:
		return fmt.Errorf("a refused frame was answered with message type %d (%s), not an exception (frame %x)", m.Type, m.Name, clipBytes(frame))
	}
	if _, err := wire.ReadMessage(r, wire.Limits{MaxMessage: 1 << 20}, nil); !errors.Is(err, io.EOF) && !isReset(err) {
		return fmt.Errorf("after refusing a frame the proxy must close the connection, got %v", err)
	}
	return nil
}

// sendHuge declares a string, a list or a message far larger than what it sends (4 KiB to 4 MiB), holds the
// connection a moment, and closes it.
func sendHuge(addr string, rng *rand.Rand) error {
	cn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return err
	}
	defer cn.Close()
	_ = cn.SetDeadline(time.Now().Add(30 * time.Second))
	b := wire.AppendHeader(nil, wire.Header{Name: "get_database", Type: wire.Call, SeqID: 1})
	switch rng.IntN(3) {
	case 0: // a string just under the message limit
		b = append(wire.AppendFieldHeader(b, wire.TString, 1), 0x00, 0xf0, 0x00, 0x00)
	case 1: // a string of 100 MiB, over it
		b = append(wire.AppendFieldHeader(b, wire.TString, 1), 0x06, 0x40, 0x00, 0x00)
	default: // an unknown list of 2^31-1 strings
		b = append(wire.AppendFieldHeader(b, wire.TList, 77), wire.TString, 0x7f, 0xff, 0xff, 0xff)
	}
	if _, err := cn.Write(b); err != nil {
		return nil // refused already
	}
	send := 4<<10 + rng.IntN(4<<20)
	chunk := make([]byte, 64<<10)
	for sent := 0; sent < send; sent += len(chunk) {
		if _, err := cn.Write(chunk[:min(len(chunk), send-sent)]); err != nil {
			return nil // the proxy gave up on it (too large, or the in-flight budget): as it should
		}
	}
	time.Sleep(time.Duration(rng.IntN(200)) * time.Millisecond)
	return nil
}

// pipelined sends n get_database calls at once on a new connection and checks every answer.
func pipelined(addr string, seq0 int32, n int) error {
	cn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return err
	}
	defer cn.Close()
	return pipelinedOn(cn, seq0, n)
}

func pipelinedOn(cn net.Conn, seq0 int32, n int) error {
	_ = cn.SetDeadline(time.Now().Add(60 * time.Second))
	var b []byte
	for i := 0; i < n; i++ {
		b = append(b, getDatabase(seq0+int32(i))...)
	}
	if _, err := cn.Write(b); err != nil {
		return err
	}
	r := bufio.NewReader(cn)
	for i := 0; i < n; i++ {
		m, err := wire.ReadMessage(r, wire.Limits{MaxMessage: 1 << 20}, nil)
		if err != nil {
			return fmt.Errorf("pipelined call %d of %d: %v", i+1, n, err)
		}
		if err := checkDatabaseReply(m, seq0+int32(i)); err != nil {
			return err
		}
	}
	return nil
}

func isReset(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "broken pipe"))
}

func clipBytes(b []byte) []byte {
	if len(b) > 96 {
		return b[:96]
	}
	return b
}

// 10,000 idle connections to the real binary cost well under 256 MiB, and a new client is served at once while
// they are open.
func TestFrontDoorTenThousandIdleConnections(t *testing.T) {
	e2eutil.NeedHive(t)
	const n = 10_000
	c := startChildProxy(t, map[string]string{
		"catalogs": "catalog1", "routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": e2eutil.HMS1.URI,
		"logging.level": "WARN",
	})
	if err := pipelined(c.addr, 1, 5); err != nil {
		t.Fatal(err)
	}
	base := c.mem(t)
	conns := make([]net.Conn, n)
	t.Cleanup(func() {
		for _, cn := range conns {
			if cn != nil {
				cn.Close()
			}
		}
	})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				cn, err := net.DialTimeout("tcp", c.addr, 10*time.Second)
				if err != nil {
					errs <- fmt.Errorf("idle connection %d: %v", i, err)
					return
				}
				conns[i] = cn
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for c.metric(t, "hms_proxy_frontend_connections") < n && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if got := c.metric(t, "hms_proxy_frontend_connections"); got < n {
		t.Fatalf("hms_proxy_frontend_connections = %v, want the %d open connections", got, n)
	}
	time.Sleep(time.Second)
	m := c.mem(t)
	t.Logf("%d idle connections: VmRSS %d KiB (before them %d KiB), VmHWM %d KiB", n, m.RSSKiB, base.RSSKiB, m.PeakKiB)
	if m.RSSKiB > 256<<10 {
		t.Errorf("%d idle connections take RSS to %d KiB, over 256 MiB", n, m.RSSKiB)
	}
	start := time.Now()
	if err := pipelined(c.addr, 100, 1); err != nil {
		t.Fatalf("a new client with %d idle connections open: %v", n, err)
	}
	// Idle connections take no worker: answered at once, not after the 30 s
	// a call waits in a full worker queue (a bound a slow machine keeps).
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("a new client waited %v with %d idle connections open", d, n)
	}
	t.Logf("a new client was answered in %v", time.Since(start).Round(time.Microsecond))
}
