package methods

import (
	"reflect"
	"testing"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Every RPC of the generated canonical service must have a row in the method
// table; a regenerated schema with a new RPC fails here until it is
// classified.
func TestEveryGeneratedRPCIsInTheMethodTable(t *testing.T) {
	table, err := BuildTable()
	if err != nil {
		t.Fatal(err)
	}
	methods := thriftgen.AllMethods()
	for _, m := range methods {
		s := table.Lookup(m.Name)
		if s == nil {
			t.Errorf("RPC %s has no method-table row", m.Name)
			continue
		}
		if s.Family == "" {
			t.Errorf("RPC %s has no family", m.Name)
		}
	}
	// The typed client has one Go method per RPC (plus its TClient accessor):
	// the two views of the generated service must agree.
	nClient := reflect.TypeOf(&thriftgen.Client{}).NumMethod() - 1
	if nClient != len(methods) {
		t.Fatalf("generated client has %d RPC methods, schema lists %d", nClient, len(methods))
	}
	if len(table.Names()) != len(methods) {
		t.Fatalf("table has %d rows for %d RPCs", len(table.Names()), len(methods))
	}
}

func TestClassificationOfKeyRPCs(t *testing.T) {
	table, err := BuildTable()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		method   string
		family   Family
		write    bool
		unrouted Unrouted
		special  Special
	}{
		{"get_table", MetadataRead, false, ToDefault, None},
		{"get_table_req", MetadataRead, false, ToDefault, None},
		{"create_table", MetadataWrite, true, Refuse, None},
		{"alter_table_with_environment_context", MetadataWrite, true, Refuse, None},
		{"get_all_databases", MetadataRead, false, ToDefault, FanOutDatabases},
		{"get_table_meta", MetadataRead, false, ToDefault, FanOutTableMeta},
		{"setMetaConf", ServiceGlobalWrite, true, Refuse, None},
		{"grant_role", ServiceGlobalWrite, true, Refuse, None},
		{"add_token", ServiceGlobalWrite, true, Refuse, None},
		{"create_catalog", ServiceGlobalWrite, true, Refuse, RefuseAlways},
		{"drop_catalog", ServiceGlobalWrite, true, Refuse, RefuseAlways},
		{"getMetaConf", ServiceGlobalRead, false, ToDefault, None},
		{"get_all_functions", ServiceGlobalRead, false, ToDefault, None},
		{"open_txns", ACIDIDBoundLifecycle, true, ToDefault, None},
		{"commit_txn", ACIDIDBoundLifecycle, true, ToDefault, None},
		{"check_lock", ACIDIDBoundLifecycle, false, ToDefault, None},
		{"get_valid_write_ids", ACIDNamespaceBoundWrite, false, ToDefault, None},
		{"allocate_table_write_ids", ACIDNamespaceBoundWrite, true, ToDefault, None},
		{"getVersion", AdminIntrospection, false, ToDefault, LocalVersion},
		{"set_ugi", CompatibilityOnlyRPC, false, ToDefault, LocalSetUGI},
	}
	for _, c := range cases {
		s := table.Lookup(c.method)
		if s == nil {
			t.Errorf("%s missing", c.method)
			continue
		}
		if s.Family != c.family || s.IsWrite() != c.write || s.Unrouted != c.unrouted || s.Special != c.special {
			t.Errorf("%s: family=%s write=%v unrouted=%d special=%d; want %s %v %d %d",
				c.method, s.Family, s.IsWrite(), s.Unrouted, s.Special, c.family, c.write, c.unrouted, c.special)
		}
	}
	// Arguments of get_table carry a database name the router must see.
	if table.Lookup("get_table").Args.Empty() {
		t.Error("get_table arguments compiled to an empty walk")
	}
	// A Table result carries dbName and catName to rewrite outward.
	if table.Lookup("get_table").Result.Empty() {
		t.Error("get_table result compiled to an empty walk")
	}
}

func TestRoleOverridesNameRealSchemaFields(t *testing.T) {
	for k, role := range fieldRoleOverrides {
		s := thriftgen.LookupStruct(k[0])
		if s == nil || s.FieldByName(k[1]) == nil {
			t.Errorf("role override %s.%s names no field of the canonical schema", k[0], k[1])
			continue
		}
		if got := roleOf(k[0], s.FieldByName(k[1])); got != role {
			t.Errorf("roleOf(%s.%s) = %d, want %d", k[0], k[1], got, role)
		}
	}
	for _, c := range []struct {
		s, f string
		want int
	}{
		{"GetDatabaseRequest", "name", int(RoleDB)}, {"DropDatabaseRequest", "name", int(RoleDB)},
		{"Database", "name", int(RoleDB)}, {"Table", "dbName", int(RoleDB)}, {"Table", "catName", int(RoleCatalog)},
		{"LockComponent", "dbname", int(RoleDB)}, {"GetValidWriteIdsRequest", "fullTableNames", int(RoleFullTable)},
		{"SQLPrimaryKey", "table_db", int(RoleDB)}, {"FieldSchema", "name", 0}, {"Table", "tableName", 0},
	} {
		if got := roleOf(c.s, thriftgen.LookupStruct(c.s).FieldByName(c.f)); int(got) != c.want {
			t.Errorf("roleOf(%s.%s) = %d, want %d", c.s, c.f, got, c.want)
		}
	}
}

// Every RPC whose arguments or answer name a database or a table has a
// Ranger rule (authz.go): a new RPC cannot pass the authorization link
// unjudged. The rule's access types are the Hive service definition's.
func TestEveryRPCNamingObjectsHasARangerRule(t *testing.T) {
	table, err := BuildTable()
	if err != nil {
		t.Fatal(err)
	}
	hive := map[string]bool{AccessAny: true, "select": true, "update": true, "create": true, "drop": true,
		"alter": true, "lock": true}
	n := 0
	for _, name := range table.Names() {
		s := table.Lookup(name)
		if s.Objects == nil && s.ResultObjects == nil {
			continue
		}
		n++
		if !s.HasAuthz {
			t.Errorf("RPC %s names databases or tables but has no Ranger rule (router/methods/authz.go)", name)
			continue
		}
		a := s.Authz
		if a.DB == "" && a.Table == "" {
			t.Errorf("RPC %s: its Ranger rule names no access", name)
		}
		for _, acc := range []string{a.DB, a.Table} {
			if acc != "" && !hive[acc] {
				t.Errorf("RPC %s: access %q is not one of the Hive service definition", name, acc)
			}
		}
		if s.IsWrite() && (a.DB == AccessAny || a.Table == "select") && name != "get_lock_materialization_rebuild" {
			t.Errorf("RPC %s writes but its Ranger rule asks a read access (%+v)", name, a)
		}
	}
	if n < 150 {
		t.Fatalf("only %d RPCs name objects: the object walks are not what this test expects", n)
	}
	for _, c := range []struct {
		rpc, db, table string
		udf            bool
	}{
		{"get_table_req", AccessAny, AccessAny, false},
		{"get_partitions_by_names_req", AccessAny, "select", false},
		{"create_table_with_constraints", "create", "create", false},
		{"drop_table_with_environment_context", "drop", "drop", false},
		{"drop_partitions_req", "alter", "alter", false},
		{"drop_database_req", "drop", "drop", false},
		{"add_partitions_req", "alter", "alter", false},
		{"truncate_table_req", "update", "update", false},
		{"create_function", "create", "", true},
		{"alter_database_req", "alter", "alter", false},
	} {
		a := table.Lookup(c.rpc).Authz
		if a.DB != c.db || a.Table != c.table || a.UDF != c.udf {
			t.Errorf("%s: Ranger rule %+v, want db %s table %s udf %v", c.rpc, a, c.db, c.table, c.udf)
		}
	}
}
