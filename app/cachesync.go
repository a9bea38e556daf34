package app

import (
	"context"
	"fmt"

	"github.com/hms-proxy/hms-proxy/router"
	"github.com/hms-proxy/hms-proxy/router/dbcache/cachesync"
)

// buildCacheSync connects the replicas' database caches through ZooKeeper
// (routing.database-cache.zookeeper.*): a database write through this
// replica bumps its catalog's epoch before the client is answered
// (router.DatabaseWrites in the chain), and a bump by any replica drops the
// catalog from this replica's caches. Off without a connect string.
//
// The caches themselves are built with the router (router/dbcache); the
// build that has them calls a.CacheSync.SetTarget with each router
// generation's cache. Until then the epochs are written and watched with
// nothing to invalidate.
func (a *App) buildCacheSync() error {
	cc := a.Config.Routing.CacheCoherence
	if cc.ConnectString == "" {
		return nil
	}
	var cats []string
	for _, c := range a.Config.Catalogs {
		cats = append(cats, c.Name)
	}
	s, err := cachesync.New(cachesync.Options{ConnectString: cc.ConnectString, Znode: cc.ZNode,
		SessionTimeout: cc.SessionTimeout, Catalogs: cats, Metrics: cachesync.NewMetrics(a.Registry), Log: a.Log})
	if err != nil {
		return fmt.Errorf("routing.database-cache.zookeeper: %w", err)
	}
	a.CacheSync = s
	a.closers = append(a.closers, s)
	a.Log.Info("database cache coherence across replicas", "store", s.Describe())
	return nil
}

// cacheSyncMiddleware bumps the epoch of a catalog after a database write
// (nil without cache coherence). A failed bump does not fail the client's
// call, whose write already happened: it is logged, counted and retried.
func (a *App) cacheSyncMiddleware() router.Middleware {
	s := a.CacheSync
	if s == nil {
		return nil
	}
	return router.DatabaseWrites(func(ctx context.Context, catalog string) {
		_ = s.Bump(ctx, catalog)
	})
}
