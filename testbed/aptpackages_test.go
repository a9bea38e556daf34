package testbed

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// harnessFiles are files the test bed runs on a Debian machine, with the
// Debian package make test must install for each (testbed/apt-packages.txt).
// A fresh machine has only what this list and Debian's essential set give.
var harnessFiles = []struct {
	glob, pkg, why string
}{
	{"/usr/bin/python3", "python3", "every Python client test (testbed/python.go)"},
	// Debian splits venv's ensurepip out of python3: without it
	// "python3 -m venv" fails ("ensurepip is not available").
	{"/usr/lib/python3.*/ensurepip/__init__.py", "python3-venv", "python3 -m venv (testbed/python.go)"},
	{"/usr/bin/curl", "curl", "curl --negotiate (restcatalog, e2e/kerberos)"},
	{"/usr/bin/kinit", "krb5-user", "testbed.KDC.Kinit"},
	{"/usr/sbin/krb5kdc", "krb5-kdc", "testbed.StartKDC"},
	{"/usr/sbin/kadmin.local", "krb5-admin-server", "principals and keytabs"},
	{"/usr/sbin/haproxy", "haproxy", "the scale-out tests"},
	{"/usr/bin/promtool", "prometheus", "the alert rule tests"},
	{"/usr/share/maven/bin/mvn", "maven", "the Hive jars"},
}

// TestAptPackagesNameWhatTheHarnessRuns holds testbed/apt-packages.txt, the
// list make test (and .ci/run) installs on a fresh machine, to the files the
// harness runs; where the machine has dpkg, each file's owner is asked of the
// real package database, so the table cannot name a package that does not
// ship the file.
func TestAptPackagesNameWhatTheHarnessRuns(t *testing.T) {
	b, err := os.ReadFile("apt-packages.txt")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		line, _, _ = strings.Cut(line, "#")
		if f := strings.Fields(line); len(f) > 0 {
			listed[f[0]] = true
		}
	}
	_, noDpkg := exec.LookPath("dpkg-query")
	for _, h := range harnessFiles {
		if !listed[h.pkg] {
			t.Errorf("testbed/apt-packages.txt does not name %s, needed for %s (%s)", h.pkg, h.why, h.glob)
		}
		if noDpkg != nil {
			continue
		}
		files, _ := filepath.Glob(h.glob)
		for _, f := range files {
			out, err := exec.Command("dpkg-query", "-S", f).Output()
			if err != nil {
				continue // installed by other means (a local build); nothing to check
			}
			owner, _, _ := strings.Cut(strings.TrimSpace(string(out)), ":")
			if owner != h.pkg && !dependsOn(h.pkg, owner) {
				t.Errorf("%s belongs to the Debian package %s, which %s neither is nor depends on", f, owner, h.pkg)
			}
		}
	}
}

// dependsOn reports whether the Debian package pkg names dep among its direct
// dependencies (python3-venv depends on python3.11-venv, which ships the file).
func dependsOn(pkg, dep string) bool {
	out, err := exec.Command("apt-cache", "depends", pkg).Output()
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && (k == "Depends" || k == "PreDepends") && strings.TrimSpace(v) == dep {
			return true
		}
	}
	return false
}
