package configs

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestRegistryInvariants(t *testing.T) {
	for _, p := range checkRegistry(reg) {
		t.Error(p)
	}
	seen := map[string]int{}
	for i, k := range reg.keys {
		seen[k.pattern] = i
		// Defaults are written in canonical form, so "is it the default?"
		// is a text comparison.
		if k.def != "" {
			if got := k.typ.format(mustParse(k.typ, k.def)); got != k.def {
				t.Errorf("%s: default %q is not canonical (%q)", k.pattern, k.def, got)
			}
		}
		// Every pattern (and alias) classifies back to its own entry.
		name := instantiate(k.segs, sampleMatch(k.segs))
		if c, ok := reg.lookup(name); !ok || c.key != k {
			t.Errorf("%s: its instance %s classifies elsewhere (%v)", k.pattern, name, c.key)
		}
		for _, a := range k.aliases {
			an := instantiate(a.segs, sampleMatch(a.segs))
			if c, ok := reg.lookup(an); !ok || c.key != k {
				t.Errorf("%s: alias instance %s classifies elsewhere", k.pattern, an)
			}
		}
	}
	// The structural keys come before the keys that need them.
	for _, k := range reg.keys {
		for _, s := range k.segs {
			switch s.v {
			case "catalog":
				if seen[k.pattern] < seen["catalogs"] {
					t.Errorf("%s is parsed before catalogs", k.pattern)
				}
			case "frontend":
				if seen[k.pattern] < seen["additional-frontends"] {
					t.Errorf("%s is parsed before additional-frontends", k.pattern)
				}
			}
		}
	}
	if seen["routing.catalog-db-separator"] > seen["catalogs"] {
		t.Error("the separator must be parsed before catalogs (names are checked against it)")
	}
}

// sampleMatch gives each wildcard of a pattern a value.
func sampleMatch(segs []segment) match {
	m := match{vars: map[string]string{}}
	for _, s := range segs {
		switch {
		case s.v != "":
			m.vars[s.v] = instanceVars[s.v]
		case s.rest:
			m.rest = "some.setting"
		}
	}
	return m
}

var instanceVars = map[string]string{"catalog": "catalog1", "frontend": "fe", "family": "metadata_read",
	"class": "ddl", "rule": "pool", "service": "hive"}

// restValues: the open suffix each open key is exercised with.
var restValues = map[string]string{
	"catalog.<catalog>.expose-table-patterns.*": "sales",
	"security.service-principals.*":             "hs2",
}

// fixture: what a key needs around it to make a valid file. before goes into
// the baseline and the changed file, after only into the changed one; value
// replaces the registry's example where the example equals what the baseline
// already has.
type fixture struct {
	value         string
	before, after map[string]string
}

var kerberosOn = map[string]string{"security.mode": "KERBEROS", "security.server-principal": "hive/_HOST@R", "security.keytab": "/k"}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

var fixtures = map[string]fixture{
	"additional-frontends": {value: "fe,fe2", after: map[string]string{
		"additional-frontends.fe2.port": "9085", "additional-frontends.fe2.frontend-profile": "APACHE_3_1_3"}},
	"additional-frontends.<frontend>.port":               {value: "9086"},
	"additional-frontends.<frontend>.frontend-profile":   {value: "APACHE_3_1_3"},
	"additional-frontends.<frontend>.max-worker-threads": {after: map[string]string{"additional-frontends.fe.min-worker-threads": "7"}},
	"catalogs": {value: "catalog1,catalog2,catalog3", after: map[string]string{
		"catalog.catalog3.conf.hive.metastore.uris": "thrift://h3:9083"}},
	"catalog.<catalog>.write-db-whitelist": {before: map[string]string{
		"catalog.catalog1.access-mode": "READ_WRITE_DB_WHITELIST", "catalog.catalog1.write-db-whitelist": "other"}},
	"security.mode":      {after: map[string]string{"security.server-principal": "hive/_HOST@R", "security.keytab": "/k"}},
	"server.tls.enabled": {after: map[string]string{"server.tls.certificate-file": "/c.pem", "server.tls.key-file": "/k.pem"}},
	"additional-frontends.<frontend>.tls.enabled": {after: map[string]string{
		"additional-frontends.fe.tls.certificate-file": "/c.pem", "additional-frontends.fe.tls.key-file": "/k.pem"}},
	"catalog.<catalog>.conf.hive.metastore.use.SSL": {after: map[string]string{
		"catalog.catalog1.conf.hive.metastore.truststore.path": "/ts.jks"}},
	"catalog.<catalog>.conf.hive.metastore.sasl.enabled": {after: map[string]string{
		"catalog.catalog1.conf.hive.metastore.kerberos.principal": "hive/_HOST@R",
		"security.client-principal":                               "p@R", "security.client-keytab": "/ck"}},
	"security.impersonation-enabled":          {after: kerberosOn},
	"catalog.<catalog>.impersonation-enabled": {after: kerberosOn},
	"security.front-door-conf.hive.cluster.delegation.token.store.class": {after: merge(kerberosOn, map[string]string{
		"security.front-door-conf.hive.cluster.delegation.token.store.zookeeper.connectString": "zk:2181"})},
	"security.front-door-conf.hadoop.proxyuser.<service>.hosts":  {after: kerberosOn},
	"security.front-door-conf.hadoop.proxyuser.<service>.groups": {after: kerberosOn},
	"security.front-door-conf.hadoop.proxyuser.<service>.users":  {after: kerberosOn},
	"synthetic-read-lock.store.mode": {value: "ZOOKEEPER", after: map[string]string{
		"synthetic-read-lock.store.zookeeper.connect-string": "zk:2181"}},
	"rate-limit.principal.burst": {before: map[string]string{"rate-limit.principal.requests-per-second": "10"}},
	"rate-limit.source.burst":    {before: map[string]string{"rate-limit.source.requests-per-second": "10"}},
	"rate-limit.source-cidr.<rule>.cidrs": {before: map[string]string{
		"rate-limit.source-cidr.pool.requests-per-second": "10", "rate-limit.source-cidr.pool.cidrs": "10.0.0.0/8"}},
	"rate-limit.source-cidr.<rule>.requests-per-second": {before: map[string]string{
		"rate-limit.source-cidr.pool.cidrs": "10.0.0.0/8", "rate-limit.source-cidr.pool.requests-per-second": "10"}},
	"rate-limit.source-cidr.<rule>.burst": {before: map[string]string{
		"rate-limit.source-cidr.pool.cidrs": "10.0.0.0/8", "rate-limit.source-cidr.pool.requests-per-second": "10"}},
	"rate-limit.method-family.<family>.burst": {before: map[string]string{"rate-limit.method-family.metadata_read.requests-per-second": "10"}},
	"rate-limit.catalog.<catalog>.burst":      {before: map[string]string{"rate-limit.catalog.catalog1.requests-per-second": "10"}},
	"rate-limit.rpc-class.<class>.burst":      {before: map[string]string{"rate-limit.rpc-class.ddl.requests-per-second": "10"}},
	"rest-catalog.port":                       {value: "9190"},
	"rest-catalog.kerberos.principal": {after: merge(kerberosOn, map[string]string{
		"rest-catalog.kerberos.keytab": "/spnego.keytab"})},
	"rest-catalog.kerberos.keytab": {after: merge(kerberosOn, map[string]string{
		"rest-catalog.kerberos.principal": "HTTP/_HOST@R"})},
	"rest-catalog.purge.allowed-prefixes": {after: map[string]string{"rest-catalog.purge.mode": "ALLOWLIST"}},
	"rest-catalog.oauth2.issuer":          {after: map[string]string{"rest-catalog.oauth2.audience": "hms-proxy"}},
	"rest-catalog.tls.cert-file":          {after: map[string]string{"rest-catalog.tls.key-file": "/k.pem"}},
	"rest-catalog.tls.key-file":           {after: map[string]string{"rest-catalog.tls.cert-file": "/c.pem"}},
	"ranger.enabled":                      {after: map[string]string{"ranger.policy.rest.url": "http://r:6080", "ranger.service-name": "s"}},
	"catalog.<catalog>.ranger.enabled": {after: map[string]string{
		"catalog.catalog1.ranger.policy.rest.url": "http://r:6080", "catalog.catalog1.ranger.service-name": "s"}},
	// Ranger's audit asks for something only while Ranger is on
	"ranger.audit.enabled": {before: map[string]string{
		"ranger.enabled": "true", "ranger.policy.rest.url": "http://r:6080", "ranger.service-name": "s"}},
	"catalog.<catalog>.ranger.audit.enabled": {before: map[string]string{
		"catalog.catalog1.ranger.enabled": "true", "catalog.catalog1.ranger.policy.rest.url": "http://r:6080", "catalog.catalog1.ranger.service-name": "s"}},
}

func init() {
	// Every other bearer-token key needs bearer tokens on.
	for _, k := range reg.keys {
		if strings.HasPrefix(k.pattern, "rest-catalog.oauth2.") && k.pattern != "rest-catalog.oauth2.issuer" {
			fixtures[k.pattern] = fixture{before: map[string]string{"rest-catalog.oauth2.issuer": "https://idp/realms/r", "rest-catalog.oauth2.audience": "a"}}
		}
	}
	// Every key of a ZooKeeper lock store needs the store selected and a
	// server named.
	for _, k := range reg.keys {
		if strings.HasPrefix(k.pattern, zkPrefix) {
			fixtures[k.pattern] = fixture{before: map[string]string{lockModeKey: "ZOOKEEPER", zkPrefix + "connect-string": "zk0:2181"}}
		}
	}
}

// bindingBase is a valid file for every feature status, also with every
// feature built (the lock shim then needs its mode).
var bindingBase = map[string]string{
	"catalogs": "catalog1,catalog2", "routing.default-catalog": "catalog1",
	"catalog.catalog1.conf.hive.metastore.uris": "thrift://h1:9083",
	"catalog.catalog2.conf.hive.metastore.uris": "thrift://h2:9083",
	"additional-frontends":                      "fe", "additional-frontends.fe.port": "9084",
	"additional-frontends.fe.frontend-profile": "APACHE_4_1_0",
	lockModeKey: "IN_MEMORY",
}

// allBuilt is every feature marked implemented, as it will be once built.
func allBuilt() map[string]Status {
	out := map[string]Status{}
	for _, f := range reg.features {
		out[f.id] = StatusImplemented
	}
	return out
}

// keyInstance names the concrete key a test sets for a registry entry.
func keyInstance(k *keyDef) string {
	m := sampleMatch(k.segs)
	if r, ok := restValues[k.pattern]; ok {
		m.rest = r
	}
	return instantiate(k.segs, m)
}

// comparable strips what every parse has of its own.
func comparable(c *Config) Config {
	cp := *c
	cp.Warnings, cp.settings, cp.features, cp.status = nil, nil, nil, nil
	return cp
}

// TestEveryKeyReachesItsTypedField walks the registry: for every key (of
// every status, with every feature marked built) setting it to its example
// value must change the typed Config. A key that is parsed and then read by
// nothing fails here.
func TestEveryKeyReachesItsTypedField(t *testing.T) {
	for _, k := range reg.keys {
		t.Run(k.pattern, func(t *testing.T) {
			fx := fixtures[k.pattern]
			name := keyInstance(k)
			before := merge(bindingBase, fx.before)
			value := k.example
			if fx.value != "" {
				value = fx.value
			}
			after := merge(before, fx.after, map[string]string{name: value})
			base, err := parseWith(before, allBuilt())
			if err != nil {
				t.Fatalf("baseline does not parse: %v", err)
			}
			changed, err := parseWith(after, allBuilt())
			if err != nil {
				t.Fatalf("%s=%s does not parse: %v", name, value, err)
			}
			if reflect.DeepEqual(comparable(base), comparable(changed)) {
				t.Fatalf("%s=%s changes nothing in the typed Config", name, value)
			}
			s := changed.settingOf(name)
			if s == nil || !s.fromFile || s.bad {
				t.Fatalf("no effective setting recorded for %s", name)
			}
			// A pointer binding must hold exactly the parsed value.
			if target := k.bind(changed, s.m); reflect.TypeOf(target).Kind() == reflect.Pointer {
				want := reflect.ValueOf(mustParse(k.typeOf(aliasIndex(k, s.name)), value))
				got := reflect.ValueOf(target).Elem()
				if want.Type() != got.Type() {
					want = want.Convert(got.Type())
				}
				if !reflect.DeepEqual(got.Interface(), want.Interface()) {
					t.Fatalf("%s=%s: its field holds %v", name, value, got.Interface())
				}
			}
		})
	}
}

func aliasIndex(k *keyDef, name string) int {
	for i, a := range k.aliases {
		if _, ok := matchSegments(a.segs, name); ok {
			return i
		}
	}
	return -1
}

func (c *Config) settingOf(name string) *setting {
	for _, s := range c.settings {
		if s.name == name || s.primary == name {
			return s
		}
	}
	return nil
}

// TestKeyReferenceIsCurrent fails when the key reference of
// docs/configuration.md is not what the registry generates; regenerate it
// with go run ./configs/cmd/keydoc -write.
func TestKeyReferenceIsCurrent(t *testing.T) {
	path := filepath.Join("..", filepath.FromSlash(KeyReferenceFile))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := SpliceKeyReference(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if want != string(data) {
		t.Fatal(KeyReferenceFile + "'s key reference is stale: run go run ./configs/cmd/keydoc -write")
	}
	// Every key is in it.
	for _, k := range reg.keys {
		if !strings.Contains(string(data), "`"+k.pattern+"`") {
			t.Errorf("%s does not name %s", KeyReferenceFile, k.pattern)
		}
	}
}
