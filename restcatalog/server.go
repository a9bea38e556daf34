package restcatalog

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hms-proxy/hms-proxy/security/tlsconf"
)

// ServerOptions configure the REST listener.
type ServerOptions struct {
	// BindHost and Port are rest-catalog.bind-host and rest-catalog.port
	// (port 0 picks a free one, for tests).
	BindHost string
	Port     int
	// Timeouts of net/http (defaults: header 10 s, read 60 s, write 120 s,
	// idle 120 s). WriteTimeout must exceed Options.RequestTimeout plus a
	// purge's file deletions.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxHeaderBytes bounds request headers (default 64 KiB).
	MaxHeaderBytes int
	// MaxInFlight (rest-catalog.max-worker-threads) bounds the requests
	// served at once; as many more wait up to QueueWait (default 10 s) for a
	// free slot, and any beyond, or still waiting then, answer 503
	// ServiceUnavailableException with Retry-After. 0: no bound.
	MaxInFlight int
	QueueWait   time.Duration
	// TLSCertFile and TLSKeyFile (rest-catalog.tls.*), when set, make the
	// listener HTTPS only (TLS 1.2 or later); the files are read again when
	// they change.
	TLSCertFile, TLSKeyFile string
	// Metrics receives hms_proxy_rest_listener_info.
	Metrics *Metrics
	Log     *slog.Logger
}

// Server is a running REST listener.
type Server struct {
	srv   *http.Server
	ln    net.Listener
	done  chan error
	certs *tlsconf.ServerCert // nil without TLS
}

// Listen binds the listener and starts serving h in the background.
func Listen(h http.Handler, opts ServerOptions) (*Server, error) {
	host := opts.BindHost
	if host == "" {
		host = "0.0.0.0"
	}
	addr := net.JoinHostPort(host, strconv.Itoa(opts.Port))
	var errLog *slog.Logger = opts.Log
	if errLog == nil {
		errLog = slog.Default()
	}
	var certs *tlsconf.ServerCert
	if opts.TLSCertFile != "" || opts.TLSKeyFile != "" {
		var err error
		// read again on the next handshake after a rotation (security/tlsconf)
		if certs, err = tlsconf.NewServerCert(tlsconf.File{Key: "rest-catalog.tls.cert-file", Path: opts.TLSCertFile},
			tlsconf.File{Key: "rest-catalog.tls.key-file", Path: opts.TLSKeyFile}, func(leaf *x509.Certificate, err error) {
				if err != nil {
					errLog.Warn("REST listener certificate files changed but do not load; serving the previous certificate", "err", err)
					return
				}
				errLog.Info("REST listener certificate reloaded", "subject", leaf.Subject.String(), "not_after", leaf.NotAfter)
			}); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("rest-catalog listener on %s: %w", addr, err)
	}
	def := func(d, v time.Duration) time.Duration {
		if d > 0 {
			return d
		}
		return v
	}
	maxHeader := opts.MaxHeaderBytes
	if maxHeader <= 0 {
		maxHeader = 64 << 10
	}
	if opts.MaxInFlight > 0 {
		h = newAdmission(h, opts.MaxInFlight, def(opts.QueueWait, 10*time.Second), opts.Metrics)
	}
	s := &Server{ln: ln, done: make(chan error, 1), certs: certs, srv: &http.Server{
		Handler:           h,
		ReadHeaderTimeout: def(opts.ReadHeaderTimeout, 10*time.Second),
		ReadTimeout:       def(opts.ReadTimeout, 60*time.Second),
		WriteTimeout:      def(opts.WriteTimeout, 120*time.Second),
		IdleTimeout:       def(opts.IdleTimeout, 120*time.Second),
		MaxHeaderBytes:    maxHeader,
		ErrorLog:          slog.NewLogLogger(errLog.Handler(), slog.LevelWarn),
	}}
	opts.Metrics.ListenerInfo(host, opts.Port)
	if certs != nil {
		s.srv.TLSConfig = certs.Config()
	}
	go func() {
		var err error
		if certs != nil {
			err = s.srv.ServeTLS(ln, "", "")
		} else {
			err = s.srv.Serve(ln)
		}
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	return s, nil
}

// admission bounds the requests served at once (see
// ServerOptions.MaxInFlight).
type admission struct {
	next    http.Handler
	slots   chan struct{}
	waiting atomic.Int64
	max     int
	wait    time.Duration
	metrics *Metrics
}

func newAdmission(next http.Handler, n int, wait time.Duration, m *Metrics) *admission {
	return &admission{next: next, slots: make(chan struct{}, n), max: n, wait: wait, metrics: m}
}

func (a *admission) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case a.slots <- struct{}{}:
		a.serve(w, r)
		return
	default:
	}
	why := fmt.Sprintf("%d more are already waiting", a.max)
	if a.waiting.Add(1) <= int64(a.max) {
		t := time.NewTimer(a.wait)
		select {
		case a.slots <- struct{}{}:
			t.Stop()
			a.waiting.Add(-1)
			a.serve(w, r)
			return
		case <-t.C:
			why = fmt.Sprintf("no slot freed up within %v", a.wait)
		case <-r.Context().Done():
			why = "the client went away while waiting"
		}
	}
	a.waiting.Add(-1)
	start := time.Now()
	e := errorf(http.StatusServiceUnavailable, typeUnavailable,
		"the REST listener is serving %d requests at once (rest-catalog.max-worker-threads=%d) and %s; retry later", a.max, a.max, why)
	w.Header().Set("Retry-After", "1")
	if r.Method == http.MethodHead {
		w.WriteHeader(e.Code)
	} else {
		writeError(w, e)
	}
	prefix, route := "", routeUnmatched
	if h, ok := a.next.(*Handler); ok {
		prefix, route = h.labels(r)
	}
	a.metrics.observe(prefix, route, e.Code, time.Since(start))
}

func (a *admission) serve(w http.ResponseWriter, r *http.Request) {
	defer func() { <-a.slots }()
	a.next.ServeHTTP(w, r)
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// URL is the listener's base URL (http://host:port, https:// with TLS).
func (s *Server) URL() string {
	if s.certs != nil {
		return "https://" + s.ln.Addr().String()
	}
	return "http://" + s.ln.Addr().String()
}

// Shutdown stops accepting, lets in-flight requests finish within ctx, then
// closes.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	if serr := <-s.done; serr != nil && err == nil {
		err = serr
	}
	return err
}
