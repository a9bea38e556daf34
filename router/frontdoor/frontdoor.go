// Package frontdoor runs the Thrift listeners clients connect to: one per
// frontend profile and port, all feeding the same router.
package frontdoor

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/hms-proxy/hms-proxy/router"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Config is one listener's socket behaviour.
type Config struct {
	Name                string // "" for the primary listener
	BindHost            string
	Port                int
	MaxWorkers          int           // concurrent connections served; more wait in the accept backlog
	ClientSocketTimeout time.Duration // read timeout between requests; 0 = none
	KeepAlive           bool
	KeepAliveIdle       time.Duration
	KeepAliveInterval   time.Duration
	KeepAliveCount      int
	Framed              bool
	MaxMessage          int
}

// Handler serves one message (the router).
type Handler interface {
	Handle(ctx context.Context, conn *router.ConnInfo, msg *wire.Message, out []byte) []byte
}

// Hooks let the listener report to metrics without importing them.
type Hooks struct {
	BadInput    func(reason string)
	Connections func(delta int)
}

// Listener is one front-door Thrift listener.
type Listener struct {
	cfg   Config
	fe    *router.Frontend
	h     Handler
	log   *slog.Logger
	hooks Hooks

	ln    net.Listener
	slots chan struct{}

	mu       sync.Mutex
	conns    map[*conn]struct{}
	closing  bool
	wg       sync.WaitGroup
	acceptWG sync.WaitGroup
}

type conn struct {
	c    net.Conn
	busy bool
}

// New builds a listener (not yet bound).
func New(cfg Config, fe *router.Frontend, h Handler, log *slog.Logger, hooks Hooks) *Listener {
	if cfg.MaxWorkers < 1 {
		cfg.MaxWorkers = 1
	}
	if log == nil {
		log = slog.Default()
	}
	return &Listener{cfg: cfg, fe: fe, h: h, log: log.With("listener", listenerName(cfg)), hooks: hooks,
		slots: make(chan struct{}, cfg.MaxWorkers), conns: map[*conn]struct{}{}}
}

func listenerName(cfg Config) string {
	if cfg.Name == "" {
		return "primary"
	}
	return cfg.Name
}

// Start binds the socket and starts accepting.
func (l *Listener) Start() error {
	addr := net.JoinHostPort(l.cfg.BindHost, strconv.Itoa(l.cfg.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listener %s: cannot bind %s: %w", listenerName(l.cfg), addr, err)
	}
	l.ln = ln
	l.acceptWG.Add(1)
	go l.accept()
	return nil
}

// Addr is the bound address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

func (l *Listener) accept() {
	defer l.acceptWG.Done()
	for {
		l.slots <- struct{}{} // bounded workers: wait for a free slot before accepting
		c, err := l.ln.Accept()
		if err != nil {
			<-l.slots
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
		cn := &conn{c: c}
		l.mu.Lock()
		if l.closing {
			l.mu.Unlock()
			c.Close()
			<-l.slots
			return
		}
		l.conns[cn] = struct{}{}
		l.wg.Add(1)
		l.mu.Unlock()
		go l.serve(cn)
	}
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

func (l *Listener) serve(cn *conn) {
	defer func() {
		cn.c.Close()
		l.mu.Lock()
		delete(l.conns, cn)
		l.mu.Unlock()
		<-l.slots
		if l.hooks.Connections != nil {
			l.hooks.Connections(-1)
		}
		l.wg.Done()
	}()
	if l.hooks.Connections != nil {
		l.hooks.Connections(1)
	}
	l.tune(cn.c)
	info := &router.ConnInfo{Remote: cn.c.RemoteAddr().String(), Frontend: l.fe}
	// Unframed: a reader that parses in place and reads ahead; framed: bufio
	// (frames carry their length).
	var r *bufio.Reader
	var rd *wire.Reader
	peek := func(n int) ([]byte, error) { return rd.Peek(n) }
	if l.cfg.Framed {
		r = bufio.NewReaderSize(cn.c, 32<<10)
		peek = r.Peek
	} else {
		rd = wire.NewReader(cn.c, l.cfg.MaxMessage)
	}
	w := bufio.NewWriterSize(cn.c, 32<<10)
	var out []byte
	var in wire.Message // reused: a message is served before the next is read
	first := true
	for {
		if l.cfg.ClientSocketTimeout > 0 {
			_ = cn.c.SetReadDeadline(time.Now().Add(l.cfg.ClientSocketTimeout))
		} else {
			_ = cn.c.SetReadDeadline(time.Time{})
		}
		if first {
			first = false
			if head, err := peek(4); err == nil && isHTTP(head) {
				l.bad(info, "http", "an HTTP request arrived on the Thrift port; answered 400 and closed")
				_, _ = io.WriteString(cn.c, "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: 58\r\n\r\nThis is a Hive Metastore Thrift port (hms-proxy), not HTTP\n")
				return
			}
		}
		var msg *wire.Message
		var err error
		if l.cfg.Framed {
			msg, err = wire.ReadFramed(r, wire.Limits{MaxMessage: l.cfg.MaxMessage})
		} else {
			msg, err = &in, rd.Next(&in)
		}
		if err != nil {
			l.readFailed(info, err)
			return
		}
		// The read deadline only bounds waiting for the next request; a long
		// call (drop_table with purge) reads nothing, so it is left as is
		// and the next read sets a new one.
		l.setBusy(cn, true)
		out = l.h.Handle(context.Background(), info, msg, out[:0])
		if len(out) > 0 {
			if l.cfg.Framed {
				err = wire.WriteFramed(w, out)
			} else {
				_, err = w.Write(out)
			}
			if err == nil {
				err = w.Flush()
			}
		}
		if cap(out) > 4<<20 {
			out = nil // do not pin a huge answer's buffer on an idle connection
		}
		stop := l.setBusy(cn, false)
		if err != nil {
			l.log.Debug("client went away while the reply was written", "remote", info.Remote, "err", err)
			return
		}
		if stop {
			return
		}
	}
}

func isHTTP(head []byte) bool {
	for _, m := range httpMethods {
		if bytes.Equal(head, m) {
			return true
		}
	}
	return false
}

// setBusy marks the connection; it reports whether the listener is closing
// (an idle connection then ends).
func (l *Listener) setBusy(cn *conn, busy bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	cn.busy = busy
	return l.closing
}

func (l *Listener) readFailed(info *router.ConnInfo, err error) {
	var ne net.Error
	switch {
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
	l.log.Warn("closing client connection after bad input", "remote", info.Remote, "reason", reason, "detail", detail)
	if l.hooks.BadInput != nil {
		l.hooks.BadInput(reason)
	}
}

// Shutdown stops accepting, closes idle connections at once, lets in-flight
// calls finish and closes their connections after the reply; at the context
// deadline it closes whatever is left.
func (l *Listener) Shutdown(ctx context.Context) error {
	l.mu.Lock()
	l.closing = true
	for cn := range l.conns {
		if !cn.busy {
			_ = cn.c.SetReadDeadline(time.Now())
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
