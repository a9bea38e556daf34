// Package e2eutil is what the end-to-end test packages (e2e/routing,
// e2e/compat, e2e/rest, e2e/clients, e2e/policy, e2e/locks) share: the real
// metastores every one of them starts (Main), the helpers their tests call,
// and their test data. Each package is its own test binary, so go test runs
// them in parallel, each with its own metastores.
package e2eutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/testbed"
)

// Shared metastores of a test binary: two Hive 3.1.3 and one Hive 4.1.0,
// started once by Main.
var (
	HMS1, HMS2 *testbed.Metastore // 3.1.3
	HMS4       *testbed.Metastore // 4.1.0
)

// Main is the TestMain of every end-to-end package: it starts the shared
// metastores (unless HMS_PROXY_SKIP_REAL_HIVE=1), runs the tests, stops what
// they shared and returns the exit code.
func Main(m *testing.M) int {
	if os.Getenv("HMS_PROXY_SKIP_REAL_HIVE") == "1" {
		fmt.Println("e2e: HMS_PROXY_SKIP_REAL_HIVE=1, real-Hive tests skipped")
		return m.Run()
	}
	if err := testbed.Prepare(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: test bed not ready:", err)
		return 1
	}
	var wg sync.WaitGroup
	var errs [3]error
	start := func(i int, v testbed.Version, dst **testbed.Metastore) {
		defer wg.Done()
		*dst, errs[i] = testbed.StartMetastore(v)
	}
	wg.Add(3)
	go start(0, testbed.Hive313, &HMS1)
	go start(1, testbed.Hive313, &HMS2)
	go start(2, testbed.Hive410, &HMS4)
	wg.Wait()
	code := 1
	if err := errors.Join(errs[:]...); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting metastores:", err)
	} else {
		code = m.Run()
	}
	// What the package started, counted (docs/testbed.md#where-the-time-goes): a plain run prints it too.
	fmt.Println("e2e: launched", testbed.LaunchSummary())
	StopSharedZooKeeper()
	StopSharedKeycloak()
	for _, ms := range []*testbed.Metastore{HMS1, HMS2, HMS4} {
		if ms != nil {
			_ = ms.Stop()
		}
	}
	return code
}

// NeedHive skips a test when the real metastores are off.
func NeedHive(t *testing.T) {
	t.Helper()
	if HMS1 == nil {
		t.Skip("HMS_PROXY_SKIP_REAL_HIVE=1")
	}
}

// Uniq makes object names unique per test run (HMS lower-cases names).
func Uniq(prefix string) string {
	return fmt.Sprintf("%s_%x", prefix, time.Now().UnixNano()&0xffffffff)
}

// Ctx is a test's context, bounded by two minutes.
func Ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// TwoCatalogs is the basic federation: catalog1 (default) and catalog2,
// both real Hive 3.1.3 metastores.
func TwoCatalogs(extra ...string) map[string]string {
	p := map[string]string{
		"catalogs":                "catalog1,catalog2",
		"routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": HMS1.URI,
		"catalog.catalog2.conf.hive.metastore.uris": HMS2.URI,
	}
	for _, kv := range extra {
		k, v, _ := strings.Cut(kv, "=")
		p[k] = v
	}
	return p
}

// Testdata is the path of one of the end-to-end tests' data files
// (e2e/internal/e2eutil/testdata), wherever the test runs.
func Testdata(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", name)
}
