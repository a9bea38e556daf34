package configs

import "time"

// IcebergPointerGuardConfig is routing.iceberg-pointer-guard.*: an
// alter_table that would erase an Iceberg table's metadata_location (a Hive
// INSERT sends the table as compiled) is merged over the metastore's record.
type IcebergPointerGuardConfig struct {
	Enabled              bool
	TableCacheTTL        time.Duration // how long a non-Iceberg answer is remembered; 0 = no cache
	TableCacheMaxEntries int
	LockEnabled          bool // hold Iceberg's own table lock around re-read, merge and alter
	LockAcquireTimeout   time.Duration
	HiveEngineDescriptor bool // keep the record's Hive storage descriptor (storage_handler, formats, serde)
}

func icebergPointerGuardFeature() *feature {
	const pre = "routing.iceberg-pointer-guard."
	g := func(c *Config) *IcebergPointerGuardConfig { return &c.Routing.IcebergPointerGuard }
	return &feature{
		id: "iceberg-pointer-guard", title: "Iceberg pointer guard",
		on:   func(c *Config) bool { return c.Routing.IcebergPointerGuard.Enabled },
		off:  offBecause(pre + "enabled=false"),
		loss: "let an alter_table erase an Iceberg table's metadata_location",
		keys: []*keyDef{
			switchKey(pre+"enabled", "true", "merge an alter_table that would erase Iceberg keys over the metastore's record",
				func(c *Config) *bool { return &g(c).Enabled }),
			{pattern: pre + "table-cache-ttl-ms", typ: millis(0), def: "30000", example: "0",
				meaning: "how long a table known not to be Iceberg skips the extra get_table; `0` = no cache",
				bind:    func(c *Config, _ match) any { return &g(c).TableCacheTTL }},
			{pattern: pre + "table-cache-max-entries", typ: count(1), def: "10000", example: "100",
				meaning: "names kept in that cache",
				bind:    func(c *Config, _ match) any { return &g(c).TableCacheMaxEntries }},
			{pattern: pre + "lock-enabled", typ: boolT{}, def: "true", example: "false",
				meaning: "hold the table's EXCLUSIVE lock around re-read, merge and alter (the default catalog's metastore lock, the lock shim's on other catalogs)",
				bind:    func(c *Config, _ match) any { return &g(c).LockEnabled }},
			{pattern: pre + "lock-acquire-timeout-ms", typ: millis(0), def: "10000", example: "0",
				meaning: "wait for that lock; after it the repaired alter goes unprotected; `0` = one attempt",
				bind:    func(c *Config, _ match) any { return &g(c).LockAcquireTimeout }},
			{pattern: pre + "hive-engine-descriptor", typ: boolT{}, def: "true", example: "false",
				meaning: "keep the record's Hive storage descriptor (storage_handler, input/output format, serde) when a commit would drop it",
				bind:    func(c *Config, _ match) any { return &g(c).HiveEngineDescriptor }},
		},
	}
}
