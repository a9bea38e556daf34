package configs

import "time"

// HedgedReadConfig is routing.hedged-read.*: the safe read-only fan-out
// methods (get_all_databases, get_databases, get_table_meta) asked of
// every catalog in parallel.
type HedgedReadConfig struct {
	Enabled         bool
	MaxParallelism  int
	FanoutTimeout   time.Duration
	DelayMultiplier float64       // a hedge goes out after max(MinDelay, latency EWMA × this)
	MinDelay        time.Duration // (hms-proxy)
}

func hedgedReadFeature() *feature {
	hr := func(c *Config) *HedgedReadConfig { return &c.Routing.HedgedRead }
	const pre = "routing.hedged-read."
	return &feature{
		id: "hedged-read", title: "Parallel (hedged) fan-out reads",
		on:   func(c *Config) bool { return c.Routing.HedgedRead.Enabled },
		off:  offBecause(pre + "enabled=false"),
		loss: "send no second attempt to a slow catalog of a fan-out read",
		keys: []*keyDef{
			switchKey(pre+"enabled", "false", "send a second attempt (another session) to a catalog of a safe read-only fan-out that answers later than usual; the first answer wins",
				func(c *Config) *bool { return &hr(c).Enabled }),
			{pattern: pre + "max-parallelism", typ: count(1), defFunc: catalogCount, defDoc: "the number of catalogs", example: "16",
				meaning: "backend attempts of one fan-out in flight at once, legs and hedges",
				bind:    func(c *Config, _ match) any { return &hr(c).MaxParallelism }},
			{pattern: pre + "fanout-timeout-ms", typ: millis(1), def: "30000", example: "10000", offToo: true,
				meaning: "bound on a whole fan-out, hedged or not (a key of the Java proxy the specification does not list)",
				bind:    func(c *Config, _ match) any { return &hr(c).FanoutTimeout }},
			{pattern: pre + "delay-multiplier", typ: floatT{min: 0, minOpen: true, max: 1e6}, def: "3", example: "2", isNew: true,
				meaning: "a hedge goes out once the first attempt took longer than the catalog's latency EWMA × this",
				bind:    func(c *Config, _ match) any { return &hr(c).DelayMultiplier }},
			{pattern: pre + "min-delay-ms", typ: millis(1), def: "10", example: "50", isNew: true,
				meaning: "and at least this long",
				bind:    func(c *Config, _ match) any { return &hr(c).MinDelay }},
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
