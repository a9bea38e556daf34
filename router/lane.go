package router

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/configs"
	"github.com/hms-proxy/hms-proxy/fileio"
	"github.com/hms-proxy/hms-proxy/monitoring"
	"github.com/hms-proxy/hms-proxy/router/breaker"
	"github.com/hms-proxy/hms-proxy/router/dbcache"
	"github.com/hms-proxy/hms-proxy/router/naming"
	"github.com/hms-proxy/hms-proxy/security/ranger"
)

// A Lane is everything that belongs to one catalog (Waggle Dance's
// DatabaseMapping is the precedent): its name and naming, its backend
// runtime with that runtime's field-id dialect and lossless-write guard,
// its shared backend pool and its users' impersonation pools, its breaker
// and latency state, its access and exposure policy, whether the drop purge
// serves it, and the slots of the Ranger authorizer and the file IO. app
// builds the lanes of a configuration generation (NewLane) and hands them to
// router.New; a reload builds new lanes and a new router and swaps both
// whole. The router holds lanes, never a map keyed by catalog: a catalog's
// lane is at its index (naming.Catalog.Index).
//
// What a lane is does not change once built: its parts keep live state (the
// pool's sessions, the breaker's streak, probe results) but the lane never
// points at another part.
type Lane struct {
	cat     *naming.Catalog
	runtime *compat.Runtime
	dialect *compat.Dialect // backend field-id dialect (HDP 3.1.5's Table); nil: canonical
	guard   *compat.Guard   // drop implied fields; refuse writes the runtime would silently lose
	pool    *Backend        // the shared pool
	users   *userPools      // impersonation pools; nil: the catalog does not impersonate
	breaker *breaker.Guard  // shared by the shared pool and the impersonation pools
	policy  *Policy         // access mode and exposure
	purge   bool            // the external table drop purge serves this catalog
	// The slots of the coming features: nil until they are wired in.
	authorizer *ranger.Authorizer
	files      func(ctx context.Context, location string) (fileio.IO, error)

	state catalogState // the last background probe, fan-out omissions
	// allLoader: the shared get_all_databases loader of the list cache
	// (router.New builds it once: a cache hit allocates no loader).
	allLoader dbcache.Loader
}

// LaneOptions are the parts of one lane.
type LaneOptions struct {
	Catalog *naming.Catalog
	Runtime *compat.Runtime
	// Backend configures the shared pool; NewLane sets its Guard (Breaker)
	// and, with Metrics, its session hooks.
	Backend BackendOptions
	// Breaker is the catalog's circuit breaker and adaptive timeout; nil: one
	// with both off and the catalog's latency budget (so /readyz shows a
	// latency EWMA computed one way for every catalog).
	Breaker *breaker.Guard
	// Impersonation of the caller (impersonation.go); nil: the catalog's
	// calls run as the proxy.
	Impersonation *ImpersonationOptions
	Policy        *Policy
	// DropPurge: the external table drop purge serves this catalog (its
	// runtime's compat.Runtime.DropPurge and allow-listed prefixes).
	DropPurge bool
	// Authorizer is the catalog's Ranger authorizer (security/ranger, the
	// Ranger slot of the chain); nil: none.
	Authorizer *ranger.Authorizer
	// Files opens the catalog's storage (fileio); nil: none.
	Files   func(ctx context.Context, location string) (fileio.IO, error)
	Metrics *monitoring.Metrics
	Log     *slog.Logger
}

// NewLane builds a lane (its pools are not connected until used).
func NewLane(o LaneOptions) (*Lane, error) {
	c := o.Catalog
	if c == nil || o.Runtime == nil || o.Policy == nil {
		return nil, fmt.Errorf("router: a lane needs its catalog, runtime and policy")
	}
	l := &Lane{cat: c, runtime: o.Runtime, breaker: o.Breaker, policy: o.Policy, purge: o.DropPurge,
		authorizer: o.Authorizer, files: o.Files}
	var err error
	if l.breaker == nil {
		if l.breaker, err = breaker.New(breaker.Options{Catalog: c.Name, LatencyBudget: o.Backend.CallBudget}); err != nil {
			return nil, err
		}
	}
	if l.dialect, err = compat.NewDialect(o.Runtime); err != nil {
		return nil, err
	}
	if l.guard, err = compat.NewGuard(o.Runtime); err != nil {
		return nil, err
	}
	bo := o.Backend
	bo.Catalog, bo.Guard = c.Name, l.breaker
	if m := o.Metrics; m != nil {
		name := c.Name
		bo.OnSessions = m.BackendSessionsOf(name)
		bo.OnAcquireTimeout = func(op string) { m.SessionAcquireTimeout(name, op) }
		bo.OnRetire = func(reason string) { m.SessionRetired(name, reason) }
	}
	if l.pool, err = NewBackend(bo); err != nil {
		return nil, err
	}
	if o.Impersonation != nil {
		log := o.Log
		if log == nil {
			log = slog.Default()
		}
		if l.users, err = newUserPools(c.Name, bo, l.pool, o.Impersonation, log); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Catalog is the lane's catalog.
func (l *Lane) Catalog() *naming.Catalog { return l.cat }

// Runtime is the catalog's backend runtime.
func (l *Lane) Runtime() *compat.Runtime { return l.runtime }

// Pool is the catalog's shared backend pool.
func (l *Lane) Pool() *Backend { return l.pool }

// Close stops the lane's background work and closes its pools (the
// router closes its lanes; app closes lanes it built for a router that
// failed to build).
func (l *Lane) Close() {
	if l.users != nil {
		l.users.close()
	}
	l.pool.Close()
}

// NamespaceFor builds the naming model of a configuration: its catalogs in
// order, each with the catalog name its metastore uses
// (metastore.catalog.default, "hive" unless set).
func NamespaceFor(cfg *configs.Config) (*naming.Namespace, error) {
	var cats []*naming.Catalog
	for _, cc := range cfg.Catalogs {
		backendName := firstNonEmpty(cc.Conf["metastore.catalog.default"], cc.Conf["hive.metastore.catalog.default"], "hive")
		cats = append(cats, &naming.Catalog{Name: cc.Name, BackendName: backendName})
	}
	ns := naming.NewNamespace(cfg.Routing.CatalogDBSeparator, cfg.Routing.DefaultCatalog,
		cfg.Federation.PreserveBackendCatalogName, cats)
	if ns.Default() == nil {
		return nil, fmt.Errorf("routing.default-catalog=%q is not one of catalogs", cfg.Routing.DefaultCatalog)
	}
	return ns, nil
}

// LaneOptionsFor maps one catalog's keys to its lane's options: the pool's
// URIs, size and timeouts, the runtime, the access and exposure policy. The
// parts a configuration alone does not give (dialers, impersonation,
// breakers, metrics, the purge, Ranger, file IO) are the caller's to add.
func LaneOptionsFor(cc *configs.CatalogConfig, c *naming.Catalog) (LaneOptions, error) {
	rt, err := compat.Lookup(string(cc.RuntimeProfile))
	if err != nil {
		return LaneOptions{}, fmt.Errorf("catalog.%s.runtime-profile: %v", c.Name, err)
	}
	sel := strings.ToUpper(firstNonEmpty(cc.Conf["metastore.thrift.uri.selection"], cc.Conf["hive.metastore.uri.selection"]))
	return LaneOptions{Catalog: c, Runtime: rt, Policy: NewPolicy(cc), Backend: BackendOptions{
		Catalog: c.Name, URIs: cc.URIs, Sequential: sel == "SEQUENTIAL",
		PoolSize: cc.SharedSessionPoolSize, BorrowTimeout: cc.LatencyBudget, CallBudget: cc.LatencyBudget,
		ConnectTimeout: cc.ConnectTimeout, SocketTimeout: cc.SocketTimeout,
		ConnectRetries: cc.ConnectRetries, RetryDelay: cc.ConnectRetryDelay, Framed: cc.FramedTransport,
	}}, nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// lane is the lane of catalog c.
func (r *Router) lane(c *naming.Catalog) *Lane { return r.lanes[c.Index] }

// Lane returns the lane of a catalog by name, nil when there is none.
func (r *Router) Lane(catalog string) *Lane {
	c := r.ns.Lookup(catalog)
	if c == nil {
		return nil
	}
	return r.lane(c)
}

// Lanes returns every lane in catalog order.
func (r *Router) Lanes() []*Lane { return r.lanes }
