package methods

import "strings"

// The Ranger column of the method table: which access of the Hive service
// definition an RPC needs on the objects it names, and what its answer
// lists. The router's authorization link (router/ranger.go) reads it for
// every exchange; TestEveryRPCNamingObjectsHasARangerRule holds that no row
// naming a database or table is left without one.
//
// The access types are those of Ranger's Hive plugin (RangerHiveAuthorizer
// maps Hive operations to them; the proxy maps the metastore RPCs behind
// those operations the same way):
//
//   - lookups and lists (SHOW DATABASES, SHOW TABLES, DESCRIBE DATABASE,
//     the Table object every client reads first) ask "any access" on the
//     object ("_any", Hive's USE): what a caller may touch at all exists
//     for it, the rest does not (NoSuchObjectException);
//   - reads of a table's contents (partitions, statistics, columns,
//     constraints: QUERY, SHOWPARTITIONS, DESCTABLE) ask select;
//   - create, alter and drop of databases, tables, partitions and functions
//     ask create, alter and drop (adding or dropping a partition or a
//     constraint alters its table, as ALTERTABLE_ADDPARTS/DROPPARTS do); a data write (truncate,
//     write ids, insert events, dynamic partitions) asks update; a lock
//     asks lock.

// AccessAny is Ranger's "any access" (Hive's USE).
const AccessAny = "_any"

// Answer says what names an answer lists, for the filter that keeps the
// caller's own.
type Answer uint8

// What an answer lists.
const (
	AnswerObjects   Answer = iota // the answer's objects as the result walk finds them (ResultObjects)
	AnswerDatabases               // a list of database names
	AnswerTables                  // a list of table names of the request's database
	AnswerFunctions               // a list of function names of the request's database
)

// Authz is one row's Ranger rule.
type Authz struct {
	// DB is the access a database named without a table of its own struct
	// value needs (drop_database, get_tables, a lock component naming a
	// database).
	DB string
	// Table is the access a table needs.
	Table string
	// Defines: the row's access applies to the object the request defines
	// (the Table of a create, the Database of create_database); the other
	// objects it names (a foreign key's parent) need only exist for the
	// caller (AccessAny).
	Defines bool
	// UDF: the request names a function (database and function name): the
	// access is asked on Ranger's udf resource.
	UDF bool
	// Answer: what the answer lists.
	Answer Answer
}

// authzRule maps RPCs by exact name or prefix to a rule; exact names win
// over prefixes, and the first prefix rule that matches wins.
type authzRule struct {
	authz    Authz
	names    []string
	prefixes []string
}

var authzRules = []authzRule{
	// Lookups: any access.
	{authz: Authz{DB: AccessAny, Table: AccessAny}, names: []string{"get_table", "get_table_req",
		"get_table_objects_by_name", "get_table_objects_by_name_req", "get_tables_ext", "get_database",
		"get_database_req", "get_table_meta", "get_all_materialized_view_objects_for_rewriting",
		"get_next_notification", "get_notification_events_count", "show_locks", "show_compact",
		"get_latest_committed_compaction_info", "find_columns_with_stats", "list_privileges", "get_privilege_set",
		"translate_table_dryrun", "get_catalog", "get_all_packages", "get_all_stored_procedures", "find_package",
		"get_stored_procedure", "get_ischema", "get_schema_version", "get_schema_latest_version",
		"get_schema_all_versions", "get_materialization_invalidation_info"}},
	{authz: Authz{DB: AccessAny, Answer: AnswerDatabases}, names: []string{"get_all_databases", "get_databases", "get_databases_req"}},
	{authz: Authz{DB: AccessAny, Table: AccessAny, Answer: AnswerTables}, names: []string{"get_all_tables", "get_tables",
		"get_tables_by_type", "get_table_names_by_filter", "get_materialized_views_for_rewriting"}},
	{authz: Authz{DB: AccessAny, Answer: AnswerFunctions}, names: []string{"get_functions", "get_functions_req"}},
	{authz: Authz{DB: AccessAny, UDF: true}, names: []string{"get_function"}},
	{authz: Authz{DB: "create", UDF: true}, names: []string{"create_function"}},
	{authz: Authz{DB: "drop", UDF: true}, names: []string{"drop_function"}},
	{authz: Authz{DB: "alter", UDF: true}, names: []string{"alter_function"}},
	// Data writes: update.
	{authz: Authz{DB: "update", Table: "update"}, names: []string{"allocate_table_write_ids", "add_dynamic_partitions",
		"add_write_notification_log", "add_write_notification_log_in_batch", "fire_listener_event", "seed_write_id",
		"repl_tbl_writeid_state", "get_lock_materialization_rebuild", "heartbeat_lock_materialization_rebuild",
		"commit_txn", "update_creation_metadata"},
		prefixes: []string{"truncate_"}},
	{authz: Authz{DB: "lock", Table: "lock"}, names: []string{"lock"}},
	// Table reads that are not lookups: select on the table.
	{authz: Authz{DB: AccessAny, Table: "select"}, names: []string{"isPartitionMarkedForEvent"},
		prefixes: []string{"get_", "fetch_", "list_"}},
	{authz: Authz{DB: "create", Table: "create", Defines: true}, prefixes: []string{"create_"}},
	{authz: Authz{DB: "drop", Table: "drop"}, prefixes: []string{"drop_"}},
	// Everything else that changes an object alters it: DDL on tables and
	// partitions, statistics, constraints, compaction, privileges.
	{authz: Authz{DB: "alter", Table: "alter"}, names: []string{"markPartitionForEvent", "set_aggr_stats_for",
		"compact", "compact2", "mark_cleaned", "mark_compacted", "mark_failed", "mark_refused", "submit_for_cleanup",
		"update_compaction_metrics_data", "remove_compaction_metrics_data", "update_compactor_state",
		"grant_privileges", "revoke_privileges", "grant_revoke_privileges", "refresh_privileges",
		"cache_file_metadata", "map_schema_version_to_serde", "set_schema_version_state", "find_next_compact",
		"find_next_compact2", "drop_partition", "drop_partition_by_name", "drop_partition_by_name_with_environment_context",
		"drop_partition_req", "drop_partition_with_environment_context", "drop_partitions_req", "drop_constraint"},
		prefixes: []string{"alter_", "add_", "append_", "rename_", "exchange_", "update_", "delete_"}},
}

// authzOf is the rule of an RPC (ok false: none).
func authzOf(name string) (Authz, bool) {
	for i := range authzRules {
		for _, n := range authzRules[i].names {
			if n == name {
				return authzRules[i].authz, true
			}
		}
	}
	for i := range authzRules {
		for _, p := range authzRules[i].prefixes {
			if strings.HasPrefix(name, p) {
				return authzRules[i].authz, true
			}
		}
	}
	return Authz{}, false
}
