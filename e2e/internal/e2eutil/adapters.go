package e2eutil

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// AdapterEnv is one row's deployment: catalog1 (default, Hive 3.1.3) and
// catalog2 (Hive 3.1.3, or Hive 4.1 for the upgrade adapters), each behind a
// Tap, with the primary APACHE_3_1_3 listener and an APACHE_4_1_0 one.
type AdapterEnv struct {
	P          *proxytest.Proxy
	Tap1, Tap2 *proxytest.Tap
	Direct     *thriftgen.Client // catalog2's metastore itself
	Direct1    *thriftgen.Client // catalog1's metastore itself
	C3, C4     *thriftgen.Client // through the APACHE_3_1_3 and APACHE_4_1_0 listeners
	Db         string            // a database on catalog2's metastore (internal name)
}

// ext is the database as clients of the proxy name it.
func (e *AdapterEnv) Ext() string { return "catalog2__" + e.Db }

// partitioned creates db.name on catalog2's metastore, partitioned by p,
// with partitions p=<vals>.
func (e *AdapterEnv) Partitioned(t *testing.T, name string, vals ...string) *thriftgen.Table {
	t.Helper()
	return AdPartitioned(t, e.Direct, e.Db, name, vals...)
}

func AdPartitioned(t *testing.T, c *thriftgen.Client, db, name string, vals ...string) *thriftgen.Table {
	t.Helper()
	tb := Table(db, name)
	tb.PartitionKeys = []*thriftgen.FieldSchema{{Name: "p", Type: "string"}}
	if err := c.CreateTable(Ctx(t), tb); err != nil {
		t.Fatalf("create partitioned table %s.%s: %v", db, name, err)
	}
	for _, v := range vals {
		if _, err := c.AddPartition(Ctx(t), &thriftgen.Partition{Values: []string{v}, DbName: db, TableName: name,
			Sd: tb.Sd, Parameters: map[string]string{}}); err != nil {
			t.Fatalf("add partition p=%s: %v", v, err)
		}
	}
	return tb
}

// backendSaw asserts that the tap recorded exactly the backend methods want,
// in order, each answered; that the client's own method never reached the
// backend (unless the adapter keeps the name); that every call names the
// internal database and no external ("catalog2__") name; and that the
// adapter was counted. It returns the calls.
func (e *AdapterEnv) BackendSaw(t *testing.T, tap *proxytest.Tap, clientMethod, internalDB string, want ...string) []proxytest.TapCall {
	t.Helper()
	calls := tap.Calls()
	got := tap.Methods()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: the backend received %v, want %v", clientMethod, got, want)
	}
	for _, c := range calls {
		if c.Method == clientMethod && !AdContains(want, clientMethod) {
			t.Fatalf("%s reached the backend unadapted", clientMethod)
		}
		if c.HungUp || c.Reply == nil {
			t.Fatalf("%s: backend call %s got no answer", clientMethod, c.Method)
		}
		if typ, msg, ok := c.Reply.AppException(); ok {
			t.Fatalf("%s: the backend answered %s with TApplicationException %d: %s", clientMethod, c.Method, typ, msg)
		}
		strs := AdStrings(&c.Args)
		if internalDB != "" && !AdContains(strs, internalDB) {
			t.Fatalf("%s: backend call %s does not name database %s: %q", clientMethod, c.Method, internalDB, strs)
		}
		for _, s := range strs {
			if strings.Contains(s, "catalog2__") {
				t.Fatalf("%s: backend call %s carries the external name %q", clientMethod, c.Method, s)
			}
		}
	}
	if n := e.P.Metric(t, "hms_proxy_backend_fallback_total", "method", clientMethod, "from_api", clientMethod); n < 1 {
		t.Fatalf("hms_proxy_backend_fallback_total{method=%s} = %v: the adapter was not counted", clientMethod, n)
	}
	return calls
}

// noBackendCall asserts that neither metastore received anything.
func (e *AdapterEnv) NoBackendCall(t *testing.T, what string) {
	t.Helper()
	if m := append(e.Tap1.Methods(), e.Tap2.Methods()...); len(m) != 0 {
		t.Fatalf("%s: a backend received %v", what, m)
	}
}

// refused asserts a MetaException naming the catalog, its runtime and the
// reason, and that no backend saw the call.
func (e *AdapterEnv) Refused(t *testing.T, err error, fragments ...string) {
	t.Helper()
	MetaErr(t, err, append([]string{"catalog2", "APACHE_3_1_3"}, fragments...)...)
	e.NoBackendCall(t, "a refused call")
}

func AdContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// wireStrings lists every string in a value tree.
func AdStrings(v *wire.Value) []string {
	var out []string
	var walk func(v *wire.Value)
	walk = func(v *wire.Value) {
		if v.Type == wire.TString {
			out = append(out, string(v.Str))
		}
		for i := range v.Fields {
			walk(&v.Fields[i].V)
		}
		for i := range v.Elems {
			walk(&v.Elems[i])
		}
	}
	walk(v)
	return out
}

func AdI64(v int64) *int64 { return &v }

// AdapterRow proves one adapter (method) against a real backend. refusal
// rows show what the adapter will not carry; every adapter needs at least
// one row that is not a refusal.
type AdapterRow struct {
	Name    string
	Method  string
	Hive4   bool // catalog2 is the Hive 4.1 metastore (upgrade adapters)
	Refusal bool
	Run     func(t *testing.T, e *AdapterEnv)
}
