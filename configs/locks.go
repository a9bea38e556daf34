package configs

import (
	"strings"
	"time"
)

// Synthetic lock store modes (SyntheticLockConfig.StoreMode).
const (
	LockStoreUnset     = ""
	LockStoreInMemory  = "IN_MEMORY"
	LockStoreZooKeeper = "ZOOKEEPER"
)

// DefaultZooKeeperZNode is the default of
// synthetic-read-lock.store.zookeeper.znode.
const DefaultZooKeeperZNode = "/hms-proxy-synthetic-read-locks"

// SyntheticLockConfig is synthetic-read-lock.store.*: where the synthetic
// lock shim of the non-default catalogs keeps its locks. The lifetime of a
// lock is the default catalog's CatalogConfig.TxnTimeout.
type SyntheticLockConfig struct {
	StoreMode string // "" (not set), IN_MEMORY, ZOOKEEPER
	ZooKeeper ZooKeeperConfig
}

// ZooKeeperConfig is synthetic-read-lock.store.zookeeper.*; it matters only
// in ZOOKEEPER mode.
type ZooKeeperConfig struct {
	ConnectString     string
	ZNode             string // default /hms-proxy-synthetic-read-locks
	ConnectionTimeout time.Duration
	SessionTimeout    time.Duration
	BaseSleep         time.Duration
	MaxRetries        int
}

const lockModeKey, zkPrefix = "synthetic-read-lock.store.mode", "synthetic-read-lock.store.zookeeper."

func syntheticLockFeature() *feature {
	zk := func(c *Config) *ZooKeeperConfig { return &c.SyntheticLock.ZooKeeper }
	return &feature{
		id: "synthetic-locks", title: "Synthetic lock shim",
		// The shim serves the locks of non-default catalogs, so it is needed
		// as soon as there is more than one catalog.
		on:   func(c *Config) bool { return c.SyntheticLock.StoreMode != LockStoreUnset || len(c.Catalogs) > 1 },
		off:  offBecause("with one catalog there are no synthetic locks, and " + lockModeKey + " is not set"),
		loss: "serve the lock calls of non-default catalogs without the lock store the file asks for",
		validate: func(p *parser, c *Config) {
			sl := &c.SyntheticLock
			mode := p.setting(lockModeKey)
			if mode.bad {
				return
			}
			var zkSet []*setting
			for _, s := range p.order {
				if strings.HasPrefix(s.primary, zkPrefix) && s.fromFile {
					zkSet = append(zkSet, s)
				}
			}
			switch {
			case sl.StoreMode == LockStoreInMemory:
				for _, s := range zkSet {
					p.fail(errorf(s.name, s.raw, "contradicts %s=IN_MEMORY: the ZooKeeper setting would be ignored and locks kept in memory; remove it or set the mode to ZOOKEEPER",
						lockModeKey))
				}
				if len(zkSet) == 0 && p.status["synthetic-locks"] == StatusImplemented {
					p.warnf("%s=IN_MEMORY: synthetic locks of non-default catalogs are lost when this proxy restarts or a load balancer fails over; use ZOOKEEPER for several instances", lockModeKey)
				}
			case sl.StoreMode == LockStoreZooKeeper:
				if cs := p.setting(zkPrefix + "connect-string"); !cs.fromFile {
					p.fail(missingf(zkPrefix+"connect-string", "required for the ZooKeeper synthetic lock store (host:port,host:port[/chroot])"))
				}
				// With security.mode=KERBEROS the store authenticates to
				// ZooKeeper with SASL/Kerberos as security.server-principal
				// (security/zksasl), as the specification has it.
			case len(c.Catalogs) > 1 && p.status["synthetic-locks"] == StatusImplemented:
				// The specification gives the mode no default: the operator
				// chooses between one instance and several.
				p.fail(missingf(lockModeKey, "required with more than one catalog (catalogs=%s): the synthetic lock shim serves the locks of non-default catalogs; set IN_MEMORY for a single proxy instance or ZOOKEEPER for several",
					p.shown("catalogs")))
			}
		},
		keys: []*keyDef{
			{pattern: lockModeKey, typ: enum(LockStoreInMemory, LockStoreZooKeeper), example: LockStoreInMemory, sw: true, gate: gateAlways,
				defFunc: func(p *parser, _ match) (string, bool) {
					for k := range p.props {
						if strings.HasPrefix(k, zkPrefix) {
							return LockStoreZooKeeper, true // ZooKeeper keys without a mode select ZooKeeper
						}
					}
					return "", false
				},
				defDoc:  "none: required with more than one catalog; any `zookeeper.*` key selects `ZOOKEEPER`",
				meaning: "`IN_MEMORY` for one proxy instance (locks are lost on restart or failover), `ZOOKEEPER` for several",
				bind:    func(c *Config, _ match) any { return &c.SyntheticLock.StoreMode }},
			{pattern: zkPrefix + "connect-string", typ: zkConnectT{}, example: "zk1:2181,zk2:2181/hms", gate: gateAlways,
				meaning: "ZooKeeper servers; required for `ZOOKEEPER`",
				bind:    func(c *Config, _ match) any { return &zk(c).ConnectString }},
			{pattern: zkPrefix + "znode", typ: znodeT{}, def: DefaultZooKeeperZNode, example: "/locks", gate: gateAlways,
				meaning: "root znode (`locks/` and `txns/` below it)",
				bind:    func(c *Config, _ match) any { return &zk(c).ZNode }},
			{pattern: zkPrefix + "connection-timeout-ms", typ: millis(1), def: "15000", example: "5000", gate: gateAlways,
				meaning: "connect timeout",
				bind:    func(c *Config, _ match) any { return &zk(c).ConnectionTimeout }},
			{pattern: zkPrefix + "session-timeout-ms", typ: millis(1), def: "60000", example: "30000", gate: gateAlways,
				meaning: "ZooKeeper session timeout",
				bind:    func(c *Config, _ match) any { return &zk(c).SessionTimeout }},
			{pattern: zkPrefix + "base-sleep-ms", typ: millis(0), def: "1000", example: "500", gate: gateAlways,
				meaning: "first pause of the exponential retry",
				bind:    func(c *Config, _ match) any { return &zk(c).BaseSleep }},
			{pattern: zkPrefix + "max-retries", typ: count(0), def: "3", example: "5", gate: gateAlways,
				meaning: "retries of a failed ZooKeeper operation",
				bind:    func(c *Config, _ match) any { return &zk(c).MaxRetries }},
			hiveConfKey("hive.txn.timeout", "metastore.txn.timeout", &keyDef{
				typ: hiveSeconds, def: "300s", example: "10m", gate: gateNonDefault,
				meaning: "lifetime of a synthetic lock without heartbeat; the default catalog's value is used",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).TxnTimeout }}),
		},
	}
}
