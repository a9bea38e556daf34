package routing

import (
	"errors"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// The database metadata cache in front of a real Hive 4.1 metastore: a Hive
// 4.1 client's get_database_req (name and catalog "hive", as the stock
// HiveMetaStoreClient sends it) goes to the backend natively, not adapted;
// 20 of them reach the metastore once; the Hive 4.1 request forms of the
// writes, alter_database_req and drop_database_req, invalidate the entry
// whatever route they take, so the next read sees the change (or the
// database's absence) at once.
func TestDatabaseMetadataCacheNativeGetDatabaseReqHive4(t *testing.T) {
	e2eutil.NeedHive(t)
	tap4 := proxytest.NewTap(t, e2eutil.HMS4.URI)
	p := proxytest.Start(t, e2eutil.WithHive4Frontend(t, map[string]string{
		"catalogs":                "catalog1,catalog4",
		"routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris":           e2eutil.HMS1.URI,
		"catalog.catalog4.conf.hive.metastore.uris":           tap4.URI(),
		"catalog.catalog4.runtime-profile":                    "APACHE_4_1_0",
		"routing.database-metadata-cache.ttl-ms":              "600000",
		"routing.database-metadata-cache.shared-across-users": "true",
	}))
	c4 := proxytest.Client(t, p.URI("hive4"))
	direct := proxytest.Client(t, e2eutil.HMS4.URI)
	db := e2eutil.Uniq("mdcache")
	ext := "catalog4__" + db
	if err := direct.CreateDatabase(e2eutil.Ctx(t), &thriftgen.Database{Name: db, Description: "one"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = direct.DropDatabase(e2eutil.Ctx(t), db, true, true) })

	hive := "hive"
	req := &thriftgen.GetDatabaseRequest{Name: &ext, CatalogName: &hive}
	read := func(what string) *thriftgen.Database {
		t.Helper()
		got, err := c4.GetDatabaseReq(e2eutil.Ctx(t), req)
		if err != nil {
			t.Fatalf("get_database_req %s: %v", what, err)
		}
		if got.Name != ext {
			t.Fatalf("get_database_req %s answered %q, want the outward name %q", what, got.Name, ext)
		}
		return got
	}
	calls := func(method string) int {
		n := 0
		for _, m := range tap4.Methods() {
			if m == method {
				n++
			}
		}
		return n
	}

	tap4.Reset()
	for i := 0; i < 20; i++ {
		if got := read("cached"); got.Description != "one" {
			t.Fatalf("get_database_req %d: description %q, want %q", i, got.Description, "one")
		}
	}
	if n := calls("get_database_req"); n != 1 {
		t.Errorf("20 get_database_req reached the Hive 4.1 metastore %d times as get_database_req; want 1 (methods %v)", n, tap4.Methods())
	}
	if n := calls("get_database"); n != 0 {
		t.Errorf("the Hive 4.1 backend was sent %d adapted get_database calls; want the native form only", n)
	}
	if n := p.Metric(t, "hms_proxy_cache_requests_total", "cache", "database_metadata", "catalog", "catalog4", "result", "hit"); n < 19 {
		t.Errorf("cache hits for catalog4 = %v, want at least 19", n)
	}

	// alter_database_req through the proxy: the next read is the new one.
	cur, err := direct.GetDatabase(e2eutil.Ctx(t), db)
	if err != nil {
		t.Fatal(err)
	}
	cur.Name, cur.Description = ext, "two"
	if err := c4.AlterDatabaseReq(e2eutil.Ctx(t), &thriftgen.AlterDatabaseRequest{OldDbName: ext, NewDb: cur}); err != nil {
		t.Fatalf("alter_database_req: %v", err)
	}
	if got := read("after alter_database_req"); got.Description != "two" {
		t.Fatalf("get_database_req after alter_database_req: description %q, want %q (a stale cache entry)", got.Description, "two")
	}
	if n := p.Metric(t, "hms_proxy_cache_invalidations_total", "cache", "database_metadata", "catalog", "catalog4", "reason", "write"); n < 1 {
		t.Errorf("alter_database_req counted no write invalidation: %v", n)
	}

	// drop_database_req through the proxy: the next read is NoSuchObject.
	read("before drop_database_req") // cached again
	if err := c4.DropDatabaseReq(e2eutil.Ctx(t), &thriftgen.DropDatabaseRequest{Name: ext, CatalogName: &hive, DeleteData: true, Cascade: true}); err != nil {
		t.Fatalf("drop_database_req: %v", err)
	}
	_, err = c4.GetDatabaseReq(e2eutil.Ctx(t), req)
	var nse *thriftgen.NoSuchObjectException
	if !errors.As(err, &nse) {
		t.Fatalf("get_database_req after drop_database_req: %v, want NoSuchObjectException (a stale cache entry)", err)
	}
}
