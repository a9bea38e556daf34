package configs

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

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

	// OAuth2: bearer tokens (JWTs) of an identity provider, on when
	// OAuth2Issuer is set.
	OAuth2Issuer      string
	OAuth2Audience    string
	OAuth2JWKSURI     string // "": discovered from the issuer
	OAuth2UserClaim   string
	OAuth2GroupsClaim string
	OAuth2ClockSkew   time.Duration
	OAuth2Algorithms  []string
	OAuth2CAFile      string // trust for https to the provider; "": the system's
	// OAuth2PlaintextLoopback lets a bearer-token listener without TLS start
	// on a loopback address (tests only).
	OAuth2PlaintextLoopback bool

	// TLS of the listener: on when both files are set; reloaded when they
	// change.
	TLSCertFile string
	TLSKeyFile  string

	// AllowAnonymousOnSecuredProxy lets the listener run without
	// authentication while security.mode authenticates the Thrift side.
	AllowAnonymousOnSecuredProxy bool
}

// Authenticates reports whether the REST listener authenticates its
// callers (SPNEGO or OAuth2 bearer tokens).
func (rc *RESTCatalogConfig) Authenticates() bool {
	return rc.KerberosPrincipal != "" || rc.OAuth2Issuer != ""
}

// TLS reports whether the REST listener serves HTTPS.
func (rc *RESTCatalogConfig) TLS() bool { return rc.TLSCertFile != "" }

// DefaultOAuth2Algorithms are the JWS algorithms a bearer token may be signed
// with: asymmetric ones only (the proxy holds no shared secret; "none" never).
var DefaultOAuth2Algorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// AnonymousRESTWarning is the warning of a REST listener that does not
// authenticate (check-config, the start-up log, /readyz).
func AnonymousRESTWarning(bind string, port int) string {
	return fmt.Sprintf("rest-catalog: the REST listener on %s accepts anonymous requests: "+
		"anyone who reaches it reads and writes every catalog it routes, with no user in the audit; "+
		"set rest-catalog.oauth2.issuer (bearer tokens) or rest-catalog.kerberos.principal (SPNEGO)", net.JoinHostPort(bind, strconv.Itoa(port)))
}

// isLoopbackHost: 127.0.0.0/8, ::1 or localhost.
func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
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
					cat.RuntimeProfile.CompareAndSwap() {
					continue
				}
				key := "catalog." + cat.Name + ".conf." + confIcebergLockEnabled
				s := p.setting(key)
				p.fail(errorf(s.name, s.raw, "a commit without the metastore lock relies on the compare-and-swap of metadata_location "+
					"that only Hive 4 metastores perform, and catalog %s is %s (catalog.%s.runtime-profile): concurrent Iceberg commits "+
					"would overwrite each other without an error; remove the key (the metastore's lock, or the synthetic lock shim, "+
					"isolates writers)", cat.Name, cat.RuntimeProfile, cat.Name))
			}
			validateRESTSecurity(p, c)
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
			{pattern: pre + "oauth2.issuer", typ: strT{nonEmpty: true}, example: "https://idp.example.com/realms/data", isNew: true,
				meaning: "accept OAuth2 bearer tokens (JWTs) of this identity provider: the `iss` every token must carry; turns bearer authentication on",
				bind:    func(c *Config, _ match) any { return &r(c).OAuth2Issuer }},
			{pattern: pre + "oauth2.audience", typ: strT{nonEmpty: true}, example: "hms-proxy", isNew: true,
				meaning: "the `aud` a token must name (required with `rest-catalog.oauth2.issuer`): tokens minted for other services are refused",
				bind:    func(c *Config, _ match) any { return &r(c).OAuth2Audience }},
			{pattern: pre + "oauth2.jwks-uri", typ: strT{nonEmpty: true}, example: "https://idp.example.com/realms/data/protocol/openid-connect/certs", isNew: true,
				defDoc:  "discovered: `jwks_uri` of `<issuer>/.well-known/openid-configuration`",
				meaning: "where the provider publishes its signing keys (JWKS); keys are cached and fetched again for an unknown key id",
				bind:    func(c *Config, _ match) any { return &r(c).OAuth2JWKSURI }},
			{pattern: pre + "oauth2.user-claim", typ: strT{nonEmpty: true}, def: "sub", example: "preferred_username", isNew: true,
				meaning: "the claim that names the user: audit `authenticatedUser`, impersonation on the backends, access policy",
				bind:    func(c *Config, _ match) any { return &r(c).OAuth2UserClaim }},
			{pattern: pre + "oauth2.groups-claim", typ: strT{nonEmpty: true}, def: "groups", example: "roles", isNew: true,
				meaning: "the claim that lists the user's groups (a JSON array of strings, or one string); absent means none",
				bind:    func(c *Config, _ match) any { return &r(c).OAuth2GroupsClaim }},
			{pattern: pre + "oauth2.clock-skew-seconds", typ: seconds(0), def: "60", example: "30", isNew: true,
				meaning: "how far the provider's clock and the proxy's may disagree: a token is accepted until `exp` plus this, from `nbf` minus this, and refused when its `iat` is more than this in the future",
				bind:    func(c *Config, _ match) any { return &r(c).OAuth2ClockSkew }},
			{pattern: pre + "oauth2.algorithms", typ: enumListT{values: DefaultOAuth2Algorithms}, def: strings.Join(DefaultOAuth2Algorithms, ","), example: "RS256", isNew: true,
				meaning: "JWS algorithms a token may be signed with (asymmetric only; `none` and shared-secret HMAC are never accepted)",
				bind:    func(c *Config, _ match) any { return &r(c).OAuth2Algorithms }},
			{pattern: pre + "oauth2.ca-file", typ: strT{nonEmpty: true}, example: "/etc/pki/idp-ca.pem", isNew: true,
				defDoc:  "the system's trusted roots",
				meaning: "PEM certificates trusted for HTTPS to the provider (discovery and JWKS)",
				bind:    func(c *Config, _ match) any { return &r(c).OAuth2CAFile }},
			{pattern: pre + "oauth2.allow-plaintext-on-loopback", typ: boolT{}, def: "false", example: "true", isNew: true,
				meaning: "let a bearer-token listener without TLS start, only on a loopback `rest-catalog.bind-host` (tests): bearer tokens would travel in clear",
				bind:    func(c *Config, _ match) any { return &r(c).OAuth2PlaintextLoopback }},
			{pattern: pre + "tls.cert-file", typ: strT{nonEmpty: true}, example: "/etc/hms-proxy/rest.crt", isNew: true,
				meaning: "PEM certificate chain of the REST listener; with `rest-catalog.tls.key-file` the listener serves HTTPS only, and both files are read again when they change",
				bind:    func(c *Config, _ match) any { return &r(c).TLSCertFile }},
			{pattern: pre + "tls.key-file", typ: strT{nonEmpty: true}, example: "/etc/hms-proxy/rest.key", isNew: true,
				meaning: "PEM private key of `rest-catalog.tls.cert-file`",
				bind:    func(c *Config, _ match) any { return &r(c).TLSKeyFile }},
			{pattern: pre + "allow-anonymous-on-secured-proxy", typ: boolT{}, def: "false", example: "true", isNew: true,
				meaning: "let the REST listener accept anonymous requests while `security.mode` authenticates the Thrift side (refused at start otherwise): anyone who reaches it reads and writes what the Thrift door guards",
				bind:    func(c *Config, _ match) any { return &r(c).AllowAnonymousOnSecuredProxy }},
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

// validateRESTSecurity: bearer tokens need an audience and TLS (or the
// loopback test switch), the TLS files come in pairs, and a proxy whose
// Thrift side authenticates does not open an anonymous REST door unless told
// so by the key that names the risk; an anonymous listener is a warning.
func validateRESTSecurity(p *parser, c *Config) {
	const pre = "rest-catalog."
	rc := &c.RESTCatalog
	set := func(k string) *setting { return p.setting(pre + k) }
	issuer := set("oauth2.issuer")
	if issuer.fromFile {
		if u, err := url.Parse(rc.OAuth2Issuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			p.fail(errorf(issuer.name, issuer.raw, "not an http(s) URL: the issuer is the URL tokens carry in their iss claim"))
		}
		if !set("oauth2.audience").fromFile {
			p.fail(missingf(pre+"oauth2.audience", "required with %soauth2.issuer: without it a token the provider minted for any other service would be accepted", pre))
		}
	} else {
		for _, k := range []string{"oauth2.audience", "oauth2.jwks-uri", "oauth2.user-claim", "oauth2.groups-claim", "oauth2.clock-skew-seconds",
			"oauth2.algorithms", "oauth2.ca-file", "oauth2.allow-plaintext-on-loopback"} {
			if s := set(k); s.fromFile {
				p.fail(errorf(s.name, s.raw, "only valid with %soauth2.issuer (bearer tokens are off): it would be ignored", pre))
			}
		}
	}
	if j := set("oauth2.jwks-uri"); j.fromFile {
		if u, err := url.Parse(rc.OAuth2JWKSURI); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			p.fail(errorf(j.name, j.raw, "not an http(s) URL"))
		}
	}
	cert, key := set("tls.cert-file"), set("tls.key-file")
	if cert.fromFile != key.fromFile {
		have, miss := cert, key
		if key.fromFile {
			have, miss = key, cert
		}
		p.fail(errorf(have.name, have.raw, "needs %s too: TLS takes a certificate and its key", miss.name))
	}
	if !rc.Enabled {
		return
	}
	plain := set("oauth2.allow-plaintext-on-loopback")
	switch {
	case rc.OAuth2Issuer != "" && !rc.TLS() && !rc.OAuth2PlaintextLoopback:
		p.fail(errorf(issuer.name, issuer.raw, "bearer tokens without TLS would travel in clear: set %stls.cert-file and %stls.key-file "+
			"(or, for tests on a loopback address only, %soauth2.allow-plaintext-on-loopback=true)", pre, pre, pre))
	case rc.OAuth2PlaintextLoopback && rc.TLS():
		p.fail(errorf(plain.name, plain.raw, "the listener serves TLS (%stls.cert-file), so plaintext is never used: remove the key", pre))
	case rc.OAuth2PlaintextLoopback && !isLoopbackHost(rc.BindHost):
		p.fail(errorf(plain.name, plain.raw, "allowed only on a loopback address, and %sbind-host is %q: bearer tokens would cross the network in clear", pre, rc.BindHost))
	}
	anon := set("allow-anonymous-on-secured-proxy")
	switch {
	case rc.Authenticates() && anon.fromFile && rc.AllowAnonymousOnSecuredProxy:
		p.fail(errorf(anon.name, anon.raw, "the REST listener authenticates (SPNEGO or bearer tokens), so nobody is anonymous: remove the key"))
	case !rc.Authenticates() && c.Security.Mode != SecurityNone && !rc.AllowAnonymousOnSecuredProxy:
		p.fail(errorf(pre+"enabled", "true", "security.mode=%s authenticates the Thrift listeners, but the REST listener would accept anonymous "+
			"reads and writes: set %soauth2.issuer (bearer tokens) or %skerberos.principal (SPNEGO), or accept the risk with "+
			"%sallow-anonymous-on-secured-proxy=true", c.Security.Mode, pre, pre, pre))
	}
	if !rc.Authenticates() {
		p.warnf("%s", AnonymousRESTWarning(rc.BindHost, rc.Port))
	}
}
