// Package ha tests what operators do with several replicas and a running
// proxy: reload without restart (in process, as cmd/hms-proxy assembles it),
// and three real hms-proxy binaries behind a real HAProxy sharing a real
// ZooKeeper over real Hive metastores (SIGKILL, SIGTERM, cache coherence).
package ha

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/testbed"
)

// Two Hive 3.1.3 metastores shared by every test of the package.
var hms1, hms2 *testbed.Metastore

func TestMain(m *testing.M) {
	if os.Getenv("HMS_PROXY_SKIP_REAL_HIVE") == "1" {
		fmt.Println("ha: HMS_PROXY_SKIP_REAL_HIVE=1, real-Hive tests skipped")
		os.Exit(m.Run())
	}
	if err := testbed.Prepare(); err != nil {
		fmt.Fprintln(os.Stderr, "ha: test bed not ready:", err)
		os.Exit(1)
	}
	var wg sync.WaitGroup
	var errs [2]error
	for i, dst := range []**testbed.Metastore{&hms1, &hms2} {
		wg.Add(1)
		go func() { defer wg.Done(); *dst, errs[i] = testbed.StartMetastore(testbed.Hive313) }()
	}
	wg.Wait()
	code := 1
	if errs[0] != nil || errs[1] != nil {
		fmt.Fprintln(os.Stderr, "ha: starting metastores:", errs[0], errs[1])
	} else {
		code = m.Run()
		fmt.Println("ha: launched", testbed.LaunchSummary())
	}
	if sharedZK.zk != nil {
		_ = sharedZK.zk.Stop()
	}
	for _, ms := range []*testbed.Metastore{hms1, hms2} {
		if ms != nil {
			_ = ms.Stop()
		}
	}
	os.Exit(code)
}

func needHive(t *testing.T) {
	t.Helper()
	if hms1 == nil {
		t.Skip("HMS_PROXY_SKIP_REAL_HIVE=1")
	}
}

// uniq makes object names unique per run (HMS lower-cases names).
func uniq(prefix string) string {
	return fmt.Sprintf("%s_%x", prefix, time.Now().UnixNano()&0xffffffff)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// pause freezes a metastore (SIGSTOP) and returns what thaws it (SIGCONT),
// at most once; the test's cleanup thaws it if the test did not.
func pause(t *testing.T, ms *testbed.Metastore) (resume func()) {
	t.Helper()
	if err := ms.Pause(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	resume = func() {
		once.Do(func() {
			if err := ms.Resume(); err != nil {
				t.Errorf("resume the metastore: %v", err)
			}
		})
	}
	t.Cleanup(resume)
	return resume
}

// sharedZK is the package's ZooKeeper, started by the first test that needs one: no test here stops it, and each
// keeps its state under its own znode (uniq), so one server serves all of them instead of one started per test.
var sharedZK struct {
	once sync.Once
	zk   *testbed.ZooKeeper
	err  error
}

func zooKeeper(t *testing.T) *testbed.ZooKeeper {
	t.Helper()
	sharedZK.once.Do(func() { sharedZK.zk, sharedZK.err = testbed.StartZooKeeper() })
	if sharedZK.err != nil {
		t.Fatal(sharedZK.err)
	}
	return sharedZK.zk
}
