package planner

import (
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Every name of the transaction lifecycle is an RPC of the schema, and the
// commit fields the access modes read are where they assume.
func TestTxnLifecycleNamesRPCsOfTheSchema(t *testing.T) {
	for n := range txnLifecycle {
		if thriftgen.LookupMethod(n) == nil {
			t.Errorf("txnLifecycle names %s, which is no RPC of the schema", n)
		}
	}
	if err := CommitFieldIDs(); err != nil {
		t.Fatal(err)
	}
}

// An unsupported method with a reason (compat.UnsupportedReason) is refused
// with its MetaException saying why, not UNKNOWN_METHOD:
// get_latest_txnid_in_conflict on a 3.1.3 catalog; on a Hive 4 catalog it
// is forwarded.
func TestUnsupportedWithAReasonIsAMetaException(t *testing.T) {
	pl := testPlanner(t, true)
	args := wire.Struct(wire.Field{ID: 1, V: wire.I64(9)})
	p := plan(t, pl, "get_latest_txnid_in_conflict", args)
	if p.Kind != PlanRefuse || p.Refusal.Kind != RefuseMeta || p.Refusal.Catalog != "catalog1" {
		t.Fatalf("get_latest_txnid_in_conflict on a 3.1.3 default catalog: %s", p)
	}
	for _, f := range []string{"get_latest_txnid_in_conflict", "catalog1", "APACHE_3_1_3", "committed write set", "lost update", "before it writes"} {
		if !strings.Contains(p.Refusal.Message, f) {
			t.Errorf("the refusal %q does not say %q", p.Refusal.Message, f)
		}
	}
	// Another method without a mapping keeps UNKNOWN_METHOD.
	if p := plan(t, pl, "get_dataconnectors", wire.Struct()); p.Kind != PlanRefuse || p.Refusal.Kind != RefuseUnknownMethod {
		t.Errorf("get_dataconnectors on 3.1.3: %s", p)
	}
}
