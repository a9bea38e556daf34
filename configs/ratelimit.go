package configs

import (
	"net/netip"
	"sort"
	"strings"
	"time"
)

// RateLimitConfig is rate-limit.*: token buckets a request must pass, per
// scope. A policy with RequestsPerSecond 0 is not configured.
type RateLimitConfig struct {
	// Enabled: false turns every scope off without removing it; it defaults
	// to true when any scope is configured.
	Enabled   bool
	Principal RateLimitPolicy // per authenticated principal
	Source    RateLimitPolicy // per exact source IP
	// SourceCIDR: one aggregate bucket per named rule; every rule matching
	// a source applies.
	SourceCIDR map[string]*SourceCIDRRule
	// MethodFamily is keyed by family (metadata_read, …, lower case),
	// Catalog by catalog name, RPCClass by class (write, ddl, txn, lock).
	MethodFamily map[string]*RateLimitPolicy
	Catalog      map[string]*RateLimitPolicy
	RPCClass     map[string]*RateLimitPolicy
	// Bounds of the per-principal and per-source tables (hms-proxy).
	MaxTrackedKeys int
	IdleTTL        time.Duration
}

// RateLimitPolicy is one token bucket: refilled at RequestsPerSecond, up to
// Burst tokens (default: RequestsPerSecond).
type RateLimitPolicy struct {
	RequestsPerSecond int
	Burst             int
}

// SourceCIDRRule is one rate-limit.source-cidr.<name> rule.
type SourceCIDRRule struct {
	CIDRs []netip.Prefix
	RateLimitPolicy
}

// MethodFamilies are the values of rate-limit.method-family.<family>.
func MethodFamilies() []string { return append([]string(nil), methodFamilies...) }

// RPCClasses are the values of rate-limit.rpc-class.<class>.
func RPCClasses() []string { return append([]string(nil), rpcClasses...) }

func policyIn(mp *map[string]*RateLimitPolicy, name string) *RateLimitPolicy {
	if *mp == nil {
		*mp = map[string]*RateLimitPolicy{}
	}
	p := (*mp)[name]
	if p == nil {
		p = &RateLimitPolicy{}
		(*mp)[name] = p
	}
	return p
}

func cidrRule(c *Config, name string) *SourceCIDRRule {
	rl := &c.RateLimit
	if rl.SourceCIDR == nil {
		rl.SourceCIDR = map[string]*SourceCIDRRule{}
	}
	r := rl.SourceCIDR[name]
	if r == nil {
		r = &SourceCIDRRule{}
		rl.SourceCIDR[name] = r
	}
	return r
}

func rateLimitFeature() *feature {
	// scope builds the requests-per-second and burst keys of one scope.
	scope := func(prefix, what string, policy func(c *Config, m match) *RateLimitPolicy) []*keyDef {
		return []*keyDef{
			{pattern: prefix + ".requests-per-second", typ: count(1), example: "60", gate: gateAlways,
				meaning: "refill rate of the bucket " + what,
				bind:    func(c *Config, m match) any { return &policy(c, m).RequestsPerSecond }},
			{pattern: prefix + ".burst", typ: count(1), defOf: prefix + ".requests-per-second", example: "120",
				meaning: "bucket size " + what + " (requests allowed at once)",
				bind:    func(c *Config, m match) any { return &policy(c, m).Burst }},
		}
	}
	keys := []*keyDef{
		{pattern: "rate-limit.enabled", typ: boolT{}, example: "true", sw: true, gate: gateNonDefault, isNew: true,
			defFunc: func(p *parser, _ match) (string, bool) {
				for k := range p.props {
					if strings.HasPrefix(k, "rate-limit.") && !rateLimitSettings[k] {
						return "true", true
					}
				}
				return "false", true
			},
			defDoc:  "`true` when any `rate-limit.*` scope is configured",
			meaning: "`false` turns every scope off without removing it",
			bind:    func(c *Config, _ match) any { return &c.RateLimit.Enabled }},
	}
	keys = append(keys,
		&keyDef{pattern: "rate-limit.max-tracked-keys", typ: count(1), def: "50000", example: "10000", isNew: true,
			meaning: "per-principal and per-source buckets kept at most, per dimension (beyond: one shared overflow bucket)",
			bind:    func(c *Config, _ match) any { return &c.RateLimit.MaxTrackedKeys }},
		&keyDef{pattern: "rate-limit.idle-ttl-ms", typ: millis(1), def: "900000", example: "60000", isNew: true,
			meaning: "a per-principal or per-source bucket that is full again is forgotten after this long unused",
			bind:    func(c *Config, _ match) any { return &c.RateLimit.IdleTTL }})
	keys = append(keys, scope("rate-limit.principal", "of each authenticated principal (Kerberos/SASL callers only)",
		func(c *Config, _ match) *RateLimitPolicy { return &c.RateLimit.Principal })...)
	keys = append(keys, scope("rate-limit.source", "of each exact source IP address",
		func(c *Config, _ match) *RateLimitPolicy { return &c.RateLimit.Source })...)
	keys = append(keys, &keyDef{pattern: "rate-limit.source-cidr.<rule>.cidrs", typ: cidrListT{nonEmpty: true}, example: "10.10.0.0/16,2001:db8::/64", gate: gateAlways,
		meaning: "the addresses and CIDR blocks of the rule (one bucket for all of them)",
		bind:    func(c *Config, m match) any { return &cidrRule(c, m.get("rule")).CIDRs }})
	keys = append(keys, scope("rate-limit.source-cidr.<rule>", "of the rule",
		func(c *Config, m match) *RateLimitPolicy { return &cidrRule(c, m.get("rule")).RateLimitPolicy })...)
	keys = append(keys, scope("rate-limit.method-family.<family>", "of the method family ("+strings.Join(methodFamilies, ", ")+")",
		func(c *Config, m match) *RateLimitPolicy {
			return policyIn(&c.RateLimit.MethodFamily, strings.ToLower(m.get("family")))
		})...)
	keys = append(keys, scope("rate-limit.catalog.<catalog>", "of the catalog (a fan-out takes a token of every catalog it asks)",
		func(c *Config, m match) *RateLimitPolicy { return policyIn(&c.RateLimit.Catalog, m.catalog()) })...)
	keys = append(keys, scope("rate-limit.rpc-class.<class>", "of the RPC class ("+strings.Join(rpcClasses, ", ")+"; a call may be in several)",
		func(c *Config, m match) *RateLimitPolicy {
			return policyIn(&c.RateLimit.RPCClass, strings.ToLower(m.get("class")))
		})...)
	return &feature{
		id: "rate-limit", title: "Rate limiting",
		on:       func(c *Config) bool { return c.RateLimit.Enabled },
		off:      offBecause("rate-limit.enabled=false"),
		loss:     "serve every request unthrottled",
		validate: validateRateLimit,
		keys:     keys,
	}
}

// rateLimitSettings are the rate-limit.* keys that configure no scope.
var rateLimitSettings = map[string]bool{"rate-limit.enabled": true, "rate-limit.max-tracked-keys": true, "rate-limit.idle-ttl-ms": true}

// validateRateLimit: a burst needs its rate; a CIDR rule needs both its
// blocks and its rate.
func validateRateLimit(p *parser, _ *Config) {
	var names []string
	for n, s := range p.settings {
		if strings.HasPrefix(n, "rate-limit.") && s.fromFile && !rateLimitSettings[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		s := p.settings[n]
		base, last := n[:strings.LastIndexByte(n, '.')], n[strings.LastIndexByte(n, '.')+1:]
		rps := base + ".requests-per-second"
		switch last {
		case "burst":
			if !p.isSet(rps) && !p.bad[rps] {
				p.fail(errorf(n, s.raw, "a burst needs %s (the rate that refills the bucket)", rps))
			}
		case "cidrs":
			if !p.isSet(rps) && !p.bad[rps] {
				p.fail(missingf(rps, "required: rule %s names addresses (%s) but no rate", base, n))
			}
		case "requests-per-second":
			if strings.HasPrefix(n, "rate-limit.source-cidr.") && !p.isSet(base+".cidrs") && !p.bad[base+".cidrs"] {
				p.fail(missingf(base+".cidrs", "required: rule %s has a rate but no addresses", base))
			}
		}
	}
}
