// Package locks is reserved for the synthetic lock shim of a later issue:
// locks of non-default catalogs served by the proxy itself (in memory, or in
// ZooKeeper for several proxy instances), and the splitting of lock requests
// that name several catalogs. Until then the router refuses a lock request
// that names two catalogs as ambiguous, and each catalog's own metastore
// serves the locks of its tables. Nothing in this package is implemented yet.
package locks
