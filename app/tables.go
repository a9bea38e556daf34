package app

import (
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hms-proxy/hms-proxy/configs"
	"github.com/hms-proxy/hms-proxy/router"
	"github.com/hms-proxy/hms-proxy/router/guards"
	"github.com/hms-proxy/hms-proxy/router/purge"
	"github.com/hms-proxy/hms-proxy/router/viewsql"
)

// tablePolicies builds the router's table policies from their keys:
// federation.view-text-rewrite.*, guard.transactional-ddl.*,
// routing.iceberg-pointer-guard.* and federation.external-table-drop-purge.*
// with the catalogs' allowed-prefixes. Their metrics are registered on reg.
func tablePolicies(cfg *configs.Config, reg prometheus.Registerer, log *slog.Logger) (router.TablePolicies, error) {
	var tp router.TablePolicies
	vr := cfg.Federation.ViewTextRewrite
	tp.Views = viewsql.TableOptions{Mode: viewsql.ModeRewrite, PreserveOriginalText: vr.PreserveOriginalText, Metrics: viewsql.NewMetrics(reg)}
	if vr.Mode == configs.ViewRewriteDisabled {
		tp.Views.Mode = viewsql.ModeDisabled
	}

	td := cfg.Guard.TransactionalDDL
	to := guards.TxnOptions{}
	switch td.Mode {
	case configs.DDLGuardReject:
		to.Mode = guards.TxnReject
	case configs.DDLGuardRewriteExternal:
		to.Mode = guards.TxnRewrite
	}
	if to.Mode != guards.TxnOff {
		for _, p := range td.ClientAddresses {
			to.ClientAddresses = append(to.ClientAddresses, p.String())
		}
	}
	var err error
	if tp.Txn, err = guards.NewTxnGuard(to); err != nil {
		return tp, err
	}

	ig := cfg.Routing.IcebergPointerGuard
	if tp.Iceberg, err = guards.NewIcebergGuard(guards.IcebergOptions{Enabled: ig.Enabled,
		CacheTTL: ig.TableCacheTTL, CacheMaxEntries: ig.TableCacheMaxEntries,
		LockEnabled: ig.LockEnabled, LockAcquireTimeout: ig.LockAcquireTimeout,
		HiveEngineDescriptor: ig.HiveEngineDescriptor,
		Metrics:              guards.NewIcebergMetrics(reg),
		Log:                  func(msg string) { log.Info(msg) }}); err != nil {
		return tp, err
	}

	pm := purge.NewMetrics(reg)
	if cfg.Federation.ExternalTableDropPurge.Mode != configs.DropPurgeBestEffort {
		return tp, nil
	}
	// Only APACHE_3_1_3 catalogs are purged (configs warns about prefixes
	// anywhere else, and about BEST_EFFORT without any prefix).
	prefixes := map[string][]string{}
	tp.PurgePrefixes = map[string]bool{}
	for _, cc := range cfg.Catalogs {
		if cc.RuntimeProfile == configs.ProfileApache313 && len(cc.DropPurgeAllowedPrefixes) > 0 {
			prefixes[cc.Name] = cc.DropPurgeAllowedPrefixes
			tp.PurgePrefixes[cc.Name] = true
		}
	}
	if len(prefixes) == 0 {
		return tp, nil
	}
	if tp.Purge, err = purge.New(purge.Options{Mode: purge.BestEffort, Prefixes: prefixes, Metrics: pm,
		Log: func(msg string) { log.Info(msg) }}); err != nil {
		return tp, fmt.Errorf("federation.external-table-drop-purge: %v", err)
	}
	return tp, nil
}
