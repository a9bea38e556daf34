package house

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxLines bounds a hand-written Go file, tests included.
const maxLines = 800

// generated reports the files a generator writes (thriftgen's *_gen.go).
func generated(rel string) bool {
	return strings.HasPrefix(rel, "thriftgen/") && strings.HasSuffix(rel, "_gen.go")
}

func TestNoHandWrittenGoFileOver800Lines(t *testing.T) {
	r := root(t)
	n := 0
	err := filepath.WalkDir(r, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != r && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(r, path)
		rel = filepath.ToSlash(rel)
		if generated(rel) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		if lines := bytes.Count(b, []byte("\n")); lines > maxLines {
			t.Errorf("%s has %d lines (at most %d: split it by what its parts do)", rel, lines, maxLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 300 {
		t.Fatalf("only %d Go files found", n)
	}
}
