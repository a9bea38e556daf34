package compat

import (
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Hive 4 writes runs of open or aborted transactions as ranges; 3.1.3's
// ValidReadTxnList parser only reads single ids.
func TestOldTxnListExpandsRanges(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"20:5::", "20:5::"},
		{"20:5:5,8:6,7", "20:5:5,8:6,7"},
		{"20:5:5-7,9:10-12", "20:5:5,6,7,9:10,11,12"},
		{"20:9223372036854775807::3-4", "20:9223372036854775807::3,4"},
	} {
		got, err := oldTxnList(c.in)
		if err != nil || got != c.want {
			t.Errorf("oldTxnList(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"20:5:7-5:", "20:5:1-" + "9999999999:"} {
		if _, err := oldTxnList(bad); err == nil {
			t.Errorf("oldTxnList(%q) must fail", bad)
		}
	}
}

// The snapshot built for a reader outside a transaction, as Hive's
// TxnCommonUtils.createValidReadTxnList(txns, 0) builds it, written the way
// 3.1.3 reads it.
func TestSnapshotOfOpenTxns(t *testing.T) {
	resp := func(hwm int64, ids []int64, bits []byte) *wire.Value {
		l := wire.List(wire.TI64)
		for _, id := range ids {
			l.Elems = append(l.Elems, wire.I64(id))
		}
		v := wire.Struct(wire.Field{ID: fid("GetOpenTxnsResponse", "txn_high_water_mark"), V: wire.I64(hwm)},
			wire.Field{ID: fid("GetOpenTxnsResponse", "open_txns"), V: l})
		if bits != nil {
			v.Set(fid("GetOpenTxnsResponse", "abortedBits"), wire.Value{Type: wire.TString, Str: bits})
		}
		return &v
	}
	for _, c := range []struct {
		v    *wire.Value
		want string
	}{
		{resp(12, nil, nil), "12:9223372036854775807::"},
		// ids 4 (aborted: bit 0), 6, 9 (aborted: bit 2): BitSet.valueOf little-endian bits
		{resp(12, []int64{4, 6, 9}, []byte{0b101}), "12:6:6:4,9"},
	} {
		if got, err := snapshotOf(c.v); err != nil || got != c.want {
			t.Errorf("snapshotOf = %q, %v; want %q", got, err, c.want)
		}
	}
}

func TestTxnTypesAnOlderRuntimeNeverRecords(t *testing.T) {
	for name, want := range map[string]bool{"READ_ONLY": true, "COMPACTION": true, "DEFAULT": false, "REPL_CREATED": false} {
		v := thriftgen.LookupEnum("TxnType").ValueByName(name)
		if _, got := txnTypeNeverRecorded(int64(v.Value)); got != want {
			t.Errorf("%s: never recorded = %v, want %v", name, got, want)
		}
	}
	if _, ok := txnTypeNeverRecorded(99); ok {
		t.Error("an unknown TxnType value cannot be excluded exactly")
	}
}

// The adapter set is built explicitly, from the profile registry: every
// adapter serves some runtime, and the plans the task's Hive 4 calls need
// on a 3.1.3 runtime are what they should be.
func TestAdapterSetFromTheRegistry(t *testing.T) {
	ads, err := NewAdapters()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range ads.All() {
		if a.Runtimes == 0 {
			t.Errorf("adapter %s serves no runtime", a.Method)
		}
	}
	old := runtime(t, "APACHE_3_1_3")
	for method, to := range map[string]string{
		"get_open_txns_req":                      "get_open_txns",
		"update_table_column_statistics_req":     "update_table_column_statistics",
		"update_partition_column_statistics_req": "update_partition_column_statistics",
		"get_valid_write_ids":                    "get_valid_write_ids",
		"add_write_ids_to_min_history":           "",
		"lock":                                   "lock",
	} {
		mode, a := ads.Plan(old, method)
		if mode != Adapted || a.To != to {
			t.Errorf("%s on 3.1.3: %v %+v, want adapted to %q", method, mode, a, to)
		}
	}
	if mode, _ := ads.Plan(runtime(t, "APACHE_4_1_0"), "get_valid_write_ids"); mode != Native {
		t.Errorf("get_valid_write_ids on Hive 4 must be native, got %v", mode)
	}
	// get_latest_txnid_in_conflict cannot be computed from 3.1.3's calls:
	// refused with its MetaException and the reason, never answered "no
	// conflict" (router/planner: TestUnsupportedWithAReasonIsAMetaException).
	if mode, _ := ads.Plan(old, "get_latest_txnid_in_conflict"); mode != Unsupported || !strings.Contains(UnsupportedReason("get_latest_txnid_in_conflict"), "committed write set") {
		t.Errorf("get_latest_txnid_in_conflict has no safe mapping to 3.1.3, got %v, reason %q", mode, UnsupportedReason("get_latest_txnid_in_conflict"))
	}
}

// The registry covers exactly thriftgen's profiles, in their order.
func TestRegistryIsTheSchemasProfiles(t *testing.T) {
	var names []string
	for i, r := range Runtimes() {
		names = append(names, r.Name)
		if p, ok := thriftgen.ProfileByName(r.Name); !ok || p != r.Bit || !r.Bit.Single() {
			t.Errorf("runtime %d %s has bit %v, the schema %v", i, r.Name, r.Bit, p)
		}
		if r.Label == "" || r.Version == "" {
			t.Errorf("runtime %s lacks a label or version", r.Name)
		}
	}
	if strings.Join(names, ",") != strings.Join(thriftgen.ProfileNames(), ",") {
		t.Fatalf("registry %v, schema profiles %v", names, thriftgen.ProfileNames())
	}
	if _, err := Lookup("APACHE_9"); err == nil || !strings.Contains(err.Error(), "APACHE_3_1_3") {
		t.Fatalf("an unknown profile must be named with the known ones: %v", err)
	}
}
