package monitoring

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Management listener defaults (the spec's defaults for management.threads and
// management.readiness-cache-ms).
const (
	DefaultManagementThreads = 4
	DefaultReadinessCache    = 2 * time.Second
	// DefaultProbeTimeout bounds one backend readiness probe round.
	DefaultProbeTimeout = 30 * time.Second
	// slotWait bounds how long a request waits for a free handler slot
	// before it is answered 503.
	slotWait = 10 * time.Second
)

// Readiness status values of the /readyz "status" field.
const (
	StatusReady    = "READY"
	StatusNotReady = "NOT_READY"
)

// Kerberos state values (the spec's vocabulary). Only KerberosDisabled is
// produced until security lands.
const (
	KerberosDisabled = "DISABLED"
	KerberosPending  = "PENDING"
	KerberosActive   = "ACTIVE"
	KerberosStale    = "STALE"
	KerberosFailed   = "FAILED"
)

// BackendState is the live runtime state of one catalog's backend as rendered
// by /readyz. Epoch fields are 0 when the event never happened.
type BackendState struct {
	Catalog                string
	Connected, Degraded    bool
	LastSuccessEpochSecond int64
	LastFailureEpochSecond int64
	LastProbeEpochSecond   int64
	LastLatencyMs          int64
	LatencyEwmaMs          float64
	LatencyBudgetMs        int64
	CircuitState           string // "" when no breaker computes it: circuitState and degraded are then left out
	ConsecutiveFailures    int
	LastError              string
	Endpoint               string
	RuntimeProfile         string

	// Rendered only when non-zero: they belong to features that may be off.
	BaselineTimeoutMs     int64
	AdaptiveTimeoutMs     int64
	CircuitRetryAtEpochMs int64

	// Fan-out omissions (routing.degraded-routing-policy=SAFE_FANOUT_READS);
	// rendered only when SafeFanout is set. OmittedNow: a safe fan-out read
	// would leave this catalog out right now (open circuit, failed probe).
	SafeFanout                    bool
	FanoutOmissions               int64
	LastFanoutOmissionEpochSecond int64
	OmittedNow                    bool
}

// ReadinessSource is what /readyz asks about the backends.
type ReadinessSource interface {
	// ProbeBackends is the expensive part: it opens or uses a backend session
	// per catalog and updates the runtime state. It must honour ctx.
	ProbeBackends(ctx context.Context)
	// BackendStates is cheap: the current in-memory runtime state.
	BackendStates() []BackendState
}

// BackgroundProbeSource may additionally be implemented by a
// ReadinessSource whose backends are probed in the background
// (routing.backend-state-polling): when on, probeAgeMs is the age of the
// last completed background round (null before the first), and
// ProbeBackends is expected to return at once.
type BackgroundProbeSource interface {
	BackgroundProbes() (last time.Time, on bool)
}

// KerberosStatus is the Kerberos login state of one side of the proxy.
type KerberosStatus struct {
	State     string `json:"state"`
	LoggedIn  bool   `json:"loggedIn"`
	Healthy   bool   `json:"healthy"`
	Principal string `json:"principal,omitempty"`
	// TGT freshness, when known.
	TGTExpiresAtEpochSecond int64  `json:"tgtExpiresAtEpochSecond,omitempty"`
	SecondsUntilExpiry      *int64 `json:"secondsUntilExpiry,omitempty"`
}

// KerberosReport is the /readyz "kerberos" section.
type KerberosReport struct {
	FrontDoor KerberosStatus `json:"frontDoor"`
	Backend   KerberosStatus `json:"backend"`
}

// KerberosSource may additionally be implemented by a ReadinessSource once
// security exists. KerberosStatus must be cheap (read existing logins, never
// log in). Without it both sides report DISABLED. Readiness fails when the
// front door is not DISABLED and not Healthy; backend Kerberos is diagnostic.
type KerberosSource interface {
	KerberosStatus() KerberosReport
}

// TokenStoreStatus is the /readyz "tokenStore" section: the delegation-token
// store the front door issues into (diagnostic; it does not decide
// readiness: Kerberos clients are served without it).
type TokenStoreStatus struct {
	Store      string `json:"store"`
	Healthy    bool   `json:"healthy"`
	MasterKeys int    `json:"masterKeys"`
	LastError  string `json:"lastError,omitempty"`
}

// TokenStoreSource may additionally be implemented by a ReadinessSource when
// delegation tokens are served; nil means none (the section is left out).
// It must be cheap: the value of the last backend probe.
type TokenStoreSource interface {
	TokenStoreStatus() *TokenStoreStatus
}

// RESTCatalogStatus is the /readyz "restCatalog" section: how the Iceberg
// REST listener admits callers (diagnostic; it does not decide readiness).
type RESTCatalogStatus struct {
	Address string `json:"address"`
	TLS     bool   `json:"tls"`
	// Authentication lists the mechanisms it accepts ("spnego", "oauth2"),
	// or "none".
	Authentication []string `json:"authentication"`
	// Warning is set when the listener accepts anonymous requests.
	Warning string `json:"warning,omitempty"`
}

// RESTCatalogSource may additionally be implemented by a ReadinessSource when
// the REST listener runs; nil means none (the section is left out).
type RESTCatalogSource interface {
	RESTCatalogStatus() *RESTCatalogStatus
}

// LockStoreStatus is the /readyz "syntheticLockStore" section: the synthetic
// lock shim's store as the last probe found it.
type LockStoreStatus struct {
	Mode                 string `json:"mode"`  // IN_MEMORY or ZOOKEEPER
	Store                string `json:"store"` // e.g. "ZOOKEEPER store zk1:2181 znode /hms-proxy-synthetic-read-locks"
	Reachable            bool   `json:"reachable"`
	LastProbeEpochSecond int64  `json:"lastProbeEpochSecond"`
	LastError            string `json:"lastError,omitempty"`
}

// LockStoreSource may additionally be implemented by a ReadinessSource whose
// ProbeBackends also probes the synthetic lock store; ok is false when there
// is no shim (one catalog). An unreachable store is reported, not a reason to
// be NOT_READY: every replica shares it, so failing readiness would take all
// of them out of the load balancer at once, while the default catalog's
// traffic and all metadata calls still work; the lock calls of non-default
// catalogs fail with a message naming the store meanwhile.
type LockStoreSource interface {
	LockStoreStatus() (LockStoreStatus, bool)
}

// ListenerStatus is one front-door listener of this replica as /readyz
// reports it.
type ListenerStatus struct {
	Name    string `json:"name"`
	Address string `json:"address,omitempty"`
	// Serving: bound and accepting connections (false before the start, after
	// the drain began, or when its socket was closed under it).
	Serving bool `json:"serving"`
}

// ListenerSource may additionally be implemented by a ReadinessSource: the
// replica's front-door listeners. A listener that does not accept
// connections makes the replica NOT_READY, since a balancer that sends
// clients to it sends them nowhere.
type ListenerSource interface {
	ListenerStatuses() []ListenerStatus
}

// ManagementConfig configures the management listener (management.* keys).
type ManagementConfig struct {
	BindHost string
	Port     int // 0 picks a free port (tests)
	// Threads bounds concurrently handled requests (management.threads);
	// 0 means DefaultManagementThreads. See Management for how slots are shared.
	Threads int
	// ReadinessCache is how long a probe result is reused
	// (management.readiness-cache-ms); 0 probes on every /readyz.
	ReadinessCache time.Duration
	// ProbeTimeout bounds one ProbeBackends call; 0 means DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// Reload, when set (management.reload-enabled=true), serves POST
	// /reload: it re-reads and applies the configuration and says what it
	// did, or why it refused. nil: /reload is not served (404).
	Reload func(ctx context.Context) (summary string, err error)
}

// Management is the management HTTP listener serving /healthz, /readyz and
// /metrics. It has no authentication: bind it to a monitoring network only.
//
// Concurrency design: Go's HTTP server runs each connection on its own
// goroutine, so the "thread pool" of management.threads is a semaphore of
// Threads handler slots that every request must hold while it is handled.
// /readyz must additionally hold one of max(1, Threads-1) readiness slots, so
// readiness checks can never occupy every handler slot: at least one slot
// stays free for /healthz and /metrics however slow backend probes are. With
// Threads == 1 the pool is raised to 2 for that reason (the spec asks for at
// least two). A request that finds no free slot within 10 s gets 503.
//
// Readiness cache: a probe result is reused for ReadinessCache. When it is
// stale, the first /readyz starts one probe (in its own goroutine, bounded by
// ProbeTimeout, not cancelled if that client goes away) and waits for it;
// concurrent /readyz calls meanwhile answer from the previous result, or, if
// there has never been one, wait for that same in-flight probe. So at most one
// probe runs at a time. The per-backend fields are always rendered from the
// live BackendStates(); probeAgeMs tells how old the last completed probe is.
type Management struct {
	cfg      ManagementConfig
	gatherer prometheus.Gatherer
	src      ReadinessSource
	// readiness holds the listener's own metrics (the /readyz answers and
	// the catalogs' connectivity), served on /metrics next to gatherer.
	readiness *readinessMetrics
	own       *prometheus.Registry
	log       *slog.Logger
	started   time.Time

	slots      chan struct{} // all handlers
	readySlots chan struct{} // /readyz only

	probeCtx    context.Context
	probeCancel context.CancelFunc
	probeWG     sync.WaitGroup

	pmu         sync.Mutex
	probeDoneAt time.Time     // completion of the last finished probe; zero = none yet
	inflight    chan struct{} // closed when the running probe finishes; nil = none running
	probes      int64         // probes started (diagnostics, tests)

	draining atomic.Pointer[string] // set: /readyz answers NOT_READY with this reason

	mu       sync.Mutex
	srv      *http.Server
	ln       net.Listener
	serveErr chan error
}

// NewManagement builds the listener; Start binds it. gatherer serves /metrics
// (usually the registry passed to NewMetrics), together with the listener's
// own readiness metrics (hms_proxy_ready and the others of readiness.go).
// logger may be nil.
func NewManagement(cfg ManagementConfig, gatherer prometheus.Gatherer, src ReadinessSource, logger *slog.Logger) *Management {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Threads == 0 {
		cfg.Threads = DefaultManagementThreads
	}
	if cfg.ProbeTimeout == 0 {
		cfg.ProbeTimeout = DefaultProbeTimeout
	}
	pool := max(cfg.Threads, 2)
	ctx, cancel := context.WithCancel(context.Background())
	readiness := newReadinessMetrics(src)
	own := prometheus.NewRegistry()
	own.MustRegister(readiness) // a fresh registry: cannot collide
	return &Management{
		cfg:         cfg,
		gatherer:    gatherer,
		src:         src,
		readiness:   readiness,
		own:         own,
		log:         logger,
		started:     time.Now(),
		slots:       make(chan struct{}, pool),
		readySlots:  make(chan struct{}, max(1, pool-1)),
		probeCtx:    ctx,
		probeCancel: cancel,
	}
}

func (m *Management) validate() error {
	c := m.cfg
	if c.Threads < 1 {
		return fmt.Errorf("management.threads must be at least 1, got %d", c.Threads)
	}
	if c.ReadinessCache < 0 {
		return fmt.Errorf("management.readiness-cache-ms must not be negative, got %d", c.ReadinessCache.Milliseconds())
	}
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("management.port must be 0..65535, got %d", c.Port)
	}
	if c.ProbeTimeout < 0 {
		return fmt.Errorf("management probe timeout must not be negative, got %s", c.ProbeTimeout)
	}
	if m.gatherer == nil {
		return errors.New("management listener: no metrics gatherer")
	}
	if m.src == nil {
		return errors.New("management listener: no readiness source")
	}
	return nil
}

// Handler returns the HTTP handler (for embedding or tests); Start serves it.
func (m *Management) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/healthz", m.limited(false, http.HandlerFunc(m.serveHealthz)))
	mux.Handle("/readyz", m.limited(true, http.HandlerFunc(m.serveReadyz)))
	if m.cfg.Reload != nil {
		mux.Handle("/reload", m.serveReload())
	}
	gatherers := prometheus.Gatherers{m.own}
	if m.gatherer != nil {
		gatherers = append(gatherers, m.gatherer)
	}
	mux.Handle("/metrics", m.limited(false, promhttp.HandlerFor(gatherers, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(m.log.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
	})))
	return mux
}

// Start binds BindHost:Port and serves in the background. It returns the bind
// error, if any.
func (m *Management) Start() error {
	if err := m.validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.srv != nil {
		return errors.New("management listener already started")
	}
	addr := net.JoinHostPort(m.cfg.BindHost, strconv.Itoa(m.cfg.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("management listener: bind %s (management.bind-host/management.port): %w", addr, err)
	}
	m.ln = ln
	m.srv = &http.Server{
		Handler:           m.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      m.cfg.ProbeTimeout + slotWait + 10*time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(m.log.Handler(), slog.LevelWarn),
	}
	m.serveErr = make(chan error, 1)
	srv := m.srv
	go func() {
		err := srv.Serve(ln)
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.log.Error("management listener stopped", "addr", ln.Addr().String(), "err", err)
		}
		m.serveErr <- err
	}()
	m.log.Info("management listener started", "addr", ln.Addr().String(),
		"threads", cap(m.slots), "readinessCacheMs", m.cfg.ReadinessCache.Milliseconds())
	return nil
}

// Addr is the bound address (nil before Start).
func (m *Management) Addr() net.Addr {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ln == nil {
		return nil
	}
	return m.ln.Addr()
}

// Shutdown stops accepting, waits for in-flight requests, cancels a running
// backend probe and waits for it, all bounded by ctx.
func (m *Management) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	srv := m.srv
	m.mu.Unlock()
	m.probeCancel()
	var err error
	if srv != nil {
		err = srv.Shutdown(ctx)
	}
	done := make(chan struct{})
	go func() { m.probeWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		if err == nil {
			err = fmt.Errorf("management listener: readiness probe still running at shutdown: %w", ctx.Err())
		}
	}
	return err
}

// SetDraining makes every later /readyz answer 503 NOT_READY with reason,
// at once and without a probe: the proxy is stopping, and a balancer must
// stop sending it new connections while its calls in flight finish.
func (m *Management) SetDraining(reason string) {
	m.draining.Store(&reason)
}

type reloadResponse struct {
	Status  string `json:"status"` // RELOADED or REFUSED
	Message string `json:"message"`
}

// serveReload answers POST /reload: 200 RELOADED with what was applied, or
// 400 REFUSED with why (the running configuration is kept). One reload runs
// at a time; it holds one handler slot.
func (m *Management) serveReload() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			http.Error(w, "method not allowed: POST /reload re-reads the configuration", http.StatusMethodNotAllowed)
			return
		}
		timer := time.NewTimer(slotWait)
		defer timer.Stop()
		if !acquire(r.Context(), timer.C, m.slots) {
			busy(w)
			return
		}
		defer func() { <-m.slots }()
		summary, err := m.cfg.Reload(r.Context())
		if err != nil {
			writeJSON(w, http.StatusBadRequest, reloadResponse{Status: "REFUSED", Message: err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, reloadResponse{Status: "RELOADED", Message: summary})
	})
}

// ProbeCount returns how many backend probes have been started.
func (m *Management) ProbeCount() int64 {
	m.pmu.Lock()
	defer m.pmu.Unlock()
	return m.probes
}

func (m *Management) limited(readiness bool, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		timer := time.NewTimer(slotWait)
		defer timer.Stop()
		if readiness {
			if !acquire(r.Context(), timer.C, m.readySlots) {
				busy(w)
				return
			}
			defer func() { <-m.readySlots }()
		}
		if !acquire(r.Context(), timer.C, m.slots) {
			busy(w)
			return
		}
		defer func() { <-m.slots }()
		h.ServeHTTP(w, r)
	})
}

func acquire(ctx context.Context, timeout <-chan time.Time, sem chan struct{}) bool {
	select {
	case sem <- struct{}{}:
		return true
	default:
	}
	select {
	case sem <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	case <-timeout:
		return false
	}
}

func busy(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	http.Error(w, "management listener busy", http.StatusServiceUnavailable)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encode response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

type healthzResponse struct {
	Status               string `json:"status"`
	UptimeMs             int64  `json:"uptimeMs"`
	StartTimeEpochSecond int64  `json:"startTimeEpochSecond"`
}

func (m *Management) serveHealthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, healthzResponse{
		Status:               "UP",
		UptimeMs:             time.Since(m.started).Milliseconds(),
		StartTimeEpochSecond: m.started.Unix(),
	})
}

type backendJSON struct {
	Connected              bool    `json:"connected"`
	Degraded               *bool   `json:"degraded,omitempty"`
	LastSuccessEpochSecond int64   `json:"lastSuccessEpochSecond"`
	LastFailureEpochSecond int64   `json:"lastFailureEpochSecond"`
	LastProbeEpochSecond   int64   `json:"lastProbeEpochSecond"`
	LastLatencyMs          int64   `json:"lastLatencyMs"`
	LatencyEwmaMs          float64 `json:"latencyEwmaMs"`
	BaselineTimeoutMs      int64   `json:"baselineTimeoutMs,omitempty"`
	AdaptiveTimeoutMs      int64   `json:"adaptiveTimeoutMs,omitempty"`
	LatencyBudgetMs        int64   `json:"latencyBudgetMs"`
	CircuitState           string  `json:"circuitState,omitempty"`
	ConsecutiveFailures    int     `json:"consecutiveFailures"`
	CircuitRetryAtEpochMs  int64   `json:"circuitRetryAtEpochMs,omitempty"`
	FanoutOmissions        *int64  `json:"fanoutOmissions,omitempty"`
	LastFanoutOmission     *int64  `json:"lastFanoutOmissionEpochSecond,omitempty"`
	LastError              *string `json:"lastError"`
	Endpoint               string  `json:"endpoint,omitempty"`
	RuntimeProfile         string  `json:"runtimeProfile,omitempty"`
}

type readySummary struct {
	Backends     int      `json:"backends"`
	Connected    int      `json:"connected"`
	Degraded     int      `json:"degraded"`
	Disconnected []string `json:"disconnected"`
	// FanoutOmitted: catalogs a safe fan-out read leaves out right now
	// (only with routing.degraded-routing-policy=SAFE_FANOUT_READS).
	FanoutOmitted *[]string `json:"fanoutOmitted,omitempty"`
}

type readyzResponse struct {
	Status     string `json:"status"`
	Ready      bool   `json:"ready"`
	Reason     string `json:"reason,omitempty"`
	ProbeAgeMs *int64 `json:"probeAgeMs"`
	// ProbeError: the backend probe round did not finish (diagnostic, as
	// the per-backend state it would have refreshed).
	ProbeError string                 `json:"probeError,omitempty"`
	Listeners  []ListenerStatus       `json:"listeners,omitempty"`
	Summary    readySummary           `json:"summary"`
	Backends   map[string]backendJSON `json:"backends"`
	Kerberos   KerberosReport         `json:"kerberos"`
	TokenStore *TokenStoreStatus      `json:"tokenStore,omitempty"`
	LockStore  *LockStoreStatus       `json:"syntheticLockStore,omitempty"`
	REST       *RESTCatalogStatus     `json:"restCatalog,omitempty"`
	Ranger     []RangerPluginStatus   `json:"ranger,omitempty"`
}

// probeResult returns the completion time of the probe data to answer from,
// starting a probe when the cached one is stale and none is running.
func (m *Management) probeResult(ctx context.Context) (time.Time, error) {
	m.pmu.Lock()
	now := time.Now()
	prev := m.probeDoneAt
	if !prev.IsZero() && m.cfg.ReadinessCache > 0 && now.Sub(prev) < m.cfg.ReadinessCache {
		m.pmu.Unlock()
		return prev, nil
	}
	var wait chan struct{}
	switch {
	case m.inflight == nil:
		if m.probeCtx.Err() != nil {
			m.pmu.Unlock()
			return prev, errors.New("management listener is shutting down")
		}
		wait = make(chan struct{})
		m.inflight = wait
		m.probes++
		m.probeWG.Add(1)
		go m.runProbe(wait)
	case !prev.IsZero():
		// Someone else is refreshing: answer from the previous result.
		m.pmu.Unlock()
		return prev, nil
	default:
		wait = m.inflight // first probe ever is running: wait for it
	}
	m.pmu.Unlock()

	timer := time.NewTimer(m.cfg.ProbeTimeout + time.Second)
	defer timer.Stop()
	select {
	case <-wait:
	case <-ctx.Done():
		return prev, ctx.Err()
	case <-timer.C:
		return prev, fmt.Errorf("backend readiness probe did not finish within %s", m.cfg.ProbeTimeout)
	}
	m.pmu.Lock()
	defer m.pmu.Unlock()
	return m.probeDoneAt, nil
}

func (m *Management) runProbe(done chan struct{}) {
	defer m.probeWG.Done()
	defer func() {
		if p := recover(); p != nil {
			m.log.Error("backend readiness probe panicked", "panic", fmt.Sprint(p))
		}
		m.pmu.Lock()
		m.probeDoneAt = time.Now()
		m.inflight = nil
		m.pmu.Unlock()
		close(done)
	}()
	ctx, cancel := context.WithTimeout(m.probeCtx, m.cfg.ProbeTimeout)
	defer cancel()
	start := time.Now()
	m.src.ProbeBackends(ctx)
	m.log.Debug("backend readiness probe finished", "tookMs", time.Since(start).Milliseconds())
}

func (m *Management) serveReadyz(w http.ResponseWriter, r *http.Request) {
	if reason := m.draining.Load(); reason != nil {
		m.readiness.observe(false)
		writeJSON(w, http.StatusServiceUnavailable, readyzResponse{Status: "NOT_READY", Reason: *reason,
			Backends: map[string]backendJSON{}, Summary: readySummary{Disconnected: []string{}}})
		return
	}
	probedAt, probeErr := m.probeResult(r.Context())
	if errors.Is(probeErr, context.Canceled) && r.Context().Err() != nil {
		return // client went away
	}
	now := time.Now()
	resp := readyzResponse{
		Backends: map[string]backendJSON{},
		Summary:  readySummary{Disconnected: []string{}},
		Kerberos: KerberosReport{
			FrontDoor: KerberosStatus{State: KerberosDisabled, Healthy: true},
			Backend:   KerberosStatus{State: KerberosDisabled, Healthy: true},
		},
	}
	if bp, ok := m.src.(BackgroundProbeSource); ok {
		if last, on := bp.BackgroundProbes(); on {
			probedAt = last
		}
	}
	if !probedAt.IsZero() {
		age := max(now.Sub(probedAt).Milliseconds(), 0)
		resp.ProbeAgeMs = &age
	}
	states := m.src.BackendStates()
	sort.Slice(states, func(i, j int) bool { return states[i].Catalog < states[j].Catalog })
	for _, s := range states {
		b := backendJSON{
			Connected:              s.Connected,
			LastSuccessEpochSecond: s.LastSuccessEpochSecond,
			LastFailureEpochSecond: s.LastFailureEpochSecond,
			LastProbeEpochSecond:   s.LastProbeEpochSecond,
			LastLatencyMs:          s.LastLatencyMs,
			LatencyEwmaMs:          s.LatencyEwmaMs,
			BaselineTimeoutMs:      s.BaselineTimeoutMs,
			AdaptiveTimeoutMs:      s.AdaptiveTimeoutMs,
			LatencyBudgetMs:        s.LatencyBudgetMs,
			CircuitState:           s.CircuitState,
			ConsecutiveFailures:    s.ConsecutiveFailures,
			CircuitRetryAtEpochMs:  s.CircuitRetryAtEpochMs,
			Endpoint:               s.Endpoint,
			RuntimeProfile:         s.RuntimeProfile,
		}
		if s.LastError != "" {
			e := s.LastError
			b.LastError = &e
		}
		if s.CircuitState != "" { // computed by the breaker; without one there is nothing to report
			d := s.Degraded
			b.Degraded = &d
		}
		if s.SafeFanout {
			n, at := s.FanoutOmissions, s.LastFanoutOmissionEpochSecond
			b.FanoutOmissions, b.LastFanoutOmission = &n, &at
			if resp.Summary.FanoutOmitted == nil {
				resp.Summary.FanoutOmitted = &[]string{}
			}
			if s.OmittedNow {
				*resp.Summary.FanoutOmitted = append(*resp.Summary.FanoutOmitted, s.Catalog)
			}
		}
		resp.Backends[s.Catalog] = b
		resp.Summary.Backends++
		if s.Connected {
			resp.Summary.Connected++
		} else {
			resp.Summary.Disconnected = append(resp.Summary.Disconnected, s.Catalog)
		}
		if s.Degraded {
			resp.Summary.Degraded++
		}
	}
	if ks, ok := m.src.(KerberosSource); ok {
		resp.Kerberos = ks.KerberosStatus()
	}
	if ts, ok := m.src.(TokenStoreSource); ok {
		resp.TokenStore = ts.TokenStoreStatus()
	}
	if ls, ok := m.src.(LockStoreSource); ok {
		if st, on := ls.LockStoreStatus(); on {
			resp.LockStore = &st
		}
	}
	if rs, ok := m.src.(RESTCatalogSource); ok {
		resp.REST = rs.RESTCatalogStatus()
	}
	if rs, ok := m.src.(RangerSource); ok {
		resp.Ranger = rs.RangerStatus()
	}

	if ls, ok := m.src.(ListenerSource); ok {
		resp.Listeners = ls.ListenerStatuses()
	}

	// Readiness answers one question: should a balancer send this replica
	// new connections. Only what is wrong with this replica itself counts:
	// its listeners, its front-door login (the specification's rule), no
	// catalog at all. A backend is shared by every replica: a disconnected
	// catalog, a probe round that did not finish or an unreachable lock
	// store would take every replica out at once and cut the catalogs that
	// still work; they are reported in the body, in
	// hms_proxy_backend_connected and by the alerts.
	var reasons []string
	if probeErr != nil {
		resp.ProbeError = probeErr.Error()
	}
	if len(states) == 0 {
		reasons = append(reasons, "no backend catalogs reported")
	}
	for _, l := range resp.Listeners {
		if !l.Serving {
			reasons = append(reasons, "listener "+strconv.Quote(l.Name)+" is not accepting connections")
		}
	}
	if fd := resp.Kerberos.FrontDoor; fd.State != KerberosDisabled && !fd.Healthy {
		reasons = append(reasons, "front-door Kerberos login is "+fd.State)
	}
	resp.Ready = len(reasons) == 0
	m.readiness.observe(resp.Ready)
	code := http.StatusOK
	resp.Status = StatusReady
	if !resp.Ready {
		code = http.StatusServiceUnavailable
		resp.Status = StatusNotReady
		resp.Reason = strings.Join(reasons, "; ")
	}
	writeJSON(w, code, resp)
}
