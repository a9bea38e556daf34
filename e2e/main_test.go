// Package e2e runs hms-proxy against real Hive metastores (3.1.3 and 4.1.0,
// started by the test bed) and drives it with the real Java
// HiveMetaStoreClient and with the generated Go client.
package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/testbed"
)

// Shared metastores: two Hive 3.1.3 and one Hive 4.1.0, started once.
var (
	hms1, hms2 *testbed.Metastore // 3.1.3
	hms4       *testbed.Metastore // 4.1.0
)

func TestMain(m *testing.M) {
	if os.Getenv("HMS_PROXY_SKIP_REAL_HIVE") == "1" {
		fmt.Println("e2e: HMS_PROXY_SKIP_REAL_HIVE=1, real-Hive tests skipped")
		os.Exit(m.Run())
	}
	if err := testbed.Prepare(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: test bed not ready:", err)
		os.Exit(1)
	}
	var wg sync.WaitGroup
	var errs [3]error
	start := func(i int, v testbed.Version, dst **testbed.Metastore) {
		defer wg.Done()
		*dst, errs[i] = testbed.StartMetastore(v)
	}
	wg.Add(3)
	go start(0, testbed.Hive313, &hms1)
	go start(1, testbed.Hive313, &hms2)
	go start(2, testbed.Hive410, &hms4)
	wg.Wait()
	code := 1
	if err := firstErr(errs[:]); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting metastores:", err)
	} else {
		code = m.Run()
	}
	stopSharedZooKeeper()
	stopSharedKeycloak()
	for _, ms := range []*testbed.Metastore{hms1, hms2, hms4} {
		if ms != nil {
			_ = ms.Stop()
		}
	}
	os.Exit(code)
}

func firstErr(errs []error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func needHive(t *testing.T) {
	t.Helper()
	if hms1 == nil {
		t.Skip("HMS_PROXY_SKIP_REAL_HIVE=1")
	}
}

// uniq makes object names unique per test run (HMS lower-cases names).
func uniq(prefix string) string {
	return fmt.Sprintf("%s_%x", prefix, time.Now().UnixNano()&0xffffffff)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// twoCatalogs is the basic federation: catalog1 (default) and catalog2,
// both real Hive 3.1.3 metastores.
func twoCatalogs(extra ...string) map[string]string {
	p := map[string]string{
		"catalogs":                "catalog1,catalog2",
		"routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": hms1.URI,
		"catalog.catalog2.conf.hive.metastore.uris": hms2.URI,
	}
	for _, kv := range extra {
		k, v, _ := strings.Cut(kv, "=")
		p[k] = v
	}
	return p
}
