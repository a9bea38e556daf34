// Package configs reads hms-proxy.properties: Java .properties syntax, the
// key names of the Java HMS proxy, a typed Config with every default filled
// in, and strict validation. Parse never starts anything and never guesses: a
// value it cannot interpret is an error naming the key and the value, and all
// such problems of a file are reported together.
//
// The package imports none of the project's other packages.
package configs

import (
	"net"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Profile names a Hive metastore Thrift API flavour: what a front-door
// listener speaks to its clients, or what a backend metastore speaks.
type Profile string

// The profiles; these strings are the configuration values.
const (
	ProfileApache313 Profile = "APACHE_3_1_3"
	ProfileApache410 Profile = "APACHE_4_1_0"
	ProfileHDP78     Profile = "HORTONWORKS_3_1_0_3_1_0_78"
	ProfileHDP315    Profile = "HORTONWORKS_3_1_0_3_1_5_6150_1"
)

// Profiles lists every profile in a fixed order.
func Profiles() []Profile {
	return []Profile{ProfileApache313, ProfileApache410, ProfileHDP78, ProfileHDP315}
}

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

// Security modes (SecurityConfig.Mode).
const (
	SecurityNone     = "NONE"
	SecurityKerberos = "KERBEROS"
)

// Synthetic lock store modes (SyntheticLockConfig.StoreMode).
const (
	LockStoreUnset     = ""
	LockStoreInMemory  = "IN_MEMORY"
	LockStoreZooKeeper = "ZOOKEEPER"
)

// Log levels (LoggingConfig.Level).
const (
	LevelDebug = "DEBUG"
	LevelInfo  = "INFO"
	LevelWarn  = "WARN"
	LevelError = "ERROR"
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
	Audit               AuditConfig
	Logging             LoggingConfig

	// Warnings are problems that do not stop the proxy: keys recognised
	// but not implemented yet, accepted-but-ignored keys, Hive durations
	// Hive itself would reject (with the default applied), duplicate keys.
	// The caller logs them at start.
	Warnings []string
}

// ServerConfig is the primary Thrift listener (server.*).
type ServerConfig struct {
	Name                 string
	BindHost             string
	Port                 int
	MinWorkerThreads     int
	MaxWorkerThreads     int
	ClientSocketTimeout  time.Duration // 0 = no read timeout
	TCPKeepAlive         bool
	TCPKeepAliveIdle     time.Duration
	TCPKeepAliveInterval time.Duration
	TCPKeepAliveCount    int
	ShutdownTimeout      time.Duration
	FramedTransport      bool
	MaxMessageSize       int64 // bytes; also the limit of any single string or container length
}

// FrontendConfig is one Thrift listener: the primary one (Name "") or an
// additional-frontends.<name> entry.
type FrontendConfig struct {
	Name                   string
	Profile                Profile
	BindHost               string
	Port                   int
	MinWorkerThreads       int
	MaxWorkerThreads       int
	ClientSocketTimeout    time.Duration
	TCPKeepAlive           bool
	TCPKeepAliveIdle       time.Duration
	TCPKeepAliveInterval   time.Duration
	TCPKeepAliveCount      int
	FramedTransport        bool
	MaxMessageSize         int64
	StandaloneMetastoreJar string // accepted for drop-in configs, ignored
}

// Addr is host:port for net.Listen.
func (f *FrontendConfig) Addr() string { return net.JoinHostPort(f.BindHost, itoa(f.Port)) }

// CatalogConfig is one catalog.<name>.* block.
type CatalogConfig struct {
	Name string
	// URIs are the backend metastores, from conf hive.metastore.uris (or
	// metastore.thrift.uris), each thrift://host:port, in the given order.
	URIs []string
	// Conf holds every catalog.<name>.conf.* entry (key without the prefix),
	// values trimmed.
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
	// From conf hive.metastore.client.socket.timeout (Hive duration,
	// default 600s): read timeout on backend connections.
	SocketTimeout time.Duration
	// From conf hive.metastore.client.connection.timeout (Hive 4's key;
	// default: SocketTimeout, which is what a Hive 3.1.3 client uses to
	// connect).
	ConnectTimeout time.Duration
	// From conf hive.metastore.connect.retries (default 3) and
	// hive.metastore.client.connect.retry.delay (default 1s): how Hive's
	// client walks the URIs.
	ConnectRetries    int
	ConnectRetryDelay time.Duration
	// From conf hive.metastore.client.socket.lifetime (default 0 = none):
	// Hive's client reconnects a session older than this.
	SocketLifetime time.Duration
	// From conf metastore.txn.timeout / hive.txn.timeout (default 300s):
	// the lifetime of a synthetic lock served for this catalog when it is
	// the default catalog.
	TxnTimeout time.Duration
	// conf hive.metastore.thrift.framed.transport.enabled
	FramedTransport bool
	// catalog.<name>.impersonation-enabled, default security.impersonation-enabled.
	ImpersonationEnabled          bool
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

// RoutingConfig is routing.* (the implemented part).
type RoutingConfig struct {
	DefaultCatalog     string
	CatalogDBSeparator string // default "__"
}

// FederationConfig is federation.* (the implemented part).
type FederationConfig struct {
	PreserveBackendCatalogName bool
}

// CompatibilityConfig is compatibility.*.
type CompatibilityConfig struct {
	FrontendProfile                Profile // default APACHE_3_1_3
	FrontendStandaloneMetastoreJar string  // accepted for drop-in configs, ignored
	BackendStandaloneMetastoreJar  string  // accepted for drop-in configs, ignored
}

// ManagementConfig is the management HTTP listener (management.*).
type ManagementConfig struct {
	Enabled        bool
	BindHost       string
	Port           int
	Threads        int
	ReadinessCache time.Duration // 0 = probe on every request
}

// Addr is host:port for net.Listen.
func (m *ManagementConfig) Addr() string { return net.JoinHostPort(m.BindHost, itoa(m.Port)) }

// SecurityConfig is security.*. Only NONE runs in this build: KERBEROS is
// parsed and validated, then refused as not implemented.
type SecurityConfig struct {
	Mode                 string // NONE | KERBEROS
	ServerPrincipal      string
	Keytab               string
	ClientPrincipal      string
	ClientKeytab         string
	ImpersonationEnabled bool // the default of catalog.<name>.impersonation-enabled
}

// SyntheticLockConfig is synthetic-read-lock.store.*.
type SyntheticLockConfig struct {
	StoreMode string // "" (not set), IN_MEMORY, ZOOKEEPER
	ZooKeeper ZooKeeperConfig
}

// ZooKeeperConfig is synthetic-read-lock.store.zookeeper.*; filled only in
// ZOOKEEPER mode.
type ZooKeeperConfig struct {
	ConnectString     string
	ZNode             string // default /hms-proxy-synthetic-read-locks
	ConnectionTimeout time.Duration
	SessionTimeout    time.Duration
	BaseSleep         time.Duration
	MaxRetries        int
}

// AuditConfig is audit.*: the structured audit log, one JSON line per request.
type AuditConfig struct {
	Enabled          bool
	File             string
	MaxFileSizeBytes int64
	MaxBackups       int
}

// LoggingConfig is logging.*: the main log.
type LoggingConfig struct {
	Level            string // DEBUG | INFO | WARN | ERROR
	File             string // "" = stderr only
	MaxFileSizeBytes int64
	MaxBackups       int
	DebugTracing     bool
}

// Frontends returns every Thrift listener: the primary one first (Name ""),
// then the additional frontends in the order of the additional-frontends key.
func (c *Config) Frontends() []*FrontendConfig {
	s := &c.Server
	primary := &FrontendConfig{
		Name:                   "",
		Profile:                c.Compatibility.FrontendProfile,
		BindHost:               s.BindHost,
		Port:                   s.Port,
		MinWorkerThreads:       s.MinWorkerThreads,
		MaxWorkerThreads:       s.MaxWorkerThreads,
		ClientSocketTimeout:    s.ClientSocketTimeout,
		TCPKeepAlive:           s.TCPKeepAlive,
		TCPKeepAliveIdle:       s.TCPKeepAliveIdle,
		TCPKeepAliveInterval:   s.TCPKeepAliveInterval,
		TCPKeepAliveCount:      s.TCPKeepAliveCount,
		FramedTransport:        s.FramedTransport,
		MaxMessageSize:         s.MaxMessageSize,
		StandaloneMetastoreJar: c.Compatibility.FrontendStandaloneMetastoreJar,
	}
	return append([]*FrontendConfig{primary}, c.AdditionalFrontends...)
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
