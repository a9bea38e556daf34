package audit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRollingFileRollsAtSizeAndKeepsBackups(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "nested", "logs", "audit.log") // directories are created
	rf, err := OpenRollingFile(path, 100, 2)
	if err != nil {
		t.Fatal(err)
	}
	line := func(i int) string { return fmt.Sprintf("%s%03d\n", strings.Repeat("x", 45), i) } // 49 bytes
	for i := 0; i < 7; i++ {
		if _, err := rf.Write([]byte(line(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := rf.Close(); err != nil {
		t.Fatal(err)
	}
	// two 49-byte lines fit in 100 bytes, a third does not:
	// [0 1] [2 3] [4 5] [6] -> active=[6], .1=[4 5], .2=[2 3], [0 1] dropped
	if got, want := readFile(t, path), line(6); got != want {
		t.Fatalf("active file: got %q want %q", got, want)
	}
	if got, want := readFile(t, path+".1"), line(4)+line(5); got != want {
		t.Fatalf(".1: got %q want %q", got, want)
	}
	if got, want := readFile(t, path+".2"), line(2)+line(3); got != want {
		t.Fatalf(".2: got %q want %q", got, want)
	}
	if _, err := os.Stat(path + ".3"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("only 2 backups may be kept, .3: %v", err)
	}
	if _, err := rf.Write([]byte("late\n")); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("write after close: want os.ErrClosed, got %v", err)
	}
}

func TestRollingFileAppendsToExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.log")
	if err := os.WriteFile(path, []byte(strings.Repeat("y", 90)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rf, err := OpenRollingFile(path, 100, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rf.Write([]byte("0123456789\n")); err != nil { // 91+11 > 100 -> roll
		t.Fatal(err)
	}
	rf.Close()
	if got := readFile(t, path); got != "0123456789\n" {
		t.Fatalf("existing size must count toward the limit; active = %q", got)
	}
	if got := readFile(t, path+".1"); len(got) != 91 {
		t.Fatalf("backup should hold the pre-existing content, got %d bytes", len(got))
	}
}

func TestRollingFileZeroBackupsTruncates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.log")
	rf, err := OpenRollingFile(path, 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	rf.Write([]byte("12345678\n"))
	rf.Write([]byte("abc\n"))
	rf.Close()
	if got := readFile(t, path); got != "abc\n" {
		t.Fatalf("got %q", got)
	}
	if _, err := os.Stat(path + ".1"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("no backup expected: %v", err)
	}
}

func TestRollingFileOversizedRecordIsWrittenWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.log")
	rf, err := OpenRollingFile(path, 10, 3)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("z", 25) + "\n"
	rf.Write([]byte("a\n"))
	rf.Write([]byte(big))
	rf.Close()
	if got := readFile(t, path); got != big {
		t.Fatalf("got %q", got)
	}
	if got := readFile(t, path+".1"); got != "a\n" {
		t.Fatalf("got %q", got)
	}
}

func TestOpenRollingFileRejectsBadArguments(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		path    string
		max     int64
		backups int
		want    string
	}{
		{filepath.Join(dir, "a"), 0, 1, "max size must be positive"},
		{filepath.Join(dir, "a"), 10, -1, "backup count must not be negative"},
		{"", 10, 1, "path is empty"},
	} {
		_, err := OpenRollingFile(c.path, c.max, c.backups)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("OpenRollingFile(%q,%d,%d): want error containing %q, got %v", c.path, c.max, c.backups, c.want, err)
		}
	}
}

func TestLoggerOnRollingFileConcurrent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	rf, err := OpenRollingFile(path, 8192, 100)
	if err != nil {
		t.Fatal(err)
	}
	l := NewLogger(rf)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				l.Log(&Record{RequestID: uint64(g*1000 + i), Method: "get_table", AuthenticatedUser: "ü\n"})
			}
		}(g)
	}
	wg.Wait()
	rf.Close()
	if l.WriteErrors() != 0 {
		t.Fatalf("write errors: %d", l.WriteErrors())
	}
	files, _ := filepath.Glob(path + "*")
	total := 0
	for _, f := range files {
		content := readFile(t, f)
		if !strings.HasSuffix(content, "\n") {
			t.Fatalf("%s does not end at a record boundary", f)
		}
		for _, ln := range strings.Split(strings.TrimSuffix(content, "\n"), "\n") {
			if !strings.HasPrefix(ln, `{"event":"hms_proxy_audit"`) || !strings.HasSuffix(ln, "}") {
				t.Fatalf("broken line in %s: %q", f, ln)
			}
			total++
		}
	}
	if total != 800 {
		t.Fatalf("want 800 records across %d files, got %d", len(files), total)
	}
}
