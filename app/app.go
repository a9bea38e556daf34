// Package app assembles a whole hms-proxy from a validated configuration:
// metrics, audit, router, one front-door listener per frontend profile and
// the management listener. cmd/hms-proxy and the end-to-end test harness
// both build the proxy here, so tests exercise exactly what operators run.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hms-proxy/hms-proxy/audit"
	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/configs"
	"github.com/hms-proxy/hms-proxy/fileio"
	"github.com/hms-proxy/hms-proxy/frontdoor"
	"github.com/hms-proxy/hms-proxy/locks"
	"github.com/hms-proxy/hms-proxy/monitoring"
	"github.com/hms-proxy/hms-proxy/restcatalog"
	"github.com/hms-proxy/hms-proxy/router"
	"github.com/hms-proxy/hms-proxy/router/breaker"
	"github.com/hms-proxy/hms-proxy/router/dbcache/cachesync"
	"github.com/hms-proxy/hms-proxy/router/methods"
	"github.com/hms-proxy/hms-proxy/router/naming"
	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/router/purge"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// App is an assembled proxy.
type App struct {
	Config    *configs.Config
	Log       *slog.Logger
	Registry  *prometheus.Registry
	Metrics   *monitoring.Metrics
	Router    *router.Router        // the router Build made; Current() follows reloads
	Listeners []*frontdoor.Listener // primary first
	Names     []string              // listener names, parallel to Listeners
	Mgmt      *monitoring.Management
	Budget    *wire.Budget        // bytes of client messages in progress, over all listeners
	REST      *restcatalog.Server // the Iceberg REST listener, nil when rest-catalog is off
	Security  *Security           // Kerberos, tokens, impersonation (security.go)
	Locks     *locks.Shim         // the synthetic lock shim; nil with one catalog
	CacheSync *cachesync.Sync     // database cache coherence across replicas; nil when off

	stopReclaim func() // ends the reclaimer (reclaim.go) and waits for it

	restInner   *frontdoor.Listener // in-process Thrift connections of REST requests
	restHandler *restcatalog.Handler
	restOptions restcatalog.ServerOptions
	restStatus  *monitoring.RESTCatalogStatus // the /readyz section; nil without the listener
	closers     []io.Closer
	purge       *purge.Purger // external table drop purge; nil when off
	// Files is the file layer of every catalog (HDFS, S3, local): the REST
	// frontend's metadata and purge, the drop purge.
	Files *fileio.Resolver

	// LogLevel, when set (cmd/hms-proxy), is the main log's level; a reload
	// changes it to logging.level.
	LogLevel *slog.LevelVar

	// reload (reload.go): the listeners' handler, the parts every router
	// generation shares, the file and properties in force.
	sw            routerSwitch
	rmu           sync.Mutex
	path          string
	props         map[string]string
	reloadMetrics *reloadMetrics
	retired       sync.WaitGroup // old routers waiting for their last call
	shared        routerParts
	draining      atomic.Bool
}

// routerParts are what each router generation is built with besides the
// configuration: built once, shared by every reload.
type routerParts struct {
	audit       *audit.Logger
	table       *methods.Table // the method table (metric labels, the router, the pools)
	tables      tableMetrics
	purged      map[string]bool // the catalogs the drop purge serves (its keys need a restart)
	lockMetrics *locks.Metrics
	res         *resilienceMetrics // of every router generation's resilience parts (resilience.go)
	notifyPage  int                // TestHooks.NotificationCountPage
}

// TestHooks change what Build assembles in ways no configuration key may:
// they exist for tests that must show what a safety feature prevents.
type TestHooks struct {
	// LockGrantAtOnce makes the synthetic lock shim grant every lock at once,
	// as the Java proxy's shim did (no writer isolation), so a test can show
	// the lost updates isolation prevents.
	LockGrantAtOnce bool
	// FileMidWrite runs halfway through every HDFS or S3 metadata write, so
	// a test can stop the storage server mid-write.
	FileMidWrite func(loc string)
	// OAuth2Now is the clock the REST listener checks bearer tokens' exp,
	// nbf and iat against (default time.Now), so a test moves time instead
	// of sleeping.
	OAuth2Now func() time.Time
	// NotificationCountPage is how many events one get_next_notification
	// of the router's own exposure count reads (0: the router's default),
	// so a test pages through a few events.
	NotificationCountPage int
}

// Build creates every part without binding any socket.
func Build(cfg *configs.Config, log *slog.Logger) (*App, error) {
	return BuildWith(cfg, log, TestHooks{})
}

// BuildWith is Build with test hooks (tests only).
func BuildWith(cfg *configs.Config, log *slog.Logger, hooks TestHooks) (*App, error) {
	a := &App{Config: cfg, Log: log, Registry: prometheus.NewRegistry()}
	var auditLog *audit.Logger
	if cfg.Audit.Enabled {
		f, err := audit.OpenRollingFile(cfg.Audit.File, cfg.Audit.MaxFileSizeBytes, cfg.Audit.MaxBackups)
		if err != nil {
			return nil, fmt.Errorf("audit.file=%s: %v", cfg.Audit.File, err)
		}
		auditLog = audit.NewBufferedLogger(f, cfg.Audit.FlushInterval)
		a.closers = append(a.closers, auditLog, f) // the batch held, then the file
		auditLog.SetErrorHandler(func(err error) { log.Error("audit record could not be written", "file", cfg.Audit.File, "err", err) })
	}
	table, err := methods.BuildTable()
	if err != nil {
		return nil, err
	}
	a.Metrics = monitoring.NewMetrics(a.Registry, table.Names())
	a.shared = routerParts{audit: auditLog, table: table, tables: newTableMetrics(a.Registry), notifyPage: hooks.NotificationCountPage}
	if a.Files, err = buildFiles(cfg, log, hooks.FileMidWrite); err != nil {
		a.closeFiles()
		return nil, err
	}
	a.closers = append(a.closers, a.Files)
	tables, purged, err := tablePolicies(cfg, a.shared.tables, a.Files, log, true)
	if err != nil {
		a.closeFiles()
		return nil, err
	}
	a.purge, a.shared.purged = tables.Purge, purged
	if a.Security, err = buildSecurity(cfg, a.Registry, log); err != nil {
		a.closePurge()
		a.closeFiles()
		return nil, err
	}
	if a.shared.lockMetrics, err = a.buildLockShim(hooks); err == nil {
		a.shared.res, err = newResilienceMetrics(a.Registry)
	}
	if err != nil {
		a.closePurge()
		a.Security.Close()
		a.closeFiles()
		return nil, err
	}
	a.reloadMetrics = newReloadMetrics(a.Registry)
	if err = a.buildCacheSync(); err != nil {
		a.closePurge()
		a.Security.Close()
		a.closeFiles()
		return nil, err
	}
	if a.Router, err = a.newRouter(cfg, tables); err != nil {
		a.closePurge()
		a.Security.Close()
		a.closeFiles()
		return nil, err
	}
	a.sw.cur.Store(newGeneration(a.Router, cfg))
	// Messages in progress over all listeners hold at most twice the largest
	// message size beyond their base buffers: a storm of huge declared
	// messages cannot take the process's memory.
	var maxMsg int64
	for _, fc := range cfg.Frontends() {
		maxMsg = max(maxMsg, fc.MaxMessageSize)
	}
	budget := wire.NewBudget(2*maxMsg, 5*time.Second)
	a.Budget = budget
	monitoring.RegisterInFlightBytes(a.Registry, budget.Used, budget.Total())
	stricts := map[thriftgen.ProfileSet]*wire.StrictSchema{}
	for _, fc := range cfg.Frontends() {
		prof, ok := thriftgen.ProfileByName(string(fc.Profile))
		runtime, err := compat.Lookup(string(fc.Profile))
		if !ok || err != nil {
			return nil, fmt.Errorf("frontend %q: unknown profile %s", fc.Name, fc.Profile)
		}
		dialect, err := compat.NewDialect(runtime)
		if err != nil {
			return nil, err
		}
		strict := stricts[prof]
		if strict == nil {
			if strict, err = wire.NewStrictSchema(prof); err != nil {
				return nil, err
			}
			stricts[prof] = strict
		}
		name := fc.Name
		if name == "" {
			name = "primary"
		}
		m := a.Metrics
		tlsConf, err := listenerTLS(fc, name, m, log)
		if err != nil {
			a.Router.Close()
			a.closePurge()
			a.Security.Close()
			a.closeFiles()
			return nil, err
		}
		l := frontdoor.New(frontdoor.Config{Name: fc.Name, BindHost: fc.BindHost, Port: fc.Port,
			MaxWorkers: fc.MaxWorkerThreads, MaxConnsPerSource: fc.MaxConnsPerSource, ClientSocketTimeout: fc.ClientSocketTimeout,
			KeepAlive: fc.TCPKeepAlive, KeepAliveIdle: fc.TCPKeepAliveIdle,
			KeepAliveInterval: fc.TCPKeepAliveInterval, KeepAliveCount: fc.TCPKeepAliveCount,
			Framed: fc.FramedTransport, MaxMessage: int(fc.MaxMessageSize), Strict: strict, Budget: budget,
			TLS: tlsConf, Auth: a.Security.authenticator(name)},
			&planner.Frontend{Name: name, Profile: prof, Runtime: runtime, Dialect: dialect}, &a.sw, log,
			frontdoor.Hooks{
				BadInput: func(reason string) { m.BadFrame(name, reason) },
				Refused:  func(reason string) { m.FrontendRefused(name, reason) },
				InFlight: func(d int) { m.FrontendInFlight(name, d) },
				Connections: func(d int) {
					if d > 0 {
						m.FrontendConnectionOpened(name)
					} else {
						m.FrontendConnectionClosed(name)
					}
				}})
		a.Listeners = append(a.Listeners, l)
		a.Names = append(a.Names, name)
	}
	if cfg.RESTCatalog.Enabled {
		if err := a.buildREST(cfg, auditLog, log, hooks.OAuth2Now); err != nil {
			a.closeFiles()
			return nil, err
		}
	}
	if cfg.Management.Enabled {
		a.Mgmt = monitoring.NewManagement(monitoring.ManagementConfig{BindHost: cfg.Management.BindHost,
			Port: cfg.Management.Port, Threads: cfg.Management.Threads,
			ReadinessCache: cfg.Management.ReadinessCache, Reload: a.managementReload()}, a.Registry, a.readiness(), log)
	}
	return a, nil
}

// newRouter builds a router generation from cfg over the shared parts: one
// lane per catalog (buildLanes), the chain's outer and inner links, the
// resilience parts.
func (a *App) newRouter(cfg *configs.Config, tables router.TablePolicies) (*router.Router, error) {
	var tracer router.Tracer // logging.debug-tracing; nil keeps tracing free when off
	if cfg.Logging.DebugTracing {
		tracer = router.NewTracer(a.Log)
	}
	ropts := router.Options{Table: a.shared.table, MaxMessage: int(cfg.Server.MaxMessageSize), Metrics: a.Metrics,
		Audit: a.shared.audit, Log: a.Log, Tracer: tracer, Tables: tables, Locks: a.Locks, LockMetrics: a.shared.lockMetrics,
		NotificationCountPage: a.shared.notifyPage}
	// Latency-aware routing and overload protection (resilience.go); the
	// rate limit is the first policy of the chain. A reload builds them
	// anew from its configuration (breaker states, buckets and caches start
	// fresh), on the metrics registered once.
	limiter, err := rateLimiter(cfg, a.shared.res)
	if err != nil {
		return nil, err
	}
	var guards map[string]*breaker.Guard
	if ropts.Resilience, guards, err = resilience(cfg, a.shared.res, a.Log); err != nil {
		return nil, err
	}
	ropts.Outer = append([]router.Middleware{router.RateLimit(limiter, a.Metrics)}, ropts.Outer...)
	if mw := a.cacheSyncMiddleware(); mw != nil {
		ropts.Inner = append(ropts.Inner, mw)
		for _, c := range cfg.Catalogs {
			a.CacheSync.Watch(c.Name) // a catalog added by a reload
		}
	}
	a.Security.routerOptions(&ropts)
	closeCache := func() {
		if c := ropts.Resilience.Cache; c != nil {
			c.Close()
		}
	}
	if ropts.Namespace, ropts.Lanes, err = a.buildLanes(cfg, guards); err != nil {
		closeCache()
		return nil, err
	}
	r, err := router.New(ropts)
	if err != nil {
		for _, l := range ropts.Lanes {
			l.Close()
		}
		closeCache()
		return nil, err
	}
	if a.CacheSync != nil {
		// Other replicas' database writes invalidate this generation's
		// caches (none: nothing to invalidate).
		if c := r.Cache(); c != nil {
			a.CacheSync.SetTarget(c)
		} else {
			a.CacheSync.SetTarget(nil)
		}
	}
	return r, nil
}

// buildLanes builds one lane per catalog of cfg, in order: the catalog's
// keys (router.LaneOptionsFor), its breaker, what security gives it (the
// backend dialer, impersonation), whether the drop purge serves it, its
// file IO.
func (a *App) buildLanes(cfg *configs.Config, guards map[string]*breaker.Guard) (*naming.Namespace, []*router.Lane, error) {
	ns, err := router.NamespaceFor(cfg)
	if err != nil {
		return nil, nil, err
	}
	lanes := make([]*router.Lane, 0, len(cfg.Catalogs))
	fail := func(err error) (*naming.Namespace, []*router.Lane, error) {
		for _, l := range lanes {
			l.Close()
		}
		return nil, nil, err
	}
	for i, c := range ns.Catalogs() {
		cc := cfg.Catalogs[i]
		lo, err := router.LaneOptionsFor(cc, c)
		if err != nil {
			return fail(err)
		}
		name := c.Name
		lo.Backend.Table = a.shared.table
		lo.Breaker = guards[name]
		lo.DropPurge = a.shared.purged[name]
		lo.Metrics, lo.Log = a.Metrics, a.Log
		a.Security.laneOptions(name, &lo)
		if cc.Ranger.Enabled && lo.Authorizer == nil {
			// Never serve a catalog the configuration guards without its
			// guard: the plugins are built at start (a reload added it).
			return fail(fmt.Errorf("catalog %s is guarded by Ranger (catalog.%s.ranger.enabled=true) but has no Ranger plugin: the plugins are built at start; restart the proxy to add a guarded catalog", name, name))
		}
		if a.Files != nil {
			lo.Files = func(_ context.Context, location string) (fileio.IO, error) { return a.Files.For(name, location) }
		}
		l, err := router.NewLane(lo)
		if err != nil {
			return fail(err)
		}
		lanes = append(lanes, l)
	}
	return ns, lanes, nil
}

// buildRouter builds the router of a reload: the table policies again (the
// purge pool and the catalogs it serves are the ones built at start).
func (a *App) buildRouter(cfg *configs.Config) (*router.Router, error) {
	tables, _, err := tablePolicies(cfg, a.shared.tables, a.Files, a.Log, false)
	if err != nil {
		return nil, err
	}
	tables.Purge = a.purge
	return a.newRouter(cfg, tables)
}

// Start binds every listener; on any failure it stops what it started.
func (a *App) Start() error {
	a.Security.Start()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	a.stopReclaim = func() { cancel(); <-done }
	go func() { defer close(done); newReclaimer(a.Log).run(ctx) }()
	a.Router.Start() // background polling, cache refresh
	for i, l := range a.Listeners {
		if err := l.Start(); err != nil {
			a.Shutdown(context.Background())
			return err
		}
		a.Log.Info("listening", "listener", a.Names[i], "addr", l.Addr().String())
	}
	if a.restHandler != nil {
		srv, err := restcatalog.Listen(a.restHandler, a.restOptions)
		if err != nil {
			a.Shutdown(context.Background())
			return err
		}
		a.REST = srv
		a.Log.Info("Iceberg REST catalog listening", "addr", srv.Addr().String())
	}
	if a.Mgmt != nil {
		if err := a.Mgmt.Start(); err != nil {
			a.Shutdown(context.Background())
			return err
		}
		a.Log.Info("management listening (no authentication: bind it to a monitoring network)", "addr", a.Mgmt.Addr().String())
	}
	return nil
}

// Listener returns a listener by name ("primary" or an additional frontend).
func (a *App) Listener(name string) *frontdoor.Listener {
	for i, n := range a.Names {
		if n == name {
			return a.Listeners[i]
		}
	}
	return nil
}

// Shutdown stops in order: listeners stop accepting and finish in-flight
// calls, then management, then backend sessions and files. It returns an
// error when ctx ended first.
func (a *App) Shutdown(ctx context.Context) error {
	// Readiness fails first, so a balancer health-checking /readyz stops
	// sending new connections while the calls in flight finish.
	a.draining.Store(true)
	if a.Mgmt != nil {
		a.Mgmt.SetDraining("shutting down: draining the calls in flight")
	}
	var errs []error
	if a.stopReclaim != nil {
		a.stopReclaim()
		a.stopReclaim = nil
	}
	if a.REST != nil {
		if err := a.REST.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if a.restInner != nil {
		if err := a.restInner.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	for _, l := range a.Listeners {
		if err := l.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if a.Mgmt != nil {
		if err := a.Mgmt.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	// No drop is served any more: running purges finish within ctx,
	// queued ones are logged and skipped.
	if a.purge != nil {
		if err := a.purge.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	a.Current().Close()
	// Every listener is closed: the routers replaced by reloads close when
	// their last call has finished.
	done := make(chan struct{})
	go func() { a.retired.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("routers replaced by a reload still had calls in flight: %w", ctx.Err()))
	}
	a.Security.Close()
	a.closeFiles()
	return errors.Join(errs...)
}

// closePurge stops the purge pool of a proxy that failed to build.
func (a *App) closePurge() {
	if a.purge != nil {
		_ = a.purge.Close(context.Background())
	}
}

func (a *App) closeFiles() {
	for _, c := range a.closers {
		c.Close()
	}
	a.closers = nil
}
