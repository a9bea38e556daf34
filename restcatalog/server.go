package restcatalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"
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
	// Metrics receives hms_proxy_rest_listener_info.
	Metrics *Metrics
	Log     *slog.Logger
}

// Server is a running REST listener.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan error
}

// Listen binds the listener and starts serving h in the background.
func Listen(h http.Handler, opts ServerOptions) (*Server, error) {
	host := opts.BindHost
	if host == "" {
		host = "0.0.0.0"
	}
	addr := net.JoinHostPort(host, strconv.Itoa(opts.Port))
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
	var errLog *slog.Logger = opts.Log
	if errLog == nil {
		errLog = slog.Default()
	}
	s := &Server{ln: ln, done: make(chan error, 1), srv: &http.Server{
		Handler:           h,
		ReadHeaderTimeout: def(opts.ReadHeaderTimeout, 10*time.Second),
		ReadTimeout:       def(opts.ReadTimeout, 60*time.Second),
		WriteTimeout:      def(opts.WriteTimeout, 120*time.Second),
		IdleTimeout:       def(opts.IdleTimeout, 120*time.Second),
		MaxHeaderBytes:    maxHeader,
		ErrorLog:          slog.NewLogLogger(errLog.Handler(), slog.LevelWarn),
	}}
	opts.Metrics.ListenerInfo(host, opts.Port)
	go func() {
		err := s.srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	return s, nil
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// URL is the listener's base URL (http://host:port).
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

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
