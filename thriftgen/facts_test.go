package thriftgen

import (
	"sort"
	"testing"
)

// Facts of /work/shared/idl/README.md (the IDL reference notes), checked on the generated tables.

func methodsOf(p ProfileSet, service string) map[string]bool {
	out := map[string]bool{}
	for _, m := range AllMethods() {
		if m.Profiles.Has(p) && m.Service == service {
			out[m.Name] = true
		}
	}
	return out
}

func minus(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func TestMethodCounts(t *testing.T) {
	for _, c := range []struct {
		p       ProfileSet
		want    int
		atLeast bool
	}{
		{ProfileApache313, 207, false},
		{ProfileApache410, 281, true}, // the 4.1 lower-bound IDL has 281; the real 4.1.0 jar 283
		{ProfileHDP78, 214, false},
		{ProfileHDP315, 219, false},
	} {
		got := len(methodsOf(c.p, "ThriftHiveMetastore"))
		if got != c.want && !(c.atLeast && got > c.want) {
			t.Errorf("%s: %d HMS methods, want %d", c.p, got, c.want)
		}
		if fb := len(methodsOf(c.p, "FacebookService")); fb != 13 {
			t.Errorf("%s: %d fb303 methods, want 13", c.p, fb)
		}
	}
	if got := len(methodsOf(ProfileApache410, "ThriftHiveMetastore")); got != 283 {
		t.Errorf("Apache 4.1.0 jar: %d methods, want 283 (update the report if the jar changed)", got)
	}
}

func TestMethodSetsAcrossVersions(t *testing.T) {
	a3 := methodsOf(ProfileApache313, "ThriftHiveMetastore")
	a4 := methodsOf(ProfileApache410, "ThriftHiveMetastore")
	h78 := methodsOf(ProfileHDP78, "ThriftHiveMetastore")
	h315 := methodsOf(ProfileHDP315, "ThriftHiveMetastore")

	// 4.x removed get_table and get_table_objects_by_name
	if got := minus(a3, a4); len(got) != 2 || got[0] != "get_table" || got[1] != "get_table_objects_by_name" {
		t.Errorf("3.1.3 methods missing in 4.1.0: %v, want [get_table get_table_objects_by_name]", got)
	}
	for _, m := range []string{"get_table", "get_table_objects_by_name"} {
		if p := LookupMethod(m).Profiles; p != ProfileApache313|ProfileHDP78|ProfileHDP315 {
			t.Errorf("%s profiles %s", m, p)
		}
	}
	if n := len(minus(a4, a3)); n < 76 {
		t.Errorf("4.1.0 adds %d methods over 3.1.3, want at least 76", n)
	}
	// HDP-78 adds 7 over 3.1.3, HDP 3.1.5 five more; every HDP-only method exists in 4.x
	if got := minus(h78, a3); len(got) != 7 {
		t.Errorf("HDP-78 adds %v over 3.1.3, want 7 methods", got)
	}
	if got := minus(a3, h78); len(got) != 0 {
		t.Errorf("HDP-78 lacks %v of 3.1.3", got)
	}
	if got := minus(h315, h78); len(got) != 5 {
		t.Errorf("HDP 3.1.5 adds %v over HDP-78, want 5 methods", got)
	}
	if got := minus(h78, h315); len(got) != 0 {
		t.Errorf("HDP 3.1.5 lacks %v of HDP-78", got)
	}
	hdpOnly := minus(h315, a3)
	if len(hdpOnly) != 12 {
		t.Errorf("HDP-only methods %v, want 12", hdpOnly)
	}
	for _, m := range hdpOnly {
		if !a4[m] {
			t.Errorf("HDP-only method %s is not in Apache 4.1.0", m)
		}
	}
	for _, m := range []string{"add_write_notification_log", "get_tables_ext", "get_all_materialized_view_objects_for_rewriting"} {
		if !h315[m] {
			t.Errorf("%s missing in HDP 3.1.5", m)
		}
	}
	for _, m := range []string{"reinitialize", "shutdown"} {
		if mm := LookupMethod(m); mm == nil || !mm.Oneway || mm.Result != nil || mm.Service != "FacebookService" {
			t.Errorf("fb303 %s should be oneway without result: %+v", m, mm)
		}
	}
}

func TestStructAndEnumCounts(t *testing.T) {
	count := func(p ProfileSet, k StructKind) int {
		n := 0
		for _, s := range AllStructs() {
			if s.Profiles.Has(p) && s.Kind == k && LookupMethod(trimSuffix(s.Name)) == nil {
				n++
			}
		}
		return n
	}
	enums := func(p ProfileSet) int {
		n := 0
		for _, e := range AllEnums() {
			if e.Profiles.Has(p) && e.Name != "fb_status" {
				n++
			}
		}
		return n
	}
	for _, c := range []struct {
		p                         ProfileSet
		structs, unions, excs, en int
	}{
		{ProfileApache313, 211, 3, 15, 22},
		{ProfileHDP78, 224, 3, 15, 22},
		{ProfileHDP315, 230, 3, 15, 23},
	} {
		if got := count(c.p, StructKindStruct); got != c.structs {
			t.Errorf("%s: %d structs, want %d", c.p, got, c.structs)
		}
		if got := count(c.p, StructKindUnion); got != c.unions {
			t.Errorf("%s: %d unions, want %d", c.p, got, c.unions)
		}
		if got := count(c.p, StructKindException); got != c.excs {
			t.Errorf("%s: %d exceptions, want %d", c.p, got, c.excs)
		}
		if got := enums(c.p); got != c.en {
			t.Errorf("%s: %d enums, want %d", c.p, got, c.en)
		}
	}
	if got := count(ProfileApache410, StructKindStruct); got < 310 {
		t.Errorf("4.1.0: %d structs, want at least 310", got)
	}
	if got := enums(ProfileApache410); got < 29 {
		t.Errorf("4.1.0: %d enums, want at least 29", got)
	}
}

func trimSuffix(name string) string {
	for _, suf := range []string{"_args", "_result"} {
		if len(name) > len(suf) && name[len(name)-len(suf):] == suf {
			return name[:len(name)-len(suf)]
		}
	}
	return ""
}

func field(t *testing.T, structName string, id int16) *Field {
	t.Helper()
	s := LookupStruct(structName)
	if s == nil {
		t.Fatalf("no struct %s", structName)
	}
	f := s.FieldByID(id)
	if f == nil {
		t.Fatalf("%s has no field %d", structName, id)
	}
	return f
}

func TestSignatureFacts(t *testing.T) {
	for _, c := range []struct {
		st   string
		id   int16
		name string
		typ  string
		p    ProfileSet
	}{
		{"delete_table_column_statistics_args", 4, "engine", "string", ProfileApache410},
		{"delete_partition_column_statistics_args", 5, "engine", "string", ProfileApache410},
		{"get_partitions_by_names_result", 3, "o3", "InvalidObjectException", ProfileApache410},
		{"get_partitions_by_names_req_result", 3, "o3", "InvalidObjectException", ProfileApache410},
		{"create_ischema_result", 2, "o2", "NoSuchObjectException", ProfileAll},
		{"SkewedInfo", 3, "skewedColValueLocationMaps", "map<list<string>,string>", ProfileAll},
	} {
		f := field(t, c.st, c.id)
		if f.Name != c.name || f.Type.String() != c.typ || f.Profiles != c.p {
			t.Errorf("%s.%d = %s %s %s, want %s %s %s", c.st, c.id, f.Type, f.Name, f.Profiles, c.typ, c.name, c.p)
		}
	}
	// 3.1.3 gives create_ischema's NoSuchObjectException no id: -1 on its wire
	d := LookupDialect(ProfileApache313, "create_ischema_result")
	if d == nil {
		t.Fatal("no 3.1.3 dialect for create_ischema_result")
	}
	if id, ok := d.CanonicalID(-1); !ok || id != 2 {
		t.Errorf("3.1.3 wire -1 → %d %v, want 2", id, ok)
	}
	if id, ok := d.WireID(2); !ok || id != -1 {
		t.Errorf("canonical 2 → 3.1.3 wire %d %v, want -1", id, ok)
	}
	// no argument changes type across versions: every merged field has one type by construction; spot-check
	if f := field(t, "get_table_args", 2); f.Name != "tbl_name" || f.Type.Kind != KindString {
		t.Errorf("get_table_args.2 = %s %s", f.Type, f.Name)
	}
}

func TestTableAcrossProfiles(t *testing.T) {
	tbl := LookupStruct("Table")
	maxID := func(p ProfileSet) int16 {
		var m int16
		for _, f := range tbl.Fields {
			if f.Profiles.Has(p) && f.ID > m {
				m = f.ID
			}
		}
		return m
	}
	if got := maxID(ProfileApache313); got != 18 {
		t.Errorf("3.1.3 Table ends at %d, want 18", got)
	}
	if got := maxID(ProfileHDP78); got != 20 {
		t.Errorf("HDP-78 Table ends at %d, want 20", got)
	}
	if got := maxID(ProfileApache410); got != 28 {
		t.Errorf("4.1.0 Table ends at %d, want 28", got)
	}
	want := map[int16]string{22: "accessType", 23: "requiredReadCapabilities", 24: "requiredWriteCapabilities",
		25: "id", 26: "fileMetadata", 27: "dictionary", 28: "txnId"}
	for id, name := range want {
		if f := tbl.FieldByID(id); f == nil || f.Name != name {
			t.Errorf("canonical Table.%d = %v, want %s", id, f, name)
		}
	}
	if TableDialect(ProfileHDP78) != nil || TableDialect(ProfileApache313) != nil || TableDialect(ProfileApache410) != nil {
		t.Error("only HDP 3.1.5 has a Table dialect")
	}
	d := TableDialect(ProfileHDP315)
	if d == nil {
		t.Fatal("no HDP 3.1.5 Table dialect")
	}
	for _, c := range []struct {
		wire, canonical int16
		ok              bool
	}{{23, 22, true}, {24, 23, true}, {25, 24, true}, {22, 22, false}, {21, 21, true}, {1, 1, true}} {
		if id, ok := d.CanonicalID(c.wire); id != c.canonical && c.ok || ok != c.ok {
			t.Errorf("HDP 3.1.5 wire %d → %d %v, want %d %v", c.wire, id, ok, c.canonical, c.ok)
		}
	}
	if _, ok := d.WireID(25); ok {
		t.Error("canonical Table.25 id must have no HDP 3.1.5 wire id")
	}
	for _, id := range []int16{22, 23, 24} {
		if f := tbl.FieldByID(id); !f.Profiles.Has(ProfileHDP315) || f.Profiles.Has(ProfileHDP78) {
			t.Errorf("Table.%d profiles %s", id, f.Profiles)
		}
	}
}

func TestRequiredness(t *testing.T) {
	f := field(t, "GetValidWriteIdsRequest", 2)
	if f.Name != "validTxnList" || f.Required != RequirednessOptional || f.RequiredIn != ProfileApache313 {
		t.Errorf("validTxnList: %s requiredIn %s", f.Required, f.RequiredIn)
	}
	for p, want := range map[ProfileSet]Requiredness{ProfileApache313: RequirednessRequired,
		ProfileApache410: RequirednessOptional, ProfileHDP78: RequirednessOptional, ProfileHDP315: RequirednessOptional} {
		if got := f.RequirednessIn(p); got != want {
			t.Errorf("validTxnList in %s: %s, want %s", p, got, want)
		}
	}
	f = field(t, "FireEventRequestData", 1)
	if f.RequirednessIn(ProfileApache313) != RequirednessDefault || f.RequirednessIn(ProfileApache410) != RequirednessOptional {
		t.Errorf("FireEventRequestData.insertData: 3.1.3 %s, 4.1.0 %s", f.RequirednessIn(ProfileApache313),
			f.RequirednessIn(ProfileApache410))
	}
	// the Go type keeps the field optional, so a 3.1.3-less request can be represented
	var r GetValidWriteIdsRequest
	if r.ValidTxnList != nil {
		t.Fatal("unreachable")
	}
}

func TestEnumFacts(t *testing.T) {
	lt := LookupEnum("LockType")
	if v := lt.ValueByName("EXCL_WRITE"); v == nil || v.Value != 4 || v.Profiles != ProfileApache410 {
		t.Errorf("LockType.EXCL_WRITE = %+v", v)
	}
	if v := lt.ValueByName("EXCLUSIVE"); v == nil || v.Profiles != ProfileAll {
		t.Errorf("LockType.EXCLUSIVE = %+v", v)
	}
	ct := LookupEnum("CompactionType")
	for name, val := range map[string]int32{"REBALANCE": 3, "ABORT_TXN_CLEANUP": 4} {
		if v := ct.ValueByName(name); v == nil || v.Value != val || v.Profiles != ProfileApache410 {
			t.Errorf("CompactionType.%s = %+v", name, v)
		}
	}
	if v := LookupEnum("HiveObjectType").ValueByName("DATACONNECTOR"); v == nil || v.Value != 6 {
		t.Errorf("HiveObjectType.DATACONNECTOR = %+v", v)
	}
	var newIn4 []string
	for _, e := range AllEnums() {
		if !e.Profiles.Has(ProfileApache313) && e.Profiles.Has(ProfileApache410) {
			newIn4 = append(newIn4, e.Name)
		}
	}
	if len(newIn4) != 7 {
		t.Errorf("enums new in 4.x: %v, want 7", newIn4)
	}
	if LockType(99).String() != "LockType(99)" || LockType_EXCL_WRITE.String() != "EXCL_WRITE" {
		t.Errorf("LockType String: %s %s", LockType(99), LockType_EXCL_WRITE)
	}
}

func TestProfileSet(t *testing.T) {
	for _, name := range ProfileNames() {
		p, ok := ProfileByName(name)
		if !ok || !p.Single() || p.Names()[0] != name {
			t.Errorf("ProfileByName(%s) = %v %v", name, p, ok)
		}
	}
	if _, ok := ProfileByName("apache_3_1_3"); ok {
		t.Error("profile names are exact")
	}
	if got := (ProfileApache313 | ProfileHDP315).String(); got != "APACHE_3_1_3|HORTONWORKS_3_1_0_3_1_5_6150_1" {
		t.Errorf("String = %s", got)
	}
	if ProfileAll.Has(0) || !ProfileAll.Has(ProfileHDP78|ProfileApache410) || ProfileHDP78.Has(ProfileAll) {
		t.Error("Has")
	}
}

func TestSchemaTablesConsistent(t *testing.T) {
	for _, m := range AllMethods() {
		if LookupMethod(m.Name) != m || m.Args == nil || m.Args.Name != m.Name+"_args" {
			t.Errorf("method %s: bad args/lookup", m.Name)
		}
		if (m.Result == nil) != m.Oneway {
			t.Errorf("method %s: oneway %v with result %v", m.Name, m.Oneway, m.Result)
		}
		if NewStruct(m.Args.Name) == nil || (m.Result != nil && NewStruct(m.Result.Name) == nil) {
			t.Errorf("method %s: no Go type", m.Name)
		}
	}
	for _, s := range AllStructs() {
		if LookupStruct(s.Name) != s || NewStruct(s.Name) == nil {
			t.Errorf("struct %s: lookup or Go type missing", s.Name)
		}
		for _, f := range s.Fields {
			if f.Profiles&^s.Profiles != 0 {
				t.Errorf("%s.%s in profiles outside its struct", s.Name, f.Name)
			}
			if (f.Type.Kind == KindStruct && LookupStruct(f.Type.Name) == nil) || (f.Type.Kind == KindEnum && LookupEnum(f.Type.Name) == nil) {
				t.Errorf("%s.%s: dangling type %s", s.Name, f.Name, f.Type)
			}
		}
	}
	if LookupStruct("nope") != nil || LookupMethod("nope") != nil || LookupEnum("nope") != nil || NewStruct("nope") != nil {
		t.Error("lookups of unknown names must be nil")
	}
	if g := LookupStruct("get_table_result").GoName; g != "GetTableMethodResult" {
		t.Errorf("get_table_result Go name %s (collides with the struct GetTableResult)", g)
	}
	if g := LookupStruct("Type").GoName; g != "TypeStruct" {
		t.Errorf("struct Type Go name %s", g)
	}
}

// IDL defaults reach the generated tables with their values; fields without one have none. The compat layer's
// lossless-write guard relies on them (a field an older runtime lacks is dropped only at its default).
func TestIDLDefaults(t *testing.T) {
	field := func(s, f string) *Field {
		st := LookupStruct(s)
		if st == nil || st.FieldByName(f) == nil {
			t.Fatalf("no field %s.%s", s, f)
		}
		return st.FieldByName(f)
	}
	for _, c := range []struct {
		s, f string
		want *Default
	}{
		{"Table", "writeId", &Default{Int: -1}},
		{"Table", "ownerType", &Default{Int: 1}}, // PrincipalType.USER
		{"OpenTxnRequest", "txn_type", &Default{Int: 0}},
		{"OpenTxnRequest", "agentInfo", &Default{Str: "Unknown"}},
		{"AllocateTableWriteIdsRequest", "reallocate", &Default{Int: 0}},
		{"ColumnStatistics", "engine", &Default{Str: "hive"}},
		{"CommitTxnRequest", "exclWriteEnabled", &Default{Int: 1}},
		{"LockRequest", "zeroWaitReadEnabled", &Default{Int: 0}},
		{"get_partitions_args", "max_parts", &Default{Int: -1}},
		{"AddPartitionsRequest", "skipColumnSchemaForPartition", nil}, // no IDL default
		{"Table", "id", nil},
	} {
		got := field(c.s, c.f).Default
		if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
			t.Errorf("%s.%s default = %+v, want %+v", c.s, c.f, got, c.want)
		}
	}
}
