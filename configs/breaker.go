package configs

import "time"

// CircuitBreakerConfig is routing.circuit-breaker.*: one breaker per backend
// that opens after repeated transport failures or latency-budget breaches.
type CircuitBreakerConfig struct {
	Enabled          bool
	FailureThreshold int
	OpenState        time.Duration // how long an open breaker fails fast before one half-open retry
}

// switchKey is the boolean key that turns a feature on.
func switchKey(pattern, def, meaning string, field func(c *Config) *bool) *keyDef {
	example := "true"
	if def == "true" {
		example = "false"
	}
	return &keyDef{pattern: pattern, typ: boolT{}, def: def, example: example, sw: true, gate: gateNonDefault,
		meaning: meaning, bind: func(c *Config, _ match) any { return field(c) }}
}

func circuitBreakerFeature() *feature {
	cb := func(c *Config) *CircuitBreakerConfig { return &c.Routing.CircuitBreaker }
	return &feature{
		id: "circuit-breaker", title: "Circuit breaker",
		on:   func(c *Config) bool { return c.Routing.CircuitBreaker.Enabled },
		off:  offBecause("routing.circuit-breaker.enabled=false"),
		loss: "keep sending calls to a failing backend",
		keys: []*keyDef{
			switchKey("routing.circuit-breaker.enabled", "false", "fail fast on a backend after repeated transport failures or latency-budget breaches",
				func(c *Config) *bool { return &cb(c).Enabled }),
			{pattern: "routing.circuit-breaker.failure-threshold", typ: count(1), def: "3", example: "5",
				meaning: "consecutive failures that open the breaker",
				bind:    func(c *Config, _ match) any { return &cb(c).FailureThreshold }},
			{pattern: "routing.circuit-breaker.open-state-ms", typ: millis(1), def: "30000", example: "10000",
				meaning: "how long an open breaker fails fast before one half-open retry",
				bind:    func(c *Config, _ match) any { return &cb(c).OpenState }},
		},
	}
}
