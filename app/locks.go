package app

import (
	"fmt"

	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/configs"
	"github.com/hms-proxy/hms-proxy/locks"
	"github.com/hms-proxy/hms-proxy/security/zksasl"
)

// buildLockShim builds the synthetic lock shim when there is more than one
// catalog (or a store is configured): the store of synthetic-read-lock.store.*,
// the lock rules of the default catalog's runtime, its txn timeout. The shim
// and its store are closed with the app (shim first: it stops its sweep).
func (a *App) buildLockShim(hooks TestHooks) (*locks.Metrics, error) {
	cfg := a.Config
	sl := cfg.SyntheticLock
	if len(cfg.Catalogs) < 2 && sl.StoreMode == configs.LockStoreUnset {
		return nil, nil
	}
	def := cfg.DefaultCatalog()
	rt, err := runtimeOf(def)
	if err != nil {
		return nil, err
	}
	rules := locks.Rules(rt.LockRules)
	metrics, err := locks.NewMetrics(a.Registry)
	if err != nil {
		return nil, err
	}
	var store locks.Store
	switch sl.StoreMode {
	case configs.LockStoreInMemory:
		store = locks.NewMemoryStore()
	case configs.LockStoreZooKeeper:
		zk := sl.ZooKeeper
		zo := locks.ZooKeeperOptions{ConnectString: zk.ConnectString, Znode: zk.ZNode,
			ConnectionTimeout: zk.ConnectionTimeout, SessionTimeout: zk.SessionTimeout, BaseSleep: zk.BaseSleep,
			MaxRetries: zk.MaxRetries, Logger: a.Log}
		if cfg.Security.Mode == configs.SecurityKerberos && cfg.Security.ZooKeeperSASL {
			auth, err := lockStoreSASL(cfg)
			if err != nil {
				return nil, err
			}
			zo.Dialer, zo.ACL, zo.AuthError = auth.Dial, zksasl.DefaultACL(), auth.LastError
		}
		st, err := locks.NewZooKeeperStore(zo)
		if err != nil {
			return nil, err
		}
		store = st
	default:
		// configs requires the mode with several catalogs; a caller that
		// built a Config by hand gets the same answer.
		return nil, fmt.Errorf("synthetic-read-lock.store.mode is not set: with %d catalogs the synthetic lock shim needs IN_MEMORY (one instance) or ZOOKEEPER (several)", len(cfg.Catalogs))
	}
	shim, err := locks.New(locks.Options{Store: store, Rules: rules, TxnTimeout: def.TxnTimeout,
		GrantAtOnce: hooks.LockGrantAtOnce, Metrics: metrics, Logger: a.Log})
	if err != nil {
		store.Close()
		return nil, err
	}
	a.Locks = shim
	a.closers = append(a.closers, shim, store)
	a.Log.Info("synthetic lock shim", "store", shim.StoreName(), "rules", rules.String(), "txn_timeout", def.TxnTimeout,
		"isolation", !hooks.LockGrantAtOnce)
	return metrics, nil
}

// runtimeOf is a catalog's backend runtime: its capabilities are what the
// assembly asks (compat.Runtime), never its profile's name.
func runtimeOf(cc *configs.CatalogConfig) (*compat.Runtime, error) {
	rt, err := compat.Lookup(string(cc.RuntimeProfile))
	if err != nil {
		return nil, fmt.Errorf("catalog.%s.runtime-profile: %v", cc.Name, err)
	}
	return rt, nil
}
