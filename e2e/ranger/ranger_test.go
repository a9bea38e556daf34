package ranger

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"
	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// The world of these tests: two real Hive 3.1.3 metastores, catalog1
// (default, hms1) and hx (hms2), each holding databases pub (tables vis_a and
// hid_x, partition p=1 each), sec (table t1, function f1) and fin (table
// ledger). The policies of Ranger service hms_e2e, as an operator would write
// them in Ranger Admin, name backend databases:
//
//	10 pub / vis_* / *   allow select, update, alter, lock  to alice and the Java client's user
//	11 fin / *    / *    allow all                          to group finance (bob's, from set_ugi)
//	12 pub / vis_* / *   deny drop                          to alice
//
// So alice sees pub (with vis_a only) and nothing of sec or fin; bob sees fin
// only; nobody may drop vis_a.
type world struct {
	admin    *testbed.RangerAdmin
	p        *proxytest.Proxy
	pub, sec string
	fin      string
	direct   map[string]*thriftgen.Client // by catalog
	cacheDir string
	audit    string
	props    map[string]string // the proxy's settings
}

const service = "hms_e2e"

// javaUser is the user the Java client's set_ugi asserts: the process's.
func javaUser(t *testing.T) string {
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return u.Username
}

// policy is one Ranger policy of the test, in the fields that differ.
type policy struct {
	id        int
	db, table string
	users     []string
	groups    []string
	access    []string
	deny      bool
	udf       bool
}

// servicePolicies is a ServicePolicies download document (version v) of
// the policies, with the Hive service definition and configuration of the
// phase-1 sample (security/ranger/testdata).
func servicePolicies(t *testing.T, v int, ps ...policy) []byte {
	_, file, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "security", "ranger", "testdata", "hms_hive-policies.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	doc["serviceName"], doc["policyVersion"] = service, v
	var out []any
	for _, p := range ps {
		res := func(vals ...string) map[string]any {
			return map[string]any{"values": vals, "isExcludes": false, "isRecursive": false}
		}
		resources := map[string]any{"database": res(p.db), "table": res(p.table), "column": res("*")}
		if p.udf {
			resources = map[string]any{"database": res(p.db), "udf": res(p.table)}
		}
		var accesses []any
		for _, a := range p.access {
			accesses = append(accesses, map[string]any{"type": a, "isAllowed": true})
		}
		item := map[string]any{"accesses": accesses, "users": nonNil(p.users), "groups": nonNil(p.groups), "roles": []string{},
			"conditions": []any{}, "delegateAdmin": false}
		pol := map[string]any{"id": p.id, "guid": fmt.Sprintf("e2e-%d", p.id), "isEnabled": true, "version": 1, "service": service,
			"name": fmt.Sprintf("e2e policy %d", p.id), "policyType": 0, "policyPriority": 0, "isAuditEnabled": true,
			"resources": resources, "policyItems": []any{}, "denyPolicyItems": []any{}, "allowExceptions": []any{},
			"denyExceptions": []any{}, "dataMaskPolicyItems": []any{}, "rowFilterPolicyItems": []any{}, "serviceType": "hive",
			"validitySchedules": []any{}, "isDenyAllElse": false}
		if p.deny {
			pol["denyPolicyItems"] = []any{item}
		} else {
			pol["policyItems"] = []any{item}
		}
		out = append(out, pol)
	}
	doc["policies"] = out
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// roles is the service's RangerRoles download: none defined, as Admin
// answers for a service without roles.
func roles() []byte {
	return []byte(`{"serviceName":"` + service + `","roleVersion":1,"rangerRoles":[]}`)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// newWorld populates both metastores, serves the policies and starts the
// proxy with Ranger on (extra: more settings, key=value).
func newWorld(t *testing.T, extra ...string) *world {
	t.Helper()
	e2eutil.NeedHive(t)
	id := e2eutil.Uniq("")
	w := &world{pub: "rg_pub" + id, sec: "rg_sec" + id, fin: "rg_fin" + id, cacheDir: t.TempDir(),
		audit:  filepath.Join(t.TempDir(), "audit.log"),
		direct: map[string]*thriftgen.Client{"catalog1": proxytest.Client(t, e2eutil.HMS1.URI), "hx": proxytest.Client(t, e2eutil.HMS2.URI)}}
	for _, kv := range extra { // a catalog on another metastore of the test's
		if k, v, _ := strings.Cut(kv, "="); k == "catalog.catalog1.conf.hive.metastore.uris" {
			w.direct["catalog1"] = proxytest.Client(t, v)
		}
	}
	for _, d := range w.direct {
		for _, db := range []string{w.pub, w.sec, w.fin} {
			e2eutil.MkDB(t, d, db)
		}
		e2eutil.AdPartitioned(t, d, w.pub, "vis_a", "1")
		e2eutil.AdPartitioned(t, d, w.pub, "hid_x", "1")
		e2eutil.AdPartitioned(t, d, w.sec, "t1", "1")
		e2eutil.MkTable(t, d, w.fin, "ledger")
		if err := d.CreateFunction(e2eutil.Ctx(t), &thriftgen.Function{FunctionName: "f1", DbName: w.sec, ClassName: "e2e.F",
			OwnerName: "e2e", OwnerType: thriftgen.PrincipalType_USER, FunctionType: thriftgen.FunctionType_JAVA}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			for _, db := range []string{w.pub, w.sec, w.fin} {
				_ = d.DropDatabase(e2eutil.Ctx(t), db, true, true)
			}
		})
	}
	var err error
	if w.admin, err = testbed.StartRangerAdmin(testbed.RangerAdminOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.admin.Close)
	w.admin.SetPolicies(service, w.policies(t, 1))
	w.admin.SetRoles(service, roles())
	props := e2eutil.TwoCatalogs()
	delete(props, "catalog.catalog2.conf.hive.metastore.uris")
	props["catalogs"] = "catalog1,hx"
	props["catalog.hx.conf.hive.metastore.uris"] = e2eutil.HMS2.URI
	for k, v := range map[string]string{"ranger.enabled": "true", "ranger.policy.rest.url": w.admin.URL,
		"ranger.service-name": service, "ranger.policy.cache.dir": w.cacheDir, "ranger.policy.poll-interval-ms": "600000",
		"audit.enabled": "true", "audit.file": w.audit} {
		props[k] = v
	}
	for _, kv := range extra {
		k, v, _ := strings.Cut(kv, "=")
		props[k] = v
	}
	w.props = props
	w.p = proxytest.Start(t, e2eutil.WithHive4Frontend(t, props))
	return w
}

// withoutHive4Listener is a copy of the proxy's settings for another proxy
// (the first one's Hive 4 listener keeps its port).
func (w *world) withoutHive4Listener() map[string]string {
	props := map[string]string{}
	for k, v := range w.props {
		if !strings.HasPrefix(k, "additional-frontends") {
			props[k] = v
		}
	}
	return props
}

func (w *world) policies(t *testing.T, v int) []byte {
	return servicePolicies(t, v,
		policy{id: 10, db: w.pub, table: "vis_*", users: []string{"alice", javaUser(t)}, access: []string{"select", "update", "alter", "lock"}},
		policy{id: 11, db: w.fin, table: "*", groups: []string{"finance"}, access: []string{"all"}},
		policy{id: 12, db: w.pub, table: "vis_*", users: []string{"alice"}, access: []string{"drop"}, deny: true},
		// Ranger's usual default-database policy: every client (Spark's
		// session) reads database default first.
		policy{id: 13, db: "default", table: "*", groups: []string{"public"}, access: []string{"select"}})
}

// as is a proxy client asserting user and groups with set_ugi (the proxy's
// front door is not Kerberized here: set_ugi names the caller, as Hive's
// own metastore takes it).
func (w *world) as(t *testing.T, name string, groups ...string) *thriftgen.Client {
	t.Helper()
	c := proxytest.Client(t, w.p.URI("primary"))
	if _, err := c.SetUgi(e2eutil.Ctx(t), name, groups); err != nil {
		t.Fatal(err)
	}
	return c
}

// snapshot is what both metastores hold of the world, read directly.
func (w *world) snapshot(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, cat := range []string{"catalog1", "hx"} {
		c := w.direct[cat]
		for _, db := range []string{w.pub, w.sec, w.fin} {
			d, err := c.GetDatabase(e2eutil.Ctx(t), db)
			if err != nil {
				fmt.Fprintf(&b, "%s %s: %v\n", cat, db, err)
				continue
			}
			fmt.Fprintf(&b, "%s database %s %q\n", cat, d.Name, d.Description)
			tables, err := c.GetAllTables(e2eutil.Ctx(t), db)
			if err != nil {
				t.Fatal(err)
			}
			sort.Strings(tables)
			for _, name := range tables {
				tb, err := c.GetTable(e2eutil.Ctx(t), db, name)
				if err != nil {
					t.Fatal(err)
				}
				var params []string
				for k, v := range tb.Parameters {
					if k != "transient_lastDdlTime" && k != "last_modified_time" && k != "last_modified_by" {
						params = append(params, k+"="+v)
					}
				}
				sort.Strings(params)
				parts, _ := c.GetPartitionNames(e2eutil.Ctx(t), db, name, -1)
				fmt.Fprintf(&b, "  table %s %v partitions %v\n", name, params, parts)
			}
			fns, _ := c.GetFunctions(e2eutil.Ctx(t), db, "*")
			fmt.Fprintf(&b, "  functions %v\n", fns)
		}
	}
	return b.String()
}

// ours keeps the names of the world's databases from a list (both catalogs).
func (w *world) ours(names []string) []string {
	var out []string
	for _, n := range names {
		base := strings.TrimPrefix(n, "hx__")
		if base == w.pub || base == w.sec || base == w.fin {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Two users with different policies see different databases and tables
// through every form: the fan-out lists over both catalogs, the lists of one
// database, the *_req lookups, TableMeta; a lookup of what the caller has no
// access to is not-found, as if it did not exist.
func TestRangerUsersSeeTheirOwn(t *testing.T) {
	w := newWorld(t)
	ctx := e2eutil.Ctx(t)
	alice, bob := w.as(t, "alice"), w.as(t, "bob", "finance")

	for _, c := range []struct {
		who  string
		c    *thriftgen.Client
		want []string
	}{{"alice", alice, []string{"hx__" + w.pub, w.pub}}, {"bob", bob, []string{"hx__" + w.fin, w.fin}}} {
		all, err := c.c.GetAllDatabases(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := w.ours(all); !slices.Equal(got, c.want) {
			t.Errorf("%s: get_all_databases over both catalogs = %v, want %v", c.who, got, c.want)
		}
		some, err := c.c.GetDatabases(ctx, "*rg_*")
		if err != nil {
			t.Fatal(err)
		}
		if got := w.ours(some); !slices.Equal(got, c.want) {
			t.Errorf("%s: get_databases(pattern) = %v, want %v", c.who, got, c.want)
		}
	}
	tables, err := alice.GetTables(ctx, "hx__"+w.pub, "*")
	if err != nil || !slices.Equal(tables, []string{"vis_a"}) {
		t.Errorf("alice: get_tables(hx__%s) = %v, %v; want [vis_a]", w.pub, tables, err)
	}
	res, err := alice.GetTableObjectsByNameReq(ctx, &thriftgen.GetTablesRequest{DbName: "hx__" + w.pub, TblNames: []string{"vis_a", "hid_x"}})
	if err != nil || len(res.Tables) != 1 || res.Tables[0].TableName != "vis_a" {
		t.Errorf("alice: get_table_objects_by_name_req = %v, %v; want vis_a only", res, err)
	}
	metas, err := alice.GetTableMeta(ctx, "*"+w.pub, "*", nil)
	var got []string
	for _, m := range metas {
		got = append(got, m.DbName+"."+m.TableName)
	}
	sort.Strings(got)
	if want := []string{"hx__" + w.pub + ".vis_a", w.pub + ".vis_a"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("alice: get_table_meta = %v, %v; want %v", got, err, want)
	}
	if _, err := alice.GetTableReq(ctx, &thriftgen.GetTableRequest{DbName: "hx__" + w.pub, TblName: "hid_x"}); !notFound(err, "hx__"+w.pub+".hid_x") {
		t.Errorf("alice: get_table_req of hid_x: %v; want NoSuchObjectException naming it", err)
	}
	if _, err := bob.GetTableReq(ctx, &thriftgen.GetTableRequest{DbName: "hx__" + w.pub, TblName: "vis_a"}); !notFound(err, "hx__"+w.pub) {
		t.Errorf("bob: get_table_req of pub.vis_a: %v; want NoSuchObjectException naming the database", err)
	}
	if _, err := bob.GetDatabase(ctx, w.sec); !notFound(err, w.sec) {
		t.Errorf("bob: get_database(%s): %v; want NoSuchObjectException", w.sec, err)
	}
	if _, err := bob.GetTableReq(ctx, &thriftgen.GetTableRequest{DbName: "hx__" + w.fin, TblName: "ledger"}); err != nil {
		t.Errorf("bob: get_table_req of his own table: %v", err)
	}
	stats := func(table string) error {
		_, err := alice.GetTableStatisticsReq(ctx, &thriftgen.TableStatsRequest{DbName: "hx__" + w.pub, TblName: table, ColNames: []string{"id"}})
		return err
	}
	if err := stats("vis_a"); err != nil {
		t.Errorf("alice: get_table_statistics_req of vis_a: %v", err)
	}
	if err := stats("hid_x"); !notFound(err, "hid_x") {
		t.Errorf("alice: get_table_statistics_req of hid_x: %v; want not-found", err)
	}
	if fns, err := alice.GetFunctions(ctx, "hx__"+w.sec, "*"); err == nil && len(fns) > 0 {
		t.Errorf("alice: get_functions of sec = %v", fns)
	}
	if n := w.p.Metric(t, "hms_proxy_ranger_evaluations_total", "catalog", "hx"); n == 0 {
		t.Errorf("hms_proxy_ranger_evaluations_total{catalog=hx} did not move")
	}
	if n := w.p.Metric(t, "hms_proxy_ranger_filtered_objects_total", "catalog", "hx", "resource_type", "database"); n == 0 {
		t.Errorf("hms_proxy_ranger_filtered_objects_total{catalog=hx,resource_type=database} did not move")
	}
}

// notFound: a NoSuchObjectException (or the RPC's other not-found
// exception, a MetaException saying so for the RPCs that declare no other)
// naming what.
func notFound(err error, what string) bool {
	var nso *thriftgen.NoSuchObjectException
	var udb *thriftgen.UnknownDBException
	var me *thriftgen.MetaException
	switch {
	case errors.As(err, &me):
		return strings.Contains(me.Message, what+" not found")
	case errors.As(err, &nso):
		return strings.Contains(nso.Message, what)
	case errors.As(err, &udb):
		return strings.Contains(udb.Message, what)
	}
	return false
}

// Writes through the proxy are judged with create, alter, drop and update:
// a drop the policies deny changes nothing on the backend (read back
// directly), and the audit record names Ranger's decision and the policy
// that decided; a drop of what bob owns by policy goes through.
func TestRangerDeniedWritesChangeNothing(t *testing.T) {
	w := newWorld(t)
	ctx := e2eutil.Ctx(t)
	alice, bob := w.as(t, "alice"), w.as(t, "bob", "finance")
	before := w.snapshot(t)
	for _, c := range []struct {
		what string
		err  error
		want string
	}{
		{"alice drops vis_a (denied by policy 12)", alice.DropTable(ctx, "hx__"+w.pub, "vis_a", true), "drop access to table hx__" + w.pub + ".vis_a"},
		{"alice drops hid_x (no access at all)", alice.DropTable(ctx, "hx__"+w.pub, "hid_x", true), "not found"},
		{"alice creates a table in pub", alice.CreateTable(ctx, e2eutil.Table("hx__"+w.pub, "vis_new")), "create access to table"},
		{"alice drops database fin", alice.DropDatabase(ctx, "hx__"+w.fin, true, true), "not found"},
		{"bob drops pub.vis_a", bob.DropTable(ctx, "hx__"+w.pub, "vis_a", true), "not found"},
		{"bob creates a table in pub", bob.CreateTable(ctx, e2eutil.Table("hx__"+w.pub, "b_new")), "not found"},
		{"alice adds a partition to hid_x (add_partitions_req)", addParts(alice, "hx__"+w.pub, "hid_x"), "not found"},
		{"bob adds a partition to pub.vis_a (add_partitions_req)", addParts(bob, "hx__"+w.pub, "vis_a"), "not found"},
		{"alice drops a partition of hid_x (drop_partitions_req)", dropParts(alice, "hx__"+w.pub, "hid_x"), "not found"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: %v; want an error containing %q", c.what, c.err, c.want)
		}
	}
	if now := w.snapshot(t); now != before {
		t.Fatalf("denied writes changed the metastores:\nbefore:\n%s\nafter:\n%s", before, now)
	}
	if err := bob.DropTable(ctx, "hx__"+w.fin, "ledger", true); err != nil {
		t.Fatalf("bob drops his own table: %v", err)
	}
	if _, err := w.direct["hx"].GetTable(ctx, w.fin, "ledger"); err == nil {
		t.Fatal("bob's allowed drop did not reach the backend")
	}
	rec := w.auditRecord(t, `"method":"drop_table"`, `"rangerDecision":"denied"`, `"rangerPolicyId":12`)
	if rec == "" {
		t.Errorf("no audit record of the denied drop naming policy 12")
	}
}

// addParts adds partition p=9 with add_partitions_req.
func addParts(c *thriftgen.Client, db, table string) error {
	tb := e2eutil.Table(db, table)
	_, err := c.AddPartitionsReq(context.Background(), &thriftgen.AddPartitionsRequest{DbName: db, TblName: table,
		Parts:       []*thriftgen.Partition{{Values: []string{"9"}, DbName: db, TableName: table, Sd: tb.Sd, Parameters: map[string]string{}}},
		IfNotExists: true})
	return err
}

// dropParts drops partition p=1 with drop_partitions_req.
func dropParts(c *thriftgen.Client, db, table string) error {
	_, err := c.DropPartitionsReq(context.Background(), &thriftgen.DropPartitionsRequest{DbName: db, TblName: table,
		Parts: &thriftgen.RequestPartsSpec{Names: []string{"p=1"}}})
	return err
}

// auditRecord finds an audit line holding every fragment.
func (w *world) auditRecord(t *testing.T, fragments ...string) string {
	t.Helper()
	f, err := os.Open(w.audit)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		line := s.Text()
		all := true
		for _, fr := range fragments {
			all = all && strings.Contains(line, fr)
		}
		if all {
			return line
		}
	}
	return ""
}

// The real Java HiveMetaStoreClients (Hive 3.1.3, and Hive 4.1.0 with its
// *_req forms through the proxy's Hive 4 listener) as a user whose policies
// give it pub.vis_* only: every RPC family aimed at sec or pub.hid_x fails as
// for an object that does not exist (the exposure scenario, whose
// expectations are the same), lists leave them out, and neither metastore
// changed.
func TestRangerJavaClientSeesOnlyItsObjects(t *testing.T) {
	w := newWorld(t)
	before := w.snapshot(t)
	for client, listener := range map[testbed.Version]string{testbed.Hive313: "primary", testbed.Hive410: "hive4"} {
		testbed.RunScenarioT(t, client, w.p.URI(listener), "exposure",
			"--secret-db", "hx__"+w.sec, "--pub-db", "hx__"+w.pub, "--hidden-table", "hid_x",
			"--visible-table", "vis_a", "--secret-table", "t1")
	}
	if now := w.snapshot(t); now != before {
		t.Fatalf("the metastores changed:\nbefore:\n%s\nafter:\n%s", before, now)
	}
}

// Ranger Admin down at start: with the policy cache of an earlier run, the
// last policies are enforced; without one, the guarded catalogs refuse every
// call, naming Ranger and the service.
func TestRangerAdminDownAtStart(t *testing.T) {
	w := newWorld(t)
	ctx := e2eutil.Ctx(t)
	files, _ := filepath.Glob(filepath.Join(w.cacheDir, "*"))
	if len(files) == 0 {
		t.Fatalf("the first run wrote no policy cache in %s", w.cacheDir)
	}
	_ = w.p.Shutdown(ctx)
	w.admin.Close()
	props := w.withoutHive4Listener()
	props["ranger.policy.connection-timeout-ms"], props["ranger.policy.read-timeout-ms"] = "500", "500"
	cached := proxytest.Start(t, props)
	c := proxytest.Client(t, cached.URI("primary"))
	if _, err := c.SetUgi(ctx, "alice", nil); err != nil {
		t.Fatal(err)
	}
	all, err := c.GetAllDatabases(ctx)
	if got := w.ours(all); err != nil || !slices.Equal(got, []string{"hx__" + w.pub, w.pub}) {
		t.Errorf("with Admin down and the cache: alice sees %v, %v; want pub in both catalogs", got, err)
	}
	if st := rangerReadyz(t, cached); len(st) != 1 || st[0]["ready"] != true || !strings.HasPrefix(fmt.Sprint(st[0]["source"]), "cache ") ||
		fmt.Sprint(st[0]["catalogs"]) != "[catalog1 hx]" {
		t.Errorf("/readyz ranger with the cache: %v; want ready from the cache, guarding both catalogs", st)
	}
	_ = cached.Shutdown(ctx)

	props["ranger.policy.cache.dir"] = t.TempDir()
	bare := proxytest.Start(t, props)
	c = proxytest.Client(t, bare.URI("primary"))
	if _, err := c.SetUgi(ctx, "alice", nil); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetAllDatabases(ctx)
	var me *thriftgen.MetaException
	if !errors.As(err, &me) || !strings.Contains(me.Message, "ranger") || !strings.Contains(me.Message, service) {
		t.Errorf("with Admin down and no cache: %v; want a MetaException naming Ranger service %s", err, service)
	}
	if _, err := c.GetTable(ctx, "hx__"+w.pub, "vis_a"); !errors.As(err, &me) || !strings.Contains(me.Message, "not in force") {
		t.Errorf("get_table with Admin down and no cache: %v; want a refusal saying the policies are not in force", err)
	}
	if st := rangerReadyz(t, bare); len(st) != 1 || st[0]["ready"] != false || !strings.Contains(fmt.Sprint(st[0]["notReady"]), service) {
		t.Errorf("/readyz ranger without the cache: %v; want not ready, naming the service", st)
	}
}

// rangerReadyz is /readyz's "ranger" section.
func rangerReadyz(t *testing.T, p *proxytest.Proxy) []map[string]any {
	t.Helper()
	resp, err := http.Get(p.ManagementURL() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Ranger []map[string]any `json:"ranger"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.Ranger
}

// Shared across users, the caches hold the table lists and table objects
// once for every caller: a second user's SHOW TABLES and get_table_req reach
// the metastore no more, yet each caller gets only what its policies give
// it, and a caller without access is answered not-found without the cache
// telling it anything. A write through the proxy drops the database's
// entries, so the next read sees it.
func TestRangerSharedCachesFilteredPerCaller(t *testing.T) {
	e2eutil.NeedHive(t)
	tap := proxytest.NewTap(t, e2eutil.HMS2.URI)
	w := newWorld(t, "catalog.hx.conf.hive.metastore.uris="+tap.URI(),
		"routing.database-list-cache.ttl-ms=600000", "routing.database-list-cache.shared-across-users=true",
		"routing.database-metadata-cache.ttl-ms=600000", "routing.database-metadata-cache.shared-across-users=true")
	ctx := e2eutil.Ctx(t)
	alice, java, bob := w.as(t, "alice"), w.as(t, javaUser(t)), w.as(t, "bob", "finance")
	count := func(method string) int {
		n := 0
		for _, m := range tap.Methods() {
			if m == method {
				n++
			}
		}
		return n
	}
	db := "hx__" + w.pub
	for _, c := range []*thriftgen.Client{alice, java, alice} {
		tables, err := c.GetTables(ctx, db, "*")
		if err != nil || !slices.Equal(tables, []string{"vis_a"}) {
			t.Fatalf("get_tables(%s) = %v, %v; want [vis_a]", db, tables, err)
		}
		res, err := c.GetTableReq(ctx, &thriftgen.GetTableRequest{DbName: db, TblName: "vis_a"})
		if err != nil || res.Table.TableName != "vis_a" {
			t.Fatalf("get_table_req(vis_a) = %v, %v", res, err)
		}
	}
	if _, err := bob.GetTables(ctx, db, "*"); !notFound(err, db) {
		t.Errorf("bob: get_tables(%s) from the shared cache: %v; want not-found", db, err)
	}
	if _, err := bob.GetTableReq(ctx, &thriftgen.GetTableRequest{DbName: db, TblName: "vis_a"}); !notFound(err, db) {
		t.Errorf("bob: get_table_req(vis_a) from the shared cache: %v; want not-found", err)
	}
	if n, m := count("get_tables"), count("get_table_req"); n != 1 || m != 1 {
		t.Fatalf("three callers' reads reached the metastore %d (get_tables) and %d (get_table_req) times; want once each", n, m)
	}
	// alice alters vis_a (policy 10 gives her alter): the entries of pub go.
	res, err := alice.GetTableReq(ctx, &thriftgen.GetTableRequest{DbName: db, TblName: "vis_a"})
	if err != nil {
		t.Fatal(err)
	}
	tb := res.Table
	tb.Parameters["ranger_e2e"] = "altered"
	if err := alice.AlterTable(ctx, db, "vis_a", tb); err != nil {
		t.Fatalf("alice alters vis_a: %v", err)
	}
	before := count("get_table_req") // the alter's own guards may read the table
	for i := 0; i < 2; i++ {
		res, err = java.GetTableReq(ctx, &thriftgen.GetTableRequest{DbName: db, TblName: "vis_a"})
		if err != nil || res.Table.Parameters["ranger_e2e"] != "altered" {
			t.Fatalf("after the alter, get_table_req answers %v, %v; want the altered table", res, err)
		}
	}
	if m := count("get_table_req"); m != before+1 {
		t.Errorf("two reads after the write reached the metastore %d times; want once", m-before)
	}
}

// A catalog with its own Ranger service (catalog.hx.ranger.service-name) is
// judged by that service's policies only: alice's grant on fin in hx's
// service shows her fin in hx, not in catalog1, whose shared service does
// not give it; the two plugins are isolated.
func TestRangerPerCatalogService(t *testing.T) {
	const hxService = "hms_e2e_hx"
	w := newWorld(t, "catalog.hx.ranger.service-name="+hxService)
	ctx := e2eutil.Ctx(t)
	// The proxy started before hx's service had policies: its catalog
	// refuses until a download brings them. (Asked before the policies
	// exist, so a poll of the plugin cannot race the refusal.)
	alice := w.as(t, "alice")
	_, err := alice.GetAllDatabases(ctx)
	var me *thriftgen.MetaException
	if !errors.As(err, &me) || !strings.Contains(me.Message, hxService) {
		t.Fatalf("before hx's service had policies: %v; want a refusal naming %s", err, hxService)
	}
	w.admin.SetPolicies(hxService, []byte(strings.Replace(string(servicePolicies(t, 1,
		policy{id: 40, db: w.fin, table: "*", users: []string{"alice"}, access: []string{"select"}})), `"serviceName":"`+service+`"`, `"serviceName":"`+hxService+`"`, 1)))
	w.admin.SetRoles(hxService, []byte(`{"serviceName":"`+hxService+`","roleVersion":1,"rangerRoles":[]}`))
	for _, pl := range w.p.RangerPlugins() {
		if err := pl.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	all, err := alice.GetAllDatabases(ctx)
	if got := w.ours(all); err != nil || strings.Join(got, ",") != "hx__"+w.fin+","+w.pub {
		t.Errorf("alice with hx's own service: %v, %v; want fin in hx and pub in catalog1 only", got, err)
	}
}

// Notifications (catalog1 on a metastore of its own that records its events):
// alice reads the events of tables she may see, and the
// count of a database's events the proxy answers her is the number of those
// events, not the metastore's (which counts hid_x's creation and partition
// too).
func TestRangerNotificationsCountWhatTheCallerReads(t *testing.T) {
	e2eutil.NeedHive(t)
	ctx := e2eutil.Ctx(t)
	ms := testbed.StartMetastoreWithT(t, testbed.Hive313, testbed.MetastoreOptions{Notifications: true})
	cur, err := proxytest.Client(t, ms.URI).GetCurrentNotificationEventId(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, "catalog.catalog1.conf.hive.metastore.uris="+ms.URI)
	alice := w.as(t, "alice")
	max := int32(100000)
	res, err := alice.GetNextNotification(ctx, &thriftgen.NotificationEventRequest{LastEvent: cur.EventId, MaxEvents: &max})
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	for _, e := range res.Events {
		if e.DbName != nil && *e.DbName == w.pub {
			read++
			if e.TableName != nil && *e.TableName == "hid_x" {
				t.Errorf("alice read an event of hid_x: %v", e)
			}
		}
	}
	count, err := alice.GetNotificationEventsCount(ctx, &thriftgen.NotificationEventsCountRequest{FromEventId: cur.EventId, DbName: w.pub})
	if err != nil {
		t.Fatal(err)
	}
	direct, err := w.direct["catalog1"].GetNotificationEventsCount(ctx, &thriftgen.NotificationEventsCountRequest{FromEventId: cur.EventId, DbName: w.pub})
	if err != nil {
		t.Fatal(err)
	}
	if read == 0 || count.EventsCount != int64(read) || direct.EventsCount <= count.EventsCount {
		t.Errorf("alice reads %d events of %s and is told %d (the metastore counts %d); want her count equal to what she reads, below the metastore's",
			read, w.pub, count.EventsCount, direct.EventsCount)
	}
}
