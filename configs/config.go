// Package configs reads hms-proxy.properties: Java .properties syntax, the
// key names of the Java HMS proxy, a typed Config with every default filled
// in, and strict validation. Parse never starts anything and never guesses: a
// value it cannot interpret is an error naming the key and the value, and all
// such problems of a file are reported together.
//
// Every key is an entry of one registry (features.go and the feature files
// it lists): its pattern, type, default, status and meaning. Parsing, typed
// defaults, unknown-key errors, check-config's effective output and the
// key reference of docs/configuration.md are all derived from it. A key's status is
// implemented, refused-until-built (its neutral or default value is
// accepted; a value that asks for the missing behaviour refuses start) or
// accepted-and-ignored (kept for drop-in files, with a warning).
//
// The package imports none of the project's other packages.
package configs

import (
	"strings"
)

// Config is a validated hms-proxy configuration with every default applied.
type Config struct {
	Server              ServerConfig
	Management          ManagementConfig
	Routing             RoutingConfig
	Federation          FederationConfig
	Compatibility       CompatibilityConfig
	Catalogs            []*CatalogConfig // in the order of the catalogs key
	AdditionalFrontends []*FrontendConfig
	Security            SecurityConfig
	SyntheticLock       SyntheticLockConfig
	RateLimit           RateLimitConfig
	Guard               GuardConfig
	RESTCatalog         RESTCatalogConfig
	Ranger              RangerPluginConfig // ranger.*: the shared plugin; catalogs inherit it (CatalogConfig.Ranger)
	GroupMapping        GroupMappingConfig // security.groups.*: callers' groups for Ranger
	Audit               AuditConfig
	Logging             LoggingConfig

	// Warnings are problems that do not stop the proxy: keys that have no
	// effect (their feature is off or not built yet), accepted-and-ignored
	// keys, defaults that ask for something this build lacks, duplicate
	// keys. The caller logs them at start.
	Warnings []string

	settings []*setting        // the effective value of every key, in registry order
	features []*feature        // the registry's features
	status   map[string]Status // feature id → status this Config was parsed with
}

// Catalog returns the catalog of that name, or nil. Names are unique ignoring
// case; an exact match is preferred.
func (c *Config) Catalog(name string) *CatalogConfig {
	for _, cat := range c.Catalogs {
		if cat.Name == name {
			return cat
		}
	}
	for _, cat := range c.Catalogs {
		if strings.EqualFold(cat.Name, name) {
			return cat
		}
	}
	return nil
}

// DefaultCatalog returns the catalog named by routing.default-catalog.
func (c *Config) DefaultCatalog() *CatalogConfig { return c.Catalog(c.Routing.DefaultCatalog) }

// FeatureStatus returns the status of a feature of this build by its id
// (as the key reference lists them: "rate-limit", "circuit-breaker", …), and
// false for an unknown id. A component that is wired in can assert its
// feature is marked implemented.
func (c *Config) FeatureStatus(id string) (Status, bool) {
	st, ok := c.status[id]
	return st, ok
}
