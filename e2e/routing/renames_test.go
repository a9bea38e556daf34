package routing

import (
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Issue 20, item 5: renaming catalog2's table to a plain database name moves
// it to the default catalog (a plain name is the default catalog's), which
// no metastore can do: every alter_table form answers
// InvalidOperationException naming both catalogs and nothing moves, although
// catalog2 has a database of that plain name too (where the table used to
// land). Trino's ALTER TABLE hive.catalog2__s2.t RENAME TO hive.s1.moved is
// get_table, then alter_table_with_environment_context of the Table it got
// (catName catalog2, as the proxy answered) with dbName s1, made here by the
// real client's own Thrift stub; the Java client's alter_table adds Hive 3's
// "@hive#" marker, and Hive 4.1's sends alter_table_req.
func TestCrossCatalogRenameToAPlainDatabaseIsRefused(t *testing.T) {
	e2eutil.NeedHive(t)
	d1, d2 := proxytest.Client(t, e2eutil.HMS1.URI), proxytest.Client(t, e2eutil.HMS2.URI)
	s1, s2 := e2eutil.Uniq("s1"), e2eutil.Uniq("s2")
	e2eutil.MkDB(t, d1, s1) // the default catalog's s1: where the plain name points
	e2eutil.MkDB(t, d2, s1) // catalog2's own s1
	e2eutil.MkDB(t, d2, s2)
	e2eutil.MkTable(t, d2, s2, "t")
	p := proxytest.Start(t, e2eutil.WithHive4Frontend(t, e2eutil.TwoCatalogs()))
	src := "catalog2__" + s2
	rename := src + ":t:" + s1 + ":moved"
	refused := func(op string) sessionStep {
		return sessionStep{op: op, want: "InvalidOperationException: ",
			has: []string{"cannot move a table between catalogs", "catalog catalog2", s1 + " of catalog catalog1"}}
	}
	clientSessions(t, testbed.Hive313, nil, p.URI("primary"), []sessionStep{
		refused("alter_table:" + rename),
		refused("raw:alter_table:" + rename),
		refused("raw:alter_table_with_cascade:" + rename),
		refused("raw:alter_table_with_environment_context:" + rename),
	})
	clientSessions(t, testbed.Hive410, nil, p.URI("hive4"), []sessionStep{refused("alter_table:" + rename)})
	for _, m := range []string{"alter_table", "alter_table_with_cascade", "alter_table_with_environment_context", "alter_table_req"} {
		if n := p.Metric(t, "hms_proxy_requests_total", "method", m, "status", "error"); n < 1 {
			t.Errorf("no refused %s reached the proxy: the clients did not send every form", m)
		}
	}
	moved := func(c *thriftgen.Client, db string) bool {
		_, err := c.GetTableReq(e2eutil.Ctx(t), &thriftgen.GetTableRequest{DbName: db, TblName: "moved"})
		if err != nil && !e2eutil.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	if _, err := d2.GetTableReq(e2eutil.Ctx(t), &thriftgen.GetTableRequest{DbName: s2, TblName: "t"}); err != nil {
		t.Fatalf("catalog2's %s.t after the refused renames: %v", s2, err)
	}
	if moved(d2, s1) || moved(d1, s1) {
		t.Fatal("a refused rename moved the table")
	}
	// Within catalog2, by its external names, the rename works.
	clientSessions(t, testbed.Hive313, nil, p.URI("primary"), []sessionStep{
		{op: "alter_table:" + src + ":t:catalog2__" + s1 + ":moved", want: "ok"}})
	if !moved(d2, s1) {
		t.Fatalf("a rename from catalog2__%s to catalog2__%s did not reach catalog2's metastore", s2, s1)
	}
}
