package configs

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const minimal = `
catalogs=only
catalog.only.conf.hive.metastore.uris=thrift://hms:9083
`

// TestDefaults: a file with nothing but one catalog gets every default of the
// specification (and of the project where the specification is silent).
func TestDefaults(t *testing.T) {
	cfg, err := ParseReader(strings.NewReader(minimal))
	if err != nil {
		t.Fatal(err)
	}
	wantServer := ServerConfig{
		Name: "hms-proxy", BindHost: "0.0.0.0", Port: 9083,
		MinWorkerThreads: 200, MaxWorkerThreads: 1000,
		ClientSocketTimeout: 600 * time.Second, TCPKeepAlive: true,
		TCPKeepAliveIdle: 120 * time.Second, TCPKeepAliveInterval: 30 * time.Second, TCPKeepAliveCount: 4,
		ShutdownTimeout: 30 * time.Second, FramedTransport: false, MaxMessageSize: 104857600,
	}
	if cfg.Server != wantServer {
		t.Errorf("Server =\n%+v\nwant\n%+v", cfg.Server, wantServer)
	}
	wantMgmt := ManagementConfig{Enabled: false, BindHost: "0.0.0.0", Port: 10083, Threads: 4, ReadinessCache: 2 * time.Second}
	if cfg.Management != wantMgmt {
		t.Errorf("Management = %+v, want %+v", cfg.Management, wantMgmt)
	}
	if cfg.Routing.DefaultCatalog != "only" || cfg.Routing.CatalogDBSeparator != "__" {
		t.Errorf("Routing = %+v", cfg.Routing)
	}
	if cfg.Federation.PreserveBackendCatalogName {
		t.Error("preserve-backend-catalog-name defaults to false")
	}
	if cfg.Compatibility != (CompatibilityConfig{FrontendProfile: ProfileApache313}) {
		t.Errorf("Compatibility = %+v", cfg.Compatibility)
	}
	c := cfg.Catalog("only")
	want := &CatalogConfig{
		Name: "only", URIs: []string{"thrift://hms:9083"},
		Conf:       map[string]string{"hive.metastore.uris": "thrift://hms:9083"},
		AccessMode: AccessReadWrite, ExposeMode: ExposeAllowAll,
		SharedSessionPoolSize: 8, LatencyBudget: 0, RuntimeProfile: ProfileApache313,
		URISelection: "RANDOM", BackendCatalogName: "hive",
		SocketTimeout: 600 * time.Second, ConnectTimeout: 600 * time.Second,
		ConnectRetries: 3, ConnectRetryDelay: time.Second, SocketLifetime: 0, TxnTimeout: 300 * time.Second,
		RPCProtection:           []string{"authentication"},
		ImpersonationMaxClients: 128, ImpersonationPoolMaxSize: 4,
		Ranger: RangerPluginConfig{ServiceType: "hive", AppID: "hms-proxy", PollInterval: 30 * time.Second,
			ConnectionTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("catalog =\n%+v\nwant\n%+v", c, want)
	}
	wantSec := SecurityConfig{Mode: SecurityNone, FrontDoorConf: map[string]string{},
		RPCProtection: []string{"authentication"}, AuthToLocal: "DEFAULT", AuthToLocalMechanism: "hadoop",
		ZooKeeperServerPrincipal: DefaultZooKeeperServerPrincipal, ZooKeeperSASL: true,
		DelegationTokens: DelegationTokenConfig{
			StoreClass: "org.apache.hadoop.hive.metastore.security.MemoryTokenStore", Store: TokenStoreMemory,
			ZooKeeperZNode: "/hivedelegation", MaxLifetime: 7 * 24 * time.Hour, RenewInterval: 24 * time.Hour,
			KeyUpdateInterval: 24 * time.Hour, GCInterval: time.Hour}}
	if !reflect.DeepEqual(cfg.Security, wantSec) {
		t.Errorf("Security =\n%+v\nwant\n%+v", cfg.Security, wantSec)
	}
	if cfg.SyntheticLock.StoreMode != LockStoreUnset {
		t.Errorf("lock store mode = %q, want unset", cfg.SyntheticLock.StoreMode)
	}
	if cfg.Audit != (AuditConfig{Enabled: true, File: "logs/hms-proxy-audit.log", MaxFileSizeBytes: 100 << 20, MaxBackups: 10}) {
		t.Errorf("Audit = %+v", cfg.Audit)
	}
	if cfg.Logging != (LoggingConfig{Level: "INFO", File: "", MaxFileSizeBytes: 50 << 20, MaxBackups: 10}) {
		t.Errorf("Logging = %+v", cfg.Logging)
	}
	// A minimal file warns about nothing.
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings on a minimal file: %q", cfg.Warnings)
	}
	fs := cfg.Frontends()
	if len(fs) != 1 || fs[0].Name != "" || fs[0].Port != 9083 || fs[0].Profile != ProfileApache313 || fs[0].Addr() != "0.0.0.0:9083" {
		t.Errorf("Frontends() = %+v", fs)
	}
}

func TestManagementDefaults(t *testing.T) {
	cfg, err := ParseReader(strings.NewReader(minimal + "server.port=9000\nserver.bind-host=10.1.2.3\nmanagement.enabled=TRUE\n"))
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Management
	if !m.Enabled || m.Port != 10000 || m.BindHost != "10.1.2.3" || m.Addr() != "10.1.2.3:10000" {
		t.Errorf("management = %+v", m)
	}
	// management.port alone turns the listener on.
	cfg, err = ParseReader(strings.NewReader(minimal + "management.port=19083\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Management.Enabled || cfg.Management.Port != 19083 {
		t.Errorf("management = %+v", cfg.Management)
	}
	// An explicit false wins over a port, with a warning.
	cfg, err = ParseReader(strings.NewReader(minimal + "management.port=19083\nmanagement.enabled=false\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Management.Enabled || !hasLine(cfg.Warnings, "management.port=19083", "has no effect", "management.enabled=false") {
		t.Errorf("management = %+v warnings %q", cfg.Management, cfg.Warnings)
	}
	// An OS-chosen server port makes the default management port OS-chosen too.
	cfg, err = ParseReader(strings.NewReader(minimal + "server.port=0\nmanagement.enabled=true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Management.Port != 0 {
		t.Errorf("management port = %d, want 0", cfg.Management.Port)
	}
}

// TestFrontendsInheritServer: additional frontends take server.* unless set.
func TestFrontendsInheritServer(t *testing.T) {
	in := minimal + `
server.bind-host=127.0.0.1
server.min-worker-threads=10
server.max-worker-threads=20
server.client-socket-timeout-ms=1000
server.tcp-keepalive=false
server.framed-transport=true
server.max-message-size=2048
compatibility.frontend-profile=HORTONWORKS_3_1_0_3_1_0_78
additional-frontends=h4, hdp
additional-frontends.h4.port=9084
additional-frontends.h4.frontend-profile=apache_4_1_0
additional-frontends.hdp.port=9085
additional-frontends.hdp.frontend-profile=HORTONWORKS_3_1_0_3_1_5_6150_1
additional-frontends.hdp.bind-host=0.0.0.0
additional-frontends.hdp.max-worker-threads=50
additional-frontends.hdp.tcp-keepalive=true
additional-frontends.hdp.tcp-keepalive-idle-seconds=60
additional-frontends.hdp.framed-transport=false
additional-frontends.hdp.max-message-size=4096
`
	cfg, err := ParseReader(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	fs := cfg.Frontends()
	if len(fs) != 3 || fs[0].Name != "" || fs[1].Name != "h4" || fs[2].Name != "hdp" {
		t.Fatalf("frontends %+v", fs)
	}
	if fs[0].Profile != ProfileHDP78 || fs[1].Profile != ProfileApache410 || fs[2].Profile != ProfileHDP315 {
		t.Errorf("profiles %s %s %s", fs[0].Profile, fs[1].Profile, fs[2].Profile)
	}
	h4 := fs[1]
	if h4.BindHost != "127.0.0.1" || h4.MinWorkerThreads != 10 || h4.MaxWorkerThreads != 20 ||
		h4.ClientSocketTimeout != time.Second || h4.TCPKeepAlive || !h4.FramedTransport || h4.MaxMessageSize != 2048 ||
		h4.TCPKeepAliveIdle != 120*time.Second || h4.TCPKeepAliveCount != 4 {
		t.Errorf("h4 does not inherit server.*: %+v", h4)
	}
	hdp := fs[2]
	if hdp.BindHost != "0.0.0.0" || hdp.MaxWorkerThreads != 50 || !hdp.TCPKeepAlive ||
		hdp.TCPKeepAliveIdle != time.Minute || hdp.FramedTransport || hdp.MaxMessageSize != 4096 || hdp.Addr() != "0.0.0.0:9085" {
		t.Errorf("hdp overrides lost: %+v", hdp)
	}
}

// TestEffectiveRoundTrip: the effective listing is itself a valid file that
// yields the same configuration.
func TestEffectiveRoundTrip(t *testing.T) {
	in := `
server.port=9083
server.bind-host=127.0.0.1
management.port=10083
catalogs=catalog1,catalog2
routing.default-catalog=catalog2
synthetic-read-lock.store.mode=IN_MEMORY
catalog.catalog1.conf.hive.metastore.uris=thrift://h1:9083,thrift://h2:9083
catalog.catalog1.conf.hive.metastore.client.socket.timeout=5min
catalog.catalog1.conf.some.hive.key=value with blanks
catalog.catalog1.access-mode=READ_WRITE_DB_WHITELIST
catalog.catalog1.write-db-whitelist=sales,finance
catalog.catalog1.expose-mode=DENY_BY_DEFAULT
catalog.catalog1.expose-db-patterns=sales,fin_\\d+
catalog.catalog1.expose-table-patterns.finance_.*=audit_.*,x{1,2}
catalog.catalog2.conf.metastore.thrift.uris=thrift://h3:9083
catalog.catalog2.runtime-profile=APACHE_4_1_0
catalog.catalog2.latency-budget-ms=1500
additional-frontends=h4
additional-frontends.h4.port=9084
additional-frontends.h4.frontend-profile=APACHE_4_1_0
federation.view-text-rewrite.mode=disabled
security.front-door-conf.hive.some.password=hunter2
logging.file=logs/hms-proxy.log
`
	_, err := ParseReader(strings.NewReader(in))
	if err == nil || !strings.Contains(err.Error(), `catalog.catalog1.expose-table-patterns.finance_.*=audit_.*,x{1,2}: invalid regular expression "x{1": unbalanced`) {
		t.Fatalf("x{1,2} is split at its comma; want an error naming the piece, got %v", err)
	}
	in = strings.Replace(in, ",x{1,2}", "", 1)
	cfg, err := ParseReader(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	eff := cfg.Effective()
	for _, line := range []string{
		"catalog.catalog1.conf.hive.metastore.client.socket.timeout=300s",
		"catalog.catalog1.conf.some.hive.key=value with blanks",
		`catalog.catalog1.expose-db-patterns=sales,fin_\\d+`,
		"catalog.catalog1.expose-table-patterns.finance_.*=audit_.*",
		"catalog.catalog2.conf.metastore.thrift.uris=thrift://h3:9083",
		"#catalog.catalog2.conf.hive.metastore.client.socket.timeout=600s",
		"#catalog.catalog2.conf.hive.metastore.client.connection.timeout=600s",
		"catalog.catalog1.conf.hive.metastore.client.connection.timeout=300s",
		"management.port=10083",
		"#management.enabled=true",
		"#server.max-message-size=104857600",
		"federation.view-text-rewrite.mode=DISABLED",
		"security.front-door-conf.hive.some.password=********",
		"#rest-catalog.port=9183",
	} {
		if !strings.Contains(eff, line+"\n") {
			t.Errorf("effective config lacks %q:\n%s", line, eff)
		}
	}
	if cfg.Catalog("catalog1").ExposeDBPatterns[1].MatchString("fin_12") != true {
		t.Errorf(`fin_\\d+ in a .properties file is the regex fin_\d+`)
	}
	again, err := ParseReader(strings.NewReader(eff))
	if err != nil {
		t.Fatalf("effective config does not parse: %v\n%s", err, eff)
	}
	if again.Effective() != eff {
		t.Errorf("round trip changed the configuration:\n%s\nvs\n%s", eff, again.Effective())
	}
	// Within each feature's section the keys are sorted.
	for _, sec := range strings.Split(eff, "\n# == ")[1:] {
		var keys []string
		for _, l := range strings.Split(strings.TrimSpace(sec), "\n")[1:] {
			if strings.HasPrefix(l, "# ") {
				continue
			}
			keys = append(keys, strings.TrimPrefix(l[:strings.IndexByte(l, '=')], "#"))
		}
		if !sortedStrings(keys) {
			t.Errorf("section %q is not sorted by key", sec)
		}
	}
}

func sortedStrings(ss []string) bool {
	for i := 1; i < len(ss); i++ {
		if ss[i-1] > ss[i] {
			return false
		}
	}
	return true
}

func TestEffectiveMasksSecrets(t *testing.T) {
	cfg, err := ParseReader(strings.NewReader(minimal + "catalog.only.conf.javax.jdo.option.ConnectionPassword=hunter2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(cfg.Effective(), "hunter2") || strings.Contains(strings.Join(cfg.Warnings, "\n"), "hunter2") {
		t.Errorf("a password is shown: %q\n%s", cfg.Warnings, cfg.Effective())
	}
}

func TestDuplicateKeysWarn(t *testing.T) {
	cfg, err := ParseReader(strings.NewReader(minimal + "server.port=1\nserver.port=2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Port != 2 || !hasLine(cfg.Warnings, "server.port is set 2 times (lines 4, 5)") {
		t.Errorf("port %d warnings %q", cfg.Server.Port, cfg.Warnings)
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.properties")
	if err := os.WriteFile(path, []byte("catalogs=a\nx=\\u12zz\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), path+":2: malformed") {
		t.Errorf("Load error %v does not name %s:2", err, path)
	}
	if _, err := Load(filepath.Join(dir, "missing.properties")); err == nil || !strings.Contains(err.Error(), "missing.properties") {
		t.Errorf("Load of a missing file: %v", err)
	}
}

// TestExposurePatterns: anchored full match, case-insensitive, rules sorted.
func TestExposurePatterns(t *testing.T) {
	cfg, err := ParseReader(strings.NewReader(minimal + `
catalog.only.expose-mode=DENY_BY_DEFAULT
catalog.only.expose-db-patterns=sales,finance_.*
catalog.only.expose-table-patterns.sales=orders_.*,events
catalog.only.expose-table-patterns.finance_.*=audit_.*
`))
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Catalog("ONLY") // lookup ignores case
	if c == nil {
		t.Fatal("Catalog lookup")
	}
	db := c.ExposeDBPatterns
	if !db[0].MatchString("SALES") || db[0].MatchString("sales_eu") || db[0].MatchString("presales") ||
		!db[1].MatchString("finance_eu") || db[1].MatchString("finance") {
		t.Error("db patterns are not anchored case-insensitive full matches")
	}
	rs := c.ExposeTablePatterns
	if len(rs) != 2 || rs[0].DBSource != "finance_.*" || rs[1].DBSource != "sales" {
		t.Fatalf("rules %+v", rs)
	}
	if !rs[1].DB.MatchString("Sales") || !rs[1].Tables[0].MatchString("orders_2024") || rs[1].Tables[1].MatchString("events2") {
		t.Error("table rule matching")
	}
}

func TestDroppedBackslashWarns(t *testing.T) {
	cfg, err := ParseReader(strings.NewReader(minimal + "catalog.only.expose-db-patterns=sales_\\d+\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !hasLine(cfg.Warnings, "line 4 (catalog.only.expose-db-patterns)", `\d is read as d`, `\\d`) {
		t.Errorf("warnings %q", cfg.Warnings)
	}
	if cfg.Catalog("only").ExposeDBPatterns[0].MatchString("sales_1") {
		t.Error("Java drops the backslash: the pattern is sales_d+")
	}
}

func TestDebugTracingBelowDebugLevelWarns(t *testing.T) {
	base := map[string]string{"catalogs": "c1", "catalog.c1.conf.hive.metastore.uris": "thrift://h:9083", "logging.debug-tracing": "true"}
	cfg, err := Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(cfg.Warnings, "\n"), "logging.debug-tracing=true has no effect") {
		t.Fatalf("no warning: %v", cfg.Warnings)
	}
	base["logging.level"] = "debug"
	cfg, err = Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(cfg.Warnings, "\n"), "debug-tracing") {
		t.Fatalf("unexpected warning at DEBUG: %v", cfg.Warnings)
	}
}

// routing.hedged-read.fanout-timeout-ms bounds every fan-out, hedged or not:
// set while hedged reads are off it takes effect and gets no "has no effect"
// warning (it used to get one, though the router applies it); its sibling
// max-parallelism, which only hedged fan-outs use, still does.
func TestFanoutTimeoutTakesEffectWithoutHedgedReads(t *testing.T) {
	cfg, err := Parse(map[string]string{"catalogs": "c1", "catalog.c1.conf.hive.metastore.uris": "thrift://h:9083",
		"routing.hedged-read.fanout-timeout-ms": "1500", "routing.hedged-read.max-parallelism": "2"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Routing.HedgedRead.Enabled || cfg.Routing.HedgedRead.FanoutTimeout != 1500*time.Millisecond {
		t.Fatalf("hedged read %+v", cfg.Routing.HedgedRead)
	}
	w := strings.Join(cfg.Warnings, "\n")
	if strings.Contains(w, "fanout-timeout-ms") {
		t.Errorf("a warning names fanout-timeout-ms, which takes effect: %v", cfg.Warnings)
	}
	if !strings.Contains(w, "routing.hedged-read.max-parallelism=2: has no effect") {
		t.Errorf("no warning for max-parallelism with hedged reads off: %v", cfg.Warnings)
	}
}
