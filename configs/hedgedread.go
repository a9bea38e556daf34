package configs

import "time"

// HedgedReadConfig is routing.hedged-read.*: the safe read-only fan-out
// methods (get_all_databases, get_databases, get_table_meta) asked of
// every catalog in parallel.
type HedgedReadConfig struct {
	Enabled        bool
	MaxParallelism int
	FanoutTimeout  time.Duration
}

func hedgedReadFeature() *feature {
	hr := func(c *Config) *HedgedReadConfig { return &c.Routing.HedgedRead }
	const pre = "routing.hedged-read."
	return &feature{
		id: "hedged-read", title: "Parallel (hedged) fan-out reads",
		on:   func(c *Config) bool { return c.Routing.HedgedRead.Enabled },
		off:  offBecause(pre + "enabled=false"),
		loss: "ask the catalogs of a fan-out read one after another",
		keys: []*keyDef{
			switchKey(pre+"enabled", "false", "ask the catalogs of a safe read-only fan-out in parallel",
				func(c *Config) *bool { return &hr(c).Enabled }),
			{pattern: pre + "max-parallelism", typ: count(1), defFunc: catalogCount, defDoc: "the number of catalogs", example: "16",
				meaning: "catalogs asked at once",
				bind:    func(c *Config, _ match) any { return &hr(c).MaxParallelism }},
			{pattern: pre + "fanout-timeout-ms", typ: millis(1), def: "30000", example: "10000",
				meaning: "bound on a whole fan-out (a key of the Java proxy the specification does not list)",
				bind:    func(c *Config, _ match) any { return &hr(c).FanoutTimeout }},
		},
	}
}

// Degraded routing policies (RoutingConfig.DegradedRoutingPolicy).
const (
	DegradedStrict          = "STRICT"
	DegradedSafeFanoutReads = "SAFE_FANOUT_READS"
)

func degradedRoutingFeature() *feature {
	return &feature{
		id: "degraded-routing", title: "Degraded routing",
		loss: "fail a fan-out read when one catalog is degraded",
		keys: []*keyDef{
			{pattern: "routing.degraded-routing-policy", typ: enum(DegradedStrict, DegradedSafeFanoutReads), def: DegradedStrict, example: DegradedSafeFanoutReads,
				sw: true, gate: gateNonDefault,
				meaning: "`SAFE_FANOUT_READS` leaves degraded backends out of safe fan-out reads; `STRICT` fails them",
				bind:    func(c *Config, _ match) any { return &c.Routing.DegradedRoutingPolicy }},
		},
	}
}
