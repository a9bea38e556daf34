package app

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hms-proxy/hms-proxy/configs"
	"github.com/hms-proxy/hms-proxy/monitoring"
	"github.com/hms-proxy/hms-proxy/router"
	"github.com/hms-proxy/hms-proxy/security/ranger"
)

// rangerParts are the Ranger plugins of a configuration: one per Ranger
// service configuration (the shared ranger.* one, and one for each
// catalog.<n>.ranger.* that differs from it), each catalog guarded by the
// one its keys name, and the group mapping every check resolves callers'
// groups with.
type rangerParts struct {
	plugins  map[configs.RangerPluginConfig]*ranger.Plugin
	byCat    map[string]*ranger.Plugin
	order    []*ranger.Plugin
	groups   *ranger.Groups
	metrics  *ranger.Metrics
	stops    []func()
	log      *slog.Logger
	timeouts time.Duration // bound of the first download at start
}

// buildRanger builds the plugins of cfg (nil when no catalog is guarded).
// A plugin loads its local policy cache here; Start downloads.
func (s *Security) buildRanger(cfg *configs.Config, reg prometheus.Registerer) error {
	guarded := false
	for _, cc := range cfg.Catalogs {
		guarded = guarded || cc.Ranger.Enabled
	}
	if !guarded {
		return nil
	}
	g, err := ranger.NewGroups(ranger.GroupsOptions{Sources: cfg.GroupMapping.Sources, File: cfg.GroupMapping.File,
		CacheTTL: cfg.GroupMapping.CacheTTL})
	if err != nil {
		return fmt.Errorf("security.groups.mapping: %w", err)
	}
	p := &rangerParts{plugins: map[configs.RangerPluginConfig]*ranger.Plugin{}, byCat: map[string]*ranger.Plugin{},
		groups: g, metrics: ranger.NewMetrics(reg), log: s.log.With("component", "ranger")}
	for _, cc := range cfg.Catalogs {
		rc := cc.Ranger
		if !rc.Enabled {
			continue
		}
		pl := p.plugins[rc]
		if pl == nil {
			prefix := "catalog." + cc.Name + ".ranger."
			if rc == cfg.Ranger {
				prefix = "ranger."
			}
			if pl, err = s.newPlugin(prefix, rc, p); err != nil {
				return err
			}
			p.plugins[rc] = pl
			p.order = append(p.order, pl)
			p.timeouts = max(p.timeouts, rc.ConnectionTimeout+rc.ReadTimeout)
		}
		p.byCat[cc.Name] = pl
	}
	s.ranger = p
	return nil
}

// newPlugin builds one plugin from its keys (prefix names them in errors),
// with what ranger.config-dir's plugin files add where the keys are unset.
func (s *Security) newPlugin(prefix string, rc configs.RangerPluginConfig, p *rangerParts) (*ranger.Plugin, error) {
	var xml ranger.PluginXML
	if rc.ConfigDir != "" {
		x, err := ranger.ReadConfigDir(rc.ConfigDir, "hive")
		if err != nil {
			return nil, err
		}
		xml = *x
	}
	urls := configs.RangerURLs(rc.PolicyRESTURL)
	if len(urls) == 0 {
		urls = configs.RangerURLs(xml.PolicyRESTURL)
	}
	cacheDir := rc.PolicyCacheDir
	if cacheDir == "" {
		cacheDir = xml.PolicyCacheDir
	}
	ao := ranger.AdminOptions{URLs: urls, ServiceName: rc.ServiceName, AppID: rc.AppID, ClusterName: rc.ClusterName,
		ConnectTimeout: rc.ConnectionTimeout, ReadTimeout: rc.ReadTimeout}
	if s.Backend != nil {
		ao.Negotiate = s.Backend // security.mode=KERBEROS: the secure download paths, SPNEGO
	}
	store, password := rc.TruststoreFile, rc.TruststorePassword
	if store == "" {
		store = xml.TruststoreFile
	}
	if store != "" {
		pool, _, err := ranger.LoadTruststore(store, password)
		if err != nil {
			return nil, fmt.Errorf("%sssl.truststore.file=%s: %w", prefix, store, err)
		}
		ao.TLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	pl, err := ranger.New(ranger.Options{ServiceType: rc.ServiceType, Admin: ao, CacheDir: cacheDir,
		PollInterval: rc.PollInterval, IgnoreTagPolicies: rc.IgnoreTagPolicies, Metrics: p.metrics, Log: p.log,
		Engine: ranger.EngineOptions{SuperUsers: xml.SuperUsers, SuperGroups: xml.SuperGroups}})
	if err != nil {
		return nil, fmt.Errorf("%s%w", prefix, err)
	}
	return pl, nil
}

// rangerLane gives a guarded catalog's lane its authorizer.
func (s *Security) rangerLane(catalog string, o *router.LaneOptions) {
	if s.ranger == nil {
		return
	}
	if pl := s.ranger.byCat[catalog]; pl != nil {
		o.Authorizer = pl.For(catalog)
	}
}

// rangerRouter adds the authorization link when some catalog is guarded.
func (s *Security) rangerRouter(o *router.Options) {
	if s.ranger == nil {
		return
	}
	o.Authorize = append(o.Authorize, router.Ranger(router.RangerOptions{Groups: s.ranger.groups}))
}

// startRanger downloads each plugin's policies once (bounded by its
// timeouts, so that a proxy whose Ranger Admin answers serves at once),
// then polls in the background. A plugin Admin does not answer keeps its
// cached policies, or refuses its catalogs until a download succeeds.
func (s *Security) startRanger() {
	p := s.ranger
	if p == nil || p.stops != nil {
		return
	}
	for _, pl := range p.order {
		ctx, cancel := context.WithTimeout(context.Background(), p.timeouts+time.Second)
		if err := pl.Refresh(ctx); err != nil {
			p.log.Warn("first Ranger policy download failed", "err", err, "ready", pl.Ready() == nil)
		}
		cancel()
		p.stops = append(p.stops, pl.Start(context.Background()))
	}
}

// stopRanger stops the background downloads.
func (s *Security) stopRanger() {
	if s.ranger == nil {
		return
	}
	for _, stop := range s.ranger.stops {
		stop()
	}
	s.ranger.stops = nil
}

// RangerPlugins are the running Ranger plugins, one per service
// configuration (none when no catalog is guarded).
func (a *App) RangerPlugins() []*ranger.Plugin {
	if a.Security == nil || a.Security.ranger == nil {
		return nil
	}
	return a.Security.ranger.order
}

// RangerStatus is /readyz's "ranger" section: each plugin, the catalogs it
// guards and whether its policies are in force.
func (r readiness) RangerStatus() []monitoring.RangerPluginStatus {
	p := r.sec.ranger
	if p == nil {
		return nil
	}
	var out []monitoring.RangerPluginStatus
	for _, pl := range p.order {
		in := pl.Info()
		st := monitoring.RangerPluginStatus{Service: in.ServiceName, Ready: in.Ready, NotReady: in.NotReady,
			PolicyVersion: in.PolicyVersion, Source: in.Source, LastError: in.LastError}
		if !in.LastSuccess.IsZero() {
			st.LastSuccessEpochSecond = in.LastSuccess.Unix()
		}
		for cat, c := range p.byCat {
			if c == pl {
				st.Catalogs = append(st.Catalogs, cat)
			}
		}
		sort.Strings(st.Catalogs)
		out = append(out, st)
	}
	return out
}
