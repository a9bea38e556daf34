package configs

import (
	neturl "net/url"
	"slices"
	"strings"
	"time"
)

// RangerPluginConfig is one Apache Ranger plugin: ranger.* (the shared one)
// or catalog.<name>.ranger.* (a catalog's own, each key defaulting to the
// shared one's).
type RangerPluginConfig struct {
	Enabled            bool
	PolicyRESTURL      string
	ServiceName        string
	ServiceType        string
	AppID              string
	PolicyCacheDir     string
	PollInterval       time.Duration
	ConnectionTimeout  time.Duration
	ReadTimeout        time.Duration
	TruststoreFile     string
	TruststorePassword string
	ConfigDir          string
	AuditEnabled       bool
	// ClusterName is sent to Ranger Admin with each download (clusterName).
	ClusterName string
	// IgnoreTagPolicies accepts a service linked to a tag service whose
	// tag-based policies the proxy does not evaluate.
	IgnoreTagPolicies bool
}

// GroupMappingConfig is where a caller's groups come from for Ranger, beside
// the groups its identity carries (security.groups.*).
type GroupMappingConfig struct {
	// Sources: "file", "shell" (security.groups.mapping).
	Sources  []string
	File     string
	CacheTTL time.Duration
}

// RangerURLs splits ranger.policy.rest.url into its failover URLs.
func RangerURLs(v string) []string {
	var out []string
	for _, u := range strings.Split(v, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, strings.TrimRight(u, "/"))
		}
	}
	return out
}

// rangerKeys builds the keys of one plugin under prefix ("ranger." or
// "catalog.<catalog>.ranger."); a catalog's keys default to the shared
// ones.
func rangerKeys(prefix string, field func(c *Config, m match) *RangerPluginConfig) []*keyDef {
	perCatalog := strings.HasPrefix(prefix, "catalog.")
	k := func(suffix string, typ valueType, def, example, meaning string, bind func(r *RangerPluginConfig) any) *keyDef {
		kd := &keyDef{pattern: prefix + suffix, typ: typ, def: def, example: example, meaning: meaning,
			bind: func(c *Config, m match) any { return bind(field(c, m)) }}
		if perCatalog {
			kd.def, kd.defOf = "", "ranger."+suffix
			kd.meaning = "this catalog's " + meaning
		}
		return kd
	}
	enabled := k("enabled", boolT{}, "false", "true", "evaluate Ranger policies in the proxy", func(r *RangerPluginConfig) any { return &r.Enabled })
	enabled.sw, enabled.gate = true, gateNonDefault
	url := k("policy.rest.url", strT{nonEmpty: true}, "", "http://ranger-admin:6080", "Ranger Admin URL policies are read from (several, comma-separated: failover in turn)", func(r *RangerPluginConfig) any { return &r.PolicyRESTURL })
	url.aliases = []alias{{pattern: prefix + "policy-rest-url"}}
	password := k("ssl.truststore.password", strT{}, "", "changeit", "password of that truststore", func(r *RangerPluginConfig) any { return &r.TruststorePassword })
	password.secret = true
	return []*keyDef{
		enabled,
		url,
		k("service-name", strT{nonEmpty: true}, "", "hms_proxy_hive", "Ranger service whose policies apply", func(r *RangerPluginConfig) any { return &r.ServiceName }),
		k("service-type", strT{nonEmpty: true}, "hive", "hms", "Ranger service type", func(r *RangerPluginConfig) any { return &r.ServiceType }),
		k("app-id", strT{nonEmpty: true}, "hms-proxy", "proxy-2", "application id the plugin registers with", func(r *RangerPluginConfig) any { return &r.AppID }),
		k("policy.cache.dir", strT{}, "", "/var/cache/hms-proxy/ranger", "local copy of the policies", func(r *RangerPluginConfig) any { return &r.PolicyCacheDir }),
		k("policy.poll-interval-ms", millis(1), "30000", "60000", "how often policies are fetched (ms)", func(r *RangerPluginConfig) any { return &r.PollInterval }),
		k("policy.connection-timeout-ms", millis(1), "5000", "2000", "connect timeout to Ranger Admin (ms)", func(r *RangerPluginConfig) any { return &r.ConnectionTimeout }),
		k("policy.read-timeout-ms", millis(1), "10000", "20000", "read timeout from Ranger Admin (ms)", func(r *RangerPluginConfig) any { return &r.ReadTimeout }),
		k("ssl.truststore.file", strT{}, "", "/etc/security/truststore.jks", "truststore for an https Ranger Admin", func(r *RangerPluginConfig) any { return &r.TruststoreFile }),
		password,
		k("config-dir", strT{}, "", "/etc/ranger/hms-proxy", "directory of ranger-*.xml plugin files", func(r *RangerPluginConfig) any { return &r.ConfigDir }),
		newKey(k("cluster-name", strT{}, "", "prod-east", "cluster name sent to Ranger Admin with each download", func(r *RangerPluginConfig) any { return &r.ClusterName })),
		newKey(k("ignore-tag-policies", boolT{}, "false", "true", "enforce a service's resource policies although its tag-based policies are not evaluated (otherwise the plugin is not ready)", func(r *RangerPluginConfig) any { return &r.IgnoreTagPolicies })),
	}
}

// rangerAuditFeature is ranger.audit.enabled and its per-catalog form:
// sending Ranger-format audit events to Ranger's audit stores. It is not
// built (the proxy's own audit record carries the Ranger decision and the
// deciding policy), so asking for it refuses start instead of an operator
// believing Ranger's audit receives events it never gets.
func rangerAuditFeature() *feature {
	key := func(pattern, def, defOf, meaning string, field func(c *Config, m match) *RangerPluginConfig) *keyDef {
		return &keyDef{pattern: pattern, typ: boolT{}, def: def, defOf: defOf, example: "true", meaning: meaning,
			gate: gateNonDefault, bind: func(c *Config, m match) any { return &field(c, m).AuditEnabled }}
	}
	return &feature{
		id: "ranger-audit", title: "Sending Ranger-format audit events",
		on: func(c *Config) bool {
			return c.Ranger.Enabled || anyCatalog(c, func(cat *CatalogConfig) bool { return cat.Ranger.Enabled })
		},
		off:  offBecause("ranger.enabled=false and no catalog.<name>.ranger.enabled=true"),
		loss: "let Ranger's audit stores miss every decision (the proxy's audit log, audit.*, records each Ranger decision and its policy id)",
		keys: []*keyDef{
			key("ranger.audit.enabled", "false", "", "send Ranger audit events to Ranger's audit stores", func(c *Config, _ match) *RangerPluginConfig { return &c.Ranger }),
			key("catalog.<catalog>.ranger.audit.enabled", "", "ranger.audit.enabled", "this catalog's send Ranger audit events to Ranger's audit stores", func(c *Config, m match) *RangerPluginConfig { return &catalogOf(c, m).Ranger }),
		},
	}
}

func newKey(k *keyDef) *keyDef {
	k.isNew = true
	return k
}

// groupMappingKeys are security.groups.*: the caller's groups for Ranger.
func groupMappingKeys() []*keyDef {
	bind := func(f func(g *GroupMappingConfig) any) func(c *Config, _ match) any {
		return func(c *Config, _ match) any { return f(&c.GroupMapping) }
	}
	return []*keyDef{
		{pattern: "security.groups.mapping", typ: enumListT{values: []string{"file", "shell"}}, example: "file,shell", isNew: true,
			meaning: "where a caller's groups come from for Ranger, beside its identity's: file (security.groups.mapping.file), shell (the OS groups, as Hadoop's ShellBasedUnixGroupsMapping)",
			bind:    bind(func(g *GroupMappingConfig) any { return &g.Sources })},
		{pattern: "security.groups.mapping.file", typ: strT{}, example: "/etc/hms-proxy/groups", isNew: true,
			meaning: "user-to-groups file: lines \"user: group1, group2\"", bind: bind(func(g *GroupMappingConfig) any { return &g.File })},
		{pattern: "security.groups.cache-ttl-ms", typ: millis(1), def: "300000", example: "60000", isNew: true,
			meaning: "how long the shell source's groups of a user are reused (ms)", bind: bind(func(g *GroupMappingConfig) any { return &g.CacheTTL })},
	}
}

func rangerFeature() *feature {
	keys := rangerKeys("ranger.", func(c *Config, _ match) *RangerPluginConfig { return &c.Ranger })
	keys = append(keys, rangerKeys("catalog.<catalog>.ranger.", func(c *Config, m match) *RangerPluginConfig { return &catalogOf(c, m).Ranger })...)
	keys = append(keys, groupMappingKeys()...)
	return &feature{
		id: "ranger", title: "Apache Ranger authorization",
		on: func(c *Config) bool {
			return c.Ranger.Enabled || anyCatalog(c, func(cat *CatalogConfig) bool { return cat.Ranger.Enabled })
		},
		off:  offBecause("ranger.enabled=false and no catalog.<name>.ranger.enabled=true"),
		loss: "show every user every database and table without evaluating Ranger policies",
		validate: func(p *parser, c *Config) {
			check := func(prefix string, r *RangerPluginConfig) {
				if !r.Enabled {
					return
				}
				if r.PolicyRESTURL == "" {
					p.fail(missingf(prefix+"policy.rest.url", "required while %senabled=true", prefix))
				}
				if r.ServiceName == "" {
					p.fail(missingf(prefix+"service-name", "required while %senabled=true", prefix))
				}
				for _, u := range RangerURLs(r.PolicyRESTURL) {
					pu, err := neturl.Parse(u)
					if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
						p.fail(errorf(prefix+"policy.rest.url", r.PolicyRESTURL, "%q is not an http(s) URL of Ranger Admin", u))
					}
				}
				if r.ServiceType != "" && r.ServiceType != "hive" {
					p.fail(errorf(prefix+"service-type", r.ServiceType, "hms-proxy evaluates the Hive service definition only (service type hive)"))
				}
				if r.TruststorePassword != "" && r.TruststoreFile == "" {
					p.fail(missingf(prefix+"ssl.truststore.file", "%sssl.truststore.password is set without a truststore", prefix))
				}
			}
			g := c.GroupMapping
			if c.Ranger.Enabled || anyCatalog(c, func(cat *CatalogConfig) bool { return cat.Ranger.Enabled }) {
				for _, src := range g.Sources {
					if src == "file" && g.File == "" {
						p.fail(missingf("security.groups.mapping.file", "required while security.groups.mapping names file"))
					}
				}
				if g.File != "" && !slices.Contains(g.Sources, "file") {
					p.fail(errorf("security.groups.mapping", strings.Join(g.Sources, ","), "security.groups.mapping.file is set but the mapping does not name file"))
				}
			}
			check("ranger.", &c.Ranger)
			if c.Ranger.Enabled {
				return // a catalog inherits what ranger.* lacks: reported once, above
			}
			for _, cat := range c.Catalogs {
				check("catalog."+cat.Name+".ranger.", &cat.Ranger)
			}
		},
		keys: keys,
	}
}
