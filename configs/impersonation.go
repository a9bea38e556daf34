package configs

// impersonationFeature: the caller's identity selects per-user backend sessions.
// The identity is the front door's (SASL) or, on a plain front door, the user
// a set_ugi asserted (issue 13: what an unsecured metastore itself trusts),
// so impersonation does not need security.mode=KERBEROS.
func impersonationFeature() *feature {
	const pre = "catalog.<catalog>."
	appendPrincipals := func(c *Config, _ match) any {
		return setter(func(v any) error {
			c.Security.ServicePrincipals = append(c.Security.ServicePrincipals, v.([]string)...)
			return nil
		})
	}
	return &feature{
		id: "impersonation", title: "Kerberos impersonation",
		on: func(c *Config) bool {
			return anyCatalog(c, func(cat *CatalogConfig) bool { return cat.ImpersonationEnabled })
		},
		off:  offBecause("impersonation is off for every catalog (security.impersonation-enabled and catalog.<name>.impersonation-enabled)"),
		loss: "call backends as the proxy itself instead of as the authenticated user",
		keys: []*keyDef{
			{pattern: "security.impersonation-enabled", typ: boolT{}, def: "false", example: "true", sw: true, gate: gateNonDefault,
				meaning: "call backends as the caller (the Kerberos or token identity, or on a plain front door the `set_ugi` user); the default of `catalog.<name>.impersonation-enabled`",
				bind:    func(c *Config, _ match) any { return &c.Security.ImpersonationEnabled }},
			{pattern: pre + "impersonation-enabled", typ: boolT{}, defOf: "security.impersonation-enabled", example: "true", sw: true, gate: gateNonDefault,
				meaning: "impersonation for this catalog",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).ImpersonationEnabled }},
			{pattern: pre + "impersonation-max-clients", typ: count(1), def: "128", example: "16",
				meaning: "users with a cached impersonation client at once",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).ImpersonationMaxClients }},
			{pattern: pre + "impersonation-client-idle-ttl-ms", typ: millis(0), def: "0", example: "600000",
				meaning: "a user's impersonation client idle this long is closed; `0` = never",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).ImpersonationClientIdleTTL }},
			{pattern: pre + "impersonation-pool-max-size", typ: count(1), def: "4", example: "8",
				meaning: "backend sessions per impersonated user",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).ImpersonationPoolMaxSize }},
			{pattern: pre + "impersonation-session-idle-ttl-ms", typ: millis(0), def: "0", example: "60000",
				meaning: "an idle session of a user's pool is closed after this; `0` = never",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).ImpersonationSessionIdleTTL }},
			{pattern: "security.service-principals", typ: listT{}, example: "hive/hs2.example.com@EXAMPLE.COM", isNew: true,
				meaning: "principals that bypass impersonation and use the shared backend session (comma-separated)",
				bind:    appendPrincipals},
			{pattern: "security.service-principals.*", typ: listT{}, example: "hive/hs2.example.com@EXAMPLE.COM",
				meaning: "`security.service-principals.<name>`: the same, one entry per key (merged with the list above)",
				bind:    appendPrincipals},
		},
	}
}
