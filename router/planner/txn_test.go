package planner

import (
	"testing"

	"github.com/hms-proxy/hms-proxy/thriftgen"
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
