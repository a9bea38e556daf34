// Package locks is the synthetic lock shim: the locks of non-default catalogs,
// which no backend TxnHandler can hold (their metastores do not share the
// default catalog's transaction ids), served by the proxy itself.
//
// Unlike the Java proxy's shim, which answered ACQUIRED at once, a Shim grants
// by Hive's own lock compatibility rules and in arrival order, so two writers
// of one non-default table are serialized, through one proxy instance or
// several instances sharing a ZooKeeper store:
//
//   - Rules: which lock types conflict on which objects (TxnHandler's table,
//     in its Hive 3.1.3 and Hive 4.1 variants).
//   - Store: where lock records live. IN_MEMORY for one instance, ZOOKEEPER for
//     several: sequential znodes give the arrival order and versioned writes
//     change a record, so replicas need no protocol of their own.
//   - Shim: lock, check_lock, heartbeat, unlock and the release of a
//     transaction's locks on commit/abort, plus the background expiry sweep.
//   - Split: a lock request naming several catalogs, cut into the default
//     catalog's part (a real backend lock) and the shim's part.
//
// The router decides which requests reach the shim (Split, Eligible, Owns);
// the package never routes and never checks access modes.
package locks
