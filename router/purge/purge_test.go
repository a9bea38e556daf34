package purge

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hms-proxy/hms-proxy/wire"
)

func extTable(loc string, purge string, typ string) *wire.Value {
	p := wire.Value{Type: wire.TMap, KeyType: wire.TString, ElemType: wire.TString}
	p.Elems = append(p.Elems, wire.Str("EXTERNAL"), wire.Str("TRUE"))
	if purge != "" {
		p.Elems = append(p.Elems, wire.Str("external.table.purge"), wire.Str(purge))
	}
	v := wire.Struct(wire.Field{ID: 1, V: wire.Str("t")}, wire.Field{ID: 2, V: wire.Str("sales")},
		wire.Field{ID: 7, V: wire.Struct(wire.Field{ID: 2, V: wire.Str(loc)})},
		wire.Field{ID: 9, V: p}, wire.Field{ID: 12, V: wire.Str(typ)})
	return &v
}

func write(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

type logs struct {
	mu sync.Mutex
	l  []string
}

func (l *logs) add(s string) { l.mu.Lock(); l.l = append(l.l, s); l.mu.Unlock() }
func (l *logs) all() string  { l.mu.Lock(); defer l.mu.Unlock(); return strings.Join(l.l, "\n") }

// A real tree: the allow-listed table directory goes, decoys next to it,
// a directory whose name only shares the prefix's bytes, and the targets of
// symlinks pointing out of the tree all stay.
func TestPurgeDeletesExactlyTheAllowedTree(t *testing.T) {
	root := t.TempDir()
	ext := filepath.Join(root, "data", "ext")
	tbl := filepath.Join(ext, "sales", "orders")
	write(t, filepath.Join(tbl, "part-0.parquet"))
	write(t, filepath.Join(tbl, "ds=1", "part-1.parquet"))
	write(t, filepath.Join(ext, "sales", "orders_keep", "f"))       // sibling decoy
	write(t, filepath.Join(root, "data", "external", "sales", "x")) // prefix by bytes only
	write(t, filepath.Join(root, "outside", "precious"))            // symlink target
	if err := os.Symlink(filepath.Join(root, "outside"), filepath.Join(tbl, "link")); err != nil {
		t.Fatal(err)
	}
	// A table whose location itself goes through a symlink out of the tree.
	if err := os.Symlink(filepath.Join(root, "outside"), filepath.Join(ext, "escape")); err != nil {
		t.Fatal(err)
	}

	var l logs
	m := NewMetrics(nil)
	p, err := New(Options{Mode: BestEffort, Prefixes: map[string][]string{"catalog2": {"file://" + ext + "/"}}, Log: l.add, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		loc, purge, typ string
		ok              bool
	}{
		{"file://" + tbl, "true", "EXTERNAL_TABLE", true},
		{"file://" + filepath.Join(root, "data", "external", "sales"), "true", "EXTERNAL_TABLE", false},
		{"file://" + ext, "true", "EXTERNAL_TABLE", false}, // the prefix itself
		{"file://" + tbl + "/../orders_keep", "true", "EXTERNAL_TABLE", false},
		{"file://" + filepath.Join(ext, "sales", "orders_keep"), "false", "EXTERNAL_TABLE", false},
		{"file://" + filepath.Join(ext, "sales", "orders_keep"), "", "EXTERNAL_TABLE", false},
		{"file://" + filepath.Join(ext, "sales", "orders_keep"), "true", "MANAGED_TABLE", false},
		{"hdfs://nn/" + ext, "true", "EXTERNAL_TABLE", false},
		{"file://" + filepath.Join(ext, "escape", "x"), "true", "EXTERNAL_TABLE", true}, // allowed by name, stopped by os.Root
	} {
		d, err := p.Submit("catalog2", "sales.t", "", extTable(c.loc, c.purge, c.typ))
		if err != nil || d.OK != c.ok {
			t.Errorf("%s purge=%s %s: %+v %v", c.loc, c.purge, c.typ, d, err)
		}
	}
	if d, _ := p.Submit("catalog1", "sales.t", "", extTable("file://"+tbl, "true", "EXTERNAL_TABLE")); d.OK {
		t.Error("another catalog's allow-list applied")
	}
	// The purges run in the background: wait for both (bounded).
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if testutil.ToFloat64(m.purges.WithLabelValues("catalog2", "deleted"))+testutil.ToFloat64(m.purges.WithLabelValues("catalog2", "failed")) == 2 {
			break
		}
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if exists(tbl) {
		t.Errorf("%s not deleted (log:\n%s)", tbl, l.all())
	}
	for _, keep := range []string{filepath.Join(ext, "sales", "orders_keep", "f"), filepath.Join(root, "data", "external", "sales", "x"),
		filepath.Join(root, "outside", "precious"), filepath.Join(ext, "escape")} {
		if !exists(keep) {
			t.Errorf("%s was deleted", keep)
		}
	}
	if got := testutil.ToFloat64(m.purges.WithLabelValues("catalog2", "deleted")); got != 1 {
		t.Errorf("deleted %v", got)
	}
	if got := testutil.ToFloat64(m.purges.WithLabelValues("catalog2", "failed")); got != 1 {
		t.Errorf("failed %v (the symlink escape): log\n%s", got, l.all())
	}
	if got := testutil.ToFloat64(m.purges.WithLabelValues("catalog2", "not_allowed")); got != 7 {
		t.Errorf("not_allowed %v", got)
	}
	if !strings.Contains(l.all(), "hms-proxy-drop-purge-") {
		t.Errorf("workers not named in the log:\n%s", l.all())
	}
	if _, err := p.Submit("catalog2", "sales.t", "", extTable("file://"+tbl, "true", "EXTERNAL_TABLE")); err == nil {
		t.Error("Submit after Close accepted")
	}
}

// Shutdown: the running purge finishes, queued ones are logged and skipped.
func TestCloseFinishesRunningAndSkipsQueued(t *testing.T) {
	root := t.TempDir()
	var dirs []string
	for i := 0; i < 5; i++ {
		d := filepath.Join(root, "t"+string(rune('0'+i)))
		for j := 0; j < 200; j++ {
			write(t, filepath.Join(d, "f"+time.Duration(j).String()))
		}
		dirs = append(dirs, d)
	}
	var l logs
	m := NewMetrics(nil)
	p, err := New(Options{Mode: BestEffort, Workers: 1, Prefixes: map[string][]string{"c": {"file://" + root}}, Log: l.add, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if _, err := p.Submit("c", "db.t", "", extTable("file://"+d, "true", "EXTERNAL_TABLE")); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	deleted := testutil.ToFloat64(m.purges.WithLabelValues("c", "deleted"))
	skipped := testutil.ToFloat64(m.purges.WithLabelValues("c", "skipped_shutdown"))
	if deleted+skipped != 5 || skipped == 0 {
		t.Fatalf("deleted %v skipped %v (log:\n%s)", deleted, skipped, l.all())
	}
	gone := 0
	for _, d := range dirs {
		if !exists(d) {
			gone++
		} else if n, _ := os.ReadDir(d); len(n) != 200 {
			t.Errorf("%s half purged (%d files left)", d, len(n))
		}
	}
	if float64(gone) != deleted {
		t.Errorf("%d directories gone, %v counted deleted", gone, deleted)
	}
	if !strings.Contains(l.all(), "shutting down") {
		t.Errorf("skips not logged:\n%s", l.all())
	}
}

func TestOptionsAreValidated(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		// without Options.Files only local paths have a file system
		{Options{Mode: BestEffort, Prefixes: map[string][]string{"c2": {"hdfs://ns/data/ext/"}}}, `scheme "hdfs" is not a local file`},
		{Options{Mode: BestEffort, Prefixes: map[string][]string{"c2": {"s3a://b/x"}}}, `scheme "s3a" is not a local file`},
		{Options{Mode: BestEffort, Prefixes: map[string][]string{"c2": {"viewfs://ns/x"}}}, `scheme "viewfs" is not supported`},
		{Options{Mode: BestEffort, Prefixes: map[string][]string{"c2": {"hdfs:///data/ext"}}}, "without a NameNode"},
		{Options{Mode: BestEffort, Prefixes: map[string][]string{"c2": {"file:///data/../etc"}}}, `".." segment`},
		{Options{Mode: BestEffort, Prefixes: map[string][]string{"c2": {"file:///"}}}, "whole file system"},
		{Options{Mode: BestEffort}, "needs catalog.<name>"},
		{Options{Prefixes: map[string][]string{"c2": {"file:///data/ext"}}}, "mode is not BEST_EFFORT"},
	} {
		_, err := New(c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
	if _, err := ParseMode("ALWAYS"); err == nil || !strings.Contains(err.Error(), "federation.external-table-drop-purge.mode") {
		t.Errorf("ParseMode: %v", err)
	}
	off, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := off.Submit("c", "t", "", extTable("file:///x/y", "true", "EXTERNAL_TABLE")); d.OK {
		t.Error("Off purged")
	}
	if err := off.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
