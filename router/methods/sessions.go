package methods

import (
	"github.com/hms-proxy/hms-proxy/monitoring"
	"github.com/hms-proxy/hms-proxy/wire"
)

// When a backend session may serve the next client.
//
// A Thrift connection to a metastore is served by one metastore thread for
// its whole life, and that thread keeps state between calls: its RawStore
// (ObjectStore: a JDO PersistenceManager, the open transaction and a
// counter of nested openTransaction calls), its configuration (setMetaConf
// changes it for that connection only), and, on a plain metastore, the
// identity set_ugi gave the connection. When the connection closes, Hive
// cleans that thread up (its TServerEventHandler's deleteContext shuts the
// RawStore down, which ends an open transaction). A client talking to the
// metastore directly therefore never inherits another client's state; a
// pooled session gives its state to whoever borrows it next, so a session
// goes back to its pool only after an outcome that provably left nothing.
//
// From Hive's source (HMSHandler in HiveMetaStore.java 3.1.3 and
// HMSHandler.java 4.x, ObjectStore, HiveAlterHandler, RetryingHMSHandler):
//
//   - ObjectStore nests transactions: openTransaction counts, only the
//     outermost commitTransaction commits, and rollbackTransaction rolls
//     the whole thing back and resets the count. A handler that opens a
//     transaction and throws before its commit or rollback leaves the
//     thread inside it: every later call on that connection runs nested in
//     it (nothing it writes is committed, and its row locks block the
//     metastore's other clients), until some later failure rolls all of it
//     back. exchange_partition(s) does exactly that in 3.1.3 and 4.x: it
//     opens the transaction, then validates (tables missing, different
//     schemas, no matching partition, the partition already in the
//     destination, a rename across replication policies) and throws
//     outside the try whose finally rolls back. Every other handler site
//     that opens a transaction does so inside a try/finally that rolls
//     back, but a write's failure is where a new Hive version, a patched
//     vendor build or another RawStore would repeat the mistake, and a
//     failed write is rare enough that a new connection costs nothing
//     anyone notices. So: any declared exception of a call that may write
//     retires its session.
//   - A read's "does not exist" (NoSuchObjectException, UnknownDB/Table/
//     PartitionException) leaves nothing: read handlers open no transaction
//     of their own (Hive 4's get_partitions_by_names does, inside a
//     try/finally that rolls back), and ObjectStore's reads either return
//     null after their commit (getTable, the handler then throws) or throw
//     inside GetHelper/rollbackAndCleanup, whose finally rolls back. These
//     are Spark's tableExists and databaseExists and Hive's IF NOT EXISTS:
//     a reconnect per miss would cost a round trip on hot paths. Any other
//     exception of a read (a MetaException: the store failed) retires the
//     session, as do all exceptions of calls classed write, txn or lock.
//   - A TApplicationException means the handler did not finish normally.
//     Hive 4's Thrift (0.14+) turns a RuntimeException escaping a handler
//     into INTERNAL_ERROR on a connection that stays open, whatever the
//     handler had opened; PROTOCOL_ERROR means the metastore stopped
//     reading the call part way, so the stream may be out of step. Both
//     retire the session, for reads too. UNKNOWN_METHOD does not: the
//     processor answers it without running any handler (and compatibility
//     fallbacks meet it routinely on older backends).
//   - A round trip that failed (I/O error, a reply that does not belong to
//     its request, the budget or socket timeout, a cancelled fan-out leg)
//     closes its session: the metastore may still be running the call, and
//     the closed connection is what makes it clean up.
//   - setMetaConf succeeds by changing the connection's configuration for
//     the calls after it: the session is closed after it, so no other
//     client runs under that configuration (the caller's own next calls may
//     use another session anyway; a pool cannot keep per-client settings).
//     set_ugi never reaches a pooled session: the proxy answers it, and an
//     impersonation pool's sessions carry the identity of their one user.

// sessionState lists the RPCs whose success changes the backend session for
// the calls after it.
var sessionState = map[string]bool{"setMetaConf": true}

// missLeavesNothing reports whether a declared exception of type exc of this
// row leaves nothing on the session: a read's "does not exist".
func (s *Spec) missLeavesNothing(exc string) bool {
	if s.Classes != 0 { // write, ddl, txn or lock
		return false
	}
	switch exc {
	case "NoSuchObjectException", "UnknownDBException", "UnknownTableException", "UnknownPartitionException":
		return true
	}
	return false
}

// RetireAfter says whether the session that read reply m to method name
// must be closed instead of given back, and why ("": it may serve again).
// A nil table keeps a session only after a success or UNKNOWN_METHOD. The
// success of a method without session state costs two byte reads and a bit
// test: no lookup, no allocation.
func (t *Table) RetireAfter(name []byte, m *wire.Message) string {
	if m.Type == wire.Exception {
		typ, _, err := wire.ParseAppException(m.Body())
		switch {
		case err != nil || typ == wire.AppProtocolError:
			return monitoring.RetireProtocolError
		case typ == wire.AppUnknownMethod:
			return ""
		}
		return monitoring.RetireApplicationException
	}
	id := ExceptionField(m.Body())
	if t == nil {
		if id != 0 {
			return monitoring.RetireException
		}
		return ""
	}
	if id == 0 {
		if len(name) < 64 && t.stateLens&(1<<len(name)) != 0 {
			if s := t.specs[string(name)]; s != nil && s.SessionState {
				return monitoring.RetireSessionState
			}
		}
		return ""
	}
	if s := t.specs[string(name)]; s != nil && id > 0 && id < 64 && s.keepSession&(1<<id) != 0 {
		return ""
	}
	return monitoring.RetireException
}

// ExceptionField returns the field id of the declared exception a result
// struct carries, 0 for a success: a Thrift result holds exactly one field,
// the success value (id 0) or one exception, so the first field decides.
func ExceptionField(body []byte) int16 {
	b := wire.Buf{B: body}
	t, id, err := b.FieldHeader()
	if err != nil || t == wire.TStop || t != wire.TStruct {
		return 0
	}
	return id
}
