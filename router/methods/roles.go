package methods

import (
	"fmt"

	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Roles of string fields in the canonical API.
const (
	// RoleDB: a database name, external form on the client side.
	RoleDB wire.Role = iota + 1
	// RoleCatalog: a catalog name (catName, catalogName, …).
	RoleCatalog
	// RoleFullTable: "db.table".
	RoleFullTable
	// RoleDBPattern: a database LIKE-pattern (get_databases, get_table_meta).
	RoleDBPattern
	// RoleTable: a table name, paired with a database field of the same
	// struct (tablePartners); never rewritten, read only by the exposure
	// walks (Spec.Objects, Spec.ResultObjects).
	RoleTable
)

// Field names that hold a database or catalog name wherever they occur. The
// canonical schema is the union of Hive 3.1.3, 4.1.x and HDP, so one list
// covers every version; a field is only ever looked at when it is a string
// (or a list/set of strings).
var (
	dbFieldNames = set("dbName", "db_name", "dbname", "databaseName", "table_db",
		"pktable_db", "fktable_db", "parent_db_name", "foreign_db_name", "oldDbName",
		"source_db", "dest_db", "database", "db")
	catalogFieldNames = set("catName", "cat_name", "catalogName", "catalog")
	fullTableNames    = set("fullTableName", "fullTableNames", "tablesUsed")
	// Table names (strings; lists of table names are lookups, whose
	// answers the exposure filter narrows instead).
	tableFieldNames = set("tbl_name", "tblName", "tableName", "table_name", "tablename", "tbl", "tblname",
		"table", "source_table_name", "dest_table_name", "parent_tbl_name", "foreign_tbl_name",
		"pktable_name", "fktable_name")
)

// tableRoleOverrides: fields that hold a table name only in one struct.
var tableRoleOverrides = map[[2]string]bool{
	{"drop_table_args", "name"}:                          true,
	{"drop_table_with_environment_context_args", "name"}: true,
	// a TABLE, PARTITION or COLUMN privilege's table (DATABASE and GLOBAL
	// ones leave it unset)
	{"HiveObjectRef", "objectName"}: true,
}

// tablePartnerOverrides pairs the table fields of structs that hold more
// than one database field with their own database field; a table field of
// any other struct pairs with the struct's one database field.
var tablePartnerOverrides = map[[2]string]string{
	{"ForeignKeysRequest", "parent_tbl_name"}:         "parent_db_name",
	{"ForeignKeysRequest", "foreign_tbl_name"}:        "foreign_db_name",
	{"SQLForeignKey", "pktable_name"}:                 "pktable_db",
	{"SQLForeignKey", "fktable_name"}:                 "fktable_db",
	{"exchange_partition_args", "source_table_name"}:  "source_db",
	{"exchange_partition_args", "dest_table_name"}:    "dest_db",
	{"exchange_partitions_args", "source_table_name"}: "source_db",
	{"exchange_partitions_args", "dest_table_name"}:   "dest_db",
}

// fieldRoleOverrides: names that mean a database or catalog only in one
// struct (positional arguments are fields of the method's *_args struct).
var fieldRoleOverrides = map[[2]string]wire.Role{
	{"Database", "name"}:                     RoleDB,
	{"Catalog", "name"}:                      RoleCatalog,
	{"GetCatalogRequest", "name"}:            RoleCatalog,
	{"DropCatalogRequest", "name"}:           RoleCatalog,
	{"get_database_args", "name"}:            RoleDB,
	{"GetDatabaseRequest", "name"}:           RoleDB,
	{"DropDatabaseRequest", "name"}:          RoleDB,
	{"AlterCatalogRequest", "name"}:          RoleCatalog,
	{"drop_database_args", "name"}:           RoleDB,
	{"get_databases_args", "pattern"}:        RoleDBPattern,
	{"get_table_meta_args", "db_patterns"}:   RoleDBPattern,
	{"GetDatabaseObjectsRequest", "pattern"}: RoleDBPattern,
	// Results that are lists of database names.
	{"get_all_databases_result", "success"}: RoleDB,
	{"get_databases_result", "success"}:     RoleDB,
	// Not a namespace of ours: the remote database of a data connector.
	{"Database", "remote_dbname"}:              wire.RoleNone,
	{"CreateDatabaseRequest", "remote_dbname"}: wire.RoleNone,
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// roleOf is the wire.RoleFunc of the proxy's naming model.
func roleOf(structName string, f *thriftgen.Field) wire.Role {
	if r, ok := fieldRoleOverrides[[2]string{structName, f.Name}]; ok {
		return r
	}
	switch {
	case dbFieldNames[f.Name]:
		return RoleDB
	case catalogFieldNames[f.Name]:
		return RoleCatalog
	case fullTableNames[f.Name]:
		return RoleFullTable
	}
	return wire.RoleNone
}

// RoleOfObject adds table names to roleOf: the names of catalog objects a
// message carries, as the exposure walks see them.
func RoleOfObject(structName string, f *thriftgen.Field) wire.Role {
	if r := roleOf(structName, f); r != wire.RoleNone {
		return r
	}
	if f.Type.Kind == thriftgen.KindString && (tableFieldNames[f.Name] || tableRoleOverrides[[2]string{structName, f.Name}]) {
		return RoleTable
	}
	return wire.RoleNone
}

// partnerKey names one table field of one struct.
type partnerKey struct {
	st    string
	table int16
}

// tablePartners maps every table field (roleOfObjects) of the schema to the
// id of the database field of its struct that says which database the
// table is in. A table field of a struct without a database field (a
// result's ExtendedTableInfo) has no entry: its database is the request's.
func tablePartners() (map[partnerKey]int16, error) {
	out := map[partnerKey]int16{}
	for _, st := range thriftgen.AllStructs() {
		var dbs []*thriftgen.Field
		var tables []*thriftgen.Field
		for _, f := range st.Fields {
			switch RoleOfObject(st.Name, f) {
			case RoleDB:
				if f.Type.Kind == thriftgen.KindString {
					dbs = append(dbs, f)
				}
			case RoleTable:
				tables = append(tables, f)
			}
		}
		for _, tf := range tables {
			if name, ok := tablePartnerOverrides[[2]string{st.Name, tf.Name}]; ok {
				db := st.FieldByName(name)
				if db == nil {
					return nil, fmt.Errorf("tablePartnerOverrides: %s has no field %s", st.Name, name)
				}
				out[partnerKey{st.Name, tf.ID}] = db.ID
				continue
			}
			switch len(dbs) {
			case 0:
			case 1:
				out[partnerKey{st.Name, tf.ID}] = dbs[0].ID
			default:
				return nil, fmt.Errorf("table field %s.%s: its struct has %d database fields and tablePartnerOverrides names none of them",
					st.Name, tf.Name, len(dbs))
			}
		}
	}
	return out, nil
}
