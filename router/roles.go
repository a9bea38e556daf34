package router

import (
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
	// RoleTable: a table name; never rewritten, read for exposure checks on
	// arguments only.
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
	tableFieldNames   = set("tbl_name", "tblName", "tableName", "table_name", "tablename", "tbl")
)

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

// roleOfArgs adds table names, which only requests need (exposure checks).
func roleOfArgs(structName string, f *thriftgen.Field) wire.Role {
	if r := roleOf(structName, f); r != wire.RoleNone {
		return r
	}
	if tableFieldNames[f.Name] && f.Type.Kind == thriftgen.KindString {
		return RoleTable
	}
	return wire.RoleNone
}
