package configs

import "time"

// AdaptiveTimeoutConfig is routing.adaptive-timeout.*: a backend socket
// timeout that follows the backend's latency EWMA within [Min, Max].
type AdaptiveTimeoutConfig struct {
	Enabled           bool
	Initial           time.Duration
	Min               time.Duration
	Max               time.Duration
	Multiplier        float64 // timeout = EWMA × Multiplier
	Alpha             float64 // EWMA weight of the newest sample
	ReconnectCooldown time.Duration
}

func adaptiveTimeoutFeature() *feature {
	at := func(c *Config) *AdaptiveTimeoutConfig { return &c.Routing.AdaptiveTimeout }
	const pre = "routing.adaptive-timeout."
	return &feature{
		id: "adaptive-timeout", title: "Adaptive backend timeout",
		on:   func(c *Config) bool { return c.Routing.AdaptiveTimeout.Enabled },
		off:  offBecause("routing.adaptive-timeout.enabled=false"),
		loss: "keep the fixed backend socket timeout",
		validate: func(p *parser, c *Config) {
			a := c.Routing.AdaptiveTimeout
			for _, k := range []string{pre + "min-ms", pre + "max-ms", pre + "initial-ms"} {
				if p.bad[k] {
					return
				}
			}
			switch {
			case a.Min > a.Max:
				p.fail(errorf(pre+"min-ms", p.setting(pre+"min-ms").text, "must not exceed %smax-ms (%d)", pre, a.Max.Milliseconds()))
			case a.Initial < a.Min || a.Initial > a.Max:
				p.fail(errorf(pre+"initial-ms", p.setting(pre+"initial-ms").text, "must lie between %smin-ms (%d) and %smax-ms (%d)",
					pre, a.Min.Milliseconds(), pre, a.Max.Milliseconds()))
			}
		},
		keys: []*keyDef{
			switchKey(pre+"enabled", "false", "follow each backend's latency with its socket timeout",
				func(c *Config) *bool { return &at(c).Enabled }),
			{pattern: pre + "initial-ms", typ: millis(1), def: "5000", example: "2000",
				meaning: "timeout before any latency is measured",
				bind:    func(c *Config, _ match) any { return &at(c).Initial }},
			{pattern: pre + "min-ms", typ: millis(1), def: "1000", example: "500",
				meaning: "lower bound of the timeout",
				bind:    func(c *Config, _ match) any { return &at(c).Min }},
			{pattern: pre + "max-ms", typ: millis(1), def: "60000", example: "30000",
				meaning: "upper bound of the timeout",
				bind:    func(c *Config, _ match) any { return &at(c).Max }},
			{pattern: pre + "multiplier", typ: floatT{min: 0, minOpen: true, max: 1e9}, def: "4", example: "3",
				meaning: "timeout = latency EWMA × this",
				bind:    func(c *Config, _ match) any { return &at(c).Multiplier }},
			{pattern: pre + "alpha", typ: floatT{min: 0, minOpen: true, max: 1}, def: "0.2", example: "0.5",
				meaning: "weight of the newest latency in the EWMA",
				bind:    func(c *Config, _ match) any { return &at(c).Alpha }},
			{pattern: pre + "reconnect-cooldown-ms", typ: millis(1), def: "30000", example: "60000",
				meaning: "least time between two reconnects for a changed timeout (changes below max(2 s, 25 %) are skipped too)",
				bind:    func(c *Config, _ match) any { return &at(c).ReconnectCooldown }},
		},
	}
}
