package testbed

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The Hive clients of both versions run the scenarios directly against real metastores of both versions.
func TestClientsAgainstRealMetastores(t *testing.T) {
	ms := StartMetastoresT(t, Hive313, Hive410)
	servers := map[Version]*Metastore{Hive313: ms[0], Hive410: ms[1]}

	// what each server says it is (fb303 getVersion): 3.1.3 answers a fixed "3.0"
	wantVersion := map[Version]string{Hive313: "3.0", Hive410: "4.1.0"}

	// every pairing that real Hive supports; a 4.1.0 client cannot talk to a 3.1.3 server (see below)
	pairs := []struct{ server, client Version }{
		{Hive313, Hive313}, {Hive410, Hive410}, {Hive410, Hive313},
	}
	for _, p := range pairs {
		m := servers[p.server]
		t.Run(fmt.Sprintf("server=%s/client=%s", p.server, p.client), func(t *testing.T) {
			steps := RunScenarioT(t, p.client, m.URI, "version")
			if got := detailOf(steps, "getVersion"); got != wantVersion[p.server] {
				t.Errorf("getVersion = %q, want %q", got, wantVersion[p.server])
			}
			if got := detailOf(steps, "clientVersion"); got != "hive "+string(p.client) {
				t.Errorf("clientVersion = %q, want hive %s", got, p.client)
			}

			tag := strings.ReplaceAll(string(p.client), ".", "")
			db1, db2 := "ddl_"+tag+"_a", "catalog2__sales_"+tag
			steps = RunScenarioT(t, p.client, m.URI, "ddl", "--db", db1, "--db", db2, "--expect-db", "default")
			for _, want := range []string{"createDatabase " + db1, "createDatabase " + db2, "getAllDatabases",
				"dropDatabase " + db1, "dropDatabase " + db2} {
				if !hasStep(steps, want) {
					t.Errorf("ddl scenario reported no step %q", want)
				}
			}
			dbs, err := getAllDatabases(context.Background(), m.URI[len("thrift://"):], 10*time.Second, false)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(dbs, db1) || slices.Contains(dbs, db2) {
				t.Errorf("ddl scenario left databases behind: %v", dbs)
			}

			RunScenarioT(t, p.client, m.URI, "lossless", "--db", "lossless_"+tag, "--table", "events",
				"--direct-uri", m.URI, "--direct-db", "lossless_"+tag)
		})
	}

	// The 4.1.0 client calls *_req methods a 3.1.3 server does not have: a real Hive incompatibility.
	t.Run("server=3.1.3/client=4.1.0", func(t *testing.T) {
		steps, err := RunScenario(Hive410, servers[Hive313].URI, "ddl", "--db", "ddl_410_on_313")
		if err == nil {
			t.Fatalf("4.1.0 client ran ddl against a 3.1.3 server without error; steps: %v", steps)
		}
		if len(steps) == 0 || !strings.Contains(steps[0].Error, "Invalid method name: 'create_database_req'") {
			t.Fatalf("want the first step to fail on create_database_req, got %v (err %v)", steps, err)
		}
	})

	// Several clients writing at once: embedded Derby deadlocked here (two drop_table partition scans) until the
	// object store got a single connection; a deadlock costs 20 s and sometimes fails the call.
	for _, v := range []Version{Hive313, Hive410} {
		m := servers[v]
		t.Run(fmt.Sprintf("server=%s/concurrent ddl", v), func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make([]error, 3)
			for i := range errs {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					_, errs[i] = RunScenario(Hive313, m.URI, "ddl", "--db", fmt.Sprintf("concurrent_%d", i))
				}(i)
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Error(err)
				}
			}
			if log, err := os.ReadFile(m.logPath()); err != nil {
				t.Error(err)
			} else if strings.Contains(string(log), "due to a deadlock") {
				t.Errorf("Derby deadlock in %s", m.logPath())
			}
		})
	}

	t.Run("failures are reported", func(t *testing.T) {
		m := servers[Hive313]
		// the direct view names a database that does not exist: the comparisons must fail
		steps, err := RunScenario(Hive313, m.URI, "lossless", "--db", "lossless_neg", "--table", "events",
			"--direct-uri", m.URI, "--direct-db", "no_such_db")
		if err == nil {
			t.Fatalf("lossless against a missing direct database passed: %v", steps)
		}
		if !hasFailed(steps, "compare getTable events") {
			t.Errorf("want a failed 'compare getTable events' step, got %v", steps)
		}
		if hasFailed(steps, "dropTable lossless_neg.events") {
			t.Errorf("cleanup failed: %v", steps)
		}

		_, err = RunScenario(Hive313, m.URI, "no-such-scenario")
		if err == nil || !strings.Contains(err.Error(), "unknown scenario") {
			t.Errorf("unknown scenario: err = %v, want it named", err)
		}
	})
}

// Restart keeps the port and the Derby data; Stop is idempotent.
func TestRestartKeepsData(t *testing.T) {
	m := StartMetastoreT(t, Hive313)
	uri := m.URI
	RunScenarioT(t, Hive313, m.URI, "ddl", "--db", "survives_restart", "--keep")
	if err := m.Restart(); err != nil {
		t.Fatal(err)
	}
	if m.URI != uri {
		t.Fatalf("Restart moved the metastore from %s to %s", uri, m.URI)
	}
	dbs, err := getAllDatabases(context.Background(), fmt.Sprintf("127.0.0.1:%d", m.Port), 10*time.Second, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(dbs, "survives_restart") {
		t.Fatalf("after Restart the databases are %v, want survives_restart kept", dbs)
	}
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := m.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := getAllDatabases(context.Background(), fmt.Sprintf("127.0.0.1:%d", m.Port), 2*time.Second, false); err == nil {
		t.Fatalf("metastore still answers after Stop")
	}
}

func detailOf(steps []Step, name string) string {
	for _, s := range steps {
		if s.Step == name {
			return s.Detail
		}
	}
	return ""
}

func hasStep(steps []Step, name string) bool {
	for _, s := range steps {
		if s.Step == name {
			return true
		}
	}
	return false
}

func hasFailed(steps []Step, name string) bool {
	for _, s := range steps {
		if s.Step == name && !s.OK {
			return true
		}
	}
	return false
}

// Run directories never lie under a path Hive's ACID reader leaves out: the default cache is <repo>/.cache, under
// which every transactional table read back with no rows (HiveServer2's SELECTs answered "(no rows)" in CI).
func TestRunRootIsReadableToHiveACID(t *testing.T) {
	if got := runRootFor("/work/cache", "/tmp"); got != "/work/cache/run" {
		t.Errorf("a plain cache keeps its run directories: %s", got)
	}
	for _, cache := range []string{"/check/work/main/.cache", "/home/u/_build/cache"} {
		got := runRootFor(cache, "/tmp")
		if hiddenFromHive(got) || !strings.HasPrefix(got, "/tmp/hms-proxy-run-") {
			t.Errorf("cache %s: run root %s", cache, got)
		}
		if again := runRootFor(cache, "/tmp"); again != got {
			t.Errorf("cache %s: run root not stable (%s, then %s): stale directories would never be swept", cache, got, again)
		}
	}
	if runRootFor("/a/.cache", "/tmp") == runRootFor("/b/.cache", "/tmp") {
		t.Error("two caches share a run root")
	}
	t.Setenv("HMS_PROXY_CACHE", filepath.Join(t.TempDir(), ".cache"))
	if err := checkRunRoot(); err != nil || hiddenFromHive(runRoot()) {
		t.Errorf("a .cache under a plain TMPDIR: %s, %v", runRoot(), err)
	}
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "_tmp"))
	if err := checkRunRoot(); err == nil || !strings.Contains(err.Error(), "TMPDIR") {
		t.Errorf("cache and TMPDIR both hidden from Hive: want a refusal naming TMPDIR, got %v", err)
	}
}
