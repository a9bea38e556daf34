package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// Asking for help is not an error: usage on standard output, status 0,
// nothing on standard error.
func TestHelpGoesToStdoutWithStatus0(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"-help"}, {"help"}} {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		if code != 0 || errb.Len() != 0 {
			t.Errorf("%q: exit %d, stderr %q", args, code, errb.String())
		}
		for _, want := range []string{"Usage:", "hms-proxy serve FILE", "hms-proxy check-config FILE", "hms-proxy version", "also: hms-proxy FILE", "also: --version", "Exit status:"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%q: usage lacks %q:\n%s", args, want, out.String())
			}
		}
	}
	for _, args := range [][]string{{"help", "check-config"}, {"check-config", "--help"}, {"check-config", "-h"}, {"--help", "check-config"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 0 || errb.Len() != 0 ||
			!strings.Contains(out.String(), "Usage: hms-proxy check-config FILE") || !strings.Contains(out.String(), "INVALID") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out.String(), errb.String())
		}
	}
}

// A wrong invocation says what was wrong on standard error, shows the usage
// there and exits 2; standard output stays empty.
func TestWrongInvocationsSayWhatWasWrong(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no command or configuration file given"},
		{[]string{"serve"}, "serve takes exactly one argument (FILE), got none"},
		{[]string{"serve", "a", "b"}, `serve takes exactly one argument (FILE), got 2: "a" "b"`},
		{[]string{"check-config"}, "check-config takes exactly one argument (FILE), got none"},
		{[]string{"version", "extra"}, `version takes no arguments, got 1: "extra"`},
		{[]string{"--version", "extra"}, `version takes no arguments, got 1: "extra"`},
		{[]string{"-x"}, `unknown option "-x"`},
		{[]string{"--config", "f"}, `unknown option "--config"`},
		{[]string{"frobnicate", "f"}, `unknown command "frobnicate"`},
		{[]string{"help", "frobnicate"}, `help: unknown command "frobnicate"`},
		{[]string{"help", "a", "b"}, "help takes at most one argument"},
		{[]string{"chek-config"}, `unknown command "chek-config" (did you mean "check-config"?)`},
		{[]string{"verison"}, `unknown command "verison" (did you mean "version"?)`},
	} {
		var out, errb bytes.Buffer
		code := run(tc.args, &out, &errb)
		if code != 2 || out.Len() != 0 || !strings.Contains(errb.String(), "hms-proxy: "+tc.want) ||
			!strings.Contains(errb.String(), "Usage:") {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s", tc.args, code, out.String(), errb.String())
		}
	}
	// A single argument that is no command is the configuration file, even
	// when it looks like one: the file decides.
	near := filepath.Join(dir, "serv")
	if err := os.WriteFile(near, []byte("catalogs=\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	var out, errb bytes.Buffer
	if code := run([]string{"serv"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "refusing to start, serv is invalid") {
		t.Errorf("an existing file named like a command must be served: exit %d\n%s", code, errb.String())
	}
}

func TestReadBuildInfo(t *testing.T) {
	stamped := &debug.BuildInfo{GoVersion: "go1.26.8", Path: "github.com/hms-proxy/hms-proxy/cmd/hms-proxy",
		Main: debug.Module{Path: "github.com/hms-proxy/hms-proxy", Version: "v0.0.0-20261201110438-50a0fde1159b+dirty"},
		Settings: []debug.BuildSetting{{Key: "-trimpath", Value: "true"}, {Key: "CGO_ENABLED", Value: "0"},
			{Key: "GOARCH", Value: "arm64"}, {Key: "GOOS", Value: "linux"}, {Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "50a0fde1159b290b0a2b966b6b52405a06a0839c"},
			{Key: "vcs.time", Value: "2026-12-01T11:04:38Z"}, {Key: "vcs.modified", Value: "true"}}}
	var b bytes.Buffer
	readBuildInfo(stamped, true, linkerInfo{}).write(&b)
	want := `hms-proxy v0.0.0-20261201110438-50a0fde1159b+dirty
module:      github.com/hms-proxy/hms-proxy
revision:    50a0fde1159b290b0a2b966b6b52405a06a0839c (modified: built with uncommitted changes)
commit time: 2026-12-01T11:04:38Z
go:          go1.26.8 linux/arm64
build:       -trimpath CGO_ENABLED=0
`
	if b.String() != want {
		t.Errorf("stamped build:\n%s\nwant:\n%s", b.String(), want)
	}

	// A release build names itself; the linker's revision replaces the
	// tree's (and its "modified" flag, which belonged to the tree).
	b.Reset()
	readBuildInfo(stamped, true, linkerInfo{version: "v1.4.0", revision: "abc123", buildTime: "2027-01-02T03:04:05Z"}).write(&b)
	for _, line := range []string{"hms-proxy v1.4.0\n", "revision:    abc123\n", "commit time: 2026-12-01T11:04:38Z\n", "build time:  2027-01-02T03:04:05Z\n"} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("release build lacks %q:\n%s", line, b.String())
		}
	}

	// No information at all (a build without module or VCS data).
	b.Reset()
	readBuildInfo(nil, false, linkerInfo{}).write(&b)
	if !strings.HasPrefix(b.String(), "hms-proxy devel\n") || !strings.Contains(b.String(), "revision:    unknown (no VCS information") ||
		!strings.Contains(b.String(), "go:          unknown\n") {
		t.Errorf("empty build info:\n%s", b.String())
	}
	devel := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/hms-proxy/hms-proxy", Version: "(devel)"}}
	if got := readBuildInfo(devel, true, linkerInfo{}); got.Version != "devel" || got.Revision != "" {
		t.Errorf("(devel) build: %+v", got)
	}
}

// goBuild builds the command from dir into a temp file. -trimpath keeps the
// build cache shared between directories (the git clone below).
func goBuild(t *testing.T, dir string, flags ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hms-proxy")
	args := append([]string{"build", "-trimpath", "-o", bin}, flags...)
	cmd := exec.Command("go", append(args, "./cmd/hms-proxy")...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(cmd.Args[1:], " "), err, out)
	}
	return bin
}

func runBin(t *testing.T, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errb.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %q: %v", bin, args, err)
	}
	return out.String(), errb.String(), 0
}

// repoRoot is the module root (two levels above this package).
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(filepath.Dir(wd))
}

// The real binary: help on stdout with 0, a wrong call on stderr with 2,
// version and --version print the same build information, which is what
// the Go toolchain itself reads from the binary (go version -m).
func TestBinaryHelpAndVersion(t *testing.T) {
	bin := goBuild(t, repoRoot(t))
	for _, flag := range []string{"--help", "-h", "help"} {
		out, errOut, code := runBin(t, bin, flag)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "Usage:\n") {
			t.Errorf("hms-proxy %s: exit %d, stderr %q, stdout %q", flag, code, errOut, out)
		}
	}
	out, errOut, code := runBin(t, bin, "check-config")
	if code != 2 || out != "" || !strings.Contains(errOut, "hms-proxy: check-config takes exactly one argument (FILE), got none") {
		t.Errorf("hms-proxy check-config: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	v1, _, c1 := runBin(t, bin, "version")
	v2, _, c2 := runBin(t, bin, "--version")
	if c1 != 0 || c2 != 0 || v1 != v2 {
		t.Fatalf("version (exit %d) and --version (exit %d) differ:\n%s\n%s", c1, c2, v1, v2)
	}
	meta, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	var goVersion, modVersion, rev string
	for _, line := range strings.Split(string(meta), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && strings.HasSuffix(f[0], ":"):
			goVersion = f[1]
		case len(f) >= 3 && f[0] == "mod":
			modVersion = f[2]
		case len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.revision="):
			rev = strings.TrimPrefix(f[1], "vcs.revision=")
		}
	}
	if !strings.Contains(v1, "\ngo:          "+goVersion+" ") || !strings.Contains(v1, "\nmodule:      github.com/hms-proxy/hms-proxy\n") ||
		!strings.Contains(v1, "\nbuild:       -trimpath ") {
		t.Errorf("version output does not match go version -m (go %s):\n%s\n%s", goVersion, v1, meta)
	}
	if modVersion != "(devel)" && !strings.HasPrefix(v1, "hms-proxy "+modVersion+"\n") {
		t.Errorf("module version %s not printed:\n%s", modVersion, v1)
	}
	if rev != "" && !strings.Contains(v1, "revision:    "+rev) {
		t.Errorf("VCS revision %s not printed:\n%s", rev, v1)
	}
}

// A build from a git checkout carries its revision and commit time; a
// release build's -ldflags -X values replace them. The checkout is a clone
// of this repository's HEAD with the working tree's files copied over it, so
// the binary is built from the code under test (and "modified" is true
// exactly when the tree has uncommitted changes). A git worktree is not
// used directly: the Go toolchain embeds no VCS data there.
func TestBinaryVersionFromGitAndLinker(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed: the VCS stamp cannot be checked")
	}
	root := repoRoot(t)
	gitOut := func(dir string, args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
		if err != nil {
			t.Fatalf("git %q in %s: %v", args, dir, err)
		}
		return string(out)
	}
	head := strings.TrimSpace(gitOut(root, "rev-parse", "HEAD"))
	commitTime := strings.TrimSpace(gitOut(root, "show", "-s", "--format=%cI", "HEAD"))
	clone := filepath.Join(t.TempDir(), "src")
	if out, err := exec.Command("git", "clone", "-q", "--shared", root, clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	files := strings.Split(strings.TrimRight(gitOut(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"), "\x00"), "\x00")
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) {
			os.Remove(filepath.Join(clone, f)) // deleted in the working tree
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(clone, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dirty := strings.TrimSpace(gitOut(clone, "status", "--porcelain")) != ""

	out, _, code := runBin(t, goBuild(t, clone, "-buildvcs=true"), "version")
	wantRev := "revision:    " + head
	if dirty {
		wantRev += " (modified: built with uncommitted changes)"
	}
	if code != 0 || !strings.Contains(out, wantRev+"\n") {
		t.Errorf("want %q in:\n%s", wantRev, out)
	}
	if ct, err := timeUTC(commitTime); err != nil || !strings.Contains(out, "commit time: "+ct+"\n") {
		t.Errorf("want commit time %s (%v) in:\n%s", ct, err, out)
	}

	out, _, code = runBin(t, goBuild(t, clone, "-buildvcs=true", "-ldflags",
		"-X main.version=v9.8.7 -X main.revision=feedface -X main.buildTime=2027-01-02T03:04:05Z"), "version")
	for _, want := range []string{"hms-proxy v9.8.7\n", "revision:    feedface\n", "build time:  2027-01-02T03:04:05Z\n"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("release build: want %q in:\n%s", want, out)
		}
	}
}

// timeUTC renders a git ISO time as the Go toolchain stamps vcs.time.
func timeUTC(iso string) (string, error) {
	ts, err := time.Parse(time.RFC3339, iso)
	if err != nil {
		return "", err
	}
	return ts.UTC().Format(time.RFC3339), nil
}

// A command with flags of its own (smoke) answers -h/--help itself; the
// others get their help from the table.
func TestDispatchOwnHelp(t *testing.T) {
	var got []string
	cmds := append(commands(), command{name: "probe", synopsis: "[flags]", summary: "s", nargs: anyArgs, ownHelp: true,
		run: func(args []string, stdout, _ io.Writer) int { got = args; fmt.Fprint(stdout, "own usage"); return 0 }})
	var out, errb bytes.Buffer
	if code := dispatch(cmds, []string{"probe", "--help"}, &out, &errb); code != 0 || out.String() != "own usage" || len(got) != 1 || got[0] != "--help" {
		t.Errorf("own help: exit %d, stdout %q, args %q", code, out.String(), got)
	}
	out.Reset()
	if code := dispatch(cmds, []string{"help", "probe"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "Usage: hms-proxy probe [flags]") {
		t.Errorf("help probe: exit %d, stdout %q", code, out.String())
	}
	out.Reset()
	if code := dispatch(cmds, []string{"--help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "hms-proxy probe [flags]") {
		t.Errorf("the usage does not list the table's rows:\n%s", out.String())
	}
}
