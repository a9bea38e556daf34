package restcatalog_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/restcatalog"
	"github.com/hms-proxy/hms-proxy/router/naming"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

type prepared struct {
	Files    []string `json:"files"`
	IDs      []int64  `json:"ids"`
	Location string   `json:"location"`
}

type purgeResult struct {
	OK        bool   `json:"ok"`
	ErrorType string `json:"error_type"`
	Message   string `json:"message"`
}

func prepareTable(t *testing.T, e *env, nsLoc, foreign string) (string, prepared) {
	t.Helper()
	ns := uniq("pg")
	var p prepared
	runPy(t, "pyiceberg_scenario.py", map[string]any{"scenario": "prepare_table", "uri": e.url, "ns": ns, "table": "t", "location": nsLoc + "/" + ns, "foreign": foreign}, &p)
	return ns, p
}

func purgeTable(t *testing.T, e *env, ns string, plain bool) purgeResult {
	t.Helper()
	var r purgeResult
	runPy(t, "pyiceberg_scenario.py", map[string]any{"scenario": "purge", "uri": e.url, "ns": ns, "table": "t", "plain": plain}, &r)
	return r
}

func allExist(t *testing.T, files []string, want bool) {
	t.Helper()
	for _, f := range files {
		_, err := os.Stat(localPath(f))
		if exists := err == nil; exists != want {
			t.Errorf("%s exists=%v, want %v", f, exists, want)
		}
	}
}

// rest-catalog.purge.mode=ALLOWLIST: the check before the drop (table
// location, metadata file) and the check per file while deleting (a
// manifest naming a file in a foreign tree, added by pyiceberg's add_files).
func TestPurgeAllowlist(t *testing.T) {
	allowed, outside := t.TempDir(), t.TempDir()
	e := newEnv(t, nil, func(o *restcatalog.Options) {
		o.PurgeMode = restcatalog.PurgeAllowlist
		o.PurgeAllowedPrefixes = []string{"file://" + allowed + "/"}
	})

	// Inside the prefix, with one data file outside it.
	foreign := outside + "/foreign.parquet"
	ns, p := prepareTable(t, e, "file:"+allowed, foreign)
	if len(p.IDs) != 3 {
		t.Fatalf("prepared table reads %v", p.IDs)
	}
	if r := purgeTable(t, e, ns, false); !r.OK {
		t.Fatalf("purge inside the allowlist: %+v", r)
	}
	var inside []string
	for _, f := range p.Files {
		if !strings.Contains(f, foreign) {
			inside = append(inside, f)
		}
	}
	if len(inside) == len(p.Files) {
		t.Fatalf("the foreign file is not among the table's files: %v", p.Files)
	}
	allExist(t, inside, false)
	if _, err := os.Stat(foreign); err != nil {
		t.Errorf("purge deleted %s outside rest-catalog.purge.allowed-prefixes: %v", foreign, err)
	}

	// A table outside the prefix: refused before the drop.
	ns2, p2 := prepareTable(t, e, "file:"+outside, "")
	r := purgeTable(t, e, ns2, false)
	if r.OK || r.ErrorType != "ForbiddenError" || !strings.Contains(r.Message, "rest-catalog.purge.allowed-prefixes") {
		t.Fatalf("purge outside the allowlist: %+v", r)
	}
	if _, err := direct(t, hms1).GetTable(tctx(t), ns2, "t"); err != nil {
		t.Errorf("the refused purge dropped the table: %v", err)
	}
	allExist(t, p2.Files, true)
	// Without purgeRequested the drop goes through and keeps the files.
	if r := purgeTable(t, e, ns2, true); !r.OK {
		t.Fatalf("plain drop: %+v", r)
	}
	allExist(t, p2.Files, true)
}

// rest-catalog.purge.mode=REFUSE: every purge is a 403 before anything is
// touched; a plain drop still works.
func TestPurgeRefuse(t *testing.T) {
	e := newEnv(t, nil, func(o *restcatalog.Options) { o.PurgeMode = restcatalog.PurgeRefuse })
	ns, p := prepareTable(t, e, "file:"+t.TempDir(), "")
	r := purgeTable(t, e, ns, false)
	if r.OK || r.ErrorType != "ForbiddenError" || !strings.Contains(r.Message, "REFUSE") {
		t.Fatalf("purge with REFUSE: %+v", r)
	}
	if _, err := direct(t, hms1).GetTable(tctx(t), ns, "t"); err != nil {
		t.Errorf("the refused purge dropped the table: %v", err)
	}
	allExist(t, p.Files, true)
	if r := purgeTable(t, e, ns, true); !r.OK {
		t.Fatalf("plain drop: %+v", r)
	}
	allExist(t, p.Files, true)
}

// Contradictory purge settings and missing parts refuse to build.
func TestOptionsValidation(t *testing.T) {
	ns := naming.NewNamespace("__", "c1", false, []*naming.Catalog{{Name: "c1", BackendName: "hive"}})
	ms := func(context.Context, restcatalog.Caller) (*thriftgen.Client, func(), error) { return nil, nil, nil }
	iso := func(string) bool { return true }
	cases := []struct {
		name string
		opts restcatalog.Options
		want string
	}{
		{"allowlist without prefixes", restcatalog.Options{Naming: ns, Metastore: ms, WriteIsolated: iso, PurgeMode: restcatalog.PurgeAllowlist}, "rest-catalog.purge.allowed-prefixes is required"},
		{"prefixes without allowlist", restcatalog.Options{Naming: ns, Metastore: ms, WriteIsolated: iso, PurgeMode: restcatalog.PurgeAllow, PurgeAllowedPrefixes: []string{"hdfs://ns/x/"}}, "applies only to ALLOWLIST"},
		{"prefixes with refuse", restcatalog.Options{Naming: ns, Metastore: ms, WriteIsolated: iso, PurgeMode: restcatalog.PurgeRefuse, PurgeAllowedPrefixes: []string{"hdfs://ns/x/"}}, "applies only to ALLOWLIST"},
		{"unknown mode", restcatalog.Options{Naming: ns, Metastore: ms, WriteIsolated: iso, PurgeMode: "SOMETIMES"}, "rest-catalog.purge.mode=SOMETIMES"},
		{"relative prefix", restcatalog.Options{Naming: ns, Metastore: ms, WriteIsolated: iso, PurgeMode: restcatalog.PurgeAllowlist, PurgeAllowedPrefixes: []string{"warehouse/"}}, "relative"},
		{"prefix with ..", restcatalog.Options{Naming: ns, Metastore: ms, WriteIsolated: iso, PurgeMode: restcatalog.PurgeAllowlist, PurgeAllowedPrefixes: []string{"hdfs://ns/a/../b/"}}, ".."},
		{"no metastore", restcatalog.Options{Naming: ns, WriteIsolated: iso}, "Metastore"},
		{"no write gate", restcatalog.Options{Naming: ns, Metastore: ms}, "WriteIsolated"},
		{"bad catalog conf", restcatalog.Options{Naming: ns, Metastore: ms, WriteIsolated: iso,
			CatalogConf: func(c, k string) (string, bool) { return "yes", k == "iceberg.engine.hive.enabled" }}, "catalog.c1.conf.iceberg.engine.hive.enabled=yes"},
	}
	for _, c := range cases {
		_, err := restcatalog.New(c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error mentioning %q", c.name, err, c.want)
		}
	}
	if _, err := restcatalog.New(restcatalog.Options{Naming: ns, Metastore: ms, WriteIsolated: iso, PurgeMode: "allowlist", PurgeAllowedPrefixes: []string{"hdfs://ns/warehouse/"}}); err != nil {
		t.Errorf("valid allowlist: %v", err)
	}
}
