package routing

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// A backend session is the metastore thread's state: its JDO transaction
// (ObjectStore's nesting counter), its configuration, its identity. These
// tests send, through one proxy whose catalog has one pooled session, calls
// that fail the way real clients make them fail, each from its own client
// session (a new HiveMetaStoreClient, as separate applications open them),
// and check on the metastore itself that nothing a later client did was
// swallowed by a transaction an earlier call left open.

// sessionStep is one step of testdata/ClientSessions.java, the start of the
// answer it must get ("ok", or an exception's class and message start) and
// what else the answer must contain.
type sessionStep struct {
	op, want string
	has      []string
}

// clientSessions runs steps, each in a client session of its own, against
// uri with the Hive client of version v (env as runJavaFile's), and checks
// each answer.
func clientSessions(t *testing.T, v testbed.Version, env []string, uri string, steps []sessionStep) {
	t.Helper()
	args := []string{uri}
	for _, s := range steps {
		args = append(args, s.op)
	}
	lines := e2eutil.RunJavaFile(t, v, env, "ClientSessions.java", args...)
	t.Logf("Hive %s client sessions:\n%s", v, strings.Join(lines, "\n"))
	var got []string
	for _, l := range lines {
		if strings.HasPrefix(l, "step ") {
			got = append(got, l)
		}
	}
	if len(got) != len(steps) || lines[len(lines)-1] != "done" {
		t.Fatalf("%d steps answered of %d", len(got), len(steps))
	}
	for i, s := range steps {
		_, answer, _ := strings.Cut(got[i], " "+strings.SplitN(s.op, ":", 2)[0]+" ")
		if !strings.HasPrefix(answer, s.want) {
			t.Errorf("step %d %s: got %q, want %q…", i+1, s.op, answer, s.want)
		}
		for _, h := range s.has {
			if !strings.Contains(answer, h) {
				t.Errorf("step %d %s: the answer %q does not name %q", i+1, s.op, answer, h)
			}
		}
	}
}

// The defect of issue 20: Hive's exchange_partitions opens the metastore's
// transaction, validates, and throws without rolling back ("The tables have
// different schemas"). Directly, the transaction dies with the client's
// connection; through a pool the session went back with it open, the next
// clients' writes ran inside it, and a create_table acknowledged to one
// client was later gone, while the open transaction held the metastore's
// locks against its direct clients. Here every way exchange_partition(s)
// throws after opening the transaction (different schemas, the partition
// already in the destination, no partition matching, a missing destination
// or source) is followed by a create_table in another client session; the
// metastore itself must hold every acknowledged table, and a direct client
// must be served.
func TestPooledSessionDoesNotCarryAFailedExchangeIntoTheNextClient(t *testing.T) {
	e2eutil.NeedHive(t)
	for _, v := range []struct {
		name    string
		backend func() *testbed.Metastore
		client  testbed.Version
		extra   []string
		door    string
		user    string // impersonation: the user whose pool serves the calls
	}{
		{"hive-3.1.3", func() *testbed.Metastore { return e2eutil.HMS1 }, testbed.Hive313, nil, "primary", ""},
		{"hive-4.1.0", func() *testbed.Metastore { return e2eutil.HMS4 }, testbed.Hive410,
			[]string{"catalog.catalog1.runtime-profile=APACHE_4_1_0"}, "hive4", ""},
		// One user's sessions are just as shared: between that user's
		// client sessions (HiveServer2's, or several applications').
		{"hive-3.1.3-impersonation-pool", func() *testbed.Metastore { return e2eutil.HMS1 }, testbed.Hive313,
			[]string{"security.impersonation-enabled=true", "catalog.catalog1.impersonation-pool-max-size=1"},
			"primary", "alice"},
	} {
		t.Run(v.name, func(t *testing.T) {
			backend := v.backend()
			direct := proxytest.Client(t, backend.URI)
			db := e2eutil.Uniq("sess")
			e2eutil.MkDB(t, direct, db)
			partitioned := func(name, colType string, vals ...string) {
				tb := e2eutil.Table(db, name)
				tb.Sd.Cols = []*thriftgen.FieldSchema{{Name: "a", Type: colType}}
				tb.PartitionKeys = []*thriftgen.FieldSchema{{Name: "p", Type: "string"}}
				if err := direct.CreateTable(e2eutil.Ctx(t), tb); err != nil {
					t.Fatalf("create %s.%s: %v", db, name, err)
				}
				for _, val := range vals {
					if _, err := direct.AddPartition(e2eutil.Ctx(t), &thriftgen.Partition{Values: []string{val}, DbName: db,
						TableName: name, Sd: tb.Sd, Parameters: map[string]string{}}); err != nil {
						t.Fatalf("add partition %s p=%s: %v", name, val, err)
					}
				}
			}
			partitioned("src", "string", "1")     // the source
			partitioned("dst_int", "int")         // another schema
			partitioned("dst_has", "string", "1") // already holds p=1
			partitioned("dst", "string")          // a good destination

			props := e2eutil.TwoCatalogs(append([]string{
				"catalog.catalog1.conf.hive.metastore.uris=" + backend.URI,
				"catalog.catalog1.shared-session-pool-size=1"}, v.extra...)...)
			p := proxytest.Start(t, e2eutil.WithHive4Frontend(t, props))
			const schemas, meta = "MetaException: The tables have different schemas", "MetaException: "
			ex := func(rpc, src, dst, val string) string { return rpc + ":" + db + ":" + src + ":" + dst + ":" + val }
			created := []string{"t_after", "t_single", "t_exists", "t_nopart", "t_nodest", "t_nosrc"}
			var env []string
			if v.user != "" {
				// a simple Hadoop login as the user: the client sends set_ugi
				env = []string{"HADOOP_USER_NAME=" + v.user}
			}
			clientSessions(t, v.client, env, p.URI(v.door), []sessionStep{
				{op: ex("exchange_partitions", "src", "dst_int", "1"), want: schemas},
				{op: "create_table:" + db + ":t_after", want: "ok"},
				{op: ex("exchange_partitions", "src", "dst_int", "1"), want: schemas},
				{op: "get_table:" + db + ":t_after", want: "ok t_after"},
				{op: ex("exchange_partition", "src", "dst_int", "1"), want: schemas},
				{op: "create_table:" + db + ":t_single", want: "ok"},
				{op: ex("exchange_partitions", "src", "dst_has", "1"), want: meta + "The partition p=1 already exists"},
				{op: "create_table:" + db + ":t_exists", want: "ok"},
				{op: ex("exchange_partitions", "src", "dst", "9"), want: meta + "No partition is found"},
				{op: "create_table:" + db + ":t_nopart", want: "ok"},
				{op: ex("exchange_partitions", "src", "nosuch", "1"), want: meta + "The destination table"},
				{op: "create_table:" + db + ":t_nodest", want: "ok"},
				{op: ex("exchange_partitions", "nosuch", "dst", "1"), want: meta + "The source table"},
				{op: "create_table:" + db + ":t_nosrc", want: "ok"},
			})
			// On the metastore itself, by a new client of its own: every
			// acknowledged table is there, and nothing blocks it (a
			// client whose call timed out is not read again).
			after := proxytest.Client(t, backend.URI)
			for _, name := range created {
				if _, err := after.GetTableReq(e2eutil.Ctx(t), &thriftgen.GetTableRequest{DbName: db, TblName: name}); err != nil {
					t.Fatalf("table %s.%s, acknowledged through the proxy, read directly on the metastore: %v", db, name, err)
				}
			}
			if err := after.CreateTable(e2eutil.Ctx(t), e2eutil.Table(db, "t_direct")); err != nil {
				t.Fatalf("a direct client of the metastore after the failed exchanges: %v", err)
			}
			if parts, err := after.GetPartitionNames(e2eutil.Ctx(t), db, "src", -1); err != nil || strings.Join(parts, ",") != "p=1" {
				t.Fatalf("the source's partitions after the failed exchanges: %v %v, want p=1", parts, err)
			}
			if v.user != "" {
				if users, _ := p.Router.ImpersonationUsers("catalog1"); strings.Join(users, ",") != v.user {
					t.Fatalf("impersonation pools %v, want %s's alone", users, v.user)
				}
			}
			if n := p.Metric(t, "hms_proxy_backend_session_retired_total", "catalog", "catalog1", "reason", "exception"); n < 7 {
				t.Fatalf("hms_proxy_backend_session_retired_total{catalog1,exception} = %v, want at least 7 (one per failed exchange)", n)
			}
		})
	}
}

// What a session may serve after, against a real metastore behind a tap that
// numbers the proxy's connections: a read's "does not exist" (Spark's
// tableExists and databaseExists, IF NOT EXISTS) keeps its session, so a miss
// costs no reconnect; a write's exception, even NoSuchObjectException from
// drop_table, retires it, and the next call opens a new one.
func TestPooledSessionIsKeptAfterAReadMissAndRetiredAfterAFailedWrite(t *testing.T) {
	e2eutil.NeedHive(t)
	tap := proxytest.NewTap(t, e2eutil.HMS1.URI)
	p := proxytest.Start(t, e2eutil.TwoCatalogs("catalog.catalog1.conf.hive.metastore.uris="+tap.URI(),
		"catalog.catalog1.shared-session-pool-size=1"))
	c := proxytest.Client(t, p.URI("primary"))
	retired := func() float64 {
		return p.Metric(t, "hms_proxy_backend_session_retired_total", "catalog", "catalog1")
	}
	miss := e2eutil.Uniq("nosuch")
	if _, err := c.GetTable(e2eutil.Ctx(t), "default", miss); !e2eutil.IsNotFound(err) {
		t.Fatalf("get_table of a missing table: %v", err)
	}
	if _, err := c.GetTableReq(e2eutil.Ctx(t), &thriftgen.GetTableRequest{DbName: "default", TblName: miss}); !e2eutil.IsNotFound(err) {
		t.Fatalf("get_table_req of a missing table: %v", err)
	}
	if _, err := c.GetDatabase(e2eutil.Ctx(t), miss); !e2eutil.IsNotFound(err) {
		t.Fatalf("get_database of a missing database: %v", err)
	}
	if _, err := c.GetDatabase(e2eutil.Ctx(t), "default"); err != nil {
		t.Fatal(err)
	}
	calls := tap.Calls()
	for _, cl := range calls {
		if cl.Conn != calls[0].Conn {
			t.Fatalf("after read misses the proxy opened another backend session: %s on connection %d, the first call on %d",
				cl.Method, cl.Conn, calls[0].Conn)
		}
	}
	if n := retired(); n != 0 {
		t.Fatalf("sessions retired after read misses: %v, want 0", n)
	}
	tap.Reset()
	if err := c.DropTable(e2eutil.Ctx(t), "default", miss, false); !e2eutil.IsNotFound(err) {
		t.Fatalf("drop_table of a missing table: %v", err)
	}
	if _, err := c.GetDatabase(e2eutil.Ctx(t), "default"); err != nil {
		t.Fatal(err)
	}
	calls = tap.Calls()
	if len(calls) != 2 || calls[0].Method != "drop_table" || calls[1].Conn == calls[0].Conn {
		var seen []string
		for _, cl := range calls {
			seen = append(seen, fmt.Sprintf("%s on connection %d", cl.Method, cl.Conn))
		}
		t.Fatalf("after a failed drop_table the next call must use a new backend session; the tap saw %s", strings.Join(seen, ", "))
	}
	if n := p.Metric(t, "hms_proxy_backend_session_retired_total", "catalog", "catalog1", "reason", "exception"); n != 1 || retired() != 1 {
		t.Fatalf("hms_proxy_backend_session_retired_total{catalog1}: exception %v, all %v; want 1 and 1", n, retired())
	}
}
