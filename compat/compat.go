// Package compat is the version edge of hms-proxy. Every other layer sees one
// canonical API (the union of Hive 3.1.3, 4.1.x and HDP 3.1.0.x); compat
// decides, per runtime profile, how a canonical call reaches a backend that
// speaks an older or newer dialect, and what identity a front door shows.
//
// A canonical call meets a backend runtime in one of four ways:
//   - Native: the runtime has the method; the bytes go through unchanged.
//   - Adapted: the runtime lacks it, and an adapter (below) says how to serve
//     it with calls the runtime has (a *_req wrapper downgraded to its
//     positional form, or a positional method upgraded to its *_req form).
//   - HortonworksOnly: a Hortonworks method that only an HDP (or Hive 4)
//     runtime can serve; refused elsewhere with a clear MetaException.
//   - Unsupported: no safe mapping; the client gets UNKNOWN_METHOD.
package compat

import (
	"fmt"
	"strings"

	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Runtime is one profile as the compat layer sees it.
type Runtime struct {
	Name    string // configuration value, e.g. APACHE_3_1_3
	Bit     thriftgen.ProfileSet
	Version string // what getVersion answers for a front door of this profile
	Label   string // short label in generated tables (3.1.3, HDP-78)
	// Hortonworks runtimes carry the HDP-only methods.
	Hortonworks bool
	// Hive4 runtimes speak Hive 4's API generation (its filter keys, its
	// *_req wrappers); the others predate it.
	Hive4 bool

	// What differs between Hive versions beyond the method set (which
	// Has answers from the schema) is one capability field each: the
	// router, the lock shim, the REST door and the purge ask these, never
	// the runtime's name, so a new Hive version is one entry below plus
	// its schema.

	// CompareAndSwap: alter_table* compares the table's metadata_location
	// with the one the client read (Iceberg's expected_parameter_key and
	// value, HIVE-26882 in Hive 4) and refuses a commit that lost a race,
	// so an Iceberg commit is safe without the metastore lock.
	CompareAndSwap bool
	// LockRules is the Hive release whose TxnHandler lock table the
	// metastore grants by (3 or 4; locks.Rules has the same values): the
	// synthetic lock shim grants by the default catalog's.
	LockRules int
	// DropPurge: the external table drop purge
	// (federation.external-table-drop-purge.*) serves this runtime; the
	// specification limits it to Apache 3.1.3 backends.
	DropPurge bool
}

// profiles is the registry of runtime profiles, in thriftgen's profile
// order: the one place a new profile is added (with its adapters). The
// adapters, the dialects, the router and the generated docs derive their
// profile lists from it; configs keeps its own constants (it imports no
// project package) and a test holds the two lists equal. Read-only.
var profiles = [...]Runtime{
	{Name: "APACHE_3_1_3", Bit: thriftgen.ProfileApache313, Version: "3.1.3", Label: "3.1.3",
		LockRules: 3, DropPurge: true},
	{Name: "APACHE_4_1_0", Bit: thriftgen.ProfileApache410, Version: "4.1.0", Label: "4.1.0", Hive4: true,
		CompareAndSwap: true, LockRules: 4},
	{Name: "HORTONWORKS_3_1_0_3_1_0_78", Bit: thriftgen.ProfileHDP78, Version: "3.1.0.3.1.0.0-78", Label: "HDP-78", Hortonworks: true,
		LockRules: 3},
	{Name: "HORTONWORKS_3_1_0_3_1_5_6150_1", Bit: thriftgen.ProfileHDP315, Version: "3.1.0.3.1.5.6150-1", Label: "HDP-3.1.5", Hortonworks: true,
		LockRules: 3},
}

// Runtimes lists every runtime profile in canonical order. The runtimes are
// shared: read them, never change them.
func Runtimes() []*Runtime {
	out := make([]*Runtime, len(profiles))
	for i := range profiles {
		out[i] = &profiles[i]
	}
	return out
}

// Lookup returns the runtime of a profile name.
func Lookup(name string) (*Runtime, error) {
	for i := range profiles {
		if profiles[i].Name == name {
			return &profiles[i], nil
		}
	}
	var names []string
	for _, r := range Runtimes() {
		names = append(names, r.Name)
	}
	return nil, fmt.Errorf("unknown runtime profile %q (known: %s)", name, strings.Join(names, ", "))
}

// runtimesWhere is the set of runtimes a predicate holds for.
func runtimesWhere(pred func(*Runtime) bool) thriftgen.ProfileSet {
	var set thriftgen.ProfileSet
	for _, r := range Runtimes() {
		if pred(r) {
			set |= r.Bit
		}
	}
	return set
}

// Has reports whether the runtime's own API has the method.
func (r *Runtime) Has(method string) bool {
	m := thriftgen.LookupMethod(method)
	return m != nil && m.Profiles.Has(r.Bit)
}

// Mode says how a canonical call reaches a runtime.
type Mode uint8

// The ways a call meets a runtime.
const (
	Native Mode = iota
	Adapted
	HortonworksOnly
	Unsupported
)

// hortonworksOnly: Hortonworks methods that must reach a runtime that has
// them as they are (Hive 4.1 has them too, with the same ids and types).
var hortonworksOnly = map[string]bool{
	"add_write_notification_log":                      true,
	"get_tables_ext":                                  true,
	"get_all_materialized_view_objects_for_rewriting": true,
}

// UnsupportedMessage is the UNKNOWN_METHOD text for a call with no safe
// mapping to the runtime.
func UnsupportedMessage(method, catalog string, r *Runtime) string {
	return fmt.Sprintf("Invalid method name: '%s' (catalog %s runs %s, which does not have it, and hms-proxy has no safe mapping for it)",
		method, catalog, r.Name)
}

// unsupportedWhy are methods without a safe mapping that a runtime without
// them refuses with the MetaException they declare and the reason, instead
// of UNKNOWN_METHOD: the Java client retries an UNKNOWN_METHOD over a new
// connection and HiveServer2 shows it as a missing method, where the user
// needs to read why the statement cannot run.
//
// get_latest_txnid_in_conflict: Hive 4's DriverTxnHandler asks it after an
// UPDATE, DELETE or MERGE took its exclusive lock. The metastore joins the
// transaction's own UPDATE/DELETE components (TXN_COMPONENTS) with the
// writes committed since it began (WRITE_SET, by commit id). Hive 3.1.3
// keeps both tables, but none of its calls reads them (show_locks has no
// operation types and only held locks, get_open_txns_info no committed
// transactions); Hive 3.1.3's own driver instead compares the written
// tables' write-id lists under the statement's snapshot and a fresh one, and
// this call carries neither the snapshot nor the tables. Answering "no
// conflict" could lose a concurrent update, so the statement fails before
// it writes and HiveServer2 aborts its transaction.
var unsupportedWhy = map[string]string{
	"get_latest_txnid_in_conflict": "the write-conflict check of UPDATE, DELETE and MERGE on transactional tables needs the metastore's " +
		"committed write set, which no call of this runtime reads; hms-proxy refuses it rather than answer \"no conflict\" and risk " +
		"a lost update, so the statement fails before it writes",
}

// UnsupportedReason is why an unsupported method is refused with its
// MetaException ("" for the methods answered UNKNOWN_METHOD).
func UnsupportedReason(method string) string { return unsupportedWhy[method] }

// UnsupportedReasonMessage is the MetaException text of such a refusal.
func UnsupportedReasonMessage(method, catalog string, r *Runtime) string {
	return fmt.Sprintf("%s on catalog %s (%s): %s", method, catalog, r.Name, unsupportedWhy[method])
}

// HortonworksMessage is the MetaException text for an HDP-only method aimed
// at a runtime without it. It names the runtimes that have the method (HDP
// and Hive 4 alike), not a kind of runtime.
func HortonworksMessage(method, catalog string, r *Runtime) string {
	var have []string
	for _, x := range Runtimes() {
		if x.Has(method) {
			have = append(have, x.Name)
		}
	}
	return fmt.Sprintf("%s needs a backend runtime that has it (%s); catalog %s runs %s, which does not",
		method, strings.Join(have, " or "), catalog, r.Name)
}

// Caller sends one call to the backend: args is the method's *_args struct,
// the answer its decoded *_result struct. A TApplicationException from the
// backend is returned as *AppError.
type Caller interface {
	Call(method string, args wire.Value) (wire.Value, error)
	// Runtime is the backend's runtime profile.
	Runtime() *Runtime
	// Leftover applies the guard's rule (Guard.Leftover) to the fields of
	// the client's request struct req (named structName) that an adapter of
	// method does not carry to the backend: a refusal for a value the
	// runtime cannot honour, a recorded drop for one it implies. It checks
	// nothing for reads.
	Leftover(method string, req *wire.Value, structName string, carried func(id int16) bool) error
}

// AppError is a TApplicationException answered by a backend.
type AppError struct {
	Type    int32
	Message string
}

func (e *AppError) Error() string {
	return fmt.Sprintf("TApplicationException %d: %s", e.Type, e.Message)
}

// RefusedError is an adapter's refusal to drop something it cannot carry.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return e.Reason }

func refused(format string, args ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, args...)}
}
