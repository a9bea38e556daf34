package testbed

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestKDCIssuesTickets starts a realm, makes a user and a service principal and has MIT's own kinit and klist use
// the keytab: the KDC is real and the keytabs hold the principals' current keys.
func TestKDCIssuesTickets(t *testing.T) {
	k := StartKDCT(t, KDCOptions{MaxLife: 10 * time.Minute})
	kt, err := k.PrincipalKeytab("alice.keytab", "alice", "hive/localhost")
	if err != nil {
		t.Fatal(err)
	}
	cc := k.Dir + "/alice.ccache"
	if err := k.Kinit("alice", kt, cc); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cc); err != nil {
		t.Fatalf("kinit wrote no credential cache: %v", err)
	}
	if err := k.Kinit("hive/localhost", kt, cc+"2"); err != nil {
		t.Fatal(err)
	}
	// a principal that does not exist is refused with kadmin's own message
	if _, err := k.Keytab("x.keytab", "nobody"); err == nil || !strings.Contains(err.Error(), "nobody") {
		t.Fatalf("ktadd of a missing principal: %v", err)
	}
}
