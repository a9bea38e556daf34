package main

import (
	"os/exec"
	"strings"
	"testing"
)

// forbiddenModules must never be linked into the proxy binary: each once
// came in through a convenience and cost the idle proxy tens of MiB of
// resident memory and ~150 ms of package init (iceberg-go pulls Arrow,
// gRPC, Substrait and OpenTelemetry; testify belongs in tests). The
// numbers are in docs/rest.md#dependencies-and-footprint.
var forbiddenModules = []string{
	"github.com/apache/iceberg-go",
	"github.com/apache/arrow-go",
	"github.com/substrait-io/",
	"google.golang.org/grpc",
	"github.com/stretchr/testify",
}

// The built binary's module list (what `go version -m` reads from its
// build info) holds none of the forbidden modules.
func TestBinaryFootprint(t *testing.T) {
	bin := goBuild(t, repoRoot(t))
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	var deps []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (f[0] == "dep" || f[0] == "=>") {
			deps = append(deps, f[1])
		}
	}
	// The list is read at all: the Thrift runtime is always linked.
	found := false
	for _, d := range deps {
		found = found || d == "github.com/apache/thrift"
	}
	if !found {
		t.Fatalf("go version -m lists no github.com/apache/thrift; cannot read the module list:\n%s", out)
	}
	for _, d := range deps {
		for _, bad := range forbiddenModules {
			if strings.HasPrefix(d, bad) {
				t.Errorf("the hms-proxy binary links %s (forbidden: %s); find which package imports it with `go list -deps ./cmd/hms-proxy`", d, bad)
			}
		}
	}
}
