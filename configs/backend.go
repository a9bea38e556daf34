package configs

import (
	"time"
)

// Defaults of the backend client, as Hive's client has them.
const (
	DefaultSocketTimeout     = 600 * time.Second
	DefaultConnectRetries    = 3
	DefaultConnectRetryDelay = time.Second
	DefaultTxnTimeout        = 300 * time.Second
)

var hiveSeconds = hiveDurT{unit: time.Second}

// hiveConfKey is a Hive client setting of a catalog, known under its hive.*
// name and its MetastoreConf metastore.* name (Hive reads either; setting
// both to different values is refused rather than resolved silently).
func hiveConfKey(hiveName, metastoreName string, k *keyDef) *keyDef {
	k.pattern = "catalog.<catalog>.conf." + hiveName
	if metastoreName != "" {
		k.aliases = []alias{{pattern: "catalog.<catalog>.conf." + metastoreName}}
	}
	return k
}

const uriSelectionRandom, uriSelectionSequential = "RANDOM", "SEQUENTIAL"

func backendClientFeature() *feature {
	return &feature{
		id: "backend-client", title: "Backend connections",
		keys: []*keyDef{
			hiveConfKey("hive.metastore.uris", "metastore.thrift.uris", &keyDef{typ: uriListT{},
				example:  "thrift://hms-a:9083,thrift://hms-b:9083",
				required: `required: the backend metastore URIs of catalog "<catalog>", comma-separated thrift://host:port`,
				meaning:  "the catalog's metastores, `thrift://host:port` (IPv6 `thrift://[::1]:9083`), comma-separated",
				bind:     func(c *Config, m match) any { return &catalogOf(c, m).URIs }}),
			hiveConfKey("hive.metastore.uri.selection", "metastore.thrift.uri.selection", &keyDef{
				typ: enum(uriSelectionRandom, uriSelectionSequential), def: uriSelectionRandom, example: uriSelectionSequential,
				meaning: "`RANDOM` shuffles the URIs on each connect, as Hive's client does; `SEQUENTIAL` tries them in order",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).URISelection }}),
			hiveConfKey("hive.metastore.catalog.default", "metastore.catalog.default", &keyDef{
				typ: strT{nonEmpty: true}, def: "hive", example: "spark",
				meaning: "the backend's own catalog name, sent to it in place of the proxy catalog name",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).BackendCatalogName }}),
			hiveConfKey("hive.metastore.client.socket.timeout", "metastore.client.socket.timeout", &keyDef{
				typ: hiveSeconds, def: "600s", example: "5m",
				meaning: "read timeout on backend connections (it may fire up to a sixteenth of itself, at most 250 ms, late, as may a call's latency budget: a session moves its socket deadline only that often)",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).SocketTimeout }}),
			hiveConfKey("hive.metastore.client.connection.timeout", "metastore.client.connection.timeout", &keyDef{
				typ: hiveSeconds, defOf: "catalog.<catalog>.conf.hive.metastore.client.socket.timeout", example: "20s",
				meaning: "connect timeout (Hive 4's key; a Hive 3.1.3 client connects with the socket timeout)",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).ConnectTimeout }}),
			hiveConfKey("hive.metastore.connect.retries", "metastore.connect.retries", &keyDef{
				typ: count(0), def: "3", example: "5",
				meaning: "rounds over the URIs before a connect fails",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).ConnectRetries }}),
			hiveConfKey("hive.metastore.client.connect.retry.delay", "metastore.client.connect.retry.delay", &keyDef{
				typ: hiveSeconds, def: "1s", example: "2s",
				meaning: "pause between connect rounds",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).ConnectRetryDelay }}),
			hiveConfKey("hive.metastore.thrift.framed.transport.enabled", "metastore.thrift.framed.transport.enabled", &keyDef{
				typ: boolT{}, def: "false", example: "true",
				meaning: "framed Thrift transport to the backend",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).FramedTransport }}),
			{pattern: "catalog.<catalog>.conf.*", typ: strT{}, example: "value",
				ignored: "hms-proxy's backend client does not read this Hive setting (every entry is kept in the catalog's conf map)",
				meaning: "any other Hive client setting of the backend",
				bind:    func(*Config, match) any { return setter(func(any) error { return nil }) }}, // kept in CatalogConfig.Conf by afterCatalogs
		},
	}
}

func sessionLifetimeFeature() *feature {
	return &feature{
		id: "session-lifetime", title: "Backend session recycling by age",
		loss: "keep backend sessions open longer than the file allows",
		keys: []*keyDef{
			hiveConfKey("hive.metastore.client.socket.lifetime", "metastore.client.socket.lifetime", &keyDef{
				typ: hiveSeconds, def: "0s", example: "1h", gate: gateNonDefault,
				meaning: "Hive's client reconnects a session older than this; `0` = never",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).SocketLifetime }}),
		},
	}
}

func backendKerberosFeature() *feature {
	return &feature{
		id: "backend-kerberos", title: "Outbound Kerberos (SASL) to backends",
		on:   func(c *Config) bool { return anyCatalog(c, func(cat *CatalogConfig) bool { return cat.SASLEnabled }) },
		off:  offBecause("no catalog sets conf.hive.metastore.sasl.enabled=true, so backend connections are plain"),
		loss: "connect to the backend without Kerberos",
		validate: func(p *parser, c *Config) {
			for _, cat := range c.Catalogs {
				if !cat.SASLEnabled {
					continue
				}
				pre := "catalog." + cat.Name + ".conf."
				if cat.KerberosPrincipal == "" {
					p.fail(missingf(pre+"hive.metastore.kerberos.principal", "required when %shive.metastore.sasl.enabled=true: the backend's service principal (hive/_HOST@REALM)", pre))
				}
				if cat.FramedTransport {
					p.fail(errorf(pre+"hive.metastore.thrift.framed.transport.enabled", "true", "framed transport is not supported with SASL (%shive.metastore.sasl.enabled=true), as in Hive's client", pre))
				}
			}
			if anyCatalog(c, func(cat *CatalogConfig) bool { return cat.SASLEnabled }) {
				if c.Security.ClientPrincipal == "" {
					p.fail(missingf("security.client-principal", "required (or security.server-principal, its default) when a catalog sets conf.hive.metastore.sasl.enabled=true"))
				}
				if c.Security.ClientKeytab == "" {
					p.fail(missingf("security.client-keytab", "required (or security.keytab, its default) when a catalog sets conf.hive.metastore.sasl.enabled=true"))
				}
			}
		},
		keys: []*keyDef{
			{pattern: "security.client-principal", typ: strT{}, defOf: "security.server-principal", example: "hive/proxy.example.com@EXAMPLE.COM",
				meaning: "principal of the proxy's outbound Kerberos connections to backends",
				bind:    func(c *Config, _ match) any { return &c.Security.ClientPrincipal }},
			{pattern: "security.client-keytab", typ: strT{}, defOf: "security.keytab", example: "/etc/security/keytabs/hms-proxy-client.keytab",
				meaning: "keytab of `security.client-principal`",
				bind:    func(c *Config, _ match) any { return &c.Security.ClientKeytab }},
			hiveConfKey("hive.metastore.sasl.enabled", "metastore.sasl.enabled", &keyDef{
				typ: boolT{}, def: "false", example: "true", sw: true, gate: gateNonDefault,
				meaning: "Kerberos (SASL/GSSAPI) to this backend",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).SASLEnabled }}),
			hiveConfKey("hive.metastore.kerberos.principal", "metastore.kerberos.principal", &keyDef{
				typ: strT{}, example: "hive/_HOST@EXAMPLE.COM",
				meaning: "the backend's service principal; `_HOST` becomes the canonical name of the URI's host",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).KerberosPrincipal }}),
			hiveConfKey("hadoop.rpc.protection", "", &keyDef{
				typ: rpcProtectionT, def: "authentication", example: "privacy",
				meaning: "SASL quality of protection towards this backend",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).RPCProtection }}),
		},
	}
}

var rpcProtectionT = enumListT{values: []string{"authentication", "integrity", "privacy"}}

func backendTLSFeature() *feature {
	return &feature{
		id: "backend-tls", title: "TLS to backends",
		on:   func(c *Config) bool { return anyCatalog(c, func(cat *CatalogConfig) bool { return cat.UseSSL }) },
		off:  offBecause("no catalog sets conf.hive.metastore.use.SSL=true"),
		loss: "connect to the backend without TLS",
		validate: func(p *parser, c *Config) {
			for _, cat := range c.Catalogs {
				if cat.UseSSL && cat.TrustStorePath == "" {
					pre := "catalog." + cat.Name + ".conf."
					p.fail(missingf(pre+"hive.metastore.truststore.path",
						"required when %shive.metastore.use.SSL=true: the trust store holding the certificate (or its CA) the metastore presents, as Hive's client requires", pre))
				}
			}
		},
		keys: []*keyDef{
			hiveConfKey("hive.metastore.use.SSL", "metastore.use.SSL", &keyDef{
				typ: boolT{}, def: "false", example: "true", sw: true, gate: gateNonDefault,
				meaning: "TLS on connections to this backend (the metastore runs with the same setting and its keystore)",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).UseSSL }}),
			hiveConfKey("hive.metastore.truststore.path", "metastore.truststore.path", &keyDef{
				typ: strT{}, example: "/etc/hive/conf/truststore.jks",
				meaning: "trust store of the backend's certificate: a JKS or PKCS#12 store as keytool writes it, or PEM certificates; the chain the metastore presents must lead to one of its certificates and name the URI's host",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).TrustStorePath }}),
			hiveConfKey("hive.metastore.truststore.password", "metastore.truststore.password", &keyDef{
				typ: strT{}, example: "changeit", secret: true,
				meaning: "password of the trust store (checks a JKS store's digest, decrypts a PKCS#12 store)",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).TrustStorePassword }}),
			hiveConfKey("hive.metastore.truststore.type", "metastore.truststore.type", &keyDef{
				typ: enum("JKS", "PKCS12", "PEM"), example: "PKCS12",
				meaning: "format of the trust store; unset: told by the file's content",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).TrustStoreType }}),
			hiveConfKey("hive.metastore.trustmanagerfactory.algorithm", "metastore.trustmanagerfactory.algorithm", &keyDef{
				typ: strT{}, example: "PKIX",
				ignored: "hms-proxy verifies the chain (to a certificate of the trust store) and the host name itself, as Java's default PKIX trust manager does",
				meaning: "Java's trust manager algorithm",
				bind:    func(*Config, match) any { return setter(func(any) error { return nil }) }}),
		},
	}
}

func compactProtocolFeature() *feature {
	return &feature{
		id: "compact-protocol", title: "Thrift compact protocol to backends",
		loss: "speak TBinaryProtocol (Hive's default) to a backend configured for the compact protocol",
		keys: []*keyDef{
			hiveConfKey("hive.metastore.thrift.compact.protocol.enabled", "metastore.thrift.compact.protocol.enabled", &keyDef{
				typ: boolT{}, def: "false", example: "true", gate: gateNonDefault,
				meaning: "TCompactProtocol instead of TBinaryProtocol to this backend",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).CompactProtocol }}),
		},
	}
}
