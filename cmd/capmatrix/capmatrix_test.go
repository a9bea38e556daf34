package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// repoRoot is two levels up from this package (cmd/capmatrix).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !isModule(string(b)) {
		t.Fatalf("%s is not the root of module %s", root, modulePath)
	}
	return root
}

func loadRepo(t *testing.T) (*File, *Matrix) {
	t.Helper()
	mx, err := BuildMatrix()
	if err != nil {
		t.Fatal(err)
	}
	f, err := Load(filepath.Join(repoRoot(t), CapabilitiesFile))
	if err != nil {
		t.Fatal(err)
	}
	return f, mx
}

func errorLines(errs []error) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString("\n  - " + e.Error())
	}
	return b.String()
}

// (i) Every test that compat/capabilities.json names exists.
func TestEveryNamedTestExists(t *testing.T) {
	f, _ := loadRepo(t)
	n := 0
	for _, c := range f.Capabilities {
		n += len(c.Tests)
	}
	if n == 0 {
		t.Fatal("no capability names a test")
	}
	if errs := missingTests(f, newTestIndex(repoRoot(t))); len(errs) > 0 {
		t.Fatalf("%s names tests that do not exist:%s", CapabilitiesFile, errorLines(errs))
	}
}

// A planned capability whose planned tests all exist is stale data.
func TestPlannedCapabilitiesAreNotAlreadyProven(t *testing.T) {
	f, _ := loadRepo(t)
	if errs := provenPlans(f, newTestIndex(repoRoot(t))); len(errs) > 0 {
		t.Fatalf("%s:%s", CapabilitiesFile, errorLines(errs))
	}
}

// The data is well formed and agrees with the code.
func TestCapabilitiesAreValid(t *testing.T) {
	f, mx := loadRepo(t)
	if errs := f.Validate(mx); len(errs) > 0 {
		t.Fatalf("%s:%s", CapabilitiesFile, errorLines(errs))
	}
}

// (ii) COMPATIBILITY.md is what the generator makes now.
func TestCompatibilityDocIsCurrent(t *testing.T) {
	root := repoRoot(t)
	d, err := Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := os.ReadFile(filepath.Join(root, CompatibilityFile))
	if err != nil {
		t.Fatalf("%v; run `%s`", err, Command)
	}
	if string(cur) != d.Compatibility {
		t.Fatalf("%s is out of date (%s); run `%s`", CompatibilityFile, firstDiff(string(cur), d.Compatibility), Command)
	}
}

// (iii) The capability table of docs/compatibility.md is current (the
// document must have its markers).
func TestGuideSectionIsCurrent(t *testing.T) {
	root := repoRoot(t)
	guide, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(GuideFile)))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	spliced, err := spliceGuide(GuideFile, string(guide), d.GuideSection)
	if err != nil {
		t.Fatal(err)
	}
	if spliced != string(guide) {
		t.Fatalf("the capability table in %s is out of date (%s); run `%s`", GuideFile, firstDiff(string(guide), spliced), Command)
	}
}

// (iv) Every RPC of the canonical API has a row in COMPATIBILITY.md.
func TestEveryRPCIsInCompatibilityDoc(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), CompatibilityFile))
	if err != nil {
		t.Fatalf("%v; run `%s`", err, Command)
	}
	rows := map[string]bool{}
	inMatrix := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "## ") {
			inMatrix = line == "## Method matrix"
		}
		if inMatrix && strings.HasPrefix(line, "| `") {
			name := strings.TrimPrefix(line, "| `")
			rows[name[:strings.IndexByte(name, '`')]] = true
		}
	}
	methods := thriftgen.AllMethods()
	if len(methods) < 290 {
		t.Fatalf("the canonical API has only %d RPCs", len(methods))
	}
	var missing []string
	for _, m := range methods {
		if !rows[m.Name] {
			missing = append(missing, m.Name)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%s's method matrix lacks %d RPCs: %s; run `%s`", CompatibilityFile, len(missing), strings.Join(missing, ", "), Command)
	}
	if len(rows) != len(methods) {
		t.Fatalf("%s's method matrix has %d rows for %d RPCs", CompatibilityFile, len(rows), len(methods))
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	clip := func(s string) string {
		if len(s) > 120 {
			return s[:120] + "…"
		}
		return s
	}
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("first difference at line %d: have %q, want %q", i+1, clip(x), clip(y))
		}
	}
	return "no difference"
}
