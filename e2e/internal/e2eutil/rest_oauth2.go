package e2eutil

import (
	"sync"
	"testing"

	"github.com/hms-proxy/hms-proxy/testbed"
)

// One Keycloak per test binary (it takes a minute or two to start on a busy
// machine), started by the first test that needs it.
var sharedKC struct {
	once sync.Once
	k    *testbed.Keycloak
	err  error
}

func StopSharedKeycloak() {
	if sharedKC.k != nil {
		_ = sharedKC.k.Stop()
	}
}

// Keycloak is the test binary's shared Keycloak, started on first use.
func Keycloak(t *testing.T) *testbed.Keycloak {
	t.Helper()
	NeedHive(t)
	sharedKC.once.Do(func() { sharedKC.k, sharedKC.err = testbed.StartKeycloak() })
	if sharedKC.err != nil {
		t.Fatalf("Keycloak: %v", sharedKC.err)
	}
	return sharedKC.k
}
