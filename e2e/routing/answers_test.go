package routing

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// answerOf names an outcome as a client sees it: "ok", "ok N" for a list
// of N, or the exception's type (a TApplicationException with its type).
func answerOf(n int, err error) string {
	var app thrift.TApplicationException
	switch {
	case err == nil && n < 0:
		return "ok"
	case err == nil:
		return fmt.Sprintf("ok %d", n)
	case errors.As(err, &app):
		return fmt.Sprintf("TApplicationException %d", app.TypeId())
	}
	name := fmt.Sprintf("%T", err)
	return name[strings.LastIndex(name, ".")+1:]
}

// answerCall is one call whose answer through the proxy must be the
// metastore's own; cat is the catName the request carries, where it has one.
type answerCall struct {
	name string
	do   func(c *thriftgen.Client, cat string) string
}

func answerCalls(t *testing.T) []answerCall {
	meta := func(c *thriftgen.Client, pattern string) string {
		m, err := c.GetTableMeta(e2eutil.Ctx(t), pattern, "*", nil)
		return answerOf(len(m), err)
	}
	return []answerCall{
		// A Hive 3 client's getTableMeta(catName, …) sends "@<catName>#<pattern>".
		{"get_table_meta of a catalog that does not exist", func(c *thriftgen.Client, _ string) string {
			return meta(c, "@nosuchcatalog#*")
		}},
		{"get_table_meta of a catalog pattern", func(c *thriftgen.Client, _ string) string { return meta(c, "@h*#*") }},
		{"get_table_meta of the empty database pattern", func(c *thriftgen.Client, _ string) string { return meta(c, "") }},
		{"get_table_meta of the empty database in the client's catalog", func(c *thriftgen.Client, cat string) string {
			return meta(c, "@"+cat+"#!")
		}},
		{"get_databases of a catalog that does not exist", func(c *thriftgen.Client, _ string) string {
			dbs, err := c.GetDatabases(e2eutil.Ctx(t), "@nosuchcatalog#*")
			return answerOf(len(dbs), err)
		}},
		{"get_databases of the empty pattern", func(c *thriftgen.Client, _ string) string {
			dbs, err := c.GetDatabases(e2eutil.Ctx(t), "")
			return answerOf(len(dbs), err)
		}},
		{"drop_catalog of a catalog that does not exist", func(c *thriftgen.Client, _ string) string {
			return answerOf(-1, c.DropCatalog(e2eutil.Ctx(t), &thriftgen.DropCatalogRequest{Name: "nosuchcatalog"}))
		}},
		// Hive 4.1's DropCatalogRequest.ifExists (Hive 3.1.3 skips it).
		{"drop_catalog of a catalog that does not exist, ifExists=false", func(c *thriftgen.Client, _ string) string {
			no := false
			return answerOf(-1, c.DropCatalog(e2eutil.Ctx(t), &thriftgen.DropCatalogRequest{Name: "nosuchcatalog", IfExists: &no}))
		}},
		{"drop_catalog of a catalog that does not exist, ifExists=true", func(c *thriftgen.Client, _ string) string {
			yes := true
			return answerOf(-1, c.DropCatalog(e2eutil.Ctx(t), &thriftgen.DropCatalogRequest{Name: "nosuchcatalog", IfExists: &yes}))
		}},
		{"alter_catalog of a catalog that does not exist", func(c *thriftgen.Client, _ string) string {
			return answerOf(-1, c.AlterCatalog(e2eutil.Ctx(t), &thriftgen.AlterCatalogRequest{Name: "nosuchcatalog",
				NewCat: &thriftgen.Catalog{Name: "nosuchcatalog", LocationUri: "file:///tmp/nosuchcatalog"}}))
		}},
		// The Java client fills catName from its configuration ("hive"); a
		// client that echoes what the proxy answered sends the proxy's name,
		// or with federation.preserve-backend-catalog-name=true the backend's.
		{"create_database with the empty name", func(c *thriftgen.Client, cat string) string {
			db := &thriftgen.Database{CatalogName: &cat}
			db.MarkPresent(1)
			return answerOf(-1, c.CreateDatabase(e2eutil.Ctx(t), db))
		}},
		{"create_table without a database", func(c *thriftgen.Client, cat string) string {
			tb := e2eutil.Table("", e2eutil.Uniq("nodb"))
			tb.CatName = &cat
			return answerOf(-1, c.CreateTable(e2eutil.Ctx(t), tb))
		}},
		{"create_function without a database", func(c *thriftgen.Client, cat string) string {
			return answerOf(-1, c.CreateFunction(e2eutil.Ctx(t), &thriftgen.Function{FunctionName: e2eutil.Uniq("nodb"), ClassName: "hmsproxy.Nothing",
				OwnerName: "e2e", OwnerType: thriftgen.PrincipalType_USER, FunctionType: thriftgen.FunctionType_JAVA,
				ResourceUris: []*thriftgen.ResourceUri{}, CatName: &cat}))
		}},
	}
}

// Answers that differed from the metastore's (issue 20): asked of a real
// Hive 3.1.3 and 4.1.0 directly and, as the default catalog of a two-catalog
// proxy, through the proxy's front door of the same version, with
// federation.preserve-backend-catalog-name off and on and the catName a
// client sends either way (its own "hive", or the name the proxy answered):
// the answer is the metastore's. Both metastores hold tables, so an answer
// of "every table" could not pass for "none".
func TestAnswersAreTheMetastoresOwn(t *testing.T) {
	e2eutil.NeedHive(t)
	e2eutil.MkDB(t, proxytest.Client(t, e2eutil.HMS2.URI), e2eutil.Uniq("ans2"))
	for _, v := range []struct {
		name    string
		backend func() *testbed.Metastore
		extra   []string
		door    string
	}{
		{"hive-3.1.3", func() *testbed.Metastore { return e2eutil.HMS1 }, nil, "primary"},
		{"hive-4.1.0", func() *testbed.Metastore { return e2eutil.HMS4 }, []string{"catalog.catalog1.runtime-profile=APACHE_4_1_0"}, "hive4"},
	} {
		t.Run(v.name, func(t *testing.T) {
			backend := v.backend()
			direct := proxytest.Client(t, backend.URI)
			db := e2eutil.Uniq("ans")
			e2eutil.MkDB(t, direct, db)
			e2eutil.MkTable(t, direct, db, "t1")
			if m, err := direct.GetTableMeta(e2eutil.Ctx(t), "*", "*", nil); err != nil || len(m) == 0 {
				t.Fatalf("get_table_meta of every table, directly: %d tables, %v", len(m), err)
			}
			calls := answerCalls(t)
			want := make([]string, len(calls))
			for i, c := range calls {
				want[i] = c.do(direct, "hive")
			}
			for _, preserve := range []string{"false", "true"} {
				p := proxytest.Start(t, e2eutil.WithHive4Frontend(t, e2eutil.TwoCatalogs(append([]string{
					"catalog.catalog1.conf.hive.metastore.uris=" + backend.URI,
					"federation.preserve-backend-catalog-name=" + preserve}, v.extra...)...)))
				c := proxytest.Client(t, p.URI(v.door))
				for _, cat := range []string{"hive", "catalog1"} {
					for i, call := range calls {
						if got := call.do(c, cat); got != want[i] {
							t.Errorf("preserve-backend-catalog-name=%s, catName %s: %s: the proxy answers %q, Hive %s answers %q",
								preserve, cat, call.name, got, v.name, want[i])
						} else {
							t.Logf("preserve-backend-catalog-name=%s, catName %s: %s: %s as Hive", preserve, cat, call.name, got)
						}
					}
				}
			}
		})
	}
}
