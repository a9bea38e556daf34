package proxytest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/wire"
)

// Bounds of one Tap: a test that goes past them fails instead of letting the
// tap grow without limit.
const (
	tapMaxMessage = 64 << 20 // one call or reply
	tapMaxCalls   = 1 << 16  // calls recorded between two Resets
	tapMaxConns   = 128      // connections open at once
)

// TapCall is one call the proxy sent through a Tap.
type TapCall struct {
	Method string
	Type   byte // wire.Call or wire.Oneway
	SeqID  int32
	Args   wire.Value // the decoded *_args struct, exactly as sent
	// Reply is the backend's answer; nil for oneway calls, calls the tap hung
	// up on, and calls whose answer has not (yet) come.
	Reply *TapReply
	// HungUp: the tap closed the connection instead of forwarding the call.
	HungUp bool
	// Conn numbers the proxy's connection the call came on (1 for the first
	// the tap accepted): two calls with one Conn went over one backend
	// session.
	Conn int
}

// TapReply is a backend's answer to one TapCall.
type TapReply struct {
	Type   byte       // wire.Reply or wire.Exception
	Result wire.Value // the *_result struct, or the TApplicationException struct
}

// AppException returns the TApplicationException type and message of an
// Exception reply; ok is false for a normal reply.
func (r *TapReply) AppException() (typ int32, msg string, ok bool) {
	if r == nil || r.Type != wire.Exception {
		return 0, "", false
	}
	return int32(r.Result.Field(2).Int), r.Result.Field(1).String(), true
}

// Tap is a recording TCP forwarder for tests: the proxy talks to the Tap's
// loopback port, the Tap to a real metastore. Bytes go through unchanged in
// both directions; on the way it parses the unframed TBinaryProtocol stream
// (wire.ReadMessage) and records every call with its decoded arguments and
// the backend's answer, so a test can assert what the backend actually
// received. Each call is recorded before it is forwarded and each answer
// before it is passed back, so by the time a client has the proxy's answer
// the Tap has every backend call that produced it.
//
// Framed transport is not supported: a stream the Tap cannot parse fails the
// test (at cleanup) instead of being forwarded blindly.
type Tap struct {
	t       testing.TB
	backend string // host:port
	ln      net.Listener

	mu       sync.Mutex
	calls    []*TapCall
	dropped  int
	errs     []string
	conns    map[*tapConn]struct{}
	hangUp   bool
	hangOn   map[string]bool // methods hung up on while hangUp is off
	accepted int             // connections accepted so far (TapCall.Conn)
	closing  bool
	wg       sync.WaitGroup
	once     sync.Once
}

type tapConn struct {
	client  net.Conn
	n       int        // TapCall.Conn of its calls
	pending []*TapCall // guarded by Tap.mu

	mu      sync.Mutex
	backend net.Conn // dialed at the first forwarded call
	closed  bool
}

func (c *tapConn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		c.client.Close()
		if c.backend != nil {
			c.backend.Close()
		}
	}
}

// setBackend attaches the backend connection; false if the pair is closed.
func (c *tapConn) setBackend(b net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		b.Close()
		return false
	}
	c.backend = b
	return true
}

// NewTap starts a Tap in front of backendURI (thrift://host:port, loopback
// only) on a free loopback port; it closes when the test ends and fails the
// test if it met a stream it could not parse or dropped records.
func NewTap(t testing.TB, backendURI string) *Tap {
	t.Helper()
	tap, err := newTap(t, backendURI)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tap.close)
	return tap
}

func newTap(t testing.TB, backendURI string) (*Tap, error) {
	u, err := url.Parse(backendURI)
	if err != nil || u.Scheme != "thrift" || u.Port() == "" {
		return nil, fmt.Errorf("tap: backend %q is not thrift://host:port", backendURI)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("tap: backend %q is not a loopback address; tests stay on this machine", backendURI)
	}
	ln, err := listenOutsideEphemeral()
	if err != nil {
		return nil, fmt.Errorf("tap: %v", err)
	}
	tap := &Tap{t: t, backend: u.Host, ln: ln, conns: map[*tapConn]struct{}{}}
	tap.wg.Add(1)
	go tap.accept()
	return tap, nil
}

// listenOutsideEphemeral binds a loopback port below the kernel's ephemeral
// range. Other test processes on the machine pick "free" ports from that
// range and then dial them until their server is up (a metastore's
// readiness ping); a Tap listening on such a port would record their calls
// as the proxy's. Below the range nobody is handed the Tap's port.
func listenOutsideEphemeral() (net.Listener, error) {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	const floor = 10000
	if low-floor >= 1000 {
		for i := 0; i < 64; i++ {
			port := floor + rand.IntN(low-floor)
			if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
				return ln, nil
			}
		}
	}
	return net.Listen("tcp", "127.0.0.1:0")
}

// URI is the address the proxy should use instead of the backend's.
func (tp *Tap) URI() string { return "thrift://" + tp.ln.Addr().String() }

// Calls returns the calls recorded since the last Reset, in arrival order.
// The values are shared with the Tap: read them, do not change them.
func (tp *Tap) Calls() []TapCall {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	out := make([]TapCall, len(tp.calls))
	for i, c := range tp.calls {
		out[i] = *c
	}
	return out
}

// Methods returns the method names of Calls.
func (tp *Tap) Methods() []string {
	calls := tp.Calls()
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.Method
	}
	return out
}

// Reset forgets the recorded calls.
func (tp *Tap) Reset() {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.calls, tp.dropped = nil, 0
}

// HangUp switches the failure mode: while on, every call is recorded (with
// HungUp set) and its connection closed instead of being forwarded, so the
// proxy sees a backend that dies mid-call. The real backend never sees it.
func (tp *Tap) HangUp(on bool) {
	tp.mu.Lock()
	tp.hangUp = on
	tp.mu.Unlock()
}

// HangUpOn hangs up on calls of the named methods only (none: forward
// every call again); the others pass through as usual.
func (tp *Tap) HangUpOn(methods ...string) {
	tp.mu.Lock()
	tp.hangOn = map[string]bool{}
	for _, m := range methods {
		tp.hangOn[m] = true
	}
	tp.mu.Unlock()
}

func (tp *Tap) fail(format string, args ...any) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if !tp.closing && len(tp.errs) < 20 {
		tp.errs = append(tp.errs, fmt.Sprintf(format, args...))
	}
}

func (tp *Tap) close() { tp.once.Do(tp.shutdown) }

func (tp *Tap) shutdown() {
	tp.mu.Lock()
	tp.closing = true
	conns := make([]*tapConn, 0, len(tp.conns))
	for c := range tp.conns {
		conns = append(conns, c)
	}
	errs, dropped := tp.errs, tp.dropped
	tp.mu.Unlock()
	tp.ln.Close()
	for _, c := range conns {
		c.close()
	}
	tp.wg.Wait()
	for _, e := range errs {
		tp.t.Errorf("tap in front of %s: %s", tp.backend, e)
	}
	if dropped > 0 {
		tp.t.Errorf("tap in front of %s recorded only the first %d calls and dropped %d; Reset it between steps", tp.backend, tapMaxCalls, dropped)
	}
}

func (tp *Tap) accept() {
	defer tp.wg.Done()
	for {
		c, err := tp.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				tp.fail("accept: %v", err)
			}
			return
		}
		pc := &tapConn{client: c}
		tp.mu.Lock()
		full := len(tp.conns) >= tapMaxConns
		closing := tp.closing
		if !full && !closing {
			tp.accepted++
			pc.n = tp.accepted
			tp.conns[pc] = struct{}{}
			tp.wg.Add(1)
		}
		tp.mu.Unlock()
		if full || closing {
			c.Close()
			if full {
				tp.fail("more than %d connections at once; refused one", tapMaxConns)
			}
			continue
		}
		go tp.serve(pc)
	}
}

// serve forwards the proxy's calls of one connection, recording each.
func (tp *Tap) serve(pc *tapConn) {
	defer tp.wg.Done()
	defer func() {
		pc.close()
		tp.mu.Lock()
		delete(tp.conns, pc)
		tp.mu.Unlock()
	}()
	r := bufio.NewReaderSize(pc.client, 64<<10)
	var backend net.Conn
	for {
		m, err := wire.ReadMessage(r, wire.Limits{MaxMessage: tapMaxMessage}, nil)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				tp.fail("reading a call from the proxy: %v", err)
			}
			return
		}
		call := &TapCall{Method: m.Name, Type: m.Type, SeqID: m.SeqID, Conn: pc.n}
		if call.Args, err = wire.DecodeStruct(m.Body()); err != nil {
			tp.fail("decoding the arguments of %s: %v", m.Name, err)
			return
		}
		tp.mu.Lock()
		hangUp := tp.hangUp || tp.hangOn[m.Name]
		call.HungUp = hangUp
		if len(tp.calls) < tapMaxCalls {
			tp.calls = append(tp.calls, call)
		} else {
			tp.dropped++
		}
		if !hangUp && m.Type != wire.Oneway {
			pc.pending = append(pc.pending, call)
		}
		tp.mu.Unlock()
		if hangUp {
			return
		}
		if backend == nil {
			b, err := net.DialTimeout("tcp", tp.backend, 10*time.Second)
			if err != nil {
				// The metastore is gone: the proxy sees a connection that
				// closes, as it would with the metastore itself.
				return
			}
			if !pc.setBackend(b) {
				return
			}
			backend = b
			tp.wg.Add(1)
			go tp.relayReplies(pc, b)
		}
		if _, err := backend.Write(m.Raw); err != nil {
			return
		}
	}
}

// relayReplies passes the backend's answers of one connection back,
// attaching each to the oldest call waiting for one.
func (tp *Tap) relayReplies(pc *tapConn, backend net.Conn) {
	defer tp.wg.Done()
	defer pc.close()
	r := bufio.NewReaderSize(backend, 64<<10)
	for {
		m, err := wire.ReadMessage(r, wire.Limits{MaxMessage: tapMaxMessage}, nil)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "connection reset") {
				tp.fail("reading an answer from the backend: %v", err)
			}
			return
		}
		reply := &TapReply{Type: m.Type}
		if reply.Result, err = wire.DecodeStruct(m.Body()); err != nil {
			tp.fail("decoding the answer to %s: %v", m.Name, err)
			return
		}
		tp.mu.Lock()
		if len(pc.pending) > 0 {
			pc.pending[0].Reply = reply
			pc.pending = pc.pending[1:]
		}
		tp.mu.Unlock()
		if _, err := pc.client.Write(m.Raw); err != nil {
			return
		}
	}
}
