package configs

import (
	"errors"
	"sort"
	"strings"
	"testing"
	"time"
)

// base is a small valid configuration; validation rows change or delete keys
// of it.
var base = map[string]string{
	"server.port":             "9083",
	"catalogs":                "catalog1,catalog2",
	"routing.default-catalog": "catalog1",
	"catalog.catalog1.conf.hive.metastore.uris": "thrift://127.0.0.1:19083",
	"catalog.catalog2.conf.hive.metastore.uris": "thrift://127.0.0.1:19084",
	"synthetic-read-lock.store.mode":            "IN_MEMORY",
}

const del = "\x00delete"

func withProps(changes map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range base {
		m[k] = v
	}
	for k, v := range changes {
		if v == del {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return m
}

// errorLines parses and returns the error lines (nil if valid) and warnings.
func parseLines(t *testing.T, props map[string]string) (cfg *Config, errs, warns []string) {
	t.Helper()
	cfg, err := Parse(props)
	if err == nil {
		return cfg, nil, cfg.Warnings
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Parse returned %T %v, want *ValidationError", err, err)
	}
	if cfg != nil {
		t.Fatalf("Parse returned a config together with errors")
	}
	return nil, strings.Split(err.Error(), "\n"), ve.Warnings
}

// hasLine reports whether one line contains every fragment.
func hasLine(lines []string, fragments ...string) bool {
	for _, l := range lines {
		ok := true
		for _, f := range fragments {
			if !strings.Contains(l, f) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// TestValidationRules has one row per rule: the spec's «Валидация
// конфигурации» section first (strict booleans, case-insensitive enums with
// the allowed list, Hive durations, each contradictory combination, each
// listener-clash form), then the project's own rules. Every error row checks
// that one error line names the key and the value; warning rows check the
// configuration still loads and the warning names key, value and default.
func TestValidationRules(t *testing.T) {
	type row struct {
		name    string
		set     map[string]string
		errLine []string // fragments that one error line must contain
		warn    []string // fragments that one warning must contain (config valid)
		check   func(t *testing.T, c *Config)
	}
	rows := []row{
		// --- strict booleans ---
		{name: "bool yes", set: map[string]string{"server.tcp-keepalive": "yes"},
			errLine: []string{"server.tcp-keepalive=yes:", "only true or false"}},
		{name: "bool on", set: map[string]string{"management.enabled": "on"},
			errLine: []string{"management.enabled=on:", "only true or false"}},
		{name: "bool 1", set: map[string]string{"federation.preserve-backend-catalog-name": "1"},
			errLine: []string{"federation.preserve-backend-catalog-name=1:", "only true or false"}},
		{name: "bool typo ture", set: map[string]string{"audit.enabled": "ture"},
			errLine: []string{"audit.enabled=ture:", "only true or false"}},
		{name: "bool empty", set: map[string]string{"logging.debug-tracing": ""},
			errLine: []string{`logging.debug-tracing="":`, "only true or false"}},
		{name: "bool in catalog conf", set: map[string]string{"catalog.catalog1.conf.hive.metastore.thrift.framed.transport.enabled": "yes"},
			errLine: []string{"catalog.catalog1.conf.hive.metastore.thrift.framed.transport.enabled=yes:", "only true or false"}},
		{name: "bool in not-implemented key", set: map[string]string{"routing.hedged-read.enabled": "on"},
			errLine: []string{"routing.hedged-read.enabled=on:", "only true or false"}},
		{name: "bool any case accepted",
			set: map[string]string{"server.tcp-keepalive": "FALSE", "federation.preserve-backend-catalog-name": "True"},
			check: func(t *testing.T, c *Config) {
				if c.Server.TCPKeepAlive || !c.Federation.PreserveBackendCatalogName {
					t.Errorf("got keepalive=%v preserve=%v", c.Server.TCPKeepAlive, c.Federation.PreserveBackendCatalogName)
				}
			}},

		// --- enums: case-insensitive, allowed list in the error ---
		{name: "enum lower case accepted",
			set: map[string]string{"catalog.catalog1.access-mode": "read_only", "compatibility.frontend-profile": "apache_3_1_3",
				"catalog.catalog2.runtime-profile": "apache_4_1_0", "catalog.catalog1.expose-mode": "Deny_By_Default",
				"catalog.catalog1.expose-db-patterns": "sales", "logging.level": "debug", "security.mode": "none"},
			check: func(t *testing.T, c *Config) {
				c1, c2 := c.Catalog("catalog1"), c.Catalog("catalog2")
				if c1.AccessMode != AccessReadOnly || c.Compatibility.FrontendProfile != ProfileApache313 ||
					c2.RuntimeProfile != ProfileApache410 || c1.ExposeMode != ExposeDenyByDefault ||
					c.Logging.Level != LevelDebug || c.Security.Mode != SecurityNone {
					t.Errorf("enums not canonicalised: %+v %+v", c1, c2)
				}
			}},
		{name: "enum unknown access mode", set: map[string]string{"catalog.catalog1.access-mode": "READONLY"},
			errLine: []string{"catalog.catalog1.access-mode=READONLY:", "READ_WRITE, READ_ONLY, READ_WRITE_DB_WHITELIST"}},
		{name: "enum unknown profile", set: map[string]string{"compatibility.frontend-profile": "APACHE_3"},
			errLine: []string{"compatibility.frontend-profile=APACHE_3:", "APACHE_3_1_3, APACHE_4_1_0, HORTONWORKS_3_1_0_3_1_0_78, HORTONWORKS_3_1_0_3_1_5_6150_1"}},
		{name: "enum unknown runtime profile", set: map[string]string{"catalog.catalog2.runtime-profile": "HIVE4"},
			errLine: []string{"catalog.catalog2.runtime-profile=HIVE4:", "APACHE_4_1_0"}},
		{name: "enum unknown expose mode", set: map[string]string{"catalog.catalog2.expose-mode": "DENY"},
			errLine: []string{"catalog.catalog2.expose-mode=DENY:", "ALLOW_ALL, DENY_BY_DEFAULT"}},
		{name: "enum unknown security mode", set: map[string]string{"security.mode": "SIMPLE"},
			errLine: []string{"security.mode=SIMPLE:", "NONE, KERBEROS"}},
		{name: "enum unknown lock store", set: map[string]string{"synthetic-read-lock.store.mode": "REDIS"},
			errLine: []string{"synthetic-read-lock.store.mode=REDIS:", "IN_MEMORY, ZOOKEEPER"}},
		{name: "enum unknown log level", set: map[string]string{"logging.level": "TRACE"},
			errLine: []string{"logging.level=TRACE:", "DEBUG, INFO, WARN, ERROR"}},

		// --- Hive-style durations in HiveConf keys ---
		{name: "duration 600sec", set: map[string]string{"catalog.catalog1.conf.hive.metastore.client.socket.timeout": "600sec"},
			check: wantSocketTimeout(600 * time.Second)},
		{name: "duration 5min", set: map[string]string{"catalog.catalog1.conf.hive.metastore.client.socket.timeout": "5min"},
			check: wantSocketTimeout(5 * time.Minute)},
		{name: "duration no unit is seconds", set: map[string]string{"catalog.catalog1.conf.hive.metastore.client.socket.timeout": "42"},
			check: wantSocketTimeout(42 * time.Second)},
		{name: "duration ms and upper case", set: map[string]string{"catalog.catalog1.conf.hive.metastore.client.socket.timeout": "1500MS"},
			check: wantSocketTimeout(1500 * time.Millisecond)},
		{name: "duration blank before unit", set: map[string]string{"catalog.catalog1.conf.hive.metastore.client.socket.timeout": "2 h"},
			check: wantSocketTimeout(2 * time.Hour)},
		// Hive's getTimeVar refuses these, so the proxy refuses to start
		// (the specification said WARN and apply the default; issue 10 A8
		// says refuse).
		{name: "duration 1.5s refused", set: map[string]string{"catalog.catalog1.conf.hive.metastore.client.socket.timeout": "1.5s"},
			errLine: []string{"catalog.catalog1.conf.hive.metastore.client.socket.timeout=1.5s:", "not a Hive duration", "fractional"}},
		{name: "duration 5x refused", set: map[string]string{"catalog.catalog1.conf.hive.metastore.client.socket.timeout": "5x"},
			errLine: []string{"catalog.catalog1.conf.hive.metastore.client.socket.timeout=5x:", "not a Hive duration", `invalid time unit "x"`}},
		{name: "duration bad unit refused", set: map[string]string{"catalog.catalog2.conf.hive.metastore.client.connect.retry.delay": "5 fortnights"},
			errLine: []string{`catalog.catalog2.conf.hive.metastore.client.connect.retry.delay="5 fortnights":`, "not a Hive duration"}},
		{name: "duration negative refused", set: map[string]string{"catalog.catalog2.conf.hive.metastore.client.socket.timeout": "-1"},
			errLine: []string{"catalog.catalog2.conf.hive.metastore.client.socket.timeout=-1:", "negative"}},
		{name: "duration under the metastore.* name refused too", set: map[string]string{"catalog.catalog2.conf.metastore.client.socket.timeout": "ten"},
			errLine: []string{"catalog.catalog2.conf.metastore.client.socket.timeout=ten:", "not a Hive duration"}},
		{name: "duration metastore.* name preferred",
			set:   map[string]string{"catalog.catalog1.conf.metastore.client.socket.timeout": "7s"},
			check: wantSocketTimeout(7 * time.Second)},
		{name: "duration both names disagree",
			set: map[string]string{"catalog.catalog1.conf.metastore.client.socket.timeout": "7s",
				"catalog.catalog1.conf.hive.metastore.client.socket.timeout": "8s"},
			errLine: []string{"catalog.catalog1.conf.metastore.client.socket.timeout=7s:", "hive.metastore.client.socket.timeout=8s"}},

		// --- contradictory combinations ---
		{name: "whitelist without READ_WRITE_DB_WHITELIST", set: map[string]string{"catalog.catalog1.write-db-whitelist": "sales"},
			errLine: []string{"catalog.catalog1.write-db-whitelist=sales:", "access-mode=READ_WRITE_DB_WHITELIST"}},
		{name: "whitelist with READ_ONLY",
			set:     map[string]string{"catalog.catalog1.write-db-whitelist": "sales", "catalog.catalog1.access-mode": "READ_ONLY"},
			errLine: []string{"catalog.catalog1.write-db-whitelist=sales:", "access-mode is READ_ONLY"}},
		{name: "READ_WRITE_DB_WHITELIST without whitelist", set: map[string]string{"catalog.catalog2.access-mode": "READ_WRITE_DB_WHITELIST"},
			errLine: []string{"catalog.catalog2.access-mode=READ_WRITE_DB_WHITELIST:", "non-empty catalog.catalog2.write-db-whitelist", "READ_ONLY"}},
		{name: "READ_WRITE_DB_WHITELIST with empty whitelist",
			set:     map[string]string{"catalog.catalog2.access-mode": "read_write_db_whitelist", "catalog.catalog2.write-db-whitelist": " , "},
			errLine: []string{"catalog.catalog2.access-mode=read_write_db_whitelist:", "non-empty"}},
		{name: "READ_WRITE_DB_WHITELIST with whitelist",
			set: map[string]string{"catalog.catalog2.access-mode": "READ_WRITE_DB_WHITELIST", "catalog.catalog2.write-db-whitelist": "Sales, analytics"},
			check: func(t *testing.T, c *Config) {
				if got := strings.Join(c.Catalog("catalog2").WriteDBWhitelist, ","); got != "sales,analytics" {
					t.Errorf("whitelist = %q", got)
				}
			}},
		{name: "IN_MEMORY with a zookeeper key",
			set: map[string]string{"synthetic-read-lock.store.mode": "IN_MEMORY",
				"synthetic-read-lock.store.zookeeper.connect-string": "zk1:2181"},
			errLine: []string{"synthetic-read-lock.store.zookeeper.connect-string=zk1:2181:", "synthetic-read-lock.store.mode=IN_MEMORY"}},
		{name: "IN_MEMORY with another zookeeper key",
			set: map[string]string{"synthetic-read-lock.store.mode": "in_memory",
				"synthetic-read-lock.store.zookeeper.session-timeout-ms": "60000"},
			errLine: []string{"synthetic-read-lock.store.zookeeper.session-timeout-ms=60000:", "IN_MEMORY"}},
		{name: "zookeeper keys without mode select ZOOKEEPER",
			set: map[string]string{"synthetic-read-lock.store.mode": del, "synthetic-read-lock.store.zookeeper.connect-string": "zk1:2181,zk2:2181"},
			check: func(t *testing.T, c *Config) {
				if c.SyntheticLock.StoreMode != LockStoreZooKeeper || c.SyntheticLock.ZooKeeper.ConnectString != "zk1:2181,zk2:2181" {
					t.Errorf("store %+v", c.SyntheticLock)
				}
			}},
		{name: "no store mode with two catalogs", set: map[string]string{"synthetic-read-lock.store.mode": del},
			errLine: []string{"synthetic-read-lock.store.mode:", "required with more than one catalog"}},
		{name: "ZOOKEEPER with front-door Kerberos (the store uses ZooKeeper SASL)",
			set: map[string]string{"synthetic-read-lock.store.mode": "ZOOKEEPER", "synthetic-read-lock.store.zookeeper.connect-string": "zk1:2181",
				"security.mode": "KERBEROS", "security.server-principal": "hive/_HOST@EXAMPLE.COM", "security.keytab": "/k",
				"security.zookeeper.server-principal": "zk/_HOST"},
			check: func(t *testing.T, c *Config) {
				if c.SyntheticLock.StoreMode != LockStoreZooKeeper || c.Security.ZooKeeperServerPrincipal != "zk/_HOST" {
					t.Errorf("store %+v, ZooKeeper principal %q", c.SyntheticLock, c.Security.ZooKeeperServerPrincipal)
				}
			}},
		{name: "ZOOKEEPER without connect string", set: map[string]string{"synthetic-read-lock.store.mode": "ZOOKEEPER"},
			errLine: []string{"synthetic-read-lock.store.zookeeper.connect-string:", "required"}},

		// --- listener clashes ---
		{name: "clash same host and port",
			set: map[string]string{"server.bind-host": "127.0.0.1", "additional-frontends": "hdp",
				"additional-frontends.hdp.port": "9083", "additional-frontends.hdp.bind-host": "127.0.0.1",
				"additional-frontends.hdp.frontend-profile": "HORTONWORKS_3_1_0_3_1_5_6150_1"},
			errLine: []string{"additional-frontends.hdp.port=9083:", `additional frontend "hdp"`, "primary listener", "127.0.0.1:9083"}},
		{name: "clash wildcard 0.0.0.0 against 127.0.0.1",
			set: map[string]string{"server.bind-host": "0.0.0.0", "additional-frontends": "h4",
				"additional-frontends.h4.port": "9083", "additional-frontends.h4.bind-host": "127.0.0.1",
				"additional-frontends.h4.frontend-profile": "APACHE_4_1_0"},
			errLine: []string{"additional-frontends.h4.port=9083:", "0.0.0.0:9083", "127.0.0.1:9083", "wildcard"}},
		{name: "clash wildcard :: against a host",
			set: map[string]string{"server.bind-host": "10.0.0.5", "additional-frontends": "h4",
				"additional-frontends.h4.port": "9083", "additional-frontends.h4.bind-host": "::",
				"additional-frontends.h4.frontend-profile": "APACHE_4_1_0"},
			errLine: []string{"additional-frontends.h4.port=9083:", "[::]:9083", "10.0.0.5:9083"}},
		{name: "clash two additional frontends",
			set: map[string]string{"additional-frontends": "a,b",
				"additional-frontends.a.port": "9090", "additional-frontends.a.frontend-profile": "APACHE_4_1_0",
				"additional-frontends.b.port": "9090", "additional-frontends.b.frontend-profile": "HORTONWORKS_3_1_0_3_1_0_78"},
			errLine: []string{"additional-frontends.b.port=9090:", `additional frontend "b"`, `additional frontend "a"`}},
		{name: "clash management with primary",
			set:     map[string]string{"management.port": "9083", "management.bind-host": "127.0.0.1"},
			errLine: []string{"management.port=9083:", "management listener", "primary listener"}},
		{name: "clash frontend with the default management port",
			set: map[string]string{"management.enabled": "true", "additional-frontends": "hdp",
				"additional-frontends.hdp.port": "10083", "additional-frontends.hdp.frontend-profile": "HORTONWORKS_3_1_0_3_1_0_78"},
			errLine: []string{"additional-frontends.hdp.port=10083:", "management listener", "0.0.0.0:10083"}},
		{name: "clash default management port with a frontend declared first",
			set: map[string]string{"server.port": "9000", "management.enabled": "true", "additional-frontends": "x",
				"additional-frontends.x.port": "10000", "additional-frontends.x.frontend-profile": "APACHE_3_1_3"},
			errLine: []string{"additional-frontends.x.port=10000:", "management listener on 0.0.0.0:10000"}},
		{name: "no clash when management is disabled",
			set: map[string]string{"additional-frontends": "hdp",
				"additional-frontends.hdp.port": "10083", "additional-frontends.hdp.frontend-profile": "HORTONWORKS_3_1_0_3_1_0_78"}},
		{name: "no clash on different specific hosts",
			set: map[string]string{"server.bind-host": "127.0.0.1", "additional-frontends": "a",
				"additional-frontends.a.port": "9083", "additional-frontends.a.bind-host": "127.0.0.2",
				"additional-frontends.a.frontend-profile": "APACHE_4_1_0"}},
		{name: "hosts compared literally: localhost is not 127.0.0.1",
			set: map[string]string{"server.bind-host": "127.0.0.1", "additional-frontends": "a",
				"additional-frontends.a.port": "9083", "additional-frontends.a.bind-host": "localhost",
				"additional-frontends.a.frontend-profile": "APACHE_4_1_0"}},
		{name: "default management port not a port",
			set:     map[string]string{"server.port": "65000", "management.enabled": "true"},
			errLine: []string{"management.port:", "server.port + 1000 = 66000"}},

		// --- catalogs and routing ---
		{name: "catalogs missing", set: map[string]string{"catalogs": del},
			errLine: []string{"catalogs:", "required"}},
		{name: "catalogs empty", set: map[string]string{"catalogs": " "},
			errLine: []string{`catalogs="":`, "at least one"}},
		{name: "catalog listed twice", set: map[string]string{"catalogs": "catalog1,catalog2,catalog1"},
			errLine: []string{"catalogs=catalog1,catalog2,catalog1:", `"catalog1" is listed twice`}},
		{name: "catalog names differing in case", set: map[string]string{"catalogs": "catalog1,catalog2,Catalog1"},
			errLine: []string{"catalogs=catalog1,catalog2,Catalog1:", "differ only in case"}},
		{name: "catalog name with a dot", set: map[string]string{"catalogs": "catalog1,catalog2,cat.3"},
			errLine: []string{"catalogs=catalog1,catalog2,cat.3:", `"cat.3"`, "letters, digits"}},
		{name: "catalog name containing the separator", set: map[string]string{"catalogs": "catalog1,catalog2,my__cat"},
			errLine: []string{"catalogs=catalog1,catalog2,my__cat:", "separator"}},
		{name: "catalog name containing a custom separator",
			set: map[string]string{"routing.catalog-db-separator": "_", "catalogs": "catalog1,catalog2,cat_3",
				"catalog.cat_3.conf.hive.metastore.uris": "thrift://h:1"},
			errLine: []string{"catalogs=catalog1,catalog2,cat_3:", `"cat_3" contains the catalog/database separator "_"`}},
		{name: "custom separator", set: map[string]string{"routing.catalog-db-separator": "."},
			check: func(t *testing.T, c *Config) {
				if c.Routing.CatalogDBSeparator != "." {
					t.Errorf("separator %q", c.Routing.CatalogDBSeparator)
				}
			}},
		{name: "empty separator", set: map[string]string{"routing.catalog-db-separator": ""},
			errLine: []string{`routing.catalog-db-separator="":`, "empty"}},
		{name: "key of an unlisted catalog", set: map[string]string{"catalog.catalog3.access-mode": "READ_ONLY"},
			errLine: []string{"catalog.catalog3.access-mode=READ_ONLY:", `catalog "catalog3" is not listed in catalogs=catalog1,catalog2`}},
		{name: "default catalog required with two catalogs", set: map[string]string{"routing.default-catalog": del},
			errLine: []string{"routing.default-catalog:", "required when more than one catalog", "catalogs=catalog1,catalog2"}},
		{name: "default catalog not configured", set: map[string]string{"routing.default-catalog": "catalog9"},
			errLine: []string{"routing.default-catalog=catalog9:", "not one of the configured catalogs"}},
		{name: "single catalog is the default",
			set: map[string]string{"catalogs": "catalog1", "routing.default-catalog": del, "catalog.catalog2.conf.hive.metastore.uris": del},
			check: func(t *testing.T, c *Config) {
				if c.Routing.DefaultCatalog != "catalog1" || c.DefaultCatalog() != c.Catalogs[0] {
					t.Errorf("default catalog %q", c.Routing.DefaultCatalog)
				}
			}},
		{name: "uris missing", set: map[string]string{"catalog.catalog2.conf.hive.metastore.uris": del},
			errLine: []string{"catalog.catalog2.conf.hive.metastore.uris:", "required"}},
		{name: "uri without port", set: map[string]string{"catalog.catalog2.conf.hive.metastore.uris": "thrift://h1"},
			errLine: []string{"catalog.catalog2.conf.hive.metastore.uris=thrift://h1:", "port"}},
		{name: "uri with wrong scheme", set: map[string]string{"catalog.catalog2.conf.hive.metastore.uris": "thrift://h1:9083,http://h2:9083"},
			errLine: []string{"catalog.catalog2.conf.hive.metastore.uris=thrift://h1:9083,http://h2:9083:", `"http://h2:9083"`, "scheme"}},
		{name: "several uris and the metastore.* name",
			set: map[string]string{"catalog.catalog2.conf.hive.metastore.uris": del,
				"catalog.catalog2.conf.metastore.thrift.uris": " thrift://h1:9083 , THRIFT://[::1]:9084,"},
			check: func(t *testing.T, c *Config) {
				cat := c.Catalog("catalog2")
				if strings.Join(cat.URIs, " ") != "thrift://h1:9083 thrift://[::1]:9084" ||
					strings.Join(cat.Addresses(), " ") != "h1:9083 [::1]:9084" {
					t.Errorf("uris %q addresses %q", cat.URIs, cat.Addresses())
				}
			}},
		{name: "shared session pool size 0", set: map[string]string{"catalog.catalog1.shared-session-pool-size": "0"},
			errLine: []string{"catalog.catalog1.shared-session-pool-size=0:", "at least 1"}},
		{name: "latency budget negative", set: map[string]string{"catalog.catalog1.latency-budget-ms": "-5"},
			errLine: []string{"catalog.catalog1.latency-budget-ms=-5:", "at least 0"}},
		{name: "invalid db pattern", set: map[string]string{"catalog.catalog1.expose-db-patterns": "sales,(fin"},
			errLine: []string{"catalog.catalog1.expose-db-patterns=sales,(fin:", `"(fin"`}},
		{name: "pattern cannot escape anchoring", set: map[string]string{"catalog.catalog1.expose-db-patterns": "a)|(.*"},
			errLine: []string{"catalog.catalog1.expose-db-patterns=a)|(.*:", "invalid regular expression"}},
		{name: "invalid table pattern", set: map[string]string{"catalog.catalog1.expose-table-patterns.sales": "orders_.*,*x"},
			errLine: []string{"catalog.catalog1.expose-table-patterns.sales=orders_.*,*x:", `"*x"`}},
		{name: "invalid db regex in table pattern key", set: map[string]string{"catalog.catalog1.expose-table-patterns.fin[": "x"},
			errLine: []string{"catalog.catalog1.expose-table-patterns.fin[=x:", `"fin["`}},
		{name: "db patterns with ALLOW_ALL warn", set: map[string]string{"catalog.catalog1.expose-db-patterns": "sales"},
			warn: []string{"catalog.catalog1.expose-db-patterns=sales", "ALLOW_ALL"}},

		// --- listeners and numbers ---
		{name: "port garbage", set: map[string]string{"server.port": "90a83"},
			errLine: []string{"server.port=90a83:", "not an integer"}},
		{name: "port out of range", set: map[string]string{"server.port": "70000"},
			errLine: []string{"server.port=70000:", "between 0 and 65535"}},
		{name: "negative socket timeout", set: map[string]string{"server.client-socket-timeout-ms": "-1"},
			errLine: []string{"server.client-socket-timeout-ms=-1:", "at least 0"}},
		{name: "keepalive count zero", set: map[string]string{"server.tcp-keepalive-count": "0"},
			errLine: []string{"server.tcp-keepalive-count=0:", "at least 1"}},
		{name: "min above max worker threads", set: map[string]string{"server.min-worker-threads": "50", "server.max-worker-threads": "10"},
			errLine: []string{"server.min-worker-threads=50:", "must not exceed server.max-worker-threads (10)"}},
		{name: "max below default min worker threads", set: map[string]string{"server.max-worker-threads": "100"},
			errLine: []string{"server.max-worker-threads=100:", "server.min-worker-threads (200)"}},
		{name: "max message size zero", set: map[string]string{"server.max-message-size": "0"},
			errLine: []string{"server.max-message-size=0:", "at least 1"}},
		{name: "management threads zero", set: map[string]string{"management.threads": "0"},
			errLine: []string{"management.threads=0:", "at least 1"}},
		{name: "additional frontend needs port and profile",
			set:     map[string]string{"additional-frontends": "hdp", "additional-frontends.hdp.bind-host": "127.0.0.1"},
			errLine: []string{"additional-frontends.hdp.port:", "required"}},
		{name: "additional frontend needs profile",
			set:     map[string]string{"additional-frontends": "hdp", "additional-frontends.hdp.port": "9084"},
			errLine: []string{"additional-frontends.hdp.frontend-profile:", "required", "APACHE_3_1_3"}},
		{name: "additional frontend not listed", set: map[string]string{"additional-frontends.hdp.port": "9084"},
			errLine: []string{"additional-frontends.hdp.port=9084:", `frontend "hdp" is not listed`}},
		{name: "additional frontend jar accepted and ignored",
			set: map[string]string{"additional-frontends": "hdp", "additional-frontends.hdp.port": "9084",
				"additional-frontends.hdp.frontend-profile":         "HORTONWORKS_3_1_0_3_1_5_6150_1",
				"additional-frontends.hdp.standalone-metastore-jar": "hive-metastore/hdp.jar"},
			warn: []string{"additional-frontends.hdp.standalone-metastore-jar=hive-metastore/hdp.jar", "ignored"}},
		{name: "additional frontend min above max",
			set: map[string]string{"additional-frontends": "a", "additional-frontends.a.port": "9084",
				"additional-frontends.a.frontend-profile": "APACHE_4_1_0", "additional-frontends.a.max-worker-threads": "5"},
			errLine: []string{"additional-frontends.a.max-worker-threads=5:", "must not exceed"}},

		// --- security, impersonation, audit ---
		{name: "kerberos needs principal and keytab", set: map[string]string{"security.mode": "KERBEROS"},
			errLine: []string{"security.server-principal:", "required when security.mode=KERBEROS"}},
		{name: "kerberos with a framed listener",
			set: map[string]string{"security.mode": "kerberos", "security.server-principal": "hive/_HOST@R", "security.keytab": "/k",
				"server.framed-transport": "true"},
			errLine: []string{"server.framed-transport=true:", "not supported with SASL"}},
		{name: "kerberos with a framed additional frontend",
			set: map[string]string{"security.mode": "KERBEROS", "security.server-principal": "hive/_HOST@R", "security.keytab": "/k",
				"additional-frontends": "hive4", "additional-frontends.hive4.port": "9084", "additional-frontends.hive4.framed-transport": "true"},
			errLine: []string{"additional-frontends.hive4.framed-transport=true:", "not supported with SASL"}},
		{name: "kerberos backend with framing",
			set: map[string]string{"catalog.catalog1.conf.hive.metastore.sasl.enabled": "true", "catalog.catalog1.conf.hive.metastore.kerberos.principal": "hive/_HOST@R",
				"security.client-principal": "p@R", "security.client-keytab": "/k", "catalog.catalog1.conf.hive.metastore.thrift.framed.transport.enabled": "true"},
			errLine: []string{"catalog.catalog1.conf.hive.metastore.thrift.framed.transport.enabled=true:", "not supported with SASL"}},
		{name: "TLS listener without its files", set: map[string]string{"server.tls.enabled": "true", "server.tls.key-file": "/k.pem"},
			errLine: []string{"server.tls.certificate-file:", "required when server.tls.enabled=true"}},
		{name: "TLS additional frontend without its files",
			set:     map[string]string{"additional-frontends": "hive4", "additional-frontends.hive4.port": "9084", "additional-frontends.hive4.tls.enabled": "true"},
			errLine: []string{"additional-frontends.hive4.tls.key-file:", "or server.tls.key-file, its default"}},
		{name: "TLS backend without a trust store", set: map[string]string{"catalog.catalog1.conf.hive.metastore.use.SSL": "true"},
			errLine: []string{"catalog.catalog1.conf.hive.metastore.truststore.path:", "required when catalog.catalog1.conf.hive.metastore.use.SSL=true"}},
		{name: "TLS backend with an unknown trust store type",
			set:     map[string]string{"catalog.catalog1.conf.hive.metastore.use.SSL": "true", "catalog.catalog1.conf.hive.metastore.truststore.path": "/t", "catalog.catalog1.conf.metastore.truststore.type": "BKS"},
			errLine: []string{"catalog.catalog1.conf.metastore.truststore.type=BKS:", "JKS"}},
		{name: "audit file is the log file", set: map[string]string{"logging.file": "logs/x.log", "audit.file": "logs/./x.log"},
			errLine: []string{"logging.file=logs/x.log:", "audit.file"}},
		{name: "audit enabled without file", set: map[string]string{"audit.file": ""},
			errLine: []string{`audit.file="":`, "audit.enabled=false"}},

		// --- unknown and not-implemented keys ---
		{name: "unknown key with suggestion", set: map[string]string{"catalog.catalog1.acess-mode": "READ_ONLY"},
			errLine: []string{"catalog.catalog1.acess-mode=READ_ONLY:", "unknown key", "did you mean catalog.catalog1.access-mode?"}},
		{name: "unknown top-level key with suggestion", set: map[string]string{"server.prot": "9083"},
			errLine: []string{"server.prot=9083:", "did you mean server.port?"}},
		{name: "unknown key without suggestion", set: map[string]string{"totally.unrelated": "x"},
			errLine: []string{"totally.unrelated=x:", "unknown key"}},
		{name: "a refused key's value is still checked", set: map[string]string{"routing.circuit-breaker.open-state-ms": "30s"},
			errLine: []string{"routing.circuit-breaker.open-state-ms=30s:", "not an integer"}},
		{name: "unknown method family", set: map[string]string{"rate-limit.method-family.metadata_reads.requests-per-second": "5"},
			errLine: []string{"rate-limit.method-family.metadata_reads.requests-per-second=5:", `unknown method family "metadata_reads"`, "metadata_read, metadata_write"}},
		{name: "unknown RPC class", set: map[string]string{"rate-limit.rpc-class.admin.requests-per-second": "5"},
			errLine: []string{"rate-limit.rpc-class.admin.requests-per-second=5:", `unknown RPC class "admin"`, "write, ddl, txn, lock"}},
		{name: "rate limit of an unlisted catalog", set: map[string]string{"rate-limit.catalog.catalog9.requests-per-second": "5"},
			errLine: []string{"rate-limit.catalog.catalog9.requests-per-second=5:", `catalog "catalog9" is not listed in catalogs=catalog1,catalog2`}},
		{name: "unknown key under a refused feature", set: map[string]string{"routing.circuit-breaker.failure-treshold": "3"},
			errLine: []string{"routing.circuit-breaker.failure-treshold=3:", "unknown key", "did you mean routing.circuit-breaker.failure-threshold?"}},
		{name: "empty key after an open prefix", set: map[string]string{"catalog.catalog1.conf.": "x"},
			errLine: []string{"catalog.catalog1.conf.=x:", "names nothing after catalog.catalog1.conf."}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			cfg, errs, warns := parseLines(t, withProps(r.set))
			if r.errLine != nil {
				if !hasLine(errs, r.errLine...) {
					t.Fatalf("no error line contains %q; errors:\n%s", r.errLine, strings.Join(errs, "\n"))
				}
				return
			}
			if errs != nil {
				t.Fatalf("unexpected errors:\n%s", strings.Join(errs, "\n"))
			}
			if r.warn != nil && !hasLine(warns, r.warn...) {
				t.Errorf("no warning contains %q; warnings:\n%s", r.warn, strings.Join(warns, "\n"))
			}
			if r.check != nil {
				r.check(t, cfg)
			}
		})
	}
}

func wantSocketTimeout(d time.Duration) func(t *testing.T, c *Config) {
	return func(t *testing.T, c *Config) {
		if got := c.Catalog("catalog1").SocketTimeout; got != d {
			t.Errorf("SocketTimeout = %v, want %v", got, d)
		}
	}
}

// TestAllProblemsTogether: one pass reports every problem, sorted by key.
func TestAllProblemsTogether(t *testing.T) {
	_, errs, _ := parseLines(t, withProps(map[string]string{
		"server.tcp-keepalive":                "yes",
		"catalog.catalog1.access-mode":        "bogus",
		"catalog.catalog2.write-db-whitelist": "x",
		"logging.level":                       "loud",
		"server.prot":                         "1",
	}))
	if len(errs) != 5 {
		t.Fatalf("want 5 errors, got %d:\n%s", len(errs), strings.Join(errs, "\n"))
	}
	if !sort.StringsAreSorted(errs) {
		t.Errorf("errors not sorted by key:\n%s", strings.Join(errs, "\n"))
	}
}

func TestParseHiveDuration(t *testing.T) {
	good := map[string]time.Duration{
		"600": 600 * time.Second, "600s": 600 * time.Second, "600sec": 600 * time.Second,
		"600 seconds": 600 * time.Second, "5m": 5 * time.Minute, "5min": 5 * time.Minute,
		"5MINUTES": 5 * time.Minute, "2h": 2 * time.Hour, "2hours": 2 * time.Hour,
		"1d": 24 * time.Hour, "1day": 24 * time.Hour, "10ms": 10 * time.Millisecond,
		"10msec": 10 * time.Millisecond, "7us": 7 * time.Microsecond, "7usec": 7 * time.Microsecond,
		"3ns": 3, "3nsec": 3, " 30 s ": 30 * time.Second, "0": 0, "-1": -time.Second, "12l": 12 * time.Second,
	}
	for in, want := range good {
		got, err := ParseHiveDuration(in, time.Second)
		if err != nil || got != want {
			t.Errorf("ParseHiveDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"1.5s", "", "s", "ten", "5x", "+5s", "1e3", "5 5s", "99999999999999999999"} {
		if d, err := ParseHiveDuration(in, time.Second); err == nil {
			t.Errorf("ParseHiveDuration(%q) = %v, want an error", in, d)
		}
	}
	for _, d := range []time.Duration{0, time.Second, 1500 * time.Millisecond, 7 * time.Microsecond, 3} {
		back, err := ParseHiveDuration(formatHiveDuration(d), time.Second)
		if err != nil || back != d {
			t.Errorf("format %v -> %q -> %v, %v", d, formatHiveDuration(d), back, err)
		}
	}
}
