package guards

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

func TestFieldIDsMatchTheSchema(t *testing.T) {
	for _, c := range []struct {
		s    string
		id   int16
		name string
	}{{"Table", tblName, "tableName"}, {"Table", tblDB, "dbName"}, {"Table", tblSD, "sd"}, {"Table", tblParams, "parameters"},
		{"Table", tblType, "tableType"}, {"StorageDescriptor", sdInputFmt, "inputFormat"}, {"StorageDescriptor", sdOutputFmt, "outputFormat"},
		{"StorageDescriptor", sdSerde, "serdeInfo"}, {"SerDeInfo", serdeLib, "serializationLib"}, {"EnvironmentContext", envProperties, "properties"},
		{"alter_table_args", altArgsDB, "dbname"}, {"alter_table_args", altArgsTable, "tbl_name"}, {"alter_table_args", altArgsNew, "new_tbl"},
		{"alter_table_with_environment_context_args", altArgsEnv, "environment_context"}, {"alter_table_with_cascade_args", altArgsCasc, "cascade"},
		{"alter_table_req_args", altReq, "req"}, {"AlterTableRequest", reqDB, "dbName"}, {"AlterTableRequest", reqTable, "tableName"},
		{"AlterTableRequest", reqTbl, "table"}, {"AlterTableRequest", reqExpKey, "expectedParameterKey"}, {"AlterTableRequest", reqExpVal, "expectedParameterValue"},
		{"AlterTableRequest", reqEnv, "environmentContext"}, {"AlterTableRequest", reqWriteID, "writeId"},
	} {
		s := thriftgen.LookupStruct(c.s)
		if s == nil {
			if m := thriftgen.LookupMethod(strings.TrimSuffix(c.s, "_args")); m != nil {
				s = m.Args
			}
		}
		if s == nil || s.FieldByID(c.id) == nil || s.FieldByID(c.id).Name != c.name {
			t.Errorf("%s field %d is not %s", c.s, c.id, c.name)
		}
	}
}

func TestTablePathsComeFromTheSchema(t *testing.T) {
	want := map[string][][]int16{
		"create_table": {{1}}, "create_table_with_environment_context": {{1}}, "create_table_with_constraints": {{1}},
		"create_table_req": {{1, 1}}, "alter_table": {{3}}, "alter_table_with_environment_context": {{3}},
		"alter_table_with_cascade": {{3}}, "alter_table_req": {{1, 4}},
	}
	got := DDLMethods()
	for m, paths := range want {
		if !slices.Contains(got, m) {
			t.Errorf("DDLMethods lacks %s (%v)", m, got)
		}
		if p := TablePaths(m); len(p) != len(paths) || !slices.Equal(p[0], paths[0]) {
			t.Errorf("TablePaths(%s) = %v, want %v", m, p, paths)
		}
	}
	if p := TablePaths("get_table"); p != nil {
		t.Errorf("get_table has Table paths %v", p)
	}
}

func table(typ string, kv ...string) wire.Value {
	p := newStringMap()
	for i := 0; i+1 < len(kv); i += 2 {
		setParam(&p, kv[i], kv[i+1])
	}
	return wire.Struct(wire.Field{ID: tblName, V: wire.Str("t")}, wire.Field{ID: tblDB, V: wire.Str("sales")},
		wire.Field{ID: tblParams, V: p}, wire.Field{ID: tblType, V: wire.Str(typ)})
}

func TestTransactionalGuard(t *testing.T) {
	reject, err := NewTxnGuard(TxnOptions{Mode: TxnReject})
	if err != nil {
		t.Fatal(err)
	}
	rewrite, _ := NewTxnGuard(TxnOptions{Mode: TxnRewrite})
	client := netip.MustParseAddr("10.1.2.3")
	cases := []struct {
		name  string
		tbl   wire.Value
		guard bool
	}{
		{"transactional=true", table(ManagedTable, "transactional", "true"), true},
		{"TRUE any case, key any case", table(ManagedTable, "Transactional", "TRUE"), true},
		{"insert_only properties", table(ManagedTable, "transactional_properties", "insert_only"), true},
		{"empty type is managed", table("", "transactional", "true"), true},
		{"transactional=false", table(ManagedTable, "transactional", "false"), false},
		{"empty properties", table(ManagedTable, "transactional_properties", " "), false},
		{"external table", table(ExternalTable, "transactional", "true"), false},
		{"managed with EXTERNAL=TRUE is external", table(ManagedTable, "EXTERNAL", "TRUE", "transactional", "true"), false},
		{"plain managed", table(ManagedTable), false},
	}
	for _, c := range cases {
		for _, m := range []string{"create_table", "alter_table"} {
			args := wire.Struct()
			path := TablePaths(m)[0]
			args.Set(path[0], c.tbl)
			act, err := reject.Check(m, client, &args)
			if c.guard != (act == TxnRefused) || c.guard != (err != nil) {
				t.Errorf("%s/%s reject: %v %v", c.name, m, act, err)
			}
			if err != nil && (!strings.Contains(err.Error(), "sales.t") || !strings.Contains(err.Error(), "REJECT_TRANSACTIONAL") || !strings.Contains(err.Error(), m)) {
				t.Errorf("refusal %q does not name table, rule and method", err)
			}
			args.Set(path[0], clone(c.tbl))
			act, err = rewrite.Check(m, client, &args)
			if err != nil || c.guard != (act == TxnRewritten) {
				t.Errorf("%s/%s rewrite: %v %v", c.name, m, act, err)
			}
			tbl := At(&args, path)
			if c.guard {
				p := params(tbl, false)
				ext, _ := param(p, "EXTERNAL")
				purge, _ := param(p, "external.table.purge")
				_, tx := paramFold(p, "transactional")
				_, tp := paramFold(p, "transactional_properties")
				if tbl.Field(tblType).String() != ExternalTable || ext != "TRUE" || purge != "true" || tx || tp {
					t.Errorf("%s: rewritten to %v", c.name, p.Elems)
				}
			} else if string(tbl.Encode()) != string(c.tbl.Encode()) {
				t.Errorf("%s: a passing table was changed", c.name)
			}
		}
	}
	// create_table_req: the Table one struct deeper.
	args := wire.Struct(wire.Field{ID: 1, V: wire.Struct(wire.Field{ID: 1, V: table(ManagedTable, "transactional", "true")})})
	if act, err := reject.Check("create_table_req", client, &args); act != TxnRefused || err == nil {
		t.Errorf("create_table_req: %v %v", act, err)
	}
}

func TestTransactionalGuardClientAddresses(t *testing.T) {
	g, err := NewTxnGuard(TxnOptions{Mode: TxnReject, ClientAddresses: []string{"10.10.0.15", " 10.20.0.0/16", "2001:db8::/64"}})
	if err != nil {
		t.Fatal(err)
	}
	for a, want := range map[string]bool{"10.10.0.15": true, "10.10.0.16": false, "10.20.255.1": true, "10.21.0.1": false,
		"2001:db8::1": true, "2001:db8:0:1::1": false, "::ffff:10.20.1.1": true, "127.0.0.1": false} {
		if got := g.Applies(netip.MustParseAddr(a)); got != want {
			t.Errorf("Applies(%s) = %v", a, got)
		}
	}
	for _, bad := range []string{"10.0.0.1/33", "host.example", "10.0.0.1/8"} {
		if _, err := NewTxnGuard(TxnOptions{Mode: TxnReject, ClientAddresses: []string{bad}}); err == nil || !strings.Contains(err.Error(), "client-addresses") {
			t.Errorf("%q accepted: %v", bad, err)
		}
	}
	if _, err := NewTxnGuard(TxnOptions{ClientAddresses: []string{"10.0.0.1"}}); err == nil {
		t.Error("addresses without a mode accepted")
	}
	if _, err := ParseTxnMode("REJECT"); err == nil || !strings.Contains(err.Error(), "guard.transactional-ddl.mode") {
		t.Errorf("ParseTxnMode(REJECT) = %v", err)
	}
	off, _ := NewTxnGuard(TxnOptions{})
	tbl := table(ManagedTable, "transactional", "true")
	args := wire.Struct(wire.Field{ID: 1, V: tbl})
	if act, err := off.Check("create_table", netip.MustParseAddr("10.0.0.1"), &args); act != TxnPassed || err != nil {
		t.Errorf("off guard: %v %v", act, err)
	}
}

func icebergRecord(pointer string, descriptor bool) wire.Value {
	t := table(ExternalTable, "EXTERNAL", "TRUE", KeyTableType, IcebergTableType, KeyMetadataLocation, pointer)
	in, out, serde := abstractInputFormat, abstractOutputFormat, abstractSerde
	if descriptor {
		setParam(t.Field(tblParams), KeyStorageHandler, "org.apache.iceberg.mr.hive.HiveIcebergStorageHandler")
		in, out, serde = "org.apache.iceberg.mr.hive.HiveIcebergInputFormat", "org.apache.iceberg.mr.hive.HiveIcebergOutputFormat", "org.apache.iceberg.mr.hive.HiveIcebergSerDe"
	}
	t.Set(tblSD, wire.Struct(wire.Field{ID: sdInputFmt, V: wire.Str(in)}, wire.Field{ID: sdOutputFmt, V: wire.Str(out)},
		wire.Field{ID: sdSerde, V: wire.Struct(wire.Field{ID: serdeLib, V: wire.Str(serde)})}))
	return t
}

func TestDecideAndMerge(t *testing.T) {
	rec := icebergRecord("m/1.json", true)
	hs2 := table(ExternalTable, "EXTERNAL", "TRUE")
	hs2.Set(tblSD, wire.Struct(wire.Field{ID: sdInputFmt, V: wire.Str(abstractInputFormat)}, wire.Field{ID: sdOutputFmt, V: wire.Str(abstractOutputFormat)},
		wire.Field{ID: sdSerde, V: wire.Struct(wire.Field{ID: serdeLib, V: wire.Str(abstractSerde)})}))
	before := string(hs2.Encode())
	o, keys := Decide(&hs2, &rec, true)
	if o != OutcomeRepaired || string(hs2.Encode()) != before {
		t.Fatalf("Decide: %v %v (and must not change the request)", o, keys)
	}
	want := []string{KeyMetadataLocation, KeyTableType, KeyStorageHandler, "sd.inputFormat", "sd.outputFormat", "sd.serdeInfo.serializationLib"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
	if o, keys := Decide(&hs2, &rec, false); o != OutcomeRepaired || len(keys) != 2 {
		t.Errorf("without hive-engine-descriptor: %v %v", o, keys)
	}
	// A record with the abstract descriptor has nothing to lose: never imposed.
	bare := icebergRecord("m/1.json", false)
	if _, keys := Decide(&hs2, &bare, true); len(keys) != 2 {
		t.Errorf("descriptor imposed: %v", keys)
	}
	// A commit built on the pointer passes untouched.
	commit := icebergRecord("m/2.json", false)
	setParam(commit.Field(tblParams), KeyPreviousMetadataLocation, "m/1.json")
	if o, _ := Decide(&commit, &rec, true); o != OutcomeForwardCommit {
		t.Errorf("commit: %v", o)
	}
	// A request that carries its own pointer keeps it.
	own := table(ExternalTable, KeyMetadataLocation, "m/9.json", KeyTableType, IcebergTableType)
	Merge(&own, &rec, false)
	if v, _ := param(params(&own, false), KeyMetadataLocation); v != "m/9.json" {
		t.Errorf("merge imposed the pointer: %v", v)
	}
	plain := table(ManagedTable)
	if o, _ := Decide(&hs2, &plain, true); o != OutcomeNotIceberg {
		t.Errorf("plain: %v", o)
	}
	if !CarriesPointer(&commit) || CarriesPointer(&hs2) {
		t.Error("CarriesPointer")
	}
}

func TestWithExpectedPointer(t *testing.T) {
	tbl := table(ExternalTable)
	args := wire.Struct(wire.Field{ID: altArgsDB, V: wire.Str("d")}, wire.Field{ID: altArgsTable, V: wire.Str("t")},
		wire.Field{ID: altArgsNew, V: tbl}, wire.Field{ID: altArgsCasc, V: wire.Bool(true)})
	m, err := WithExpectedPointer("alter_table_with_cascade", &args, "m/1.json")
	if err != nil || m != "alter_table_with_environment_context" {
		t.Fatalf("%s %v", m, err)
	}
	props := At(&args, []int16{altArgsEnv}).Field(envProperties)
	for k, v := range map[string]string{EnvExpectedParameterKey: KeyMetadataLocation, EnvExpectedParameterValue: "m/1.json", envCascade: "true"} {
		if got, _ := param(props, k); got != v {
			t.Errorf("%s=%q", k, got)
		}
	}
	req := wire.Struct(wire.Field{ID: altReq, V: wire.Struct(wire.Field{ID: reqTbl, V: table(ExternalTable)})})
	if m, err := WithExpectedPointer("alter_table_req", &req, "m/1.json"); err != nil || m != "alter_table_req" ||
		At(&req, []int16{altReq}).Field(reqExpVal).String() != "m/1.json" {
		t.Errorf("alter_table_req: %s %v", m, err)
	}
	if _, err := WithExpectedPointer("create_table", &req, "x"); err == nil {
		t.Error("create_table accepted")
	}
}

func TestNotIcebergCache(t *testing.T) {
	now := time.Unix(1000, 0)
	o := DefaultIcebergOptions()
	o.CacheTTL, o.CacheMaxEntries, o.Now = time.Second, 2, func() time.Time { return now }
	g, err := NewIcebergGuard(o)
	if err != nil {
		t.Fatal(err)
	}
	c := g.cache
	c.put(cacheKey("c", "d", "a"))
	c.put(cacheKey("c", "d", "b"))
	c.put(cacheKey("c", "d", "c")) // evicts a
	if c.has(cacheKey("c", "d", "a")) || !c.has(cacheKey("C", "D", "B")) || c.len() != 2 {
		t.Errorf("eviction: len %d", c.len())
	}
	g.Forget("c", "d", "b")
	if c.has(cacheKey("c", "d", "b")) {
		t.Error("Forget")
	}
	now = now.Add(time.Second)
	if c.has(cacheKey("c", "d", "c")) {
		t.Error("TTL")
	}
	o.CacheTTL = 0
	if g, _ := NewIcebergGuard(o); g.cache != nil {
		t.Error("TTL 0 must disable the cache")
	}
	for _, bad := range []IcebergOptions{{CacheTTL: -1}, {CacheMaxEntries: -1}, {CacheTTL: time.Second}, {LockAcquireTimeout: -1}} {
		if _, err := NewIcebergGuard(bad); err == nil || !strings.Contains(err.Error(), "routing.iceberg-pointer-guard.") {
			t.Errorf("%+v accepted: %v", bad, err)
		}
	}
}

// countingBackend counts calls; it stands in for the router only in the unit
// tests of Handle's branching (the real path is TestPointerGuardAgainstHive313).
type countingBackend struct {
	rec   wire.Value
	calls []string
	cas   string
}

func (b *countingBackend) GetTable(context.Context, string, string) (*wire.Value, error) {
	b.calls = append(b.calls, "get_table")
	r := clone(b.rec)
	return &r, nil
}
func (b *countingBackend) Lock(context.Context, string, string) (int64, LockState, error) {
	b.calls = append(b.calls, "lock")
	return 7, LockAcquired, nil
}
func (b *countingBackend) CheckLock(context.Context, int64) (LockState, error) {
	return LockAcquired, nil
}
func (b *countingBackend) Unlock(context.Context, int64) error {
	b.calls = append(b.calls, "unlock")
	return nil
}
func (b *countingBackend) Alter(_ context.Context, m string, args *wire.Value) error {
	b.calls = append(b.calls, m)
	if env := At(args, []int16{altArgsEnv}); env != nil {
		b.cas, _ = param(env.Field(envProperties), EnvExpectedParameterValue)
	}
	return nil
}

func TestHandleNonDefaultCatalogAndHive4(t *testing.T) {
	g, _ := NewIcebergGuard(DefaultIcebergOptions())
	be := &countingBackend{rec: icebergRecord("m/1.json", true)}
	args := wire.Struct(wire.Field{ID: altArgsDB, V: wire.Str("d")}, wire.Field{ID: altArgsTable, V: wire.Str("t")},
		wire.Field{ID: altArgsNew, V: table(ExternalTable)})
	res, err := g.Handle(context.Background(), be, AlterCall{Catalog: "c2", Lockable: false, CompareAndSet: true, Method: "alter_table", Args: &args})
	if err != nil || res.Outcome != OutcomeRepaired {
		t.Fatalf("%+v %v", res, err)
	}
	if strings.Join(be.calls, ",") != "get_table,alter_table_with_environment_context" || be.cas != "m/1.json" {
		t.Errorf("calls %v, cas %q: a non-default catalog takes no lock; Hive 4 gets the compare-and-set", be.calls, be.cas)
	}
	off, _ := NewIcebergGuard(IcebergOptions{})
	if res, _ := off.Handle(context.Background(), be, AlterCall{Method: "alter_table", Args: &args}); res.Outcome != "" || res.Sent {
		t.Errorf("disabled guard acted: %+v", res)
	}
}

// An alter that carries its own compare-and-set or a write id is forwarded
// as it is: no read, nothing sent, the guard's compare-and-set never replaces
// the writer's; one conditional on the pointer is counted as a commit.
func TestHandleLeavesSelfGuardedAltersAlone(t *testing.T) {
	g, _ := NewIcebergGuard(DefaultIcebergOptions())
	env := func(k, v string) wire.Value {
		m := newStringMap()
		setParam(&m, k, v)
		return wire.Struct(wire.Field{ID: envProperties, V: m})
	}
	withEnv := func(e wire.Value) wire.Value {
		return wire.Struct(wire.Field{ID: altArgsDB, V: wire.Str("d")}, wire.Field{ID: altArgsTable, V: wire.Str("t")},
			wire.Field{ID: altArgsNew, V: table(ExternalTable)}, wire.Field{ID: altArgsEnv, V: e})
	}
	req := func(f ...wire.Field) wire.Value {
		return wire.Struct(wire.Field{ID: altReq, V: wire.Struct(append([]wire.Field{{ID: reqDB, V: wire.Str("d")},
			{ID: reqTable, V: wire.Str("t")}, {ID: reqTbl, V: table(ExternalTable)}}, f...)...)})
	}
	for _, c := range []struct {
		name    string
		method  string
		args    wire.Value
		self    bool
		outcome Outcome
	}{
		{"env compare-and-set on the pointer", "alter_table_with_environment_context", withEnv(env(EnvExpectedParameterKey, KeyMetadataLocation)), true, OutcomeForwardCommit},
		{"env without it", "alter_table_with_environment_context", withEnv(env("DO_NOT_UPDATE_STATS", "true")), false, ""},
		{"req compare-and-set", "alter_table_req", req(wire.Field{ID: reqExpKey, V: wire.Str("owner_lock")}), true, ""},
		{"req write id", "alter_table_req", req(wire.Field{ID: reqWriteID, V: wire.I64(7)}), true, ""},
		{"req write id unset (-1)", "alter_table_req", req(wire.Field{ID: reqWriteID, V: wire.I64(-1)}), false, ""},
		{"req env compare-and-set", "alter_table_req", req(wire.Field{ID: reqEnv, V: env(EnvExpectedParameterKey, "k")}), true, ""},
	} {
		if _, got := SelfGuarded(c.method, &c.args); got != c.self {
			t.Errorf("%s: SelfGuarded = %v, want %v", c.name, got, c.self)
		}
		be := &countingBackend{rec: icebergRecord("m/1.json", true)}
		res, err := g.Handle(context.Background(), be, AlterCall{Catalog: "c", Method: c.method, Args: &c.args})
		if err != nil {
			t.Fatal(err)
		}
		if c.self && (res.Outcome != c.outcome || res.Sent || len(be.calls) != 0) {
			t.Errorf("%s: a self-guarded alter was handled: %+v, calls %v", c.name, res, be.calls)
		}
		if !c.self && res.Outcome != OutcomeRepaired {
			t.Errorf("%s: %+v", c.name, res)
		}
	}
}
