package configs

import (
	"math"
	"time"
)

// DatabaseCacheConfig is routing.database-list-cache.* or
// routing.database-metadata-cache.*: a TTL cache of get_all_databases /
// get_databases answers, or of get_database answers. TTL 0 = off.
type DatabaseCacheConfig struct {
	TTL               time.Duration
	MaxEntries        int
	MaxBytes          int64 // bound on the cached reply bytes (hms-proxy)
	SharedAcrossUsers bool  // one entry for every user (needs per-user filtering such as Ranger for per-user visibility)
}

// DatabaseCacheRefreshConfig is routing.database-cache.background-refresh.*:
// entries used within ActivityWindow are reloaded every Interval.
type DatabaseCacheRefreshConfig struct {
	Enabled        bool
	Interval       time.Duration
	ActivityWindow time.Duration
}

func databaseCacheKeys(prefix, what string, field func(c *Config) *DatabaseCacheConfig) []*keyDef {
	return []*keyDef{
		{pattern: prefix + "ttl-ms", typ: millis(0), def: "0", example: "5000", sw: true, gate: gateNonDefault,
			aliases: []alias{{pattern: prefix + "ttl-seconds", typ: seconds(0)}},
			meaning: "how long " + what + " is served from the cache; `0` = no cache (also `ttl-seconds`)",
			bind:    func(c *Config, _ match) any { return &field(c).TTL }},
		{pattern: prefix + "max-entries", typ: count(1), def: "1000", example: "100",
			meaning: "entries kept at most",
			bind:    func(c *Config, _ match) any { return &field(c).MaxEntries }},
		{pattern: prefix + "max-bytes", typ: intT{min: 1, max: math.MaxInt64, wide: true}, def: "67108864", example: "16777216", isNew: true,
			meaning: "bytes of cached replies kept at most (least recently used out first; a larger reply is served, not kept)",
			bind:    func(c *Config, _ match) any { return &field(c).MaxBytes }},
		{pattern: prefix + "shared-across-users", typ: boolT{}, def: "false", example: "true",
			meaning: "one cache entry for all users instead of one per user and groups",
			bind:    func(c *Config, _ match) any { return &field(c).SharedAcrossUsers }},
	}
}

func databaseListCacheFeature() *feature {
	return &feature{
		id: "database-list-cache", title: "Database list cache",
		on:   func(c *Config) bool { return c.Routing.DatabaseListCache.TTL > 0 },
		off:  offBecause("routing.database-list-cache.ttl-ms=0 (the cache is off)"),
		loss: "ask every backend on each SHOW DATABASES",
		keys: databaseCacheKeys("routing.database-list-cache.", "a database list (SHOW DATABASES, get_all_databases, get_databases)",
			func(c *Config) *DatabaseCacheConfig { return &c.Routing.DatabaseListCache }),
	}
}

func databaseMetadataCacheFeature() *feature {
	return &feature{
		id: "database-metadata-cache", title: "Database metadata cache",
		on:   func(c *Config) bool { return c.Routing.DatabaseMetadataCache.TTL > 0 },
		off:  offBecause("routing.database-metadata-cache.ttl-ms=0 (the cache is off)"),
		loss: "ask the backend on each get_database",
		keys: databaseCacheKeys("routing.database-metadata-cache.", "a database object (get_database)",
			func(c *Config) *DatabaseCacheConfig { return &c.Routing.DatabaseMetadataCache }),
	}
}

func databaseCacheRefreshFeature() *feature {
	rf := func(c *Config) *DatabaseCacheRefreshConfig { return &c.Routing.DatabaseCacheRefresh }
	const pre = "routing.database-cache.background-refresh."
	return &feature{
		id: "database-cache-refresh", title: "Database cache background refresh",
		on:   func(c *Config) bool { return c.Routing.DatabaseCacheRefresh.Enabled },
		off:  offBecause(pre + "enabled=false"),
		loss: "let cache entries expire instead of refreshing them",
		validate: func(p *parser, c *Config) {
			r := c.Routing
			if r.DatabaseCacheRefresh.Enabled && r.DatabaseListCache.TTL == 0 && r.DatabaseMetadataCache.TTL == 0 {
				p.warnf("%senabled=true: has no effect: both database caches are off (routing.database-list-cache.ttl-ms and routing.database-metadata-cache.ttl-ms are 0)", pre)
			}
		},
		keys: []*keyDef{
			switchKey(pre+"enabled", "false", "reload recently used entries of both database caches in the background",
				func(c *Config) *bool { return &rf(c).Enabled }),
			{pattern: pre + "interval-ms", typ: millis(1), def: "60000", example: "30000",
				meaning: "time between refresh rounds",
				bind:    func(c *Config, _ match) any { return &rf(c).Interval }},
			{pattern: pre + "activity-window-ms", typ: millis(1), def: "3600000", example: "600000",
				meaning: "an entry not read for this long is no longer refreshed",
				bind:    func(c *Config, _ match) any { return &rf(c).ActivityWindow }},
		},
	}
}

// Modes of routing.refresh-privileges.mode.
const (
	RefreshPrivilegesPassthrough      = "PASSTHROUGH"
	RefreshPrivilegesSyntheticSuccess = "SYNTHETIC_SUCCESS"
)

// RefreshPrivilegesConfig is routing.refresh-privileges.*: answer
// refresh_privileges at once with success (HiveServer2's
// PrivilegeSynchronizer calls it constantly). Both keys say the same; after
// parsing they agree.
type RefreshPrivilegesConfig struct {
	Mode             string // PASSTHROUGH | SYNTHETIC_SUCCESS
	SyntheticSuccess bool
}

func refreshPrivilegesFeature() *feature {
	const pre = "routing.refresh-privileges."
	rp := func(c *Config) *RefreshPrivilegesConfig { return &c.Routing.RefreshPrivileges }
	return &feature{
		id: "refresh-privileges", title: "Synthetic refresh_privileges",
		loss: "forward refresh_privileges to the backend",
		validate: func(p *parser, c *Config) {
			r := rp(c)
			ss, md := p.setting(pre+"synthetic-success"), p.setting(pre+"mode")
			if ss.fromFile && md.fromFile && !ss.bad && !md.bad && r.SyntheticSuccess != (r.Mode == RefreshPrivilegesSyntheticSuccess) {
				p.fail(errorf(ss.name, ss.raw, "contradicts %s=%s; set one of the two", md.name, quoteValue(md.raw)))
			}
			on := r.SyntheticSuccess || r.Mode == RefreshPrivilegesSyntheticSuccess
			r.SyntheticSuccess = on
			r.Mode = RefreshPrivilegesPassthrough
			if on {
				r.Mode = RefreshPrivilegesSyntheticSuccess
			}
		},
		keys: []*keyDef{
			switchKey(pre+"synthetic-success", "false", "answer refresh_privileges with success without asking the backend",
				func(c *Config) *bool { return &rp(c).SyntheticSuccess }),
			{pattern: pre + "mode", typ: enum(RefreshPrivilegesPassthrough, RefreshPrivilegesSyntheticSuccess), def: RefreshPrivilegesPassthrough,
				example: RefreshPrivilegesSyntheticSuccess, sw: true, gate: gateNonDefault,
				meaning: "the same as a mode (`PASSTHROUGH` is hms-proxy's name for the default)",
				bind:    func(c *Config, _ match) any { return &rp(c).Mode }},
		},
	}
}
