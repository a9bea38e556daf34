// Package frontdoor runs the Thrift listeners clients connect to: one per
// frontend profile and port, all feeding the same router.
package frontdoor

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/hms-proxy/hms-proxy/audit"
	"github.com/hms-proxy/hms-proxy/router"
	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/security"
	"github.com/hms-proxy/hms-proxy/security/sasl"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Config is one listener's socket behaviour.
type Config struct {
	Name     string // "" for the primary listener
	BindHost string
	Port     int
	// MaxWorkers bounds the calls served at once (server.max-worker-threads).
	// Connections themselves are not bounded by it: an idle connection costs
	// a parked goroutine and no buffer, and is closed by ClientSocketTimeout.
	MaxWorkers int
	// MaxQueued calls may wait for a free worker (0: as many as MaxWorkers),
	// each at most QueueWait (0: 30 s); past either the call is answered with
	// a TApplicationException that says the listener is busy, and the
	// connection stays open.
	MaxQueued int
	QueueWait time.Duration
	// MaxConnsPerSource bounds the open connections of one source address
	// (0: no bound); a connection past it is closed at once and counted.
	MaxConnsPerSource   int
	ClientSocketTimeout time.Duration // read timeout between requests; 0 = none
	KeepAlive           bool
	KeepAliveIdle       time.Duration
	KeepAliveInterval   time.Duration
	KeepAliveCount      int
	Framed              bool
	MaxMessage          int
	// Strict is the strict reading of the listener's profile: a message
	// Hive's reader could parse differently never reaches a backend.
	Strict *wire.StrictSchema
	// Budget bounds the bytes of messages in progress over every connection
	// sharing it, and pools the read buffers of busy connections (nil: none).
	Budget *wire.Budget
	// TLS, when set, is the listener's TLS (server.tls.*): every accepted
	// connection does the handshake first; SASL (Auth) runs inside it.
	TLS *tls.Config
	// Auth, when set, authenticates every accepted connection before any
	// call is read (security.mode=KERBEROS: SASL GSSAPI or DIGEST-MD5). Calls
	// are then read only from the connection it returns. Framed transport
	// cannot be combined with it (Hive refuses SASL with framing).
	Auth Authenticator
}

// Authenticator runs a connection's authentication handshake (bounded by
// its own deadline). On success it returns the connection calls are read
// from and written to (one Write = one reply) and the caller's identity; on
// failure it has closed c, counted and answered the failure as the protocol
// allows, and returns the error for the listener to log.
type Authenticator interface {
	Accept(c net.Conn) (net.Conn, *security.Identity, error)
}

// Handler serves one message (the router).
type Handler interface {
	Handle(ctx context.Context, conn *router.ConnInfo, msg *wire.Message, out []byte) []byte
}

// Hooks let the listener report to metrics without importing them.
type Hooks struct {
	BadInput    func(reason string)
	Connections func(delta int)
	// Refused counts a call or connection refused by admission: reason
	// "busy" (no worker within the queue bounds) or "per_source" (the
	// source's connection cap).
	Refused func(reason string)
	// InFlight reports calls being served (+1 when one starts, -1 when it ends).
	InFlight func(delta int)
}

// Listener is one front-door Thrift listener.
type Listener struct {
	cfg   Config
	fe    *planner.Frontend
	h     Handler
	log   *slog.Logger
	hooks Hooks

	ln        net.Listener
	accepting atomic.Bool // bound, accept loop running, not draining
	workers   chan struct{}
	waiting   atomic.Int32
	outs      sync.Pool // reply buffers of calls in progress

	perSourceLog rate.Sometimes // the WARN of per-source refusals, rate-limited

	mu       sync.Mutex
	conns    map[*conn]struct{}
	sources  map[string]int
	closing  bool
	wg       sync.WaitGroup
	acceptWG sync.WaitGroup
}

type conn struct {
	c         net.Conn
	inProcess bool // ServeConn: no socket of its own (no TLS)
	idle      bool // waiting for the first byte of its next call (the drain closes it there)
	src       string
	remote    string             // the client's address when it is not c's (in-process callers)
	id        *security.Identity // an identity established before the connection reached the listener
	readBy    wire.Deadline      // c's read deadline, moved only past a slack (setIdleDeadline)
}

// New builds a listener (not yet bound).
func New(cfg Config, fe *planner.Frontend, h Handler, log *slog.Logger, hooks Hooks) *Listener {
	if cfg.MaxWorkers < 1 {
		cfg.MaxWorkers = 1
	}
	if cfg.MaxQueued <= 0 {
		cfg.MaxQueued = cfg.MaxWorkers
	}
	if cfg.QueueWait <= 0 {
		cfg.QueueWait = 30 * time.Second
	}
	if log == nil {
		log = slog.Default()
	}
	l := &Listener{cfg: cfg, fe: fe, h: h, log: log.With("listener", listenerName(cfg)), hooks: hooks,
		workers: make(chan struct{}, cfg.MaxWorkers), conns: map[*conn]struct{}{}, sources: map[string]int{},
		perSourceLog: rate.Sometimes{Interval: 10 * time.Second}}
	l.outs.New = func() any { b := make([]byte, 0, 4096); return &b }
	return l
}

func listenerName(cfg Config) string {
	if cfg.Name == "" {
		return "primary"
	}
	return cfg.Name
}

// Start binds the socket and starts accepting.
func (l *Listener) Start() error {
	if l.cfg.Strict == nil {
		return fmt.Errorf("listener %s: no strict schema configured; refusing to read client messages laxly", listenerName(l.cfg))
	}
	if l.cfg.Auth != nil && l.cfg.Framed {
		return fmt.Errorf("listener %s: framed transport is not supported with SASL (security.mode=KERBEROS), as in Hive", listenerName(l.cfg))
	}
	addr := net.JoinHostPort(l.cfg.BindHost, strconv.Itoa(l.cfg.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listener %s: cannot bind %s: %w", listenerName(l.cfg), addr, err)
	}
	l.ln = ln
	l.accepting.Store(true)
	l.acceptWG.Add(1)
	go l.accept()
	return nil
}

// Addr is the bound address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Name is the listener's name ("primary" for the primary listener).
func (l *Listener) Name() string { return listenerName(l.cfg) }

// Serving reports whether the listener accepts connections: bound by Start,
// its accept loop running, and no drain begun (readiness reports it).
func (l *Listener) Serving() bool { return l.accepting.Load() }

func (l *Listener) accept() {
	defer l.acceptWG.Done()
	defer l.accepting.Store(false)
	for {
		c, err := l.ln.Accept()
		if err != nil {
			l.mu.Lock()
			closing := l.closing
			l.mu.Unlock()
			if closing || errors.Is(err, net.ErrClosed) {
				return
			}
			l.log.Warn("accept failed", "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		cn := &conn{c: c, src: sourceOf(c)}
		l.mu.Lock()
		if l.closing {
			l.mu.Unlock()
			c.Close()
			return
		}
		if max := l.cfg.MaxConnsPerSource; max > 0 && l.sources[cn.src] >= max {
			l.mu.Unlock()
			// Counted before the close: a client that sees its connection
			// closed must find the refusal in the metrics already.
			if l.hooks.Refused != nil {
				l.hooks.Refused("per_source")
			}
			c.Close()
			l.perSourceLog.Do(func() {
				l.log.Warn("closing a connection past the per-source limit (server.max-connections-per-source; at most one such line every 10 s)",
					"remote", cn.src, "limit", max)
			})
			continue
		}
		l.sources[cn.src]++
		l.conns[cn] = struct{}{}
		l.wg.Add(1)
		l.mu.Unlock()
		go l.serve(cn)
	}
}

// ServeConn serves an in-process connection (the Iceberg REST frontend's
// metastore client) as if accepted from remote, with an identity already
// established by its own authentication (nil: anonymous). It returns when the
// connection ends; Shutdown waits for it like for any connection.
func (l *Listener) ServeConn(c net.Conn, remote string, id *security.Identity) {
	cn := &conn{c: c, src: remote, remote: remote, id: id, inProcess: true}
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		c.Close()
		return
	}
	l.sources[cn.src]++
	l.conns[cn] = struct{}{}
	l.wg.Add(1)
	l.mu.Unlock()
	l.serve(cn)
}

func sourceOf(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

func (l *Listener) tune(c net.Conn) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return
	}
	if !l.cfg.KeepAlive {
		_ = tc.SetKeepAlive(false)
		return
	}
	if err := tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: l.cfg.KeepAliveIdle,
		Interval: l.cfg.KeepAliveInterval, Count: l.cfg.KeepAliveCount}); err != nil {
		_ = tc.SetKeepAlive(true)
	}
}

var httpMethods = [][]byte{[]byte("GET "), []byte("POST"), []byte("PUT "), []byte("HEAD"), []byte("OPTI"), []byte("DELE"), []byte("PATC"), []byte("CONN")}

// admit waits for a free worker within the queue bounds.
func (l *Listener) admit() bool {
	select {
	case l.workers <- struct{}{}:
		return true
	default:
	}
	if int(l.waiting.Add(1)) > l.cfg.MaxQueued {
		l.waiting.Add(-1)
		return false
	}
	defer l.waiting.Add(-1)
	t := time.NewTimer(l.cfg.QueueWait)
	defer t.Stop()
	select {
	case l.workers <- struct{}{}:
		return true
	case <-t.C:
		return false
	}
}

func (l *Listener) serve(cn *conn) {
	var rd *wire.Reader
	defer func() {
		if rd != nil {
			rd.Close()
		}
		cn.c.Close()
		l.mu.Lock()
		delete(l.conns, cn)
		if l.sources[cn.src]--; l.sources[cn.src] <= 0 {
			delete(l.sources, cn.src)
		}
		l.mu.Unlock()
		if l.hooks.Connections != nil {
			l.hooks.Connections(-1)
		}
		l.wg.Done()
	}()
	if l.hooks.Connections != nil {
		l.hooks.Connections(1)
	}
	l.tune(cn.c)
	remote := cn.remote
	if remote == "" {
		remote = cn.c.RemoteAddr().String()
	}
	info := &router.ConnInfo{Remote: remote, Frontend: l.fe}
	if l.cfg.TLS != nil && !cn.inProcess && !l.startTLS(cn, info) {
		return
	}
	if cn.id != nil {
		info.SetIdentity(cn.id) // authenticated before it reached the listener (in-process callers)
	} else if l.cfg.Auth != nil && !l.authenticate(cn, info) {
		return
	}
	// Unframed: a reader that parses in place, holds no buffer while the
	// connection is idle, and reads each call strictly; framed: a small
	// bufio (frames carry their length).
	var r *bufio.Reader
	var peek func(int) ([]byte, error)
	if l.cfg.Framed {
		r = bufio.NewReaderSize(cn.c, 512)
		peek = r.Peek
	} else {
		rd = wire.NewLazyReader(cn.c, l.cfg.MaxMessage, l.cfg.Budget)
		peek = rd.Peek
	}
	buffered := func() int {
		if r != nil {
			return r.Buffered()
		}
		return rd.Buffered()
	}
	var in wire.Message // reused: a message is served before the next is read
	first := true
	for {
		draining, err := l.awaitCall(cn, peek, buffered)
		if errors.Is(err, errDrained) {
			return // closed by the drain before anything of a next call was read
		}
		if err != nil {
			l.readFailed(cn, info, err)
			return
		}
		// (with Auth, the SASL negotiation already answered anything that was not SASL)
		if first && l.cfg.Auth == nil {
			first = false
			if head, err := peek(4); err == nil && isHTTP(head) {
				l.bad(info, "http", "an HTTP request arrived on the Thrift port; answered 400 and closed")
				_, _ = io.WriteString(cn.c, "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: 58\r\n\r\nThis is a Hive Metastore Thrift port (hms-proxy), not HTTP\n")
				return
			}
		}
		var msg *wire.Message
		if l.cfg.Framed {
			msg, err = wire.ReadFramedCall(r, wire.Limits{MaxMessage: l.cfg.MaxMessage}, l.cfg.Strict)
		} else {
			msg, err = &in, rd.NextCall(&in, l.cfg.Strict)
		}
		if err != nil {
			l.readFailed(cn, info, err)
			return
		}
		// The read deadline only bounds waiting for the next request; a long
		// call (drop_table with purge) reads nothing, so it is left as is
		// and the next read sets a new one.
		outp := l.outs.Get().(*[]byte)
		out := (*outp)[:0]
		if l.admit() {
			if l.hooks.InFlight != nil {
				l.hooks.InFlight(1)
			}
			out = l.h.Handle(context.Background(), info, msg, out)
			<-l.workers
			if l.hooks.InFlight != nil {
				l.hooks.InFlight(-1)
			}
		} else {
			if l.hooks.Refused != nil {
				l.hooks.Refused("busy")
			}
			out = append(out, wire.AppException(msg.Name, msg.SeqID, wire.AppInternalError, fmt.Sprintf(
				"hms-proxy listener %s is busy: %d calls are being served (server.max-worker-threads) and %d are waiting; try again",
				listenerName(l.cfg), l.cfg.MaxWorkers, l.cfg.MaxQueued))...)
		}
		if len(out) > 0 {
			err = l.write(cn.c, out)
		}
		if cap(out) <= 4<<20 { // do not keep a huge answer's buffer for later calls
			*outp = out[:0]
			l.outs.Put(outp)
		}
		if err != nil {
			l.log.Debug("client went away while the reply was written", "remote", info.Remote, "err", err)
			return
		}
		if draining {
			return // the call read during the drain is answered; nothing more is read
		}
	}
}

// errDrained: the drain closed an idle connection.
var errDrained = errors.New("closed by the drain")

// awaitCall waits for the first byte of a connection's next call. This is
// where the drain closes a connection: a listener that is closing reads
// nothing more from it, and Shutdown wakes this wait (a read deadline in the
// past) so an idle connection closes at once, before its client sends
// anything else. A call of which anything was read, or was waiting in the
// socket when the drain woke the wait, is read whole and answered, and the
// connection closes after that answer (draining true). So a client is never
// left waiting on a call nobody will answer: either its call is answered, or
// its connection was closed before the call was read (which its client
// library reports as a transport error and may retry elsewhere).
//
// The state changes under l.mu, which Shutdown holds while it looks at
// every connection: a wait it did not see idle cannot begin after it (the
// closing check), and the deadline it set is never overwritten.
func (l *Listener) awaitCall(cn *conn, peek func(int) ([]byte, error), buffered func() int) (draining bool, err error) {
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		// The drain began between two calls: the same rule as for a wait
		// it woke.
		if buffered() == 0 && !pendingInput(cn.c) {
			return true, errDrained
		}
		l.setIdleDeadline(cn)
		_, err = peek(1)
		return true, err
	}
	cn.idle = true
	l.setIdleDeadline(cn)
	l.mu.Unlock()
	_, err = peek(1)
	l.mu.Lock()
	cn.idle = false
	draining = l.closing
	l.mu.Unlock()
	if !draining {
		return false, err
	}
	if err != nil {
		if !isTimeout(err) {
			return true, err
		}
		// The drain woke the wait: a call whose bytes are here already was
		// sent before the connection closed, so it is answered; otherwise
		// the connection closes without reading more.
		if buffered() == 0 && !pendingInput(cn.c) {
			return true, errDrained
		}
		l.setIdleDeadline(cn)
		if _, err = peek(1); err != nil {
			return true, err
		}
		return true, nil
	}
	// The first byte arrived before the drain woke the wait (or as it did):
	// the rest of that call is read without the drain's past deadline.
	l.setIdleDeadline(cn)
	return true, nil
}

// setIdleDeadline bounds the wait for (and the reading of) the next call:
// server.client-socket-timeout-ms, or none. A connection serving call after
// call keeps its deadline until it is a slack old (wire.Deadline): the
// timeout closes an idle connection at most a sixteenth of itself (at most
// 250 ms) late, and a call costs no timer reset.
func (l *Listener) setIdleDeadline(cn *conn) {
	var want time.Time
	if l.cfg.ClientSocketTimeout > 0 {
		want = time.Now().Add(l.cfg.ClientSocketTimeout)
	}
	cn.readBy.Set(cn.c, true, want, l.cfg.ClientSocketTimeout)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// authenticate runs the listener's handshake on a new connection; on success
// the connection speaks the negotiated data phase and carries the identity.
func (l *Listener) authenticate(cn *conn, info *router.ConnInfo) bool {
	sc, id, err := l.cfg.Auth.Accept(cn.c)
	if err != nil {
		// counted by the authenticator; the connection is closed
		l.log.Warn("client authentication failed; connection closed", "remote", info.Remote, "err", audit.Clip(err.Error(), audit.MaxValueLen))
		return false
	}
	l.mu.Lock()
	cn.c = sc
	cn.readBy.Forget()
	l.mu.Unlock()
	info.SetIdentity(id)
	return true
}

// write sends one reply: as it is, or as one frame (header and reply in one
// writev).
func (l *Listener) write(c net.Conn, out []byte) error {
	if !l.cfg.Framed {
		_, err := c.Write(out)
		return err
	}
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(out)))
	bufs := net.Buffers{hdr[:], out}
	_, err := bufs.WriteTo(c)
	return err
}

func isHTTP(head []byte) bool {
	for _, m := range httpMethods {
		if bytes.Equal(head, m) {
			return true
		}
	}
	return false
}

func (l *Listener) readFailed(cn *conn, info *router.ConnInfo, err error) {
	var ne net.Error
	var se *wire.StrictError
	switch {
	case errors.As(err, &se):
		// The header was read: tell the client why before closing, as Hive
		// answers a call it cannot read.
		typ := wire.AppProtocolError
		if se.Reason == wire.ReasonMessageType {
			typ = wire.AppInvalidMessageType
		}
		_ = l.write(cn.c, wire.AppException(se.Header.Name, se.Header.SeqID, typ, "hms-proxy refused the call: "+se.Error()))
		l.bad(info, se.Reason, se.Error())
	case errors.Is(err, wire.ErrBudget):
		l.bad(info, "budget", err.Error())
	case errors.Is(err, sasl.ErrUnwrap):
		l.bad(info, "sasl_layer", err.Error())
	case errors.Is(err, sasl.ErrFrameTooLarge):
		l.bad(info, "too_large", err.Error())
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, os.ErrDeadlineExceeded):
		l.log.Debug("closing idle client connection after server.client-socket-timeout-ms", "remote", info.Remote)
	case errors.Is(err, wire.ErrTooLarge):
		l.bad(info, "too_large", err.Error())
	case errors.Is(err, wire.ErrTruncated):
		l.bad(info, "truncated", err.Error())
	case errors.Is(err, wire.ErrMalformed):
		l.bad(info, "malformed", err.Error())
	default:
		l.log.Debug("client connection read failed", "remote", info.Remote, "err", err)
	}
}

// bad logs one bad-input event once and counts it; the connection closes.
func (l *Listener) bad(info *router.ConnInfo, reason, detail string) {
	l.log.Warn("closing client connection after bad input", "remote", info.Remote, "reason", reason, "detail", audit.Clip(detail, audit.MaxValueLen))
	if l.hooks.BadInput != nil {
		l.hooks.BadInput(reason)
	}
}

// Shutdown stops accepting, closes idle connections at once (before
// anything more is read from them), lets the calls in flight, and a call
// whose bytes had arrived, finish and closes their connections after the
// reply (see awaitCall); at the context deadline it closes whatever is left.
func (l *Listener) Shutdown(ctx context.Context) error {
	l.accepting.Store(false)
	l.mu.Lock()
	l.closing = true
	for cn := range l.conns {
		if cn.idle {
			_ = cn.c.SetReadDeadline(time.Now())
			cn.readBy.Forget()
		}
	}
	l.mu.Unlock()
	if l.ln != nil {
		l.ln.Close()
	}
	done := make(chan struct{})
	go func() {
		l.acceptWG.Wait()
		l.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		l.mu.Lock()
		n := len(l.conns)
		for cn := range l.conns {
			cn.c.Close()
		}
		l.mu.Unlock()
		return fmt.Errorf("listener %s: %d connections still busy at the shutdown deadline; closed them", listenerName(l.cfg), n)
	}
}
