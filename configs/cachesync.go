package configs

import "time"

// DefaultCacheEpochZNode is the default of routing.database-cache.zookeeper.znode.
const DefaultCacheEpochZNode = "/hms-proxy-cache-epochs"

// CacheCoherenceConfig is routing.database-cache.zookeeper.* (hms-proxy):
// the ZooKeeper through which replicas invalidate each other's database
// caches (router/dbcache/cachesync). Empty ConnectString: off.
type CacheCoherenceConfig struct {
	ConnectString  string
	ZNode          string
	SessionTimeout time.Duration
}

const cacheZKPrefix = "routing.database-cache.zookeeper."

func cacheCoherenceFeature() *feature {
	cz := func(c *Config) *CacheCoherenceConfig { return &c.Routing.CacheCoherence }
	return &feature{
		id: "database-cache-coherence", title: "Database cache coherence across replicas",
		on:   func(c *Config) bool { return c.Routing.CacheCoherence.ConnectString != "" },
		off:  offBecause(cacheZKPrefix + "connect-string is not set: each replica's database caches are stale for at most their TTL after another replica's database write"),
		loss: "let the database caches of several replicas serve what another replica's write changed, until their TTL",
		validate: func(p *parser, c *Config) {
			r := c.Routing
			cachesOn := r.DatabaseListCache.TTL > 0 || r.DatabaseMetadataCache.TTL > 0
			switch {
			case r.CacheCoherence.ConnectString != "" && !cachesOn:
				p.warnf("%sconnect-string=%s: has no effect: both database caches are off (routing.database-list-cache.ttl-ms and routing.database-metadata-cache.ttl-ms are 0)",
					cacheZKPrefix, r.CacheCoherence.ConnectString)
			case r.CacheCoherence.ConnectString == "" && cachesOn && c.SyntheticLock.StoreMode == LockStoreZooKeeper:
				// A ZooKeeper lock store says there are several replicas.
				p.warnf("the database caches are on and the lock store is ZooKeeper (several replicas), but %sconnect-string is not set: a database written through one replica stays cached on the others for up to the TTL",
					cacheZKPrefix)
			}
		},
		keys: []*keyDef{
			{pattern: cacheZKPrefix + "connect-string", typ: zkConnectT{}, example: "zk1:2181,zk2:2181/hms", sw: true, isNew: true,
				meaning: "ZooKeeper servers through which replicas invalidate each other's database caches (a watched epoch znode per catalog); unset = each replica alone, stale for at most the TTL",
				bind:    func(c *Config, _ match) any { return &cz(c).ConnectString }},
			{pattern: cacheZKPrefix + "znode", typ: znodeT{}, def: DefaultCacheEpochZNode, example: "/epochs", isNew: true,
				meaning: "root znode of the epochs (`<znode>/<catalog>`); the same on every replica",
				bind:    func(c *Config, _ match) any { return &cz(c).ZNode }},
			{pattern: cacheZKPrefix + "session-timeout-ms", typ: millis(1), def: "30000", example: "10000", isNew: true,
				meaning: "ZooKeeper session timeout; a replica whose connection is lost drops its whole cache, and again when it is back",
				bind:    func(c *Config, _ match) any { return &cz(c).SessionTimeout }},
		},
	}
}
