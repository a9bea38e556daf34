package thriftgen

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/thriftgen/internal/codegen"
	"github.com/hms-proxy/hms-proxy/thriftgen/internal/schema"
)

const regenHint = "go run ./thriftgen/gen generate -schema thriftgen/schema.json -out thriftgen"

// The committed *_gen.go files are exactly what the generator makes of the committed schema.json.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	s, err := schema.Load("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	files, err := codegen.Generate(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range codegen.FileNames {
		have, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("%s: %v (run %s)", name, err, regenHint)
		}
		if !bytes.Equal(have, files[name]) {
			t.Errorf("thriftgen/%s is stale: regenerate with `%s` (from the repo root)", name, regenHint)
		}
	}
}

// schema.json is what merging its own Apache profiles with hdp-delta.json gives: fails when the delta or the
// merge changed without `make generate`. Pure Go: the Apache profiles are projected from schema.json itself.
func TestSchemaMatchesDelta(t *testing.T) {
	committed, err := os.ReadFile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.Parse(committed, "schema.json")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]*schema.Schema{}
	var parts []*schema.Schema
	for _, p := range []string{schema.Apache313, schema.Apache410} {
		proj, err := s.Project(p, true)
		if err != nil {
			t.Fatal(err)
		}
		known[p] = proj
		parts = append(parts, proj)
	}
	d, err := schema.LoadDelta("hdp-delta.json")
	if err != nil {
		t.Fatal(err)
	}
	derived, dialects, err := d.Apply(known)
	if err != nil {
		t.Fatal(err)
	}
	merged, err := schema.Merge(append(parts, derived...), dialects)
	if err != nil {
		t.Fatal(err)
	}
	b, err := merged.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, committed) {
		t.Fatalf("thriftgen/schema.json does not match hdp-delta.json and the merge: run `make generate`")
	}
}

// Re-extracting the real Hive jars reproduces schema.json byte for byte. Needs java and the jars in the Maven
// cache (make generate or the test bed puts them there); without them the test is skipped, or fails under CI.
func TestReextractionReproducesSchema(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: no re-extraction")
	}
	missing := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but "+format+"; run thriftgen/regen.sh or the test bed set-up first", args...)
		}
		t.Skipf("skipping re-extraction: "+format+" (run `make generate` to fetch the jars)", args...)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		missing("no java on PATH")
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	cache := os.Getenv("HMS_PROXY_CACHE")
	if cache == "" {
		cache = filepath.Join(repo, ".cache")
	}
	m2 := filepath.Join(cache, "m2")
	f, err := os.Open("extract/profiles.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	var outputs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cols := strings.Fields(sc.Text())
		if len(cols) == 0 || strings.HasPrefix(cols[0], "#") {
			continue
		}
		if len(cols) != 4 {
			t.Fatalf("extract/profiles.txt: want 4 columns, got %q", sc.Text())
		}
		var jars []string
		for _, coord := range cols[1:] {
			j, err := jarPath(m2, coord)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(j); err != nil {
				missing("jar %s not in %s", coord, m2)
			}
			jars = append(jars, j)
		}
		out := filepath.Join(dir, cols[0]+".json")
		cmd := exec.Command(java, "-cp", strings.Join(jars, string(os.PathListSeparator)),
			"extract/SchemaExtractor.java", jars[0], cols[0], out)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("extracting %s: %v\n%s", cols[0], err, b)
		}
		outputs = append(outputs, out)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	merged, err := schema.Build(outputs, "hdp-delta.json")
	if err != nil {
		t.Fatal(err)
	}
	b, err := merged.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, committed) {
		t.Fatalf("re-extraction from the jars differs from thriftgen/schema.json: run `make generate` and review the diff")
	}
}

func jarPath(m2, coord string) (string, error) {
	parts := strings.Split(coord, ":")
	if len(parts) != 3 {
		return "", &os.PathError{Op: "parse", Path: coord, Err: os.ErrInvalid}
	}
	g, a, v := parts[0], parts[1], parts[2]
	return filepath.Join(m2, filepath.FromSlash(strings.ReplaceAll(g, ".", "/")), a, v, a+"-"+v+".jar"), nil
}
