package app

import (
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hms-proxy/hms-proxy/configs"
	"github.com/hms-proxy/hms-proxy/fileio"
	"github.com/hms-proxy/hms-proxy/router"
	"github.com/hms-proxy/hms-proxy/router/guards"
	"github.com/hms-proxy/hms-proxy/router/purge"
	"github.com/hms-proxy/hms-proxy/router/viewsql"
)

// tableMetrics are the table policies' metrics, registered once: a reload
// builds the policies again over them.
type tableMetrics struct {
	views   *viewsql.Metrics
	iceberg *guards.IcebergMetrics
	purge   *purge.Metrics
}

func newTableMetrics(reg prometheus.Registerer) tableMetrics {
	return tableMetrics{views: viewsql.NewMetrics(reg), iceberg: guards.NewIcebergMetrics(reg), purge: purge.NewMetrics(reg)}
}

// tablePolicies builds the router's table policies from their keys:
// federation.view-text-rewrite.*, guard.transactional-ddl.*,
// routing.iceberg-pointer-guard.* and federation.external-table-drop-purge.*
// with the catalogs' allowed-prefixes, and the catalogs the purge serves
// (their lanes are built with DropPurge). A reload calls it with purge false:
// the purge pool is built once (its keys need a restart).
func tablePolicies(cfg *configs.Config, tm tableMetrics, files *fileio.Resolver, log *slog.Logger, withPurge bool) (router.TablePolicies, map[string]bool, error) {
	var tp router.TablePolicies
	vr := cfg.Federation.ViewTextRewrite
	tp.Views = viewsql.TableOptions{Mode: viewsql.ModeRewrite, PreserveOriginalText: vr.PreserveOriginalText, Metrics: tm.views}
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
		return tp, nil, err
	}

	ig := cfg.Routing.IcebergPointerGuard
	if tp.Iceberg, err = guards.NewIcebergGuard(guards.IcebergOptions{Enabled: ig.Enabled,
		CacheTTL: ig.TableCacheTTL, CacheMaxEntries: ig.TableCacheMaxEntries,
		LockEnabled: ig.LockEnabled, LockAcquireTimeout: ig.LockAcquireTimeout,
		HiveEngineDescriptor: ig.HiveEngineDescriptor,
		Metrics:              tm.iceberg,
		Log:                  func(msg string) { log.Info(msg) }}); err != nil {
		return tp, nil, err
	}

	if !withPurge || cfg.Federation.ExternalTableDropPurge.Mode != configs.DropPurgeBestEffort {
		return tp, nil, nil
	}
	// Only catalogs whose runtime the purge serves (compat.Runtime.DropPurge)
	// are purged (configs warns about prefixes anywhere else, and about
	// BEST_EFFORT without any prefix).
	prefixes := map[string][]string{}
	purged := map[string]bool{}
	for _, cc := range cfg.Catalogs {
		rt, err := runtimeOf(cc)
		if err != nil {
			return tp, nil, err
		}
		if rt.DropPurge && len(cc.DropPurgeAllowedPrefixes) > 0 {
			prefixes[cc.Name] = cc.DropPurgeAllowedPrefixes
			purged[cc.Name] = true
		}
	}
	if len(prefixes) == 0 {
		return tp, nil, nil
	}
	if tp.Purge, err = purge.New(purge.Options{Mode: purge.BestEffort, Prefixes: prefixes, Metrics: tm.purge, Files: files.For,
		Log: func(msg string) { log.Info(msg) }}); err != nil {
		return tp, nil, fmt.Errorf("federation.external-table-drop-purge: %v", err)
	}
	return tp, purged, nil
}
