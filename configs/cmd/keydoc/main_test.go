package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/configs"
)

// The command's -check fails on a stale reference and names the fix, -write
// brings it up to date without touching the text around the markers, and a
// document without the markers is an error, not a silent no-op.
func TestCheckAndWrite(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "configuration.md")
	before, after := "# Configuration\n\nintro\n\n", "\n\nafter\n"
	stale := before + configs.KeyReferenceBegin + "\n\nold table\n" + configs.KeyReferenceEnd + after
	if err := os.WriteFile(doc, []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	if code := run([]string{"-doc", doc, "-check"}, &out, &errs); code != 1 || !strings.Contains(errs.String(), "keydoc -write") {
		t.Fatalf("-check of a stale reference: exit %d, %q", code, errs.String())
	}
	errs.Reset()
	if code := run([]string{"-doc", doc, "-write"}, &out, &errs); code != 0 {
		t.Fatalf("-write: exit %d, %q", code, errs.String())
	}
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	if !strings.HasPrefix(got, before+configs.KeyReferenceBegin) || !strings.HasSuffix(got, configs.KeyReferenceEnd+after) ||
		strings.Contains(got, "old table") || !strings.Contains(got, "`server.port`") {
		t.Fatalf("after -write:\n%s", got)
	}
	if code := run([]string{"-doc", doc, "-check"}, &out, &errs); code != 0 {
		t.Fatalf("-check after -write: exit %d, %q", code, errs.String())
	}
	if err := os.WriteFile(doc, []byte("# no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	errs.Reset()
	if code := run([]string{"-doc", doc, "-check"}, &out, &errs); code != 2 || !strings.Contains(errs.String(), "markers") {
		t.Fatalf("-check without markers: exit %d, %q", code, errs.String())
	}
}

// The repository's own document is current (what make test checks through
// package configs too, here through the command).
func TestRepositoryDocumentIsCurrent(t *testing.T) {
	var out, errs bytes.Buffer
	doc := filepath.Join("..", "..", "..", filepath.FromSlash(configs.KeyReferenceFile))
	if code := run([]string{"-doc", doc, "-check"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
}
