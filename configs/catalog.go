package configs

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"
)

// AccessMode is a catalog's write policy.
type AccessMode string

// The access modes.
const (
	AccessReadWrite            AccessMode = "READ_WRITE"
	AccessReadOnly             AccessMode = "READ_ONLY"
	AccessReadWriteDBWhitelist AccessMode = "READ_WRITE_DB_WHITELIST"
)

// ExposeMode is a catalog's selective-exposure default.
type ExposeMode string

// The exposure modes.
const (
	ExposeAllowAll      ExposeMode = "ALLOW_ALL"
	ExposeDenyByDefault ExposeMode = "DENY_BY_DEFAULT"
)

// RoutingConfig is routing.*: the catalog a request without a namespace goes
// to, the external name format, and the latency-aware routing features.
type RoutingConfig struct {
	DefaultCatalog     string
	CatalogDBSeparator string // default "__"

	BackendStatePolling   BackendStatePollingConfig
	AdaptiveTimeout       AdaptiveTimeoutConfig
	CircuitBreaker        CircuitBreakerConfig
	HedgedRead            HedgedReadConfig
	DegradedRoutingPolicy string // STRICT | SAFE_FANOUT_READS
	DatabaseListCache     DatabaseCacheConfig
	DatabaseMetadataCache DatabaseCacheConfig
	DatabaseCacheRefresh  DatabaseCacheRefreshConfig
	RefreshPrivileges     RefreshPrivilegesConfig
	IcebergPointerGuard   IcebergPointerGuardConfig
	CacheCoherence        CacheCoherenceConfig // routing.database-cache.zookeeper.* (cachesync.go)
}

// FederationConfig is federation.*.
type FederationConfig struct {
	PreserveBackendCatalogName bool
	ViewTextRewrite            ViewTextRewriteConfig
	ExternalTableDropPurge     ExternalTableDropPurgeConfig
}

// CatalogConfig is one catalog.<name>.* block.
type CatalogConfig struct {
	Name string
	// URIs are the backend metastores, from conf hive.metastore.uris (or
	// metastore.thrift.uris), each thrift://host:port, in the given order.
	URIs []string
	// Conf holds every catalog.<name>.conf.* entry (key without the prefix),
	// values trimmed, whether hms-proxy interprets it or not.
	Conf             map[string]string
	AccessMode       AccessMode
	WriteDBWhitelist []string // lower-cased database names; non-empty only for READ_WRITE_DB_WHITELIST
	ExposeMode       ExposeMode
	// ExposeDBPatterns: anchored, case-insensitive full-match regexps.
	ExposeDBPatterns []*regexp.Regexp
	// ExposeTablePatterns: one rule per expose-table-patterns.<dbRegex>
	// key, sorted by DBSource.
	ExposeTablePatterns   []TablePatternRule
	SharedSessionPoolSize int
	LatencyBudget         time.Duration // 0 = not set
	RuntimeProfile        Profile
	// The backend client (conf hive.metastore.*, see backend.go).
	URISelection       string // RANDOM | SEQUENTIAL
	BackendCatalogName string // conf metastore.catalog.default (default "hive")
	SocketTimeout      time.Duration
	ConnectTimeout     time.Duration
	ConnectRetries     int
	ConnectRetryDelay  time.Duration
	SocketLifetime     time.Duration // refused-until-built: only 0 is accepted
	TxnTimeout         time.Duration // the synthetic lock lifetime when this is the default catalog
	FramedTransport    bool
	CompactProtocol    bool // refused-until-built
	// TLS to this catalog's metastore (backend.go): conf hive.metastore.use.SSL
	// and the trust store of hive.metastore.truststore.*.
	UseSSL             bool
	TrustStorePath     string
	TrustStorePassword string
	TrustStoreType     string // "" (by the content), JKS, PKCS12 or PEM
	// Outbound Kerberos (backend.go): SASL/GSSAPI to this catalog's metastore.
	SASLEnabled       bool
	KerberosPrincipal string   // conf hive.metastore.kerberos.principal
	RPCProtection     []string // conf hadoop.rpc.protection
	// Impersonation (impersonation.go): per-user backend sessions.
	ImpersonationEnabled        bool // default security.impersonation-enabled
	ImpersonationMaxClients     int
	ImpersonationClientIdleTTL  time.Duration
	ImpersonationPoolMaxSize    int
	ImpersonationSessionIdleTTL time.Duration
	// conf hms.proxy.external-table-drop-purge.allowed-prefixes (purge.go).
	DropPurgeAllowedPrefixes []string
	// conf iceberg.engine.hive.enabled (restcatalog.go); nil = not set.
	IcebergEngineHiveEnabled *bool
	// conf iceberg.engine.hive.lock-enabled (restcatalog.go); nil = not set.
	IcebergEngineHiveLockEnabled *bool
	// catalog.<name>.ranger.*, defaults from ranger.* (ranger.go).
	Ranger                        RangerPluginConfig
	BackendStandaloneMetastoreJar string // accepted for drop-in configs, ignored
}

// Addresses returns the host:port of every URI, in order.
func (c *CatalogConfig) Addresses() []string {
	out := make([]string, 0, len(c.URIs))
	for _, u := range c.URIs {
		if p, err := url.Parse(u); err == nil {
			out = append(out, p.Host)
		}
	}
	return out
}

// TablePatternRule is one catalog.<name>.expose-table-patterns.<dbRegex> key.
type TablePatternRule struct {
	DBSource string           // <dbRegex> as written in the key
	DB       *regexp.Regexp   // anchored, case-insensitive
	Tables   []*regexp.Regexp // anchored, case-insensitive
}

// catalogOf returns the catalog a match names (it exists: instances are made
// only for listed catalogs).
func catalogOf(c *Config, m match) *CatalogConfig {
	for _, cat := range c.Catalogs {
		if cat.Name == m.catalog() {
			return cat
		}
	}
	panic("configs: catalog not created: " + m.catalog())
}

// DefaultCatalogDBSeparator is the default of routing.catalog-db-separator.
const DefaultCatalogDBSeparator = "__"

func catalogsFeature() *feature {
	const pre = "catalog.<catalog>."
	return &feature{
		id: "catalogs", title: "Catalogs and routing",
		validate: func(p *parser, c *Config) {
			p.checkDefaultCatalog(c)
			for _, cat := range c.Catalogs {
				p.checkWriteWhitelist(cat)
				p.checkExposure(cat)
			}
		},
		keys: []*keyDef{
			{pattern: "routing.catalog-db-separator", typ: separatorT{}, raw: true, def: DefaultCatalogDBSeparator, example: ".",
				meaning: "separator of the legacy external database name `catalog<separator>db`; no blanks or commas",
				bind:    func(c *Config, _ match) any { return &c.Routing.CatalogDBSeparator }},
			{pattern: "catalogs", typ: namesT{what: "catalog", fold: true, nonEmpty: true}, example: "catalog1,catalog2",
				required: "required: the comma-separated list of catalog names, e.g. catalogs=catalog1,catalog2",
				meaning:  "the catalogs, each a backend metastore; names unique ignoring case, must not contain the separator",
				bind: func(c *Config, _ match) any {
					return setter(func(v any) error {
						for _, n := range v.([]string) {
							c.Catalogs = append(c.Catalogs, &CatalogConfig{Name: n, Conf: map[string]string{}})
						}
						return nil
					})
				},
				then: (*parser).afterCatalogs},
			{pattern: "routing.default-catalog", typ: strT{nonEmpty: true}, example: "catalog2",
				defFunc: func(p *parser, _ match) (string, bool) {
					if len(p.cfg.Catalogs) == 1 {
						return p.cfg.Catalogs[0].Name, true
					}
					return "", false
				},
				defDoc:  "the catalog, when there is exactly one",
				meaning: "where requests without a catalog namespace go; required with more than one catalog",
				bind:    func(c *Config, _ match) any { return &c.Routing.DefaultCatalog }},
			{pattern: "federation.preserve-backend-catalog-name", typ: boolT{}, def: "false", example: "true",
				meaning: "return the backend's catName (e.g. `hive`) instead of the proxy catalog name; routing is unchanged",
				bind:    func(c *Config, _ match) any { return &c.Federation.PreserveBackendCatalogName }},
			{pattern: pre + "access-mode", typ: enum(string(AccessReadWrite), string(AccessReadOnly), string(AccessReadWriteDBWhitelist)),
				def: string(AccessReadWrite), example: string(AccessReadOnly),
				meaning: "write policy of the catalog",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).AccessMode }},
			{pattern: pre + "write-db-whitelist", typ: listT{lower: true}, example: "sales,analytics",
				meaning: "databases writes are allowed in; only with `access-mode=READ_WRITE_DB_WHITELIST`, then non-empty",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).WriteDBWhitelist }},
			{pattern: pre + "expose-mode", typ: enum(string(ExposeAllowAll), string(ExposeDenyByDefault)),
				def: string(ExposeAllowAll), example: string(ExposeDenyByDefault),
				meaning: "`DENY_BY_DEFAULT` hides databases and tables no exposure pattern matches",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).ExposeMode }},
			{pattern: pre + "expose-db-patterns", typ: patternListT{}, example: "sales,finance_.*",
				meaning: "allowlist of backend database names (regexes)",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).ExposeDBPatterns }},
			{pattern: pre + "expose-table-patterns.*", typ: patternListT{}, example: "orders_.*,events",
				meaning: "`expose-table-patterns.<dbRegex>`: allowlist of tables (regexes) in databases matching `<dbRegex>`",
				bind: func(c *Config, m match) any {
					cat := catalogOf(c, m)
					return setter(func(v any) error {
						db, err := compilePattern(m.rest)
						if err != nil {
							return fmt.Errorf("invalid database regular expression %q in the key: %v", m.rest, regexpReason(err))
						}
						cat.ExposeTablePatterns = append(cat.ExposeTablePatterns, TablePatternRule{DBSource: m.rest, DB: db, Tables: v.([]*regexp.Regexp)})
						sort.SliceStable(cat.ExposeTablePatterns, func(i, j int) bool {
							return cat.ExposeTablePatterns[i].DBSource < cat.ExposeTablePatterns[j].DBSource
						})
						return nil
					})
				}},
			{pattern: pre + "shared-session-pool-size", typ: count(1), def: "8", example: "2",
				meaning: "pooled backend Thrift sessions of the catalog (the Java proxy defaults to 1)",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).SharedSessionPoolSize }},
			{pattern: pre + "latency-budget-ms", typ: millis(0), def: "0", example: "1500",
				meaning: "latency budget of the catalog's calls; also the wait for a pooled session (30 s when `0` = not set)",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).LatencyBudget }},
			{pattern: pre + "runtime-profile", typ: profileT, def: string(ProfileApache313), example: string(ProfileApache410),
				meaning: "the Thrift API the backend metastore speaks",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).RuntimeProfile }},
			{pattern: pre + "backend-standalone-metastore-jar", typ: strT{}, defOf: "compatibility.backend-standalone-metastore-jar", example: "/opt/hdp.jar",
				ignored: jarIgnored,
				meaning: "Hortonworks backend runtime jar of the catalog (Java proxy)",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).BackendStandaloneMetastoreJar }},
		},
	}
}

// afterCatalogs: catalog names must not contain the separator, and every
// catalog.<name>.conf.* entry is kept in the catalog's Conf.
func (p *parser) afterCatalogs() {
	sep := p.cfg.Routing.CatalogDBSeparator
	var good []*CatalogConfig
	for _, cat := range p.cfg.Catalogs {
		if !p.bad["routing.catalog-db-separator"] && strings.Contains(cat.Name, sep) {
			p.fail(errorf("catalogs", p.shown("catalogs"), "catalog name %q contains the catalog/database separator %q (routing.catalog-db-separator), so names like %s%sdb could not be split unambiguously",
				cat.Name, sep, cat.Name, sep))
			continue
		}
		good = append(good, cat)
	}
	p.cfg.Catalogs = good
	for _, cat := range p.cfg.Catalogs {
		pre := "catalog." + cat.Name + ".conf."
		for k, v := range p.props {
			if hk, ok := strings.CutPrefix(k, pre); ok && hk != "" {
				cat.Conf[hk] = strings.TrimSpace(v)
			}
		}
	}
}

func (p *parser) checkDefaultCatalog(c *Config) {
	const key = "routing.default-catalog"
	s := p.setting(key)
	if p.bad["catalogs"] || !p.has("catalogs") || s.bad {
		return // the catalogs problem is already reported
	}
	switch {
	case !s.has:
		p.fail(missingf(key, "required when more than one catalog is configured (catalogs=%s): name the catalog that requests without a catalog namespace go to",
			p.shown("catalogs")))
	case c.Catalog(c.Routing.DefaultCatalog) == nil:
		p.fail(errorf(key, s.raw, "not one of the configured catalogs (catalogs=%s)", p.shown("catalogs")))
	default:
		c.Routing.DefaultCatalog = c.Catalog(c.Routing.DefaultCatalog).Name
	}
}

// checkWriteWhitelist: access-mode and write-db-whitelist are valid only
// together.
func (p *parser) checkWriteWhitelist(cat *CatalogConfig) {
	pre := "catalog." + cat.Name + "."
	am, wl := p.setting(pre+"access-mode"), p.setting(pre+"write-db-whitelist")
	if am.bad || wl.bad {
		return
	}
	switch {
	case wl.fromFile && cat.AccessMode != AccessReadWriteDBWhitelist:
		p.fail(errorf(wl.name, wl.raw, "only valid with %saccess-mode=READ_WRITE_DB_WHITELIST (access-mode is %s): the whitelist would be ignored and writes stay allowed in every database",
			pre, cat.AccessMode))
	case cat.AccessMode == AccessReadWriteDBWhitelist && len(cat.WriteDBWhitelist) == 0:
		p.fail(errorf(am.name, am.raw, "READ_WRITE_DB_WHITELIST needs a non-empty %swrite-db-whitelist; to refuse every write use READ_ONLY", pre))
	}
}

func (p *parser) checkExposure(cat *CatalogConfig) {
	pre := "catalog." + cat.Name + "."
	db := p.setting(pre + "expose-db-patterns")
	if cat.ExposeMode == ExposeAllowAll && len(cat.ExposeDBPatterns) > 0 {
		p.warnf("%s=%s: has no effect with %sexpose-mode=ALLOW_ALL (every database stays visible); use DENY_BY_DEFAULT to make it an allowlist",
			db.name, quoteValue(db.raw), pre)
	}
	if cat.ExposeMode == ExposeDenyByDefault && len(cat.ExposeDBPatterns) == 0 && len(cat.ExposeTablePatterns) == 0 && !db.bad {
		p.warnf("%sexpose-mode=DENY_BY_DEFAULT without %sexpose-db-patterns or %sexpose-table-patterns.<dbRegex>: every database of catalog %q is hidden",
			pre, pre, pre, cat.Name)
	}
}
