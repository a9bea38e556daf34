package instr

import (
	"os"
	"path/filepath"
	"testing"
)

// A callgrind file in the compressed form callgrind writes: a function's
// cost lines are its own, the line after calls= is the callee's inclusive
// cost and must not count, names are given once and referred to by id.
const sample = `# callgrind format
version: 1
events: Ir
fl=(1) /src/wire/wire.go
fn=(1) github.com/hms-proxy/hms-proxy/wire.(*Buf).need
10 100
+2 50
fn=(2) github.com/hms-proxy/hms-proxy/router.(*Router).Handle
5 30
cfl=(1)
cfn=(1)
calls=3 10
7 450
fl=(2) /go/src/runtime/stack.go
fn=(3) runtime.copystack
1 1000
fn=(1)
12 25
totals: 1655
`

func TestParseSelfCountsOwnCostOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "callgrind.out.1")
	if err := os.WriteFile(path, []byte(sample), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := parseSelf(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{
		"github.com/hms-proxy/hms-proxy/wire.(*Buf).need":        175,
		"github.com/hms-proxy/hms-proxy/router.(*Router).Handle": 30,
		"runtime.copystack": 1000,
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
}

func TestCategories(t *testing.T) {
	for fn, want := range map[string]string{
		"runtime.copystack":        "stack growth",
		"runtime.pcvalue":          "stack growth",
		"runtime.scanObjectsSmall": "GC",
		"runtime.mallocgc":         "malloc",
		"github.com/hms-proxy/hms-proxy/wire.(*Buf).Skip'2":           "Thrift reading (wire)",
		"github.com/hms-proxy/hms-proxy/router.(*Router).runLegs":     "router",
		"github.com/hms-proxy/hms-proxy/audit.AppendString":           "audit",
		"github.com/prometheus/client_golang/prometheus.(*histogram)": "metrics",
		"regexp.compile":                   "regexp",
		"runtime.(*timer).modify":          "timers, clock",
		"internal/poll.(*FD).Write":        "syscalls, net, os",
		"runtime.findRunnable":             "scheduler, netpoll, runtime locks",
		"runtime.mapaccess2_faststr":       "maps, context, sync, memmove",
		"sync.runtime_SemacquireWaitGroup": "scheduler, netpoll, runtime locks",
		"context.WithValue":                "maps, context, sync, memmove",
		"bufio.(*Writer).Flush":            "other",
	} {
		if got := Category(fn); got != want {
			t.Errorf("Category(%s) = %q, want %q", fn, got, want)
		}
	}
}

func TestParseCase(t *testing.T) {
	for in, want := range map[string]Case{
		"get_table:1cat:64":              {"get_table", 1, 64},
		"get_table:fwd:8":                {"get_table", 0, 8},
		"fanout_get_table_meta:4cat:1":   {"fanout_get_table_meta", 4, 1},
		"get_partitions_by_names:2cat:1": {"get_partitions_by_names", 2, 1},
	} {
		got, err := ParseCase(in)
		if err != nil || got != want {
			t.Errorf("ParseCase(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if got.String() != in {
			t.Errorf("%+v prints as %q, want %q", got, got.String(), in)
		}
	}
	for _, bad := range []string{"get_table", "get_table:1:1", "get_table:0cat:1", "get_table:1cat:0", "add_partitions:1cat:1", "nope:1cat:1"} {
		if _, err := ParseCase(bad); err == nil {
			t.Errorf("ParseCase(%q) accepted", bad)
		}
	}
}
