package configs

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// refusalBase: two catalogs, the lock store they need, nothing else.
var refusalBase = map[string]string{
	"catalogs": "catalog1,catalog2", "routing.default-catalog": "catalog1",
	"catalog.catalog1.conf.hive.metastore.uris": "thrift://h1:9083",
	"catalog.catalog2.conf.hive.metastore.uris": "thrift://h2:9083",
	"additional-frontends":                      "fe", "additional-frontends.fe.port": "9084",
	"additional-frontends.fe.frontend-profile": "APACHE_4_1_0",
	lockModeKey: "IN_MEMORY",
}

// without returns a copy of m without the keys.
func without(m map[string]string, keys ...string) map[string]string {
	out := merge(m)
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

// parseAll returns the Config (or nil) and every error and warning.
func parseAll(t *testing.T, props map[string]string, override map[string]Status) (*Config, []*Error, []string) {
	t.Helper()
	cfg, err := parseWith(props, override)
	if err == nil {
		return cfg, nil, cfg.Warnings
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("parse returned %T %v", err, err)
	}
	return nil, ve.Errors, ve.Warnings
}

func errorOn(errs []*Error, key string) *Error {
	for _, e := range errs {
		if e.Key == key {
			return e
		}
	}
	return nil
}

func errText(errs []*Error) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString(e.Error() + "\n")
	}
	return b.String()
}

// TestKeysThatDidNothingRefuse is defect A8: every key that was parsed and
// then read by nothing, or that asked for protection the build lacks and
// only warned, now refuses start naming the key and the value; the neutral
// or default value is accepted.
func TestKeysThatDidNothingRefuse(t *testing.T) {
	rows := []struct {
		key, value string
		refused    bool
		also       map[string]string
	}{
		{key: "catalog.catalog1.conf.hive.metastore.client.socket.lifetime", value: "1h", refused: true},
		{key: "catalog.catalog1.conf.metastore.client.socket.lifetime", value: "600", refused: true},
		{key: "catalog.catalog1.conf.hive.metastore.client.socket.lifetime", value: "0s"},
		{key: "catalog.catalog1.conf.hive.metastore.client.socket.lifetime", value: "0"},
		{key: "catalog.catalog1.conf.hive.txn.timeout", value: "600s"}, // read by the synthetic lock shim
		{key: "catalog.catalog2.conf.metastore.txn.timeout", value: "10m"},
		{key: "catalog.catalog1.conf.hive.txn.timeout", value: "300"},
		{key: "ranger.enabled", value: "true", // built: enforced by the router's authorization link
			also: map[string]string{"ranger.policy.rest.url": "http://r:6080", "ranger.service-name": "s"}},
		{key: "ranger.enabled", value: "false"},
		// Ranger-format audit events are not built: asked for, they refuse start
		// (the proxy's own audit record carries the decision and the policy)
		{key: "ranger.audit.enabled", value: "true", refused: true,
			also: map[string]string{"ranger.enabled": "true", "ranger.policy.rest.url": "http://r:6080", "ranger.service-name": "s"}},
		{key: "ranger.audit.enabled", value: "false",
			also: map[string]string{"ranger.enabled": "true", "ranger.policy.rest.url": "http://r:6080", "ranger.service-name": "s"}},
		{key: "catalog.catalog2.ranger.audit.enabled", value: "true", refused: true,
			also: map[string]string{"catalog.catalog2.ranger.enabled": "true", "catalog.catalog2.ranger.policy.rest.url": "http://r:6080", "catalog.catalog2.ranger.service-name": "s"}},
		{key: "catalog.catalog2.ranger.enabled", value: "TRUE",
			also: map[string]string{"catalog.catalog2.ranger.policy.rest.url": "http://r:6080", "catalog.catalog2.ranger.service-name": "s"}},
		{key: "guard.transactional-ddl.mode", value: "REJECT_TRANSACTIONAL"},
		{key: "guard.transactional-ddl.mode", value: "rewrite_transactional_to_external"},
		{key: "guard.transactional-ddl.mode", value: "DISABLED"},
		{key: "rate-limit.enabled", value: "true"},
		{key: "rate-limit.enabled", value: "false"},
		{key: "rate-limit.principal.requests-per-second", value: "60"},
		{key: "rate-limit.source-cidr.hs2.cidrs", value: "10.10.0.0/16",
			also: map[string]string{"rate-limit.source-cidr.hs2.requests-per-second": "200"}},
		{key: "routing.circuit-breaker.enabled", value: "true"},
		{key: "routing.adaptive-timeout.enabled", value: "true"},
		{key: "routing.backend-state-polling.enabled", value: "true"},
		{key: "routing.hedged-read.enabled", value: "true"},
		{key: "routing.degraded-routing-policy", value: "SAFE_FANOUT_READS"},
		{key: "routing.degraded-routing-policy", value: "strict"},
		{key: "routing.database-list-cache.ttl-ms", value: "5000"},
		{key: "routing.database-metadata-cache.ttl-seconds", value: "30"},
		{key: "routing.database-list-cache.ttl-seconds", value: "0"},
		{key: "routing.refresh-privileges.synthetic-success", value: "true"},
		{key: "routing.refresh-privileges.mode", value: "SYNTHETIC_SUCCESS"},
		{key: "routing.iceberg-pointer-guard.enabled", value: "false"},
		{key: "federation.external-table-drop-purge.mode", value: "BEST_EFFORT"}, // built: warns that no catalog has prefixes
		{key: "rest-catalog.enabled", value: "true"},                             // built: accepted
		{key: "rest-catalog.port", value: "9183"},
		{key: "security.mode", value: "KERBEROS",
			also: map[string]string{"security.server-principal": "hive/_HOST@R", "security.keytab": "/k"}},
		{key: "security.impersonation-enabled", value: "true", also: kerberosOn},
		{key: "security.impersonation-enabled", value: "true"},         // a plain front door: set_ugi selects the user
		{key: "catalog.catalog2.impersonation-enabled", value: "true"}, // the same per catalog
		{key: "catalog.catalog2.conf.hive.metastore.sasl.enabled", value: "true",
			also: map[string]string{"catalog.catalog2.conf.hive.metastore.kerberos.principal": "hive/_HOST@R",
				"security.client-principal": "p@R", "security.client-keytab": "/k"}},
		{key: "catalog.catalog2.conf.hive.metastore.use.SSL", value: "true",
			also: map[string]string{"catalog.catalog2.conf.hive.metastore.truststore.path": "/etc/hive/truststore.jks"}},
		{key: "catalog.catalog2.conf.hive.metastore.thrift.compact.protocol.enabled", value: "true", refused: true},
		{key: "catalog.catalog1.conf.hms.proxy.external-table-drop-purge.allowed-prefixes", value: "hdfs://ns1/data/external/", // built: fileio
			also: map[string]string{"federation.external-table-drop-purge.mode": "BEST_EFFORT"}},
		{key: "catalog.catalog1.conf.hms.proxy.external-table-drop-purge.allowed-prefixes", value: "s3a://bucket/external/,s3://bucket/ext2/",
			also: map[string]string{"federation.external-table-drop-purge.mode": "BEST_EFFORT"}},
		{key: "catalog.catalog1.conf.hms.proxy.external-table-drop-purge.allowed-prefixes", value: "file:///data/external/,/tmp/ext/",
			also: map[string]string{"federation.external-table-drop-purge.mode": "BEST_EFFORT"}},
		{key: "federation.view-text-rewrite.mode", value: "disabled"},
		{key: "federation.view-text-rewrite.mode", value: "REWRITE"},
	}
	for _, r := range rows {
		t.Run(r.key+"="+r.value, func(t *testing.T) {
			_, errs, _ := parseAll(t, merge(refusalBase, r.also, map[string]string{r.key: r.value}), nil)
			e := errorOn(errs, r.key)
			if !r.refused {
				if e != nil {
					t.Fatalf("refused: %v", e)
				}
				if errs != nil {
					t.Fatalf("unexpected errors:\n%s", errText(errs))
				}
				return
			}
			if e == nil || !e.NotBuilt || e.Value != r.value || !strings.Contains(e.Error(), r.key+"="+r.value+": ") ||
				!strings.Contains(e.Msg, "not built yet") {
				t.Fatalf("want a not-built-yet refusal of %s=%s; errors:\n%s", r.key, r.value, errText(errs))
			}
		})
	}
}

// TestHiveDurationsAsHiveReadsThem: getTimeVar's syntax; what it refuses is
// refused.
func TestHiveDurationsAsHiveReadsThem(t *testing.T) {
	const key = "catalog.catalog1.conf.hive.metastore.client.socket.timeout"
	good := map[string]time.Duration{"600sec": 600 * time.Second, "5min": 5 * time.Minute, "42": 42 * time.Second,
		"1500MS": 1500 * time.Millisecond, "2 h": 2 * time.Hour, "1d": 24 * time.Hour}
	for v, want := range good {
		cfg, errs, _ := parseAll(t, merge(refusalBase, map[string]string{key: v}), nil)
		if errs != nil || cfg.Catalog("catalog1").SocketTimeout != want {
			t.Errorf("%s=%s: %v %s", key, v, want, errText(errs))
		}
	}
	for _, v := range []string{"5x", "1.5s", "ten", "", "-5s", "5 5s"} {
		_, errs, _ := parseAll(t, merge(refusalBase, map[string]string{key: v}), nil)
		if e := errorOn(errs, key); e == nil || e.NotBuilt || !strings.Contains(e.Msg, "Hive") && !strings.Contains(e.Msg, "negative") {
			t.Errorf("%s=%q accepted or refused for the wrong reason:\n%s", key, v, errText(errs))
		}
	}
}

// TestRegistryWalkOfRefusedFeatures: for every key of a feature that is not
// built, its example value either refuses start naming the key and value
// (a value asking for the feature), is accepted (a neutral value), or is
// accepted with a "has no effect" warning (a tuning value); an
// accepted-and-ignored key warns why it is not needed.
func TestRegistryWalkOfRefusedFeatures(t *testing.T) {
	for _, k := range reg.keys {
		if k.status() == StatusImplemented {
			continue
		}
		t.Run(k.pattern, func(t *testing.T) {
			fx := fixtures[k.pattern]
			name := keyInstance(k)
			_, errs, warns := parseAll(t, merge(refusalBase, fx.before, fx.after, map[string]string{name: k.example}), nil)
			e := errorOn(errs, name)
			neutral := false
			for _, n := range k.neutral {
				neutral = neutral || n == k.example
			}
			if k.typ == (boolT{}) && k.example == "false" {
				neutral = true
			}
			switch {
			case k.ignored != "":
				if e != nil || !hasLine(warns, name, "accepted and ignored") {
					t.Errorf("want an accepted-and-ignored warning for %s=%s; errors:\n%swarnings: %q", name, k.example, errText(errs), warns)
				}
			case k.gate != gateNone && !neutral:
				if e == nil || !e.NotBuilt || e.Value != k.example {
					t.Errorf("want %s=%s refused as not built yet; errors:\n%s", name, k.example, errText(errs))
				}
			case k.gate != gateNone:
				if e != nil {
					t.Errorf("neutral %s=%s refused: %v", name, k.example, e)
				}
			default:
				if e != nil || !hasLine(warns, name+"=", "has no effect") {
					t.Errorf("want %s=%s accepted with a has-no-effect warning; errors:\n%swarnings: %q", name, k.example, errText(errs), warns)
				}
			}
		})
	}
}

// TestFeatureFlip: a feature's rules as they apply once it is marked
// implemented (one line in features.go).
func TestFeatureFlip(t *testing.T) {
	built := map[string]Status{"synthetic-locks": StatusImplemented}
	// No default store mode: with non-default catalogs it must be chosen.
	_, errs, _ := parseAll(t, without(refusalBase, lockModeKey), built)
	if e := errorOn(errs, lockModeKey); e == nil || !e.Missing || !strings.Contains(e.Msg, "IN_MEMORY") || !strings.Contains(e.Msg, "ZOOKEEPER") {
		t.Errorf("no mode with two catalogs: %s", errText(errs))
	}
	one := map[string]string{"catalogs": "only", "catalog.only.conf.hive.metastore.uris": "thrift://h:1"}
	if _, errs, _ := parseAll(t, one, built); errs != nil {
		t.Errorf("one catalog needs no mode: %s", errText(errs))
	}
	cfg, errs, warns := parseAll(t, merge(refusalBase, map[string]string{lockModeKey: "in_memory"}), built)
	if errs != nil || cfg.SyntheticLock.StoreMode != LockStoreInMemory || !hasLine(warns, lockModeKey+"=IN_MEMORY", "lost when this proxy restarts") {
		t.Errorf("IN_MEMORY: %s %q", errText(errs), warns)
	}
	cfg, errs, _ = parseAll(t, merge(without(refusalBase, lockModeKey), map[string]string{
		zkPrefix + "connect-string": "zk1:2181,zk2:2181/hms", zkPrefix + "max-retries": "5",
		"catalog.catalog1.conf.hive.txn.timeout": "10m"}), built)
	if errs != nil {
		t.Fatal(errText(errs))
	}
	zk := cfg.SyntheticLock.ZooKeeper
	if cfg.SyntheticLock.StoreMode != LockStoreZooKeeper || zk.ConnectString != "zk1:2181,zk2:2181/hms" || zk.MaxRetries != 5 ||
		zk.ZNode != DefaultZooKeeperZNode || zk.SessionTimeout != time.Minute || cfg.DefaultCatalog().TxnTimeout != 10*time.Minute {
		t.Errorf("ZooKeeper store %+v", cfg.SyntheticLock)
	}

	// Rate limits, all six scopes, typed.
	cfg, errs, _ = parseAll(t, merge(refusalBase, map[string]string{
		"rate-limit.principal.requests-per-second":                   "60",
		"rate-limit.principal.burst":                                 "120",
		"rate-limit.source.requests-per-second":                      "30",
		"rate-limit.source-cidr.hs2-pool.cidrs":                      "10.10.0.0/16, 10.20.0.7",
		"rate-limit.source-cidr.hs2-pool.requests-per-second":        "200",
		"rate-limit.method-family.Metadata_Read.requests-per-second": "600",
		"rate-limit.catalog.catalog2.requests-per-second":            "120",
		"rate-limit.rpc-class.ddl.requests-per-second":               "15",
		"rate-limit.rpc-class.ddl.burst":                             "20",
	}), map[string]Status{"rate-limit": StatusImplemented})
	if errs != nil {
		t.Fatal(errText(errs))
	}
	rl := cfg.RateLimit
	cidr := rl.SourceCIDR["hs2-pool"]
	if !rl.Enabled || rl.Principal != (RateLimitPolicy{60, 120}) || rl.Source != (RateLimitPolicy{30, 30}) ||
		cidr == nil || cidr.RateLimitPolicy != (RateLimitPolicy{200, 200}) ||
		len(cidr.CIDRs) != 2 || cidr.CIDRs[1] != netip.MustParsePrefix("10.20.0.7/32") ||
		*rl.MethodFamily["metadata_read"] != (RateLimitPolicy{600, 600}) || *rl.Catalog["catalog2"] != (RateLimitPolicy{120, 120}) ||
		*rl.RPCClass["ddl"] != (RateLimitPolicy{15, 20}) || rl.Catalog["catalog1"] != nil {
		t.Errorf("rate limits %+v cidr %+v", rl, cidr)
	}
}

// TestSpecRules: the specification's validation rules beyond the classic
// ones (TestValidationRules), for features whether built or not.
func TestSpecRules(t *testing.T) {
	rows := []struct {
		name    string
		set     map[string]string
		errKey  string   // an error on this key …
		errFrag []string // … containing these
		built   []string // features to treat as implemented
		warn    []string // or, with no error expected, a warning with these
	}{
		{name: "REST ALLOWLIST without prefixes", set: map[string]string{"rest-catalog.purge.mode": "ALLOWLIST"},
			errKey: "rest-catalog.purge.mode", errFrag: []string{"ALLOWLIST needs a non-empty rest-catalog.purge.allowed-prefixes"}},
		{name: "REST prefixes without ALLOWLIST", set: map[string]string{"rest-catalog.purge.allowed-prefixes": "hdfs://ns/warehouse/"},
			errKey: "rest-catalog.purge.allowed-prefixes", errFrag: []string{"only valid with rest-catalog.purge.mode=ALLOWLIST", "ALLOW"}},
		{name: "REST prefixes with REFUSE", set: map[string]string{"rest-catalog.purge.mode": "refuse", "rest-catalog.purge.allowed-prefixes": "/data/"},
			errKey: "rest-catalog.purge.allowed-prefixes", errFrag: []string{"the mode is REFUSE"}},
		{name: "REST prefix with ..", set: map[string]string{"rest-catalog.purge.mode": "ALLOWLIST", "rest-catalog.purge.allowed-prefixes": "hdfs://ns/data/../etc/"},
			errKey: "rest-catalog.purge.allowed-prefixes", errFrag: []string{`".." segment`}},
		{name: "REST SPNEGO needs KERBEROS", set: map[string]string{"rest-catalog.kerberos.principal": "HTTP/_HOST@R", "rest-catalog.kerberos.keytab": "/k"},
			errKey: "rest-catalog.kerberos.principal", errFrag: []string{"requires security.mode=KERBEROS"}},
		{name: "REST SPNEGO principal needs keytab", set: map[string]string{"rest-catalog.kerberos.principal": "HTTP/_HOST@R"},
			errKey: "rest-catalog.kerberos.principal", errFrag: []string{"needs rest-catalog.kerberos.keytab"}},
		{name: "REST listener clashes with the primary", built: []string{"rest-catalog"},
			set:    map[string]string{"rest-catalog.enabled": "true", "rest-catalog.port": "9083", "rest-catalog.bind-host": "127.0.0.1"},
			errKey: "rest-catalog.port", errFrag: []string{"Iceberg REST listener", "primary listener", "wildcard"}},
		{name: "REST default port clashes with a frontend", built: []string{"rest-catalog"},
			set:    map[string]string{"rest-catalog.enabled": "true", "additional-frontends.fe.port": "9183"},
			errKey: "rest-catalog.port", errFrag: []string{"not set; its default 9183", `additional frontend "fe"`}},
		{name: "REST bearer tokens need an audience", set: map[string]string{"rest-catalog.oauth2.issuer": "https://idp/realms/r"},
			errKey: "rest-catalog.oauth2.audience", errFrag: []string{"required with rest-catalog.oauth2.issuer"}},
		{name: "REST issuer is a URL", set: map[string]string{"rest-catalog.oauth2.issuer": "idp", "rest-catalog.oauth2.audience": "a"},
			errKey: "rest-catalog.oauth2.issuer", errFrag: []string{"not an http(s) URL"}},
		{name: "REST OAuth2 key without the issuer", set: map[string]string{"rest-catalog.oauth2.user-claim": "preferred_username"},
			errKey: "rest-catalog.oauth2.user-claim", errFrag: []string{"only valid with rest-catalog.oauth2.issuer"}},
		{name: "REST bearer tokens without TLS", built: []string{"rest-catalog"},
			set:    map[string]string{"rest-catalog.port": "9190", "rest-catalog.oauth2.issuer": "https://idp/realms/r", "rest-catalog.oauth2.audience": "a"},
			errKey: "rest-catalog.oauth2.issuer", errFrag: []string{"travel in clear", "rest-catalog.tls.cert-file"}},
		{name: "REST plaintext tokens off loopback", built: []string{"rest-catalog"},
			set: map[string]string{"rest-catalog.port": "9190", "rest-catalog.bind-host": "0.0.0.0", "rest-catalog.oauth2.issuer": "https://idp/realms/r",
				"rest-catalog.oauth2.audience": "a", "rest-catalog.oauth2.allow-plaintext-on-loopback": "true"},
			errKey: "rest-catalog.oauth2.allow-plaintext-on-loopback", errFrag: []string{"only on a loopback address", "0.0.0.0"}},
		{name: "REST plaintext tokens on loopback", built: []string{"rest-catalog"},
			set: map[string]string{"rest-catalog.port": "9190", "rest-catalog.bind-host": "127.0.0.1", "rest-catalog.oauth2.issuer": "https://idp/realms/r",
				"rest-catalog.oauth2.audience": "a", "rest-catalog.oauth2.allow-plaintext-on-loopback": "true"}},
		{name: "REST TLS certificate without its key", set: map[string]string{"rest-catalog.tls.cert-file": "/c.pem"},
			errKey: "rest-catalog.tls.cert-file", errFrag: []string{"needs rest-catalog.tls.key-file"}},
		{name: "REST anonymous on a Kerberized proxy", built: []string{"rest-catalog", "kerberos"},
			set:    map[string]string{"rest-catalog.port": "9190", "security.mode": "KERBEROS", "security.server-principal": "hive/_HOST@R", "security.keytab": "/k"},
			errKey: "rest-catalog.enabled", errFrag: []string{"security.mode=KERBEROS", "anonymous", "rest-catalog.allow-anonymous-on-secured-proxy=true"}},
		{name: "REST anonymous on a Kerberized proxy, accepted", built: []string{"rest-catalog", "kerberos"},
			set: map[string]string{"rest-catalog.port": "9190", "security.mode": "KERBEROS", "security.server-principal": "hive/_HOST@R", "security.keytab": "/k",
				"rest-catalog.allow-anonymous-on-secured-proxy": "true"},
			warn: []string{"accepts anonymous requests", ":9190"}},
		{name: "REST anonymous accepted although it authenticates", built: []string{"rest-catalog", "kerberos"},
			set: map[string]string{"rest-catalog.port": "9190", "security.mode": "KERBEROS", "security.server-principal": "hive/_HOST@R", "security.keytab": "/k",
				"rest-catalog.kerberos.principal": "HTTP/_HOST@R", "rest-catalog.kerberos.keytab": "/s", "rest-catalog.allow-anonymous-on-secured-proxy": "true"},
			errKey: "rest-catalog.allow-anonymous-on-secured-proxy", errFrag: []string{"nobody is anonymous"}},
		{name: "REST anonymous listener warns", built: []string{"rest-catalog"}, set: map[string]string{"rest-catalog.port": "9190"},
			warn: []string{"accepts anonymous requests", "rest-catalog.oauth2.issuer"}},
		{name: "rate-limit burst without a rate", set: map[string]string{"rate-limit.source.burst": "10"},
			errKey: "rate-limit.source.burst", errFrag: []string{"needs rate-limit.source.requests-per-second"}},
		{name: "rate-limit CIDR rule without a rate", set: map[string]string{"rate-limit.source-cidr.pool.cidrs": "10.0.0.0/8"},
			errKey: "rate-limit.source-cidr.pool.requests-per-second", errFrag: []string{"required", "no rate"}},
		{name: "rate-limit CIDR rule without addresses", set: map[string]string{"rate-limit.source-cidr.pool.requests-per-second": "5"},
			errKey: "rate-limit.source-cidr.pool.cidrs", errFrag: []string{"required", "no addresses"}},
		{name: "rate-limit bad CIDR", set: map[string]string{"rate-limit.source-cidr.pool.cidrs": "10.0.0.1/8", "rate-limit.source-cidr.pool.requests-per-second": "5"},
			errKey: "rate-limit.source-cidr.pool.cidrs", errFrag: []string{"host bits set", "10.0.0.0/8"}},
		{name: "rate-limit zero rate", set: map[string]string{"rate-limit.principal.requests-per-second": "0"},
			errKey: "rate-limit.principal.requests-per-second", errFrag: []string{"at least 1"}},
		{name: "guard client address not an address", set: map[string]string{"guard.transactional-ddl.client-addresses": "10.10.0.15,hs2-host"},
			errKey: "guard.transactional-ddl.client-addresses", errFrag: []string{`"hs2-host" is not an IP address or CIDR block`}},
		{name: "refresh-privileges keys disagree", set: map[string]string{"routing.refresh-privileges.synthetic-success": "true", "routing.refresh-privileges.mode": "PASSTHROUGH"},
			errKey: "routing.refresh-privileges.synthetic-success", errFrag: []string{"contradicts routing.refresh-privileges.mode=PASSTHROUGH"}},
		{name: "cache ttl-ms and ttl-seconds disagree", set: map[string]string{"routing.database-list-cache.ttl-ms": "5000", "routing.database-list-cache.ttl-seconds": "6"},
			errKey: "routing.database-list-cache.ttl-seconds", errFrag: []string{"contradicts routing.database-list-cache.ttl-ms=5000"}},
		{name: "adaptive timeout min above max", set: map[string]string{"routing.adaptive-timeout.min-ms": "9000", "routing.adaptive-timeout.max-ms": "8000"},
			errKey: "routing.adaptive-timeout.min-ms", errFrag: []string{"must not exceed routing.adaptive-timeout.max-ms (8000)"}},
		{name: "adaptive timeout alpha above 1", set: map[string]string{"routing.adaptive-timeout.alpha": "1.5"},
			errKey: "routing.adaptive-timeout.alpha", errFrag: []string{"at most 1"}},
		{name: "Kerberos needs a principal", set: map[string]string{"security.mode": "KERBEROS", "security.keytab": "/k"},
			errKey: "security.server-principal", errFrag: []string{"required when security.mode=KERBEROS"}},
		{name: "backend SASL needs the backend principal",
			set:    map[string]string{"catalog.catalog1.conf.hive.metastore.sasl.enabled": "true", "security.client-principal": "p@R", "security.client-keytab": "/k"},
			errKey: "catalog.catalog1.conf.hive.metastore.kerberos.principal", errFrag: []string{"required when"}},
		{name: "backend SASL needs client credentials",
			set:    map[string]string{"catalog.catalog1.conf.hive.metastore.sasl.enabled": "true", "catalog.catalog1.conf.hive.metastore.kerberos.principal": "hive/_HOST@R"},
			errKey: "security.client-principal", errFrag: []string{"required"}},
		{name: "backend QOP unknown", set: map[string]string{"catalog.catalog1.conf.hadoop.rpc.protection": "auth-conf"},
			errKey: "catalog.catalog1.conf.hadoop.rpc.protection", errFrag: []string{`unknown item "auth-conf"`, "authentication, integrity, privacy"}},
		{name: "front-door QOP list", set: map[string]string{"security.front-door-conf.hadoop.rpc.protection": "privacy, Integrity"},
			warn: []string{"security.front-door-conf.hadoop.rpc.protection=\"privacy, Integrity\"", "has no effect", "security.mode=NONE"}},
		{name: "auth_to_local garbage", set: map[string]string{"security.front-door-conf.hadoop.security.auth_to_local": "RULE:bogus"},
			errKey: "security.front-door-conf.hadoop.security.auth_to_local", errFrag: []string{`rule "RULE:bogus"`}},
		{name: "DBTokenStore refused", set: map[string]string{"security.front-door-conf.hive.cluster.delegation.token.store.class": "org.apache.hadoop.hive.metastore.security.DBTokenStore"},
			errKey: "security.front-door-conf.hive.cluster.delegation.token.store.class", errFrag: []string{"metastore's database"}},
		{name: "ZooKeeper token store needs servers", set: map[string]string{"security.front-door-conf.hive.cluster.delegation.token.store.class": "org.apache.hadoop.hive.thrift.ZooKeeperTokenStore"},
			errKey: "security.front-door-conf.hive.cluster.delegation.token.store.zookeeper.connectString", errFrag: []string{"required with the ZooKeeper token store"}},
		{name: "token lifetime is milliseconds", set: map[string]string{"security.front-door-conf.hive.cluster.delegation.token.max-lifetime": "7d"},
			errKey: "security.front-door-conf.hive.cluster.delegation.token.max-lifetime", errFrag: []string{"not an integer"}},
		{name: "token store ACL", set: map[string]string{"security.front-door-conf.hive.cluster.delegation.token.store.zookeeper.acl": "sasl:hive:rwx"},
			errKey: "security.front-door-conf.hive.cluster.delegation.token.store.zookeeper.acl", errFrag: []string{"cdrwa"}},
		{name: "Ranger needs its URL and service", set: map[string]string{"ranger.enabled": "true"},
			errKey: "ranger.policy.rest.url", errFrag: []string{"required while ranger.enabled=true"}},
		{name: "Ranger URL under both names", set: map[string]string{"ranger.policy.rest.url": "http://a:6080", "ranger.policy-rest-url": "http://b:6080"},
			errKey: "ranger.policy-rest-url", errFrag: []string{"contradicts ranger.policy.rest.url=http://a:6080"}},
		{name: "purge prefixes must be absolute", set: map[string]string{"catalog.catalog1.conf.hms.proxy.external-table-drop-purge.allowed-prefixes": "data/ext"},
			errKey: "catalog.catalog1.conf.hms.proxy.external-table-drop-purge.allowed-prefixes", errFrag: []string{"not absolute"}},
		{name: "purge on without any prefix warns", built: []string{"external-table-drop-purge"},
			set:  map[string]string{"federation.external-table-drop-purge.mode": "BEST_EFFORT"},
			warn: []string{"federation.external-table-drop-purge.mode=BEST_EFFORT", "nothing is ever purged"}},
		{name: "purge prefixes on a Hive 4 catalog warn", built: []string{"external-table-drop-purge"},
			set: map[string]string{"federation.external-table-drop-purge.mode": "BEST_EFFORT", "catalog.catalog2.runtime-profile": "APACHE_4_1_0",
				"catalog.catalog2.conf.hms.proxy.external-table-drop-purge.allowed-prefixes": "file:///data/ns2/ext/"},
			warn: []string{"catalog.catalog2.conf." + purgePrefixes, "APACHE_3_1_3 backends only"}},
		{name: "tuning of a feature that is off", set: map[string]string{"routing.circuit-breaker.failure-threshold": "5"},
			warn: []string{"routing.circuit-breaker.failure-threshold=5", "has no effect", "routing.circuit-breaker.enabled=false"}},
		{name: "tuning of a guard that is switched off", set: map[string]string{"routing.iceberg-pointer-guard.enabled": "false", "routing.iceberg-pointer-guard.table-cache-ttl-ms": "0"},
			warn: []string{"routing.iceberg-pointer-guard.table-cache-ttl-ms=0", "has no effect", "routing.iceberg-pointer-guard.enabled=false"}},
		{name: "client principal without backend SASL", set: map[string]string{"security.client-principal": "p@R"},
			warn: []string{"security.client-principal=p@R", "has no effect", "no catalog sets conf.hive.metastore.sasl.enabled=true"}},
		{name: "catalog conf the client does not read", set: map[string]string{"catalog.catalog1.conf.hive.metastore.execute.setugi": "true"},
			warn: []string{"catalog.catalog1.conf.hive.metastore.execute.setugi=true", "accepted and ignored", "does not read this Hive setting"}},
		{name: "background refresh with no cache", built: []string{"database-cache-refresh"},
			set:  map[string]string{"routing.database-cache.background-refresh.enabled": "true"},
			warn: []string{"background-refresh.enabled=true", "both database caches are off"}},
		{name: "min worker threads accepted and ignored", set: map[string]string{"server.min-worker-threads": "10"},
			warn: []string{"server.min-worker-threads=10", "accepted and ignored", "no worker pool to pre-start"}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			over := map[string]Status{}
			for _, id := range r.built {
				over[id] = StatusImplemented
			}
			_, errs, warns := parseAll(t, merge(refusalBase, r.set), over)
			if r.errKey == "" {
				for _, e := range errs {
					if !e.NotBuilt {
						t.Fatalf("unexpected error: %v", e)
					}
				}
				if !hasLine(warns, r.warn...) {
					t.Fatalf("no warning has %q: %q", r.warn, warns)
				}
				return
			}
			for _, e := range errs {
				if e.Key != r.errKey || e.NotBuilt {
					continue
				}
				ok := true
				for _, f := range r.errFrag {
					ok = ok && strings.Contains(e.Error(), f)
				}
				if ok {
					return
				}
			}
			t.Fatalf("no error on %s with %q; errors:\n%s", r.errKey, r.errFrag, errText(errs))
		})
	}
}
