package e2e

import (
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/router/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// The real Hive 3.1.3 HiveMetaStoreClient runs the DDL scenario through the
// proxy in both catalogs; each backend then holds what a direct run creates,
// under internal names.
func TestFederatedScenarioWithHive313Client(t *testing.T) {
	needHive(t)
	p := proxytest.Start(t, twoCatalogs())
	local, remote := uniq("fed"), uniq("fedr")
	testbed.RunScenarioT(t, testbed.Hive313, p.URI("primary"), "ddl",
		"--db", local, "--db", "catalog2__"+remote, "--keep")

	c1, c2 := proxytest.Client(t, hms1.URI), proxytest.Client(t, hms2.URI)
	t.Cleanup(func() {
		_ = c1.DropDatabase(ctx(t), local, true, true)
		_ = c2.DropDatabase(ctx(t), remote, true, true)
	})
	// Internal names on the backends: no prefix anywhere.
	if _, err := c1.GetDatabase(ctx(t), local); err != nil {
		t.Fatalf("catalog1's metastore lacks %s: %v", local, err)
	}
	if _, err := c2.GetDatabase(ctx(t), remote); err != nil {
		t.Fatalf("catalog2's metastore lacks %s (internal name of catalog2__%s): %v", remote, remote, err)
	}
	for _, c := range []*thriftgen.Client{c1, c2} {
		dbs, err := c.GetAllDatabases(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range dbs {
			if strings.Contains(d, "__") {
				t.Errorf("a backend holds an external name %q", d)
			}
		}
	}
	if _, err := c1.GetDatabase(ctx(t), remote); !isNotFound(err) {
		t.Errorf("catalog2's database leaked into catalog1: %v", err)
	}

	// The same scenario run directly against catalog2's metastore.
	direct := uniq("direct")
	testbed.RunScenarioT(t, testbed.Hive313, hms2.URI, "ddl", "--db", direct, "--keep")
	t.Cleanup(func() { _ = c2.DropDatabase(ctx(t), direct, true, true) })
	got, want := dump(t, c2, remote), dump(t, c2, direct)
	if got != want {
		t.Fatalf("through the proxy catalog2 holds\n%s\nbut a direct run creates\n%s", got, want)
	}
}

func isNotFound(err error) bool {
	var nso *thriftgen.NoSuchObjectException
	return errors.As(err, &nso)
}

// dump renders a database's tables and partitions with names and volatile
// values (times, locations, run ids) normalised, for comparing two runs.
func dump(t *testing.T, c *thriftgen.Client, db string) string {
	t.Helper()
	tables, err := c.GetAllTables(ctx(t), db)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(tables)
	var b strings.Builder
	for _, name := range tables {
		tb, err := c.GetTable(ctx(t), db, name)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("table type=" + tb.TableType + " owner=" + tb.Owner + "\n")
		for _, col := range tb.Sd.Cols {
			b.WriteString("  col " + col.Name + " " + col.Type + "\n")
		}
		for _, k := range tb.PartitionKeys {
			b.WriteString("  partkey " + k.Name + " " + k.Type + "\n")
		}
		keys := make([]string, 0, len(tb.Parameters))
		for k := range tb.Parameters {
			if k != "transient_lastDdlTime" && k != "last_modified_time" && k != "last_modified_by" {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			b.WriteString("  param " + k + "=" + tb.Parameters[k] + "\n")
		}
		parts, err := c.GetPartitionNames(ctx(t), db, name, -1)
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(parts)
		b.WriteString("  partitions " + strings.Join(parts, ",") + "\n")
	}
	return b.String()
}
