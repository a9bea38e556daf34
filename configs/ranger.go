package configs

import (
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
	url := k("policy.rest.url", strT{nonEmpty: true}, "", "http://ranger-admin:6080", "Ranger Admin URL policies are read from", func(r *RangerPluginConfig) any { return &r.PolicyRESTURL })
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
		k("audit.enabled", boolT{}, "false", "true", "send Ranger audit events", func(r *RangerPluginConfig) any { return &r.AuditEnabled }),
	}
}

func rangerFeature() *feature {
	keys := rangerKeys("ranger.", func(c *Config, _ match) *RangerPluginConfig { return &c.Ranger })
	keys = append(keys, rangerKeys("catalog.<catalog>.ranger.", func(c *Config, m match) *RangerPluginConfig { return &catalogOf(c, m).Ranger })...)
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
