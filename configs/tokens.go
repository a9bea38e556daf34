package configs

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// DelegationTokenConfig is the front door's delegation-token service, from
// the Hive keys under security.front-door-conf. (served only with
// security.mode=KERBEROS). Durations are Hive's: plain milliseconds.
type DelegationTokenConfig struct {
	// StoreClass is hive.cluster.delegation.token.store.class in Hive 3's
	// spelling; Store is its kind: TokenStoreMemory or TokenStoreZooKeeper.
	StoreClass             string
	Store                  string
	ZooKeeperConnectString string
	ZooKeeperZNode         string // default /hivedelegation
	ZooKeeperACL           string // "" = the store's default
	MaxLifetime            time.Duration
	RenewInterval          time.Duration
	KeyUpdateInterval      time.Duration
	GCInterval             time.Duration
	// The credentials the ZooKeeper store authenticates with
	// (hive.metastore.kerberos.principal / .keytab.file of the front-door
	// conf; default security.server-principal / security.keytab).
	KerberosPrincipal string
	KerberosKeytab    string
}

// Token store kinds (DelegationTokenConfig.Store).
const (
	TokenStoreMemory    = "MEMORY"
	TokenStoreZooKeeper = "ZOOKEEPER"
)

const (
	memoryTokenStore    = "org.apache.hadoop.hive.metastore.security.MemoryTokenStore"
	zooKeeperTokenStore = "org.apache.hadoop.hive.metastore.security.ZooKeeperTokenStore"
)

// tokenStoreT accepts Hive's token store classes (any package: Hive 2 had
// them in org.apache.hadoop.hive.thrift) and keeps Hive 3's name.
type tokenStoreT struct{}

func (tokenStoreT) parse(v string) (any, error) {
	simple := v[strings.LastIndexByte(v, '.')+1:]
	switch simple {
	case "MemoryTokenStore":
		return memoryTokenStore, nil
	case "ZooKeeperTokenStore":
		return zooKeeperTokenStore, nil
	case "DBTokenStore":
		return nil, errors.New("DBTokenStore keeps tokens in the metastore's database, which the proxy does not have; use ZooKeeperTokenStore to share tokens between proxy instances")
	}
	return nil, fmt.Errorf("unknown token store class; hms-proxy implements %s and %s", memoryTokenStore, zooKeeperTokenStore)
}
func (tokenStoreT) format(v any) string { return v.(string) }
func (tokenStoreT) doc() string         { return "MemoryTokenStore or ZooKeeperTokenStore class name" }

// zkACLT is a ZooKeeper ACL list: scheme:id:perms,… with perms of cdrwa.
type zkACLT struct{}

func (zkACLT) parse(v string) (any, error) {
	for _, it := range splitList(v) {
		first, last := strings.IndexByte(it, ':'), strings.LastIndexByte(it, ':')
		if first <= 0 || last == first {
			return nil, fmt.Errorf("ACL %q is not scheme:id:perms", it)
		}
		perms := it[last+1:]
		if perms == "" || strings.Trim(perms, "cdrwa") != "" {
			return nil, fmt.Errorf("ACL %q: permissions must be letters of cdrwa", it)
		}
	}
	return strings.Join(splitList(v), ","), nil
}
func (zkACLT) format(v any) string { return v.(string) }
func (zkACLT) doc() string         { return "ZooKeeper ACLs scheme:id:perms, comma-separated" }

func delegationTokensFeature() *feature {
	const dt = frontDoorConf + "hive.cluster.delegation."
	tok := func(c *Config) *DelegationTokenConfig { return &c.Security.DelegationTokens }
	return &feature{
		id: "delegation-tokens", title: "Delegation tokens",
		on:   func(c *Config) bool { return c.Security.Mode == SecurityKerberos },
		off:  offBecause("security.mode=NONE: delegation tokens are served only with Kerberos"),
		loss: "serve delegation tokens without the configured token store",
		validate: func(p *parser, c *Config) {
			t := &c.Security.DelegationTokens
			t.Store = TokenStoreMemory
			if t.StoreClass == zooKeeperTokenStore {
				t.Store = TokenStoreZooKeeper
				if t.ZooKeeperConnectString == "" && !p.bad[dt+"token.store.zookeeper.connectString"] {
					p.fail(missingf(dt+"token.store.zookeeper.connectString", "required with the ZooKeeper token store (host:port,host:port)"))
				}
			}
		},
		keys: []*keyDef{
			{pattern: dt + "token.store.class", typ: tokenStoreT{}, def: memoryTokenStore, example: zooKeeperTokenStore, gate: gateNonDefault,
				meaning: "where issued tokens live: in memory (one instance) or in ZooKeeper (shared by instances)",
				bind:    func(c *Config, _ match) any { return &tok(c).StoreClass }},
			{pattern: dt + "token.store.zookeeper.connectString", typ: zkConnectT{}, example: "zk1:2181,zk2:2181",
				meaning: "ZooKeeper servers of the token store",
				bind:    func(c *Config, _ match) any { return &tok(c).ZooKeeperConnectString }},
			{pattern: dt + "token.store.zookeeper.znode", typ: znodeT{}, def: "/hivedelegation", example: "/hms-proxy-delegation-tokens",
				meaning: "root znode of the token store",
				bind:    func(c *Config, _ match) any { return &tok(c).ZooKeeperZNode }},
			{pattern: dt + "token.store.zookeeper.acl", typ: zkACLT{}, example: "sasl:hive:cdrwa",
				meaning: "ACLs of the znodes the store creates",
				bind:    func(c *Config, _ match) any { return &tok(c).ZooKeeperACL }},
			{pattern: dt + "token.max-lifetime", typ: millis(1), def: "604800000", example: "86400000",
				meaning: "longest life of a token, renewals included (ms; 7 days)",
				bind:    func(c *Config, _ match) any { return &tok(c).MaxLifetime }},
			{pattern: dt + "token.renew-interval", typ: millis(1), def: "86400000", example: "3600000",
				meaning: "a token not renewed within this expires (ms; 1 day)",
				bind:    func(c *Config, _ match) any { return &tok(c).RenewInterval }},
			{pattern: dt + "key.update-interval", typ: millis(1), def: "86400000", example: "3600000",
				meaning: "how often a new master key is rolled (ms; 1 day)",
				bind:    func(c *Config, _ match) any { return &tok(c).KeyUpdateInterval }},
			{pattern: dt + "token.gc-interval", typ: millis(1), def: "3600000", example: "60000",
				meaning: "how often expired tokens are removed (ms; 1 hour)",
				bind:    func(c *Config, _ match) any { return &tok(c).GCInterval }},
			{pattern: frontDoorConf + "hive.metastore.kerberos.principal", typ: strT{}, defOf: "security.server-principal", example: "hive-zk/_HOST@EXAMPLE.COM",
				meaning: "principal the ZooKeeper token store authenticates with",
				bind:    func(c *Config, _ match) any { return &tok(c).KerberosPrincipal }},
			{pattern: frontDoorConf + "hive.metastore.kerberos.keytab.file", typ: strT{}, defOf: "security.keytab", example: "/etc/security/keytabs/zk.keytab",
				meaning: "keytab of that principal",
				bind:    func(c *Config, _ match) any { return &tok(c).KerberosKeytab }},
		},
	}
}

// ProxyUserRule is one hadoop.proxyuser.<service>.* rule: whom the service
// may act for, and from where. A nil list is not set (Hadoop then allows
// nothing for that dimension); "*" allows everything.
type ProxyUserRule struct {
	Hosts  []string
	Groups []string
	Users  []string
}

func proxyUsersFeature() *feature {
	const pre = frontDoorConf + "hadoop.proxyuser.<service>."
	rule := func(c *Config, m match) *ProxyUserRule {
		s := &c.Security
		if s.ProxyUsers == nil {
			s.ProxyUsers = map[string]*ProxyUserRule{}
		}
		r := s.ProxyUsers[m.get("service")]
		if r == nil {
			r = &ProxyUserRule{}
			s.ProxyUsers[m.get("service")] = r
		}
		return r
	}
	return &feature{
		id: "proxy-users", title: "Front-door proxy-user rules",
		on:   func(c *Config) bool { return c.Security.Mode == SecurityKerberos },
		off:  offBecause("security.mode=NONE: proxy-user rules apply to Kerberos callers only"),
		loss: "issue delegation tokens for other users without checking the proxy-user rules",
		keys: []*keyDef{
			{pattern: pre + "hosts", typ: listT{}, example: "hs2-1.example.com,10.0.0.0/8", gate: gateAlways,
				meaning: "hosts (names, addresses, CIDR blocks or `*`) a service may act for other users from",
				bind:    func(c *Config, m match) any { return &rule(c, m).Hosts }},
			{pattern: pre + "groups", typ: listT{}, example: "*", gate: gateAlways,
				meaning: "groups whose members a service may act for",
				bind:    func(c *Config, m match) any { return &rule(c, m).Groups }},
			{pattern: pre + "users", typ: listT{}, example: "alice,bob", gate: gateAlways,
				meaning: "users a service may act for",
				bind:    func(c *Config, m match) any { return &rule(c, m).Users }},
		},
	}
}
