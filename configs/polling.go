package configs

import (
	"strconv"
	"time"
)

// BackendStatePollingConfig is routing.backend-state-polling.*: background
// probes of every backend, feeding readiness and the breakers.
type BackendStatePollingConfig struct {
	Enabled        bool
	Interval       time.Duration
	ProbeTimeout   time.Duration
	MaxParallelism int
}

// catalogCount is the default of the max-parallelism keys: every catalog at
// once, as the Java proxy does.
func catalogCount(p *parser, _ match) (string, bool) {
	return strconv.Itoa(max(1, len(p.cfg.Catalogs))), true
}

func backendPollingFeature() *feature {
	bp := func(c *Config) *BackendStatePollingConfig { return &c.Routing.BackendStatePolling }
	const pre = "routing.backend-state-polling."
	return &feature{
		id: "backend-polling", title: "Background backend polling",
		on:   func(c *Config) bool { return c.Routing.BackendStatePolling.Enabled },
		off:  offBecause(pre + "enabled=false"),
		loss: "probe backends only when /readyz is asked",
		keys: []*keyDef{
			switchKey(pre+"enabled", "false", "probe every backend in the background; /readyz and the breakers use the last result",
				func(c *Config) *bool { return &bp(c).Enabled }),
			{pattern: pre + "interval-ms", typ: millis(1), def: "10000", example: "5000",
				meaning: "time between probe rounds",
				bind:    func(c *Config, _ match) any { return &bp(c).Interval }},
			{pattern: pre + "probe-timeout-ms", typ: millis(1), def: "5000", example: "2000",
				meaning: "timeout of one probe",
				bind:    func(c *Config, _ match) any { return &bp(c).ProbeTimeout }},
			{pattern: pre + "max-parallelism", typ: count(1), defFunc: catalogCount, defDoc: "the number of catalogs", example: "16",
				meaning: "backends probed at once",
				bind:    func(c *Config, _ match) any { return &bp(c).MaxParallelism }},
		},
	}
}
