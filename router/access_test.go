package router

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hms-proxy/hms-proxy/router/methods"
	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// reviewedReads are the RPCs of the canonical schema that change nothing a
// catalog's access mode protects, each reviewed against what Hive's
// HMSHandler does with it. An RPC the method table classifies as a read and
// that is not listed here fails TestAccessModesCoverEveryWrite: a new RPC
// (or a reclassified one) is reviewed before a READ_ONLY catalog lets it
// through. Not reads, though their names look so: find_next_compact (marks
// the compaction working), scheduled_query_poll (records an execution),
// get_lock_materialization_rebuild (takes a lock).
var reviewedReads = nameSet(
	// fb303 and server introspection; shutdown and reinitialize never
	// reach a backend, setOption and flushCache touch no metadata
	"aliveSince", "flushCache", "getCounter", "getCounters", "getCpuProfile", "getName", "getOption",
	"getOptions", "getStatus", "getStatusDetails", "getVersion", "reinitialize", "setOption", "shutdown",
	"get_metastore_db_uuid", "getMetaConf", "get_config_value",
	// lock and transaction lifecycle of locks a read may hold (a SELECT's
	// SHARED_READ lock is checked, heart-beaten and released)
	"check_lock", "heartbeat", "unlock",
	// the caller's identity and tokens (authentication, not metadata)
	"set_ugi", "get_delegation_token", "get_token", "get_all_token_identifiers", "get_master_keys",
	// names and pure functions
	"partition_name_has_valid_characters", "partition_name_to_spec", "partition_name_to_vals",
	"translate_table_dryrun", "validate_resource_plan",
	// metadata reads
	"fetch_partition_names_req", "find_columns_with_stats", "find_package", "get_active_resource_plan",
	"get_aggr_stats_for", "get_all_databases", "get_all_functions", "get_all_materialized_view_objects_for_rewriting",
	"get_all_packages", "get_all_resource_plans", "get_all_stored_procedures", "get_all_table_constraints",
	"get_all_tables", "get_all_write_event_info", "get_catalog", "get_catalogs", "get_check_constraints",
	"get_current_notificationEventId", "get_database", "get_database_req", "get_databases", "get_databases_req",
	"get_dataconnector_req", "get_dataconnectors", "get_default_constraints", "get_fields", "get_fields_req",
	"get_fields_with_environment_context", "get_file_metadata", "get_file_metadata_by_expr", "get_foreign_keys",
	"get_function", "get_functions", "get_functions_req", "get_ischema", "get_latest_committed_compaction_info",
	"get_materialization_invalidation_info", "get_materialized_views_for_rewriting",
	"get_max_allocated_table_write_id", "get_next_notification", "get_not_null_constraints",
	"get_notification_events_count", "get_num_partitions_by_filter", "get_open_txns", "get_open_txns_info",
	"get_open_txns_req", "get_part_specs_by_filter", "get_partition", "get_partition_by_name",
	"get_partition_column_statistics", "get_partition_names", "get_partition_names_ps", "get_partition_names_ps_req",
	"get_partition_names_req", "get_partition_req", "get_partition_values", "get_partition_with_auth",
	"get_partitions", "get_partitions_by_expr", "get_partitions_by_filter", "get_partitions_by_filter_req",
	"get_partitions_by_names", "get_partitions_by_names_req", "get_partitions_ps", "get_partitions_ps_with_auth",
	"get_partitions_ps_with_auth_req", "get_partitions_pspec", "get_partitions_req", "get_partitions_spec_by_expr",
	"get_partitions_statistics_req", "get_partitions_with_auth", "get_partitions_with_specs", "get_primary_keys",
	"get_principals_in_role", "get_privilege_set", "get_properties", "get_replication_metrics", "get_resource_plan",
	"get_role_grants_for_principal", "get_role_names", "get_runtime_stats", "get_scheduled_query", "get_schema",
	"get_schema_all_versions", "get_schema_latest_version", "get_schema_req", "get_schema_version",
	"get_schema_with_environment_context", "get_schemas_by_cols", "get_serde", "get_stored_procedure", "get_table",
	"get_table_column_statistics", "get_table_meta", "get_table_names_by_filter", "get_table_objects_by_name",
	"get_table_objects_by_name_req", "get_table_req", "get_table_statistics_req", "get_tables",
	"get_tables_by_type", "get_tables_ext", "get_triggers_for_resourceplan", "get_type", "get_type_all",
	"get_unique_constraints", "get_valid_write_ids", "isPartitionMarkedForEvent", "list_privileges", "list_roles",
	"show_compact", "show_locks",
)

// accessRouter: every catalog has the settings of extra (catalog.<c>.
// omitted; "one catalog" first: catalog1 alone); reached and dialed as in
// exposureRouter.
func accessRouter(t *testing.T, extra ...string) (r *Router, reached, dialed *atomic.Int64) {
	props := []string{
		"catalog.catalog1.runtime-profile=APACHE_4_1_0",
		"catalog.catalog2.runtime-profile=HORTONWORKS_3_1_0_3_1_5_6150_1",
		"catalog.catalog3.runtime-profile=APACHE_3_1_3",
	}
	cats := []string{"catalog1", "catalog2", "catalog3"}
	if len(extra) > 0 && extra[0] == "one catalog" {
		cats, extra = cats[:1], extra[1:]
		props = append(props[:1], "catalogs=catalog1", "-catalog.catalog2.conf.hive.metastore.uris",
			"-catalog.catalog3.conf.hive.metastore.uris", "-catalog.catalog3.runtime-profile")
	}
	for _, c := range cats {
		props = append(props, "catalog."+c+".conf.hive.metastore.connect.retries=0")
		for _, e := range extra {
			props = append(props, "catalog."+c+"."+e)
		}
	}
	return recordingRouter(t, props...)
}

// writeSample is the sample call of a write naming database db: a lock
// takes an EXCLUSIVE lock (a lock's sample is otherwise a SELECT's
// SHARED_READ lock, which is a read), outside a transaction (noLockTxn).
func writeSample(m *thriftgen.Method, db string) wire.Value {
	v := noLockTxn(m, sampleArgsNamed(m, db, "t"))
	if m.Name == "lock" {
		comp := &v.Field(1).Field(1).Elems[0]
		comp.Set(1, wire.I32(int32(thriftgen.LockType_EXCLUSIVE)))
	}
	return v
}

// noLockTxn takes the transaction out of a lock's sample: a refused lock of
// a transaction also aborts it on the default catalog (lockabort.go,
// TestRefusedLockOfATransactionIsAborted), which these tests do not judge.
func noLockTxn(m *thriftgen.Method, v wire.Value) wire.Value {
	if m.Name == "lock" {
		v.Field(1).Del(lockRequestTxnID)
	}
	return v
}

// On READ_ONLY catalogs no write RPC of the canonical schema reaches a
// metastore, whichever catalog it names (each *_req form, every payload
// write: lock components, write notifications, write-id state,
// alter_partitions_req); every RPC the table calls a read was reviewed as
// one (reviewedReads).
func TestAccessModesCoverEveryWrite(t *testing.T) {
	r, reached, dialed := accessRouter(t, "access-mode=READ_ONLY")
	one, oneReached, oneDialed := accessRouter(t, "one catalog", "access-mode=READ_ONLY")
	writes := 0
	for _, m := range thriftgen.AllMethods() {
		spec := r.table.Lookup(m.Name)
		if !spec.IsWrite() {
			if !reviewedReads[m.Name] {
				t.Errorf("%s is classified a read but is not in reviewedReads: review what Hive does with it", m.Name)
			}
			continue
		}
		if reviewedReads[m.Name] {
			t.Errorf("%s is in reviewedReads but classified a write", m.Name)
		}
		if lifecycleAlone(m.Name) {
			continue // TestAccessModesLetTransactionLifecyclePass
		}
		writes++
		saidReadOnly := false
		for _, prefix := range []string{"", "catalog2__", "catalog3__"} {
			before, dials := reached.Load(), dialed.Load()
			_, msg := replyError(t, serveCall(t, r, m.Name, writeSample(m, prefix+"bd")))
			if reached.Load() != before || dialed.Load() != dials {
				t.Errorf("%s (database %sbd) reached the metastore of a READ_ONLY catalog", m.Name, prefix)
			}
			if strings.Contains(msg, "is READ_ONLY (catalog.") || strings.Contains(msg, "names no catalog or database") {
				saidReadOnly = true // or refused as a namespace-less write by the planner, before any catalog
			}
			if spec.PollsForWork() && msg == "" && reached.Load() == before {
				saidReadOnly = true // "nothing is due": TestAccessModesAnswerPollsForWorkNothingDue
			}
		}
		if !saidReadOnly && spec.Special != methods.RefuseAlways {
			t.Errorf("%s: no call was refused by the access mode", m.Name)
		}
		// A one-catalog deployment, where nothing is ambiguous.
		before, dials := oneReached.Load(), oneDialed.Load()
		_, msg := replyError(t, serveCall(t, one, m.Name, writeSample(m, "bd")))
		if oneReached.Load() != before || oneDialed.Load() != dials {
			t.Errorf("%s reached the metastore of a one-catalog READ_ONLY deployment (%s)", m.Name, msg)
		}
	}
	for n := range reviewedReads {
		if r.table.Lookup(n) == nil {
			t.Errorf("reviewedReads names %s, which is no RPC of the schema", n)
		}
	}
	if writes < 150 {
		t.Fatalf("only %d writes", writes)
	}
	// The same router serves reads and a SELECT's lock.
	before := reached.Load()
	for _, m := range []string{"get_table_req", "get_database", "lock"} {
		serveCall(t, r, m, sampleArgsNamed(thriftgen.LookupMethod(m), "bd", "t"))
	}
	if reached.Load() == before {
		t.Fatal("no read reached the executor: the test cannot tell a refusal from a pass")
	}
}

// Under READ_WRITE_DB_WHITELIST a write reaches the metastore only when
// every database it names is listed; a write naming none is refused.
func TestWhitelistCoversEveryWrite(t *testing.T) {
	r, reached, dialed := accessRouter(t, "access-mode=READ_WRITE_DB_WHITELIST", "write-db-whitelist=bd_ok")
	passed := 0
	for _, m := range thriftgen.AllMethods() {
		spec := r.table.Lookup(m.Name)
		if !spec.IsWrite() || lifecycleAlone(m.Name) {
			continue
		}
		for _, prefix := range []string{"", "catalog2__", "catalog3__"} {
			before, dials := reached.Load(), dialed.Load()
			_, msg := replyError(t, serveCall(t, r, m.Name, writeSample(m, prefix+"bd_no")))
			if reached.Load() != before || dialed.Load() != dials {
				t.Errorf("%s naming %sbd_no reached the metastore (%s)", m.Name, prefix, msg)
			}
			before = reached.Load()
			_, msg = replyError(t, serveCall(t, r, m.Name, writeSample(m, prefix+"bd_ok")))
			if reached.Load() != before {
				passed++
			} else if spec.PollsForWork() && msg == "" {
				continue // names no database: nothing is due (TestAccessModesAnswerPollsForWorkNothingDue)
			} else if strings.Contains(msg, "bd_ok") && strings.Contains(msg, "write-db-whitelist") {
				t.Errorf("%s naming only the listed %sbd_ok was refused: %s", m.Name, prefix, msg)
			}
		}
	}
	if passed < 100 {
		t.Fatalf("only %d writes to a listed database passed", passed)
	}
}

// lifecycleAlone: a transaction lifecycle call whose sample carries nothing
// but the transaction (commit_txn's sample carries every write a commit
// can: TestAccessModesCoverEveryWrite refuses it).
func lifecycleAlone(method string) bool {
	return planner.TxnLifecycle(method) && method != "commit_txn"
}

// HiveServer2 with DbTxnManager opens, heart-beats and commits a
// transaction around every SELECT, and aborts the one a refused write
// leaves open: on a READ_ONLY or whitelisted default catalog those reach
// the metastore. A commit_txn that carries writes of its own (Hive 4's
// CommitTxnFunction: writeEventInfos, replLastIdInfo, keyValue) is a write,
// refused naming what it carries.
func TestAccessModesLetTransactionLifecyclePass(t *testing.T) {
	ro, roReached, _ := accessRouter(t, "access-mode=READ_ONLY")
	wl, wlReached, _ := accessRouter(t, "access-mode=READ_WRITE_DB_WHITELIST", "write-db-whitelist=bd_ok")
	passes := func(r *Router, reached *atomic.Int64, what, method string, args wire.Value) {
		t.Helper()
		before := reached.Load()
		_, msg := replyError(t, serveCall(t, r, method, args))
		if reached.Load() == before {
			t.Errorf("%s: %s was refused: %s", what, method, msg)
		}
	}
	refused := func(r *Router, reached *atomic.Int64, what, method string, args wire.Value, has ...string) {
		t.Helper()
		before := reached.Load()
		_, msg := replyError(t, serveCall(t, r, method, args))
		if reached.Load() != before {
			t.Errorf("%s: %s reached the metastore", what, method)
		}
		for _, h := range has {
			if !strings.Contains(msg, h) {
				t.Errorf("%s: %s refused with %q, which does not say %q", what, method, msg, h)
			}
		}
	}
	for _, m := range thriftgen.AllMethods() {
		n := m.Name
		if !planner.TxnLifecycle(n) {
			continue
		}
		if !ro.table.Lookup(n).IsWrite() {
			t.Errorf("%s is no write: it needs no place in txnLifecycle", n)
		}
		if n == "commit_txn" {
			continue
		}
		passes(ro, roReached, "READ_ONLY", n, sampleArgsNamed(m, "bd", "t"))
		passes(wl, wlReached, "whitelist", n, sampleArgsNamed(m, "bd_no", "t"))
	}
	// commit_txn: the transaction alone, then with each write of its own
	commit := func(db string, fields ...int16) wire.Value {
		full := sampleArgsNamed(thriftgen.LookupMethod("commit_txn"), db, "t")
		req := full.Field(1)
		keep := wire.Struct(wire.Field{ID: 1, V: *req.Field(1)})
		for _, id := range fields {
			keep.Fields = append(keep.Fields, wire.Field{ID: id, V: *req.Field(id)})
		}
		return wire.Struct(wire.Field{ID: 1, V: keep})
	}
	passes(ro, roReached, "READ_ONLY", "commit_txn", commit("bd"))
	passes(wl, wlReached, "whitelist", "commit_txn", commit("bd_no"))
	for _, c := range []struct {
		field int16
		name  string
	}{{planner.CommitWriteEventInfos, "writeEventInfos"}, {planner.CommitReplLastIDInfo, "replLastIdInfo"}, {planner.CommitKeyValue, "keyValue"}} {
		refused(ro, roReached, "READ_ONLY", "commit_txn", commit("bd", c.field), "catalog1 is READ_ONLY", "commit_txn carrying "+c.name)
		if c.field == planner.CommitKeyValue {
			refused(wl, wlReached, "whitelist", "commit_txn", commit("bd_ok", c.field), "write-db-whitelist", "table with id 1")
			continue
		}
		refused(wl, wlReached, "whitelist", "commit_txn", commit("bd_no", c.field), "database bd_no is not listed", "commit_txn carrying "+c.name)
		passes(wl, wlReached, "whitelist", "commit_txn", commit("bd_ok", c.field))
	}
	// An empty list of write events writes nothing (CommitTxnFunction
	// records them only when the list is not empty).
	empty := commit("bd")
	empty.Field(1).Set(planner.CommitWriteEventInfos, wire.List(wire.TStruct))
	passes(ro, roReached, "READ_ONLY", "commit_txn", empty)
}

func nameSet(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// A refused lock of a transaction ends it: the proxy aborts the transaction
// on the default catalog and answers the TxnAbortedException lock declares,
// with the reason (e2e/clients:TestHiveServer2TransactionsOnReadOnlyDefaultCatalog
// shows HiveServer2 reading it). Here no metastore answers the abort: the
// refusal is answered as before (a TApplicationException), and the client's
// rollback ends the transaction. A lock outside a transaction aborts
// nothing.
func TestRefusedLockOfATransactionIsAborted(t *testing.T) {
	r, reached, dialed := accessRouter(t, "access-mode=READ_ONLY")
	lockArgs := func(txn int64) wire.Value {
		comp := wire.Struct(wire.Field{ID: 1, V: wire.I32(int32(thriftgen.LockType_EXCLUSIVE))}, wire.Field{ID: 2, V: wire.I32(int32(thriftgen.LockLevel_TABLE))},
			wire.Field{ID: 3, V: wire.Str("bd")}, wire.Field{ID: 4, V: wire.Str("t")}, wire.Field{ID: 6, V: wire.I32(int32(thriftgen.DataOperationType_UPDATE))})
		req := wire.Struct(wire.Field{ID: 1, V: wire.List(wire.TStruct, comp)}, wire.Field{ID: 3, V: wire.Str("u")}, wire.Field{ID: 4, V: wire.Str("h")})
		if txn > 0 {
			req.Set(lockRequestTxnID, wire.I64(txn))
		}
		return wire.Struct(wire.Field{ID: 1, V: req})
	}
	field, msg := replyError(t, serveCall(t, r, "lock", lockArgs(0)))
	if field != -1 || !strings.Contains(msg, "catalog1 is READ_ONLY") || dialed.Load() != 0 {
		t.Errorf("a refused lock outside a transaction: field %d %q, %d dials; want a TApplicationException naming the reason, nothing aborted", field, msg, dialed.Load())
	}
	field, msg = replyError(t, serveCall(t, r, "lock", lockArgs(41)))
	if dialed.Load() == 0 {
		t.Errorf("a refused lock of transaction 41: no abort was tried")
	}
	if field != -1 || !strings.Contains(msg, "catalog1 is READ_ONLY") {
		t.Errorf("a refused lock whose transaction could not be aborted: field %d %q, want the refusal as before", field, msg)
	}
	if reached.Load() != 0 {
		t.Errorf("a refused lock reached the executor")
	}
	if spec := r.table.Lookup("lock"); spec.TxnAbortedField != 2 || spec.MetaExcField != -1 {
		t.Errorf("lock declares TxnAbortedException in field 2 and no MetaException: %+v", spec)
	}
}

// A poll for work (scheduled_query_poll of HiveServer2 4's scheduled-query
// executor, the compactor's find_next_compact) records the work it hands
// out: on a READ_ONLY catalog, or one whose whitelist it cannot name, the
// caller hears that nothing is due, without an error for its log on every
// poll, nothing reaching the metastore, and each answer counted.
func TestAccessModesAnswerPollsForWorkNothingDue(t *testing.T) {
	for _, mode := range [][]string{{"access-mode=READ_ONLY"}, {"access-mode=READ_WRITE_DB_WHITELIST", "write-db-whitelist=bd_ok"}} {
		r, reached, _ := accessRouter(t, mode...)
		polls := 0
		for _, m := range thriftgen.AllMethods() {
			if !r.table.Lookup(m.Name).PollsForWork() {
				continue
			}
			polls++
			reply := serveCall(t, r, m.Name, sampleArgsNamed(m, "bd", "t"))
			if field, msg := replyError(t, reply); field != 0 || msg != "" {
				t.Errorf("%v: %s answered an error (field %d): %s", mode, m.Name, field, msg)
				continue
			}
			v, err := wire.DecodeStruct(reply.Body())
			if err != nil {
				t.Fatal(err)
			}
			if ok := v.Field(0); ok == nil || ok.Type != wire.TStruct || len(ok.Fields) != 0 {
				t.Errorf("%v: %s answered %+v, want an empty answer (nothing is due)", mode, m.Name, v)
			}
		}
		if polls != 3 || reached.Load() != 0 {
			t.Errorf("%v: %d polls answered, %d reached a metastore", mode, polls, reached.Load())
		}
	}
}
