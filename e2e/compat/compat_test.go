package compat

import (
	"errors"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// The real Hive 4.1 HiveMetaStoreClient runs the federated scenario through
// an APACHE_4_1_0 listener against two real Hive 3.1.3 metastores: its
// *_req wrappers are downgraded to 3.1.3's positional calls.
func TestHive4ClientAgainstHive313Backends(t *testing.T) {
	e2eutil.NeedHive(t)
	p := proxytest.Start(t, e2eutil.WithHive4Frontend(t, e2eutil.TwoCatalogs()))
	testbed.RunScenarioT(t, testbed.Hive410, p.URI("hive4"), "ddl",
		"--db", e2eutil.Uniq("h4"), "--db", "catalog2__"+e2eutil.Uniq("h4r"))
	if n := p.Metric(t, "hms_proxy_backend_fallback_total"); n == 0 {
		t.Fatal("no compatibility adapter ran: hms_proxy_backend_fallback_total is 0")
	}
}

// The real Hive 3.1.3 client runs it through an APACHE_3_1_3 listener against
// a real Hive 4.1 metastore, which no longer has get_table.
func TestHive313ClientAgainstHive4Backend(t *testing.T) {
	e2eutil.NeedHive(t)
	p := proxytest.Start(t, map[string]string{
		"catalogs":                "catalog1,hive4",
		"routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": e2eutil.HMS1.URI,
		"catalog.hive4.conf.hive.metastore.uris":    e2eutil.HMS4.URI,
		"catalog.hive4.runtime-profile":             "APACHE_4_1_0",
	})
	testbed.RunScenarioT(t, testbed.Hive313, p.URI("primary"), "ddl",
		"--db", "hive4__"+e2eutil.Uniq("old"), "--db", e2eutil.Uniq("old_local"))

	// The 3.1.3 Java client reads tables with get_table_req; Hive 2.x and
	// Spark's built-in client still send the positional get_table and
	// get_table_objects_by_name, which a Hive 4 server no longer has.
	db := e2eutil.Uniq("pos")
	direct := proxytest.Client(t, e2eutil.HMS4.URI)
	if err := direct.CreateDatabase(e2eutil.Ctx(t), &thriftgen.Database{Name: db}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = direct.DropDatabase(e2eutil.Ctx(t), db, true, true) })
	if err := direct.CreateTable(e2eutil.Ctx(t), e2eutil.Table(db, "t1")); err != nil {
		t.Fatal(err)
	}
	var app thrift.TApplicationException
	if _, err := direct.GetTable(e2eutil.Ctx(t), db, "t1"); !errors.As(err, &app) {
		t.Fatalf("expected the Hive 4 server itself to reject get_table, got %v", err)
	}
	c := proxytest.Client(t, p.URI("primary"))
	tb, err := c.GetTable(e2eutil.Ctx(t), "hive4__"+db, "t1")
	if err != nil || tb.TableName != "t1" || tb.DbName != "hive4__"+db {
		t.Fatalf("get_table through the proxy: %+v %v", tb, err)
	}
	tbs, err := c.GetTableObjectsByName(e2eutil.Ctx(t), "hive4__"+db, []string{"t1"})
	if err != nil || len(tbs) != 1 || tbs[0].DbName != "hive4__"+db {
		t.Fatalf("get_table_objects_by_name through the proxy: %v %v", tbs, err)
	}
	if _, err := c.GetTable(e2eutil.Ctx(t), "hive4__"+db, "missing"); !e2eutil.IsNotFound(err) {
		t.Fatalf("a missing table must stay NoSuchObjectException after the upgrade, got %v", err)
	}
	for _, m := range [][2]string{{"get_table", "get_table_req"}, {"get_table_objects_by_name", "get_table_objects_by_name_req"}} {
		if n := p.Metric(t, "hms_proxy_backend_fallback_total", "from_api", m[0], "to_api", m[1]); n == 0 {
			t.Errorf("%s was not upgraded to %s for the Hive 4 backend", m[0], m[1])
		}
	}
}

// A mixed deployment (one 3.1.3 and one 4.1 catalog) serves the 3.1.3 and
// the 4.1 client on two ports at once.
func TestMixedDeploymentServesBothClients(t *testing.T) {
	e2eutil.NeedHive(t)
	p := proxytest.Start(t, e2eutil.WithHive4Frontend(t, map[string]string{
		"catalogs":                "catalog1,hive4",
		"routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": e2eutil.HMS1.URI,
		"catalog.hive4.conf.hive.metastore.uris":    e2eutil.HMS4.URI,
		"catalog.hive4.runtime-profile":             "APACHE_4_1_0",
	}))
	done := make(chan []testbed.Step, 2)
	errs := make(chan error, 2)
	run := func(v testbed.Version, uri string, dbs ...string) {
		steps, err := testbed.RunScenario(v, uri, "ddl", dbs...)
		done <- steps
		errs <- err
	}
	go run(testbed.Hive313, p.URI("primary"), "--db", e2eutil.Uniq("mix3"), "--db", "hive4__"+e2eutil.Uniq("mix3r"))
	go run(testbed.Hive410, p.URI("hive4"), "--db", e2eutil.Uniq("mix4"), "--db", "hive4__"+e2eutil.Uniq("mix4r"))
	for i := 0; i < 2; i++ {
		steps := <-done
		if err := <-errs; err != nil {
			for _, s := range steps {
				t.Log(s)
			}
			t.Fatal(err)
		}
	}
}
