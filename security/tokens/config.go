package tokens

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/hms-proxy/hms-proxy/configs"
)

// Front-door HiveConf keys this package reads (given in hms-proxy.properties
// as security.front-door-conf.<key>).
const (
	KeyKeyUpdateInterval = "hive.cluster.delegation.key.update-interval"
	KeyRenewInterval     = "hive.cluster.delegation.token.renew-interval"
	KeyMaxLifetime       = "hive.cluster.delegation.token.max-lifetime"
	KeyGCInterval        = "hive.cluster.delegation.token.gc-interval"
	KeyStoreClass        = "hive.cluster.delegation.token.store.class"
	KeyZKConnectString   = "hive.cluster.delegation.token.store.zookeeper.connectString"
	KeyZKZNode           = "hive.cluster.delegation.token.store.zookeeper.znode"
	KeyZKACL             = "hive.cluster.delegation.token.store.zookeeper.acl"
	KeyZKConnectTimeout  = "hive.cluster.delegation.token.store.zookeeper.connectTimeoutMillis"
	// KeyZKQuorum is Hive's fallback for the connect string.
	KeyZKQuorum = "hive.zookeeper.quorum"
)

// Store classes Hive names; both the metastore package and the older
// org.apache.hadoop.hive.thrift one are accepted.
var (
	memoryStoreClasses = []string{
		"org.apache.hadoop.hive.metastore.security.MemoryTokenStore",
		"org.apache.hadoop.hive.thrift.MemoryTokenStore",
	}
	zkStoreClasses = []string{
		"org.apache.hadoop.hive.metastore.security.ZooKeeperTokenStore",
		"org.apache.hadoop.hive.thrift.ZooKeeperTokenStore",
	}
	dbStoreClasses = []string{
		"org.apache.hadoop.hive.metastore.security.DBTokenStore",
		"org.apache.hadoop.hive.thrift.DBTokenStore",
	}
)

// Config is the delegation-token part of the front-door configuration,
// validated. Open builds the Manager from it.
type Config struct {
	KeyUpdateInterval time.Duration
	RenewInterval     time.Duration
	MaxLifetime       time.Duration
	GCInterval        time.Duration
	// ZooKeeper is nil for the memory store.
	ZooKeeper *ZKOptions
}

// ParseConf reads the delegation-token keys from conf, the front-door
// HiveConf (keys without the "security.front-door-conf." prefix). prefix is
// put before key names in error texts. saslSession says the front door runs
// security.mode=KERBEROS with security.zookeeper.sasl.enabled=true: the
// ZooKeeper store's session then authenticates with SASL/Kerberos (the app
// sets ZKOptions.Dialer), sasl ACLs are accepted and an unset
// …zookeeper.acl means Hive's default under Kerberos, CREATOR_ALL_ACL
// (auth::cdrwa: the proxy's own SASL identity). Without it an unset ACL is
// world:anyone:cdrwa, Hive's default without Kerberos.
func ParseConf(conf map[string]string, prefix string, saslSession bool) (*Config, error) {
	c := &Config{}
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s%s: %s", prefix, key, fmt.Sprintf(format, args...)))
	}
	known := map[string]bool{}
	dur := func(key string, def time.Duration) time.Duration {
		known[key] = true
		v, ok := conf[key]
		if !ok {
			return def
		}
		d, err := configs.ParseHiveDuration(v, time.Millisecond)
		if err != nil {
			bad(key, "%q: %v (milliseconds, or a number with a unit such as 1d)", v, err)
			return def
		}
		if d <= 0 {
			bad(key, "%q must be positive", v)
			return def
		}
		return d
	}
	c.KeyUpdateInterval = dur(KeyKeyUpdateInterval, DefaultKeyUpdateInterval)
	c.RenewInterval = dur(KeyRenewInterval, DefaultRenewInterval)
	c.MaxLifetime = dur(KeyMaxLifetime, DefaultMaxLifetime)
	c.GCInterval = dur(KeyGCInterval, DefaultGCInterval)
	connectTimeout := dur(KeyZKConnectTimeout, DefaultZKConnectTimeout)

	for _, k := range []string{KeyStoreClass, KeyZKConnectString, KeyZKZNode, KeyZKACL} {
		known[k] = true
	}
	var unknown []string
	for k := range conf {
		if strings.HasPrefix(k, "hive.cluster.delegation.") && !known[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		bad(k, "unknown delegation-token key")
	}

	class := strings.TrimSpace(conf[KeyStoreClass])
	var zkKeysSet []string
	for _, k := range []string{KeyZKConnectString, KeyZKZNode, KeyZKACL, KeyZKConnectTimeout} {
		if _, ok := conf[k]; ok {
			zkKeysSet = append(zkKeysSet, prefix+k)
		}
	}
	switch {
	case class == "" || contains(memoryStoreClasses, class):
		if len(zkKeysSet) > 0 {
			errs = append(errs, fmt.Errorf("%s%s selects the memory token store (%q), but %s are set and would be ignored; "+
				"set %s%s=%s to use ZooKeeper, or remove them", prefix, KeyStoreClass, orDefault(class, "unset"),
				strings.Join(zkKeysSet, ", "), prefix, KeyStoreClass, zkStoreClasses[0]))
		}
	case contains(zkStoreClasses, class):
		zo := &ZKOptions{OpTimeout: connectTimeout}
		connect := strings.TrimSpace(conf[KeyZKConnectString])
		if connect == "" {
			connect = strings.TrimSpace(conf[KeyZKQuorum])
		}
		if connect == "" {
			bad(KeyZKConnectString, "required by %s (or %s%s)", class, prefix, KeyZKQuorum)
		}
		for _, s := range strings.Split(connect, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			if !strings.Contains(s, ":") {
				s += ":2181" // ZooKeeper's default client port, as Curator assumes
			}
			zo.Servers = append(zo.Servers, s)
		}
		znode := DefaultZNode
		if v, ok := conf[KeyZKZNode]; ok {
			znode = strings.TrimSpace(v)
			if znode == "" || znode[0] != '/' || strings.HasSuffix(znode, "/") || strings.Contains(znode, "//") {
				bad(KeyZKZNode, "%q must be an absolute znode path without a trailing '/'", v)
			}
		}
		zo.Root = znode + ServerMode
		if v, ok := conf[KeyZKACL]; ok && strings.TrimSpace(v) != "" {
			acl, err := ParseACL(prefix+KeyZKACL, v, saslSession)
			if err != nil {
				errs = append(errs, err)
			}
			zo.ACL = acl
		} else if saslSession {
			// ZooKeeperTokenStore under Kerberos: Ids.CREATOR_ALL_ACL, which
			// the server turns into sasl:<the proxy's principal>:cdrwa
			zo.ACL = zk.AuthACL(zk.PermAll)
		} else {
			zo.ACL = zk.WorldACL(zk.PermAll)
		}
		c.ZooKeeper = zo
	case contains(dbStoreClasses, class):
		bad(KeyStoreClass, "%s keeps tokens in a metastore database, which the proxy does not own; use %s or %s",
			class, zkStoreClasses[0], memoryStoreClasses[0])
	default:
		bad(KeyStoreClass, "unknown token store class %q (use %s or %s)", class, memoryStoreClasses[0], zkStoreClasses[0])
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Open makes the store and a Manager over it (which closes the store on
// Close). The caller starts it with Start.
func (c *Config) Open(logger *slog.Logger, metrics *Metrics) (*Manager, error) {
	var store Store = NewMemoryStore()
	if c.ZooKeeper != nil {
		zo := *c.ZooKeeper
		zo.Logger = logger
		s, err := NewZKStore(zo)
		if err != nil {
			return nil, err
		}
		store = s
	}
	m, err := New(Options{
		Store:             store,
		KeyUpdateInterval: c.KeyUpdateInterval,
		RenewInterval:     c.RenewInterval,
		MaxLifetime:       c.MaxLifetime,
		GCInterval:        c.GCInterval,
		Metrics:           metrics,
		Logger:            logger,
	})
	if err != nil {
		_ = store.Close()
		return nil, err
	}
	m.ownsStore = true
	return m, nil
}
