package router

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hms-proxy/hms-proxy/audit"
	"github.com/hms-proxy/hms-proxy/monitoring"
	"github.com/hms-proxy/hms-proxy/router/breaker"
	"github.com/hms-proxy/hms-proxy/router/methods"
	"github.com/hms-proxy/hms-proxy/wire"
)

// BackendOptions configure one catalog's pool.
type BackendOptions struct {
	Catalog       string
	URIs          []string // thrift://host:port
	Sequential    bool     // metastore.thrift.uri.selection=SEQUENTIAL; else shuffled per connect, as Hive's client does
	PoolSize      int
	BorrowTimeout time.Duration // wait for a free session: the latency budget when set, else 30 s
	// CallBudget bounds a whole call, borrow and round trip (the catalog's
	// latency-budget-ms); 0: only SocketTimeout bounds the round trip.
	CallBudget     time.Duration
	ConnectTimeout time.Duration
	SocketTimeout  time.Duration // read/write deadline of one backend call
	ConnectRetries int           // attempts over the URI list
	RetryDelay     time.Duration
	Framed         bool
	MaxReply       int // bound on one backend reply
	// Dial opens the transport; nil = plain TCP. Kerberos/SASL plugs in here.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// OnSessions is told the active and idle session counts when they change.
	OnSessions func(active, idle int)
	// OnAcquireTimeout is told when a borrow gives up (metrics).
	OnAcquireTimeout func(operation string)
	// OnRetire is told when a session is closed instead of given back, and
	// why (monitoring.RetireReasons; metrics).
	OnRetire func(reason string)
	// Table is the method table: which outcomes of which RPCs leave a
	// session fit for the next client (router/methods' sessions.go). nil: a session is
	// given back only after a success or UNKNOWN_METHOD.
	Table *methods.Table
	// Guard is the catalog's circuit breaker and adaptive timeout, shared
	// by the catalog's shared pool and its impersonation pools; nil: none.
	// Every client call asks it first (an open circuit fails fast, before a
	// session is borrowed), runs within its timeout and reports its outcome
	// to it. Probes (Probe) bypass it: they are what closes a circuit.
	Guard *breaker.Guard
}

// ErrPoolExhausted is returned when no session frees up within the budget.
var ErrPoolExhausted = errors.New("backend session pool exhausted")

// ErrBadReply is returned when a backend's reply does not belong to the
// request it answers (another sequence id or method, a call instead of a
// reply, bytes after it): the session is closed, never reused.
var ErrBadReply = errors.New("backend reply does not match its request")

// ErrBudgetExceeded is returned when a call did not finish within its budget.
var ErrBudgetExceeded = errors.New("latency budget exceeded")

// Backend is the pool of Thrift sessions to one catalog's metastore.
type Backend struct {
	opt     BackendOptions
	addrs   []string
	permits chan struct{}
	idle    chan *session

	mu     sync.Mutex
	state  BackendHealth
	closed bool
}

// BackendHealth is the live state /readyz shows.
type BackendHealth struct {
	Connected                bool
	LastSuccess, LastFailure time.Time
	LastProbe                time.Time
	LastLatency              time.Duration
	ConsecutiveFailures      int
	LastError                string
	Endpoint                 string
	Active                   int
}

type session struct {
	done   func() // gives the session back; bound once per session
	reused bool   // came from the idle pool
	seq    int32  // sequence id of the last request sent on this session
	conn   net.Conn
	r      *bufio.Reader
	w      *bufio.Writer
	addr   string
	rd     *wire.Reader  // unframed replies (r for framed ones)
	reply  wire.Message  // the last reply; valid until the session is given back
	idle   time.Time     // when it was last given back (CloseIdle)
	by     wire.Deadline // conn's deadline, moved only past a slack (send)
	// retire: why the last reply leaves the session unfit for another
	// call (sessions.go: the metastore's thread may hold an open
	// transaction, changed settings, or be out of step after a
	// PROTOCOL_ERROR); "" when it may serve again. A retired session is
	// closed instead of given back.
	retire string
}

// NewBackend validates the URIs and builds an (unconnected) pool.
func NewBackend(opt BackendOptions) (*Backend, error) {
	if opt.PoolSize < 1 {
		opt.PoolSize = 1
	}
	if opt.BorrowTimeout <= 0 {
		opt.BorrowTimeout = 30 * time.Second
	}
	if opt.ConnectTimeout <= 0 {
		opt.ConnectTimeout = 20 * time.Second
	}
	if opt.ConnectRetries < 1 {
		opt.ConnectRetries = 1
	}
	if opt.MaxReply <= 0 {
		opt.MaxReply = 1<<31 - 1
	}
	b := &Backend{opt: opt, permits: make(chan struct{}, opt.PoolSize), idle: make(chan *session, opt.PoolSize)}
	for _, u := range opt.URIs {
		addr, err := thriftAddr(u)
		if err != nil {
			return nil, fmt.Errorf("catalog %s: %w", opt.Catalog, err)
		}
		b.addrs = append(b.addrs, addr)
	}
	if len(b.addrs) == 0 {
		return nil, fmt.Errorf("catalog %s: no metastore URI", opt.Catalog)
	}
	return b, nil
}

func thriftAddr(u string) (string, error) {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil || p.Scheme != "thrift" || p.Hostname() == "" || p.Port() == "" {
		return "", fmt.Errorf("metastore URI %q is not thrift://host:port", u)
	}
	if _, err := strconv.Atoi(p.Port()); err != nil {
		return "", fmt.Errorf("metastore URI %q has a bad port", u)
	}
	return p.Host, nil
}

// Name is the catalog this pool serves.
func (b *Backend) Name() string { return b.opt.Catalog }

// Call sends one whole CALL message (envelope included, strict form) and
// returns the reply, which stays valid until done is called. The request's
// sequence id is replaced by the session's own, and the reply must carry it
// and the request's method name. A stale pooled connection that fails before
// any reply byte is retried once on a fresh connection when retry is true
// (reads, or calls whose request never left). Oneway calls are not forwarded
// by hms-proxy (HMS declares none but fb303's, which the proxy answers).
func (b *Backend) Call(ctx context.Context, req []byte, retry bool) (reply *wire.Message, done func(), err error) {
	reply, done, _, err = b.CallWalk(ctx, req, retry, nil)
	return reply, done, err
}

// ReplyWalk asks CallWalk to find a REPLY's role spans while reading it.
type ReplyWalk struct {
	Plan *wire.Plan
	V    ReplyVisitor
}

// ReplyVisitor collects a reply's role spans; Reset forgets them (before a
// retry).
type ReplyVisitor interface {
	wire.Visitor
	Reset()
}

// CallWalk is Call that, given rw, reports the reply's role spans to
// rw.Visit as it reads the reply; walked says whether it did (framed
// replies and exceptions are not walked: the caller walks them itself).
func (b *Backend) CallWalk(ctx context.Context, req []byte, retry bool, rw *ReplyWalk) (reply *wire.Message, done func(), walked bool, err error) {
	return b.call(ctx, req, retry, rw, b.opt.Guard, time.Time{})
}

// CallBefore is Call that ends by the deadline by as well (a fan-out's
// bound, passed as a value: a context with a deadline costs a timer and
// makes every round trip watch it).
func (b *Backend) CallBefore(ctx context.Context, req []byte, retry bool, by time.Time) (reply *wire.Message, done func(), err error) {
	reply, done, _, err = b.call(ctx, req, retry, nil, b.opt.Guard, by)
	return reply, done, err
}

// Probe sends one readiness probe call past the circuit breaker (an open
// circuit must not stop the probe that can close it). Its outcome updates
// the pool's health, not the breaker: the caller reports it
// (breaker.Guard.ProbeResult).
func (b *Backend) Probe(ctx context.Context, req []byte) (reply *wire.Message, done func(), err error) {
	reply, done, _, err = b.call(ctx, req, true, nil, nil, time.Time{})
	return reply, done, err
}

// Free is the number of sessions that can be borrowed without waiting (a
// hedged read only asks for a second session when one is free).
func (b *Backend) Free() int { return cap(b.permits) - len(b.permits) }

func (b *Backend) call(ctx context.Context, req []byte, retry bool, rw *ReplyWalk, guard *breaker.Guard, by time.Time) (reply *wire.Message, done func(), walked bool, err error) {
	var p pending
	if err = b.admit(ctx, &p, req, retry, guard, by); err != nil {
		return nil, nil, false, err
	}
	reply, err = b.roundTrip(ctx, p.s, req, p.deadline, rw)
	return b.finish(ctx, &p, reply, err, rw, 0)
}

// pending is a call admitted by the breaker, on a borrowed session; in a
// Chained fan-out leg it is sent (send) and its answer read later
// (receive), with the legs after it sent in between.
type pending struct {
	s        *session
	ticket   breaker.Ticket
	req      []byte
	retry    bool
	begin    time.Time     // before the session was borrowed
	start    time.Time     // the first round trip's start
	deadline time.Time     // the call's (budget, adaptive timeout, the caller's bound)
	limit    time.Duration // the catalog's limit the deadline comes from (0: the caller's)
	adaptive bool
	// send's part: the method name, the socket's deadline, the error of
	// the write
	name   []byte
	sockBy time.Time
	sent   error
}

// admit asks the breaker, sets the call's deadline and borrows a session.
func (b *Backend) admit(ctx context.Context, p *pending, req []byte, retry bool, guard *breaker.Guard, by time.Time) (err error) {
	p.req, p.retry, p.limit = req, retry, b.opt.CallBudget
	if guard != nil {
		if p.ticket, err = guard.Admit(); err != nil {
			return err // *breaker.OpenError: fail fast, no session taken
		}
		if t := p.ticket.Timeout(); t != p.limit {
			p.limit, p.adaptive = t, true
		}
	}
	p.begin = time.Now()
	if p.limit > 0 {
		p.deadline = p.begin.Add(p.limit)
	}
	if d, ok := ctx.Deadline(); ok && (by.IsZero() || d.Before(by)) {
		by = d
	}
	if !by.IsZero() && (p.deadline.IsZero() || by.Before(p.deadline)) {
		p.deadline = by
		p.limit = 0 // the caller's deadline, not the catalog's limit
	}
	if p.s, err = b.borrow(ctx, p.deadline); err != nil {
		if errors.Is(err, ErrPoolExhausted) {
			p.ticket.Abandon() // the proxy's own pool, not the backend
		} else {
			p.ticket.Done(time.Since(p.begin), err)
		}
		return b.overBudget(err, p.deadline, p.limit, p.adaptive)
	}
	p.start = time.Now()
	return nil
}

// finish ends a call whose first round trip returned reply or err: a stale
// pooled session is retried once on a fresh one, the breaker and the pool's
// health learn the outcome. paused is the time the caller spent on other
// work between sending and reading (a Chained leg's later legs): it is not
// the backend's latency.
func (b *Backend) finish(ctx context.Context, p *pending, reply *wire.Message, err error, rw *ReplyWalk, paused time.Duration) (*wire.Message, func(), bool, error) {
	s := p.s
	// Only a pooled session that went stale while idle (the metastore
	// restarted, a firewall dropped it) deserves a second try; a fresh
	// connection that failed, or a call that timed out, would just fail (or
	// hang) again and double the client's wait.
	if err != nil && p.retry && s.reused && !isTimeout(err) && ctx.Err() == nil {
		b.discard(s, monitoring.RetireTransport)
		if s, err = b.borrowFresh(ctx); err != nil {
			b.release()
			b.failure(err)
			p.ticket.Done(time.Since(p.start)-paused, err)
			return nil, nil, false, err
		}
		if rw != nil {
			rw.V.Reset()
		}
		p.start, paused = time.Now(), 0
		reply, err = b.roundTrip(ctx, s, p.req, p.deadline, rw)
	}
	elapsed := time.Since(p.start) - paused
	// A reply of any kind (a declared exception, a TApplicationException)
	// is the backend answering; a reply that does not belong to its
	// request is not.
	p.ticket.Done(elapsed, err)
	if err != nil {
		err = b.overBudget(err, p.deadline, p.limit, p.adaptive)
		b.discard(s, failureReason(err))
		b.release()
		b.failure(err)
		return nil, nil, false, err
	}
	b.success(elapsed, s.addr)
	walked := rw != nil && reply != nil && reply.Type == wire.Reply && !b.opt.Framed
	return reply, s.done, walked, nil
}

// sendBefore admits and sends a call whose answer receive reads later
// (bounded by by as CallBefore is). An error is the admission's or the
// borrow's (nothing is left to receive); a failed write is kept for
// receive, which retries a stale pooled session as a whole call does.
func (b *Backend) sendBefore(ctx context.Context, p *pending, req []byte, by time.Time) error {
	if err := b.admit(ctx, p, req, true, b.opt.Guard, by); err != nil {
		return err
	}
	p.name, p.sockBy, p.sent = b.send(p.s, req, p.deadline)
	return nil
}

// settle is how long a sent call whose deadline passed while the caller
// did other work (a Chained fan-out reading its legs' answers one after the
// other) still gets to hand over an answer that arrived in time: reading
// one that waits on the socket takes microseconds.
const settle = 200 * time.Millisecond

// receive reads the answer of a call sendBefore sent (walking it as
// CallWalk does, given rw); paused is the time the caller spent on other
// work since.
func (b *Backend) receive(ctx context.Context, p *pending, paused time.Duration, rw *ReplyWalk) (*wire.Message, func(), bool, error) {
	var reply *wire.Message
	err := p.sent
	if err == nil {
		if !p.sockBy.IsZero() {
			if now := time.Now(); now.After(p.sockBy) {
				_ = p.s.conn.SetReadDeadline(now.Add(settle))
				p.s.by.Forget()
			}
		}
		reply, err = b.receiveOn(ctx, p.s, p.name, rw)
	}
	return b.finish(ctx, p, reply, err, rw, paused)
}

// drop gives up a sent call whose answer is no longer wanted (another leg
// of its fan-out failed the call): its session is closed unread, and the
// breaker counts the call neither way.
func (b *Backend) drop(p *pending) {
	p.ticket.Abandon()
	b.discard(p.s, monitoring.RetireCancelled)
	b.release()
}

func (b *Backend) roundTrip(ctx context.Context, s *session, req []byte, callDeadline time.Time, rw *ReplyWalk) (*wire.Message, error) {
	name, _, err := b.send(s, req, callDeadline)
	if err != nil {
		return nil, err
	}
	return b.receiveOn(ctx, s, name, rw)
}

// send writes a call on s, its sequence id the session's next, within the
// call's deadline and the socket timeout (the socket's deadline, returned).
func (b *Backend) send(s *session, req []byte, callDeadline time.Time) (name []byte, deadline time.Time, err error) {
	name, ok := stampSeq(req, s.seq+1)
	if !ok {
		return nil, time.Time{}, fmt.Errorf("catalog %s: internal error: a request without a strict CALL header", b.opt.Catalog)
	}
	s.seq++
	// The deadline a session's socket has is moved only once it is a slack
	// old (wire.Deadline): a round trip times out at most a sixteenth of its
	// timeout (at most 250 ms) late, never early, and most calls reset no
	// timer.
	deadline = callDeadline
	var now time.Time
	if b.opt.SocketTimeout > 0 || !deadline.IsZero() {
		now = time.Now()
	}
	if b.opt.SocketTimeout > 0 {
		if d := now.Add(b.opt.SocketTimeout); deadline.IsZero() || d.Before(deadline) {
			deadline = d
		}
	}
	var timeout time.Duration
	if !deadline.IsZero() {
		timeout = deadline.Sub(now)
	}
	deadline = s.by.Set(s.conn, false, deadline, timeout)
	if b.opt.Framed {
		err = wire.WriteFramed(s.w, req)
	} else {
		_, err = s.w.Write(req)
	}
	if err == nil {
		err = s.w.Flush()
	}
	return name, deadline, err
}

// receiveOn reads the reply to the call named name sent on s and checks it
// belongs to it.
func (b *Backend) receiveOn(ctx context.Context, s *session, name []byte, rw *ReplyWalk) (*wire.Message, error) {
	if ctx.Done() != nil {
		// Cancellation (a fan-out whose other leg failed) interrupts the
		// blocked read; the session is then closed by the caller.
		stop := context.AfterFunc(ctx, func() { _ = s.conn.SetDeadline(time.Unix(1, 0)) })
		defer func() {
			if !stop() {
				s.by.Forget() // the deadline in the past was set
			}
		}()
	}
	var m *wire.Message
	var err error
	buffered := 0
	if b.opt.Framed {
		if m, err = wire.ReadFramed(s.r, wire.Limits{MaxMessage: b.opt.MaxReply}); err == nil {
			buffered = s.r.Buffered()
		}
	} else {
		m = &s.reply
		if rw != nil {
			err = s.rd.NextWalkVisitor(m, rw.Plan, rw.V)
		} else {
			err = s.rd.Next(m)
		}
		buffered = s.rd.Buffered()
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	switch {
	case m.Type != wire.Reply && m.Type != wire.Exception:
		err = fmt.Errorf("catalog %s: %w: a message of type %d arrived for %s", b.opt.Catalog, ErrBadReply, m.Type, name)
	case m.Name != string(name) || m.SeqID != s.seq:
		err = fmt.Errorf("catalog %s: %w: sent %s with sequence id %d, got %s with sequence id %d",
			b.opt.Catalog, ErrBadReply, name, s.seq, audit.Clip(m.Name, audit.MaxMethodLen), m.SeqID)
	case buffered > 0:
		err = fmt.Errorf("catalog %s: %w: %d bytes followed the reply to %s", b.opt.Catalog, ErrBadReply, buffered, name)
	}
	if err != nil {
		return nil, err
	}
	s.retire = b.opt.Table.RetireAfter(name, m)
	return m, nil
}

// overBudget names the limit (the latency budget, or the adaptive timeout
// when it is the smaller) when err is a timeout at the call's deadline (a
// round trip, or a connect, that ran out of time).
func (b *Backend) overBudget(err error, deadline time.Time, limit time.Duration, adaptive bool) error {
	if limit <= 0 || deadline.IsZero() || time.Now().Before(deadline) || errors.Is(err, ErrPoolExhausted) {
		return err
	}
	if !isTimeout(err) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	key := "catalog." + b.opt.Catalog + ".latency-budget-ms"
	if adaptive {
		key = "routing.adaptive-timeout: the catalog's adaptive timeout"
	}
	return fmt.Errorf("catalog %s: %w: the call did not finish within %v (%s); its session was closed",
		b.opt.Catalog, ErrBudgetExceeded, limit, key)
}

// stampSeq writes seq into the header of a strict-form message and returns
// its method name (a view of req).
func stampSeq(req []byte, seq int32) ([]byte, bool) {
	if len(req) < 12 || req[0]&0x80 == 0 {
		return nil, false
	}
	n := int(binary.BigEndian.Uint32(req[4:8]))
	if n < 0 || 8+n+4 > len(req) {
		return nil, false
	}
	binary.BigEndian.PutUint32(req[8+n:], uint32(seq))
	return req[8 : 8+n], true
}

func (b *Backend) borrow(ctx context.Context, deadline time.Time) (*session, error) {
	select {
	case b.permits <- struct{}{}: // a free session slot: no timer needed
	default:
		if err := b.waitPermit(ctx, deadline); err != nil {
			return nil, err
		}
	}
	select {
	case s := <-b.idle:
		s.reused = true
		b.publish()
		return s, nil
	default:
	}
	s, err := b.dial(ctx, deadline)
	if err != nil {
		b.release()
		b.failure(err)
		return nil, err
	}
	b.publish()
	return s, nil
}

// waitPermit waits for a session slot within the borrow budget (and the
// call's deadline).
func (b *Backend) waitPermit(ctx context.Context, deadline time.Time) error {
	wait := b.opt.BorrowTimeout
	if !deadline.IsZero() {
		wait = min(wait, time.Until(deadline))
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case b.permits <- struct{}{}:
		return nil
	case <-t.C:
		if b.opt.OnAcquireTimeout != nil {
			b.opt.OnAcquireTimeout("borrow")
		}
		return fmt.Errorf("catalog %s: %w: no session of %d freed up within %v",
			b.opt.Catalog, ErrPoolExhausted, b.opt.PoolSize, wait.Round(time.Millisecond))
	case <-ctx.Done():
		return ctx.Err()
	}
}

// borrowFresh dials a new session under the permit already held.
func (b *Backend) borrowFresh(ctx context.Context) (*session, error) { return b.dial(ctx, time.Time{}) }

func (b *Backend) release() {
	<-b.permits
	b.publish()
}

// publish reports the pool's active and idle sessions (metrics).
func (b *Backend) publish() {
	if b.opt.OnSessions != nil {
		b.opt.OnSessions(len(b.permits), len(b.idle))
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func (b *Backend) giveBack(s *session) {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	switch {
	case s.retire != "":
		b.discard(s, s.retire)
	case closed:
		s.conn.Close()
	default:
		s.idle = time.Now()
		select {
		case b.idle <- s:
			s.reused = false
		default:
			s.conn.Close()
		}
	}
	b.release()
}

// discard closes a session that must not serve another call.
func (b *Backend) discard(s *session, reason string) {
	s.conn.Close()
	if b.opt.OnRetire != nil {
		b.opt.OnRetire(reason)
	}
}

// dial connects to the first reachable URI, trying the list ConnectRetries
// times (RANDOM selection shuffles the list on each attempt, like Hive).
func (b *Backend) dial(ctx context.Context, deadline time.Time) (*session, error) {
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	dial := b.opt.Dial
	if dial == nil {
		d := &net.Dialer{Timeout: b.opt.ConnectTimeout, KeepAlive: 30 * time.Second}
		dial = d.DialContext
	}
	var errs []string
	for attempt := 0; attempt < b.opt.ConnectRetries; attempt++ {
		if attempt > 0 && b.opt.RetryDelay > 0 {
			t := time.NewTimer(b.opt.RetryDelay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, fmt.Errorf("catalog %s: cannot connect to any metastore URI (%s): %s; no time left for another attempt: %w",
					b.opt.Catalog, strings.Join(b.opt.URIs, ","), strings.Join(dedupe(errs), "; "), ctx.Err())
			}
		}
		addrs := b.addrs
		if !b.opt.Sequential && len(addrs) > 1 {
			addrs = append([]string(nil), addrs...)
			rand.Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
		}
		for _, a := range addrs {
			c, err := dial(ctx, "tcp", a)
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			s := &session{conn: c, w: bufio.NewWriterSize(c, 64<<10), addr: a}
			if b.opt.Framed {
				s.r = bufio.NewReaderSize(c, 64<<10)
			} else {
				s.rd = wire.NewReader(c, b.opt.MaxReply)
			}
			s.done = func() { b.giveBack(s) }
			return s, nil
		}
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("catalog %s: cannot connect to any metastore URI (%s) in time: %w", b.opt.Catalog, strings.Join(b.opt.URIs, ","), ctx.Err())
	}
	return nil, fmt.Errorf("catalog %s: cannot connect to any metastore URI (%s): %s",
		b.opt.Catalog, strings.Join(b.opt.URIs, ","), strings.Join(dedupe(errs), "; "))
}

func dedupe(in []string) []string {
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

func (b *Backend) success(d time.Duration, addr string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := &b.state
	st.Connected = true
	st.LastSuccess = time.Now()
	st.LastLatency = d
	st.ConsecutiveFailures = 0
	st.Endpoint = addr
}

func (b *Backend) failure(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.state.Connected = false
	b.state.LastFailure = time.Now()
	b.state.LastError = err.Error()
	b.state.ConsecutiveFailures++
}

// Health returns a copy of the live state.
func (b *Backend) Health() BackendHealth {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.state
	h.Active = len(b.permits)
	return h
}

func (b *Backend) markProbe() {
	b.mu.Lock()
	b.state.LastProbe = time.Now()
	b.mu.Unlock()
}

// Close closes idle sessions; sessions in use close when given back.
func (b *Backend) Close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	for {
		select {
		case s := <-b.idle:
			s.conn.Close()
		default:
			return
		}
	}
}

// failureReason labels a round trip that failed.
func failureReason(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return monitoring.RetireCancelled
	case isTimeout(err), errors.Is(err, context.DeadlineExceeded), errors.Is(err, ErrBudgetExceeded):
		return monitoring.RetireTimeout
	}
	return monitoring.RetireTransport
}
