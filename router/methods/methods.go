package methods

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Family is the spec's method family (also a rate-limit and audit dimension).
type Family string

// The method families of the specification.
const (
	MetadataRead            Family = "metadata_read"
	MetadataWrite           Family = "metadata_write"
	ServiceGlobalRead       Family = "service_global_read"
	ServiceGlobalWrite      Family = "service_global_write"
	ACIDNamespaceBoundWrite Family = "acid_namespace_bound_write"
	ACIDIDBoundLifecycle    Family = "acid_id_bound_lifecycle"
	AdminIntrospection      Family = "admin_introspection"
	CompatibilityOnlyRPC    Family = "compatibility_only_rpc"
)

// Class is a bit set of the spec's RPC classes.
type Class uint8

// RPC classes.
const (
	ClassWrite Class = 1 << iota
	ClassDDL
	ClassTxn
	ClassLock
)

// Names lists the classes as the spec spells them.
func (c Class) Names() []string {
	var out []string
	for i, n := range []string{"write", "ddl", "txn", "lock"} {
		if c&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// Unrouted says what happens to a call that carries no namespace.
type Unrouted uint8

// What a call without a catalog hint does.
const (
	ToDefault Unrouted = iota // session/global reads, id-only txn/lock lifecycle
	Refuse                    // namespace-less global writes: no guessing
)

// Special names a handler that replaces the generic single-catalog path.
type Special uint8

// Special handlers.
const (
	None            Special = iota
	FanOutDatabases         // get_all_databases, get_databases
	FanOutTableMeta         // get_table_meta
	LocalCatalogs           // get_catalogs: the configured catalogs
	RefuseAlways            // create/drop/alter_catalog: policy-managed in config
	LocalSetUGI             // set_ugi: identity binds to the connection
	DropOneway              // fb303 shutdown/reinitialize never reach a backend
	LocalVersion            // getVersion: the front door's profile identity
)

// Spec is one row of the method table.
type Spec struct {
	Name     string
	Method   *thriftgen.Method
	Family   Family
	Classes  Class
	Unrouted Unrouted
	Special  Special
	Args     *wire.Plan // role strings of the arguments
	Result   *wire.Plan // role strings of the result
	// Objects and ResultObjects walk the names of catalog objects (databases,
	// tables) in the arguments and the result, for the exposure rules
	// (exposure.go); nil when they name none.
	Objects, ResultObjects *wire.Plan
	// Result field ids of declared exceptions, -1 when not declared.
	MetaExcField, NoSuchObjectField, InvalidOperationField int16
	UnknownDBField, UnknownTableField, InvalidObjectField  int16
	TxnAbortedField                                        int16
	// Rename: an alter_table form, whose source database and the new
	// table's database are resolved separately (a table cannot move
	// between catalogs).
	Rename bool
	// excNames: the exception type of each declared exception field.
	excNames map[int16]string
	// keepSession: bit i is set when a declared exception in result field
	// i leaves nothing on the backend session, so the session may serve
	// the next client (sessions.go says which and why).
	keepSession uint64
	// SessionState: a success changes the backend session for the calls
	// after it (sessions.go), so the session serves no other client.
	SessionState bool
	// Why, for refused calls: the reason in the MetaException.
	Why string
	// DatabaseWrite: a database write (create, alter, drop), after which
	// what is cached about the database and its catalog's lists is stale:
	// this replica's caches drop it, and other replicas are told
	// (router/dbcache/cachesync).
	DatabaseWrite bool
	// Authz is the row's Ranger rule (authz.go); HasAuthz is false for the
	// RPCs no rule covers (they name no database or table).
	Authz    Authz
	HasAuthz bool
}

// databaseWrites are the rows of DatabaseWrite.
var databaseWrites = map[string]bool{
	"create_database": true, "create_database_req": true,
	"alter_database": true, "alter_database_req": true,
	"drop_database": true, "drop_database_req": true,
}

// renames are the alter_table forms: a rename may name another database.
var renames = map[string]bool{"alter_table": true, "alter_table_with_environment_context": true,
	"alter_table_with_cascade": true, "alter_table_req": true}

// ExceptionName is the type of the declared exception in result field id
// (metrics label), "MetaException" when the id is not declared.
func (s *Spec) ExceptionName(id int16) string {
	if n, ok := s.excNames[id]; ok {
		return n
	}
	return "MetaException"
}

// NotFoundField is the result field of the exception the RPC declares for
// an object that does not exist, as Hive's metastore answers a missing one:
// NoSuchObjectException, else UnknownTableException (a table) or
// UnknownDBException, else InvalidOperationException (the alter_* forms:
// "table not found", "alter is not possible"), else InvalidObjectException
// (the add_/append_partition forms: "table or database do not exist"),
// else MetaException; -1 when it declares none of them (refuse then answers
// a TApplicationException, as Hive's processor does for an exception an RPC
// does not declare).
func (s *Spec) NotFoundField(table bool) int16 {
	unknown, other := s.UnknownDBField, s.UnknownTableField
	if table {
		unknown, other = other, unknown
	}
	for _, f := range [...]int16{s.NoSuchObjectField, unknown, other, s.InvalidOperationField, s.InvalidObjectField} {
		if f >= 0 {
			return f
		}
	}
	return s.MetaExcField
}

// IsWrite reports whether access modes apply.
func (s *Spec) IsWrite() bool { return s.Classes&ClassWrite != 0 }

// rule classifies methods by exact names or name prefixes; the first rule
// that matches wins. Exact names are checked before prefixes across all rules.
type rule struct {
	family   Family
	classes  Class
	unrouted Unrouted
	special  Special
	names    []string
	prefixes []string
}

var rules = []rule{
	{family: AdminIntrospection, special: DropOneway, names: []string{"shutdown", "reinitialize"}},
	{family: AdminIntrospection, special: LocalVersion, names: []string{"getVersion"}},
	{family: AdminIntrospection, names: []string{"getName", "getStatus", "getStatusDetails",
		"getCounters", "getCounter", "setOption", "getOption", "getOptions", "getCpuProfile", "aliveSince",
		"get_metastore_db_uuid", "flushCache"}},
	{family: CompatibilityOnlyRPC, special: LocalSetUGI, names: []string{"set_ugi"}},
	{family: CompatibilityOnlyRPC, names: []string{"partition_name_has_valid_characters",
		"partition_name_to_spec", "partition_name_to_vals", "get_config_value", "translate_table_dryrun"}},
	{family: MetadataRead, special: FanOutDatabases, names: []string{"get_all_databases", "get_databases"}},
	{family: MetadataRead, special: FanOutTableMeta, names: []string{"get_table_meta"}},
	{family: ServiceGlobalRead, special: LocalCatalogs, names: []string{"get_catalogs"}},
	{family: ServiceGlobalWrite, classes: ClassWrite | ClassDDL, unrouted: Refuse, special: RefuseAlways,
		names: []string{"create_catalog", "drop_catalog", "alter_catalog"}},
	{family: ACIDIDBoundLifecycle, classes: ClassWrite | ClassTxn, names: []string{"open_txns", "commit_txn",
		"abort_txn", "abort_txns", "heartbeat_txn_range", "seed_txn_id", "add_write_ids_to_min_history",
		"update_transaction_statistics", "get_latest_txnid_in_conflict"}},
	{family: ACIDIDBoundLifecycle, classes: ClassLock, names: []string{"check_lock", "unlock", "heartbeat"}},
	{family: ACIDIDBoundLifecycle, names: []string{"get_open_txns", "get_open_txns_info", "get_open_txns_req",
		"show_locks", "show_compact", "get_latest_committed_compaction_info", "find_columns_with_stats"}},
	// find_next_compact hands a compaction to the calling worker: the
	// metastore marks it working.
	{family: ACIDIDBoundLifecycle, classes: ClassWrite | ClassTxn, names: []string{"find_next_compact",
		"find_next_compact2", "mark_cleaned", "mark_compacted",
		"mark_failed", "mark_refused", "set_hadoop_jobid", "update_compactor_state", "abort_Compactions",
		"submit_for_cleanup", "update_compaction_metrics_data", "remove_compaction_metrics_data"}},
	{family: ACIDNamespaceBoundWrite, classes: ClassWrite | ClassLock, names: []string{"lock"}},
	{family: ACIDNamespaceBoundWrite, classes: ClassWrite | ClassTxn, names: []string{"allocate_table_write_ids",
		"add_dynamic_partitions", "compact", "compact2", "fire_listener_event", "seed_write_id", "repl_tbl_writeid_state",
		"add_write_notification_log", "add_write_notification_log_in_batch",
		"get_lock_materialization_rebuild", "heartbeat_lock_materialization_rebuild"}},
	{family: ACIDNamespaceBoundWrite, names: []string{"get_valid_write_ids", "get_max_allocated_table_write_id",
		"get_all_write_event_info"}},
	{family: ServiceGlobalRead, names: []string{"getMetaConf", "get_all_functions", "get_current_notificationEventId",
		"get_next_notification", "get_notification_events_count", "get_role_names", "list_roles",
		"get_principals_in_role", "get_role_grants_for_principal", "get_privilege_set", "list_privileges",
		"get_all_token_identifiers", "get_token", "get_master_keys", "get_delegation_token", "get_catalog",
		"get_active_resource_plan", "get_all_resource_plans", "get_resource_plan", "validate_resource_plan",
		"get_triggers_for_resourceplan", "get_runtime_stats", "get_type", "get_type_all", "get_serde",
		"get_file_metadata", "get_file_metadata_by_expr", "get_schemas_by_cols", "get_schema_version",
		"get_schema_latest_version", "get_schema_all_versions", "get_ischema", "get_replication_metrics",
		"get_scheduled_query", "get_dataconnectors", "get_dataconnector_req",
		"get_stored_procedure", "get_all_stored_procedures", "find_package", "get_all_packages",
		"get_properties", "get_all_functions"}},
	// scheduled_query_poll hands the next due query to the caller: the
	// metastore records its execution. A namespace-less call of the
	// scheduled-query executor, routed to the default catalog as before.
	{family: ServiceGlobalWrite, classes: ClassWrite, names: []string{"scheduled_query_poll"}},
	{family: ServiceGlobalWrite, classes: ClassWrite, unrouted: Refuse, names: []string{"setMetaConf",
		"grant_role", "revoke_role", "grant_revoke_role", "create_role", "drop_role", "grant_privileges",
		"revoke_privileges", "grant_revoke_privileges", "refresh_privileges", "add_token", "remove_token",
		"add_master_key", "update_master_key", "remove_master_key", "renew_delegation_token",
		"cancel_delegation_token", "put_file_metadata", "clear_file_metadata", "cache_file_metadata",
		"add_runtime_stats", "add_serde", "create_type", "drop_type", "add_replication_metrics",
		"scheduled_query_maintenance", "scheduled_query_progress", "create_dataconnector_req",
		"drop_dataconnector_req", "alter_dataconnector_req", "create_stored_procedure", "drop_stored_procedure",
		"add_package", "drop_package", "set_properties", "create_ischema", "alter_ischema", "drop_ischema",
		"add_schema_version", "drop_schema_version", "map_schema_version_to_serde", "set_schema_version_state",
		"cm_recycle"}},
	{family: ServiceGlobalWrite, classes: ClassWrite | ClassDDL, unrouted: Refuse, names: []string{
		"create_resource_plan", "alter_resource_plan", "drop_resource_plan", "create_wm_trigger",
		"alter_wm_trigger", "drop_wm_trigger", "create_wm_pool", "alter_wm_pool", "drop_wm_pool",
		"create_or_update_wm_mapping", "drop_wm_mapping", "create_or_drop_wm_trigger_to_pool_mapping"}},
	{family: MetadataWrite, classes: ClassWrite, unrouted: Refuse, names: []string{"markPartitionForEvent",
		"set_aggr_stats_for", "update_table_column_statistics", "update_partition_column_statistics",
		"update_table_column_statistics_req", "update_partition_column_statistics_req",
		"delete_table_column_statistics", "delete_partition_column_statistics", "delete_column_statistics_req",
		"update_creation_metadata"}},
	{family: MetadataRead, names: []string{"isPartitionMarkedForEvent", "get_all_materialized_view_objects_for_rewriting",
		"get_materialization_invalidation_info"},
		prefixes: []string{"get_", "fetch_", "list_"}},
	{family: MetadataWrite, classes: ClassWrite | ClassDDL, unrouted: Refuse,
		prefixes: []string{"create_", "drop_", "alter_", "add_", "append_", "rename_", "exchange_", "truncate_"}},
}

// Table is the method table: one Spec per RPC of the canonical API.
type Table struct {
	specs map[string]*Spec
	names []string
	// partners: the database field each table field pairs with.
	partners map[partnerKey]int16
	// stateLens: bit n is set when a method of n bytes has SessionState,
	// so a successful reply of any other method costs no lookup.
	stateLens uint64
}

// Partner is the database field a table field of struct st pairs with
// (tablePartners); ok is false when the struct holds none.
func (t *Table) Partner(st string, table int16) (int16, bool) {
	id, ok := t.partners[partnerKey{st, table}]
	return id, ok
}

// Lookup returns the spec of a method, nil when unknown.
func (t *Table) Lookup(name string) *Spec { return t.specs[name] }

// Names lists every method name (sorted) — the bounded set of metric labels.
func (t *Table) Names() []string { return t.names }

// BuildTable classifies every method of the canonical schema and compiles the
// argument and result walks. A method that no rule covers is an error, so a
// schema regeneration that adds RPCs cannot slip through unclassified.
func BuildTable() (*Table, error) {
	exact := map[string]*rule{}
	for i := range rules {
		for _, n := range rules[i].names {
			if _, dup := exact[n]; !dup {
				exact[n] = &rules[i]
			}
		}
	}
	argsComp, resultComp, objComp := wire.NewCompiler(roleOf), wire.NewCompiler(roleOf), wire.NewCompiler(RoleOfObject)
	partners, err := tablePartners()
	if err != nil {
		return nil, err
	}
	t := &Table{specs: map[string]*Spec{}, partners: partners}
	var missing []string
	for _, m := range thriftgen.AllMethods() {
		r := exact[m.Name]
		if r == nil {
			for i := range rules {
				for _, p := range rules[i].prefixes {
					if strings.HasPrefix(m.Name, p) && r == nil {
						r = &rules[i]
					}
				}
			}
		}
		if r == nil {
			missing = append(missing, m.Name)
			continue
		}
		s := &Spec{Name: m.Name, Method: m, Family: r.family, Classes: r.classes, Unrouted: r.unrouted,
			Special: r.special, MetaExcField: -1, NoSuchObjectField: -1, InvalidOperationField: -1,
			UnknownDBField: -1, UnknownTableField: -1, InvalidObjectField: -1, TxnAbortedField: -1,
			Rename: renames[m.Name], SessionState: sessionState[m.Name], DatabaseWrite: databaseWrites[m.Name],
			excNames: map[int16]string{}}
		s.Authz, s.HasAuthz = authzOf(m.Name)
		if s.Special == RefuseAlways {
			s.Why = "catalogs are managed in the proxy configuration (catalogs=...), not by client RPCs"
		}
		if s.Args, err = argsComp.Plan(m.Args.Name); err != nil {
			return nil, err
		}
		if s.Objects, err = objComp.Plan(m.Args.Name); err != nil {
			return nil, err
		}
		if m.Result != nil {
			if s.Result, err = resultComp.Plan(m.Result.Name); err != nil {
				return nil, err
			}
			if s.ResultObjects, err = objComp.Plan(m.Result.Name); err != nil {
				return nil, err
			}
			for _, f := range m.Result.Fields {
				if f.Type.Kind != thriftgen.KindStruct {
					continue
				}
				if f.ID != 0 {
					s.excNames[f.ID] = f.Type.Name
					if f.ID < 64 && s.missLeavesNothing(f.Type.Name) {
						s.keepSession |= 1 << f.ID
					}
				}
				switch f.Type.Name {
				case "MetaException":
					s.MetaExcField = f.ID
				case "NoSuchObjectException":
					s.NoSuchObjectField = f.ID
				case "InvalidOperationException":
					s.InvalidOperationField = f.ID
				case "UnknownDBException":
					s.UnknownDBField = f.ID
				case "UnknownTableException":
					s.UnknownTableField = f.ID
				case "InvalidObjectException":
					s.InvalidObjectField = f.ID
				case "TxnAbortedException":
					s.TxnAbortedField = f.ID
				}
			}
		}
		t.specs[m.Name] = s
		t.names = append(t.names, m.Name)
		if s.SessionState && len(m.Name) < 64 {
			t.stateLens |= 1 << len(m.Name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("method table: %d RPCs of the canonical API have no classification: %s",
			len(missing), strings.Join(missing, ", "))
	}
	sort.Strings(t.names)
	return t, nil
}

// optionalReads answer empty on any backend failure: they only carry
// optional workload-management and diagnostic data.
var optionalReads = map[string]bool{"get_active_resource_plan": true, "get_all_resource_plans": true, "get_runtime_stats": true}

// pollsForWork are writes that hand the caller the next piece of work and
// record it (a compaction, a scheduled query's execution): from a backend
// without the RPC, the empty answer ("nothing to do") is true, and Hive 4's
// compactor and HiveServer2 poll them on a timer.
var pollsForWork = map[string]bool{"find_next_compact": true, "find_next_compact2": true, "scheduled_query_poll": true}

// PollsForWork reports whether the RPC hands the caller the next piece of
// work and records it (pollsForWork): "nothing is due" is a true answer
// wherever the proxy does not let the record be written.
func (s *Spec) PollsForWork() bool { return pollsForWork[s.Name] }

// EmptyOnAnyFailure reports whether any backend failure of the RPC is
// answered with an empty result (optionalReads).
func (s *Spec) EmptyOnAnyFailure() bool { return optionalReads[s.Name] }

// EmptyOnUnknownMethod reports whether an UNKNOWN_METHOD from the backend
// may be answered with an empty result: read-only service APIs
// (notifications, privilege introspection, token/key listings,
// txn/lock/compaction status) and the polls for work.
func (s *Spec) EmptyOnUnknownMethod() bool {
	if pollsForWork[s.Name] {
		return true
	}
	if s.IsWrite() || s.Method.Result == nil {
		return false
	}
	switch s.Family {
	case ServiceGlobalRead, ACIDIDBoundLifecycle, AdminIntrospection:
		return true
	}
	return false
}
