package configs

// Purge modes of the Iceberg REST frontend (RESTCatalogConfig.PurgeMode).
const (
	RESTPurgeAllow     = "ALLOW"
	RESTPurgeAllowlist = "ALLOWLIST"
	RESTPurgeRefuse    = "REFUSE"
)

// RESTCatalogConfig is rest-catalog.*: the Iceberg REST catalog HTTP
// listener.
type RESTCatalogConfig struct {
	Enabled              bool
	BindHost             string
	Port                 int
	MinWorkerThreads     int
	MaxWorkerThreads     int
	KerberosPrincipal    string // SPNEGO: HTTP/<host>@REALM; needs security.mode=KERBEROS
	KerberosKeytab       string
	PurgeMode            string
	PurgeAllowedPrefixes []string // only with ALLOWLIST, then non-empty
	HiveEngineDescriptor bool     // REST commits write a Hive-readable storage descriptor
}

// confIcebergLockEnabled is the catalog conf key (after catalog.<c>.conf.)
// that lets REST commits skip the metastore lock.
const confIcebergLockEnabled = "iceberg.engine.hive.lock-enabled"

// DefaultRESTPortOffset: rest-catalog.port defaults to server.port plus this.
const DefaultRESTPortOffset = 100

func restCatalogFeature() *feature {
	const pre = "rest-catalog."
	r := func(c *Config) *RESTCatalogConfig { return &c.RESTCatalog }
	return &feature{
		id: "rest-catalog", title: "Iceberg REST catalog listener",
		on:   func(c *Config) bool { return c.RESTCatalog.Enabled },
		off:  offBecause(pre + "enabled=false"),
		loss: "leave the Iceberg REST listener the file asks for unstarted",
		validate: func(p *parser, c *Config) {
			rc := r(c)
			princ, kt := p.setting(pre+"kerberos.principal"), p.setting(pre+"kerberos.keytab")
			switch {
			case princ.fromFile != kt.fromFile:
				set, unset := princ, kt
				if kt.fromFile {
					set, unset = kt, princ
				}
				p.fail(errorf(set.name, set.raw, "needs %s too: SPNEGO takes a principal and its keytab", unset.name))
			case princ.fromFile && c.Security.Mode != SecurityKerberos:
				p.fail(errorf(princ.name, princ.raw, "SPNEGO on the REST listener requires security.mode=KERBEROS (security.mode is %s)", c.Security.Mode))
			}
			mode, prefixes := p.setting(pre+"purge.mode"), p.setting(pre+"purge.allowed-prefixes")
			if !mode.bad && !prefixes.bad {
				switch {
				case rc.PurgeMode == RESTPurgeAllowlist && len(rc.PurgeAllowedPrefixes) == 0:
					p.fail(errorf(mode.name, mode.raw, "ALLOWLIST needs a non-empty %spurge.allowed-prefixes (the locations a purge may delete under)", pre))
				case rc.PurgeMode != RESTPurgeAllowlist && prefixes.fromFile:
					p.fail(errorf(prefixes.name, prefixes.raw, "only valid with %spurge.mode=ALLOWLIST (the mode is %s): the prefixes would be ignored", pre, rc.PurgeMode))
				}
			}
			for _, cat := range c.Catalogs {
				if v := cat.IcebergEngineHiveLockEnabled; v == nil || *v || p.bad["catalog."+cat.Name+".runtime-profile"] ||
					cat.RuntimeProfile == ProfileApache410 {
					continue
				}
				key := "catalog." + cat.Name + ".conf." + confIcebergLockEnabled
				s := p.setting(key)
				p.fail(errorf(s.name, s.raw, "a commit without the metastore lock relies on the compare-and-swap of metadata_location "+
					"that only Hive 4 metastores perform, and catalog %s is %s (catalog.%s.runtime-profile): concurrent Iceberg commits "+
					"would overwrite each other without an error; remove the key (the metastore's lock, or the synthetic lock shim, "+
					"isolates writers)", cat.Name, cat.RuntimeProfile, cat.Name))
			}
			if rc.Enabled && !p.setting(pre+"port").has && !p.bad["server.port"] {
				p.fail(missingf(pre+"port", "not set, and its default server.port + %d = %d is not a valid port; set %sport",
					DefaultRESTPortOffset, c.Server.Port+DefaultRESTPortOffset, pre))
			}
		},
		keys: []*keyDef{
			{pattern: pre + "enabled", typ: boolT{}, example: "true", sw: true, gate: gateNonDefault,
				defFunc: func(p *parser, _ match) (string, bool) { return boolText(p.has(pre + "port")), true },
				defDoc:  "`true` when `rest-catalog.port` is set, else `false`",
				meaning: "serve the Iceberg REST catalog protocol over HTTP, through the same routing as the Thrift listeners",
				bind:    func(c *Config, _ match) any { return &r(c).Enabled }},
			{pattern: pre + "bind-host", typ: strT{}, defOf: "server.bind-host", example: "127.0.0.1",
				meaning: "address of the REST listener",
				bind:    func(c *Config, _ match) any { return &r(c).BindHost }},
			{pattern: pre + "port", typ: portT, example: "9183", gate: gateAlways,
				defFunc: func(p *parser, _ match) (string, bool) {
					sp := p.cfg.Server.Port
					switch {
					case p.bad["server.port"] || sp+DefaultRESTPortOffset > 65535:
						return "", false
					case sp == 0:
						return "0", true
					}
					return itoa(sp + DefaultRESTPortOffset), true
				},
				defDoc:  "`server.port + 100`",
				meaning: "port of the REST listener; setting it turns the listener on",
				bind:    func(c *Config, _ match) any { return &r(c).Port }},
			{pattern: pre + "min-worker-threads", typ: count(1), def: "8", example: "2",
				ignored: "the Go HTTP server serves each request on a goroutine started on demand, so there is no worker pool to pre-start; " +
					pre + "max-worker-threads bounds the requests served at once",
				meaning: "HTTP handler threads kept started (the Java proxy's Jetty pool)",
				bind:    func(c *Config, _ match) any { return &r(c).MinWorkerThreads }},
			{pattern: pre + "max-worker-threads", typ: count(1), def: "64", example: "16",
				meaning: "REST requests served at once; as many more wait up to 10 s for a free slot, any beyond answer `503` with `Retry-After`",
				bind:    func(c *Config, _ match) any { return &r(c).MaxWorkerThreads }},
			{pattern: pre + "kerberos.principal", typ: strT{nonEmpty: true}, example: "HTTP/_HOST@EXAMPLE.COM",
				meaning: "SPNEGO principal (HTTP/<host>@REALM); needs `security.mode=KERBEROS` and the keytab",
				bind:    func(c *Config, _ match) any { return &r(c).KerberosPrincipal }},
			{pattern: pre + "kerberos.keytab", typ: strT{nonEmpty: true}, example: "/etc/security/keytabs/spnego.service.keytab",
				meaning: "keytab of the SPNEGO principal",
				bind:    func(c *Config, _ match) any { return &r(c).KerberosKeytab }},
			{pattern: pre + "purge.mode", typ: enum(RESTPurgeAllow, RESTPurgeAllowlist, RESTPurgeRefuse), def: RESTPurgeAllow, example: RESTPurgeRefuse,
				meaning: "what `DELETE …?purgeRequested=true` may delete: everything the table's metadata names, only under the allowed prefixes, or nothing (403)",
				bind:    func(c *Config, _ match) any { return &r(c).PurgeMode }},
			{pattern: pre + "purge.allowed-prefixes", typ: prefixListT{}, example: "hdfs://ns-default/warehouse/",
				meaning: "location prefixes a purge may delete under; required for `ALLOWLIST`, refused otherwise",
				bind:    func(c *Config, _ match) any { return &r(c).PurgeAllowedPrefixes }},
			{pattern: pre + "hive-engine-descriptor", typ: boolT{}, def: "true", example: "false",
				meaning: "REST commits write a Hive-readable storage descriptor unless the table sets engine.hive.enabled itself",
				bind:    func(c *Config, _ match) any { return &r(c).HiveEngineDescriptor }},
			hiveConfKey("iceberg.engine.hive.enabled", "", &keyDef{typ: optBoolT{}, example: "false",
				meaning: "the catalog's own choice of the Hive storage descriptor for REST commits; overrides `rest-catalog.hive-engine-descriptor`",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).IcebergEngineHiveEnabled }}),
			hiveConfKey(confIcebergLockEnabled, "", &keyDef{typ: optBoolT{}, example: "true", defDoc: "`true`",
				meaning: "`false`: REST commits of the catalog take no metastore lock and rely on the metastore's compare-and-swap of " +
					"`metadata_location`; only for `APACHE_4_1_0` catalogs (refused for Hive 3 and HDP runtimes, which do not compare)",
				bind: func(c *Config, m match) any { return &catalogOf(c, m).IcebergEngineHiveLockEnabled }}),
		},
	}
}
