package testbed

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// cached builds dir once: when dir/done is missing, fill runs under an exclusive file lock of dir's parent (so
// parallel test binaries build it once) into dir, then dir/done is written. A failed fill leaves no done marker.
func cached(dir string, fill func(dir string) error) (string, error) {
	done := filepath.Join(dir, "done")
	if _, err := os.Stat(done); err == nil {
		return dir, nil
	}
	root := filepath.Dir(dir)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(root, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if _, err := os.Stat(done); err == nil {
		return dir, nil // another test binary built it meanwhile
	}
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := fill(dir); err != nil {
		return "", err
	}
	return dir, os.WriteFile(done, nil, 0o644)
}

// hashOf names a cache entry after what it is built from.
func hashOf(parts ...[]byte) string {
	h := fnv.New32a()
	for _, p := range parts {
		h.Write(p)
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%08x", h.Sum32())
}

// mvn runs Maven with the test bed's local repository ($HMS_PROXY_CACHE/m2), everything from Maven Central.
func mvn(args ...string) error {
	bin, err := exec.LookPath("mvn")
	if err != nil {
		return fmt.Errorf("mvn not found (apt-get install -y maven; make test does): %w", err)
	}
	cmd := exec.Command(bin, append([]string{"-q", "-B", "-Dmaven.repo.local=" + filepath.Join(Cache(), "m2")}, args...)...)
	cmd.Dir = os.TempDir()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("mvn %s: %w\n%s", strings.Join(args, " "), err, tail(out.String(), 30))
	}
	return nil
}

// MavenLib returns a folder holding the runtime jars of the dependencies a pom lists
// ($HMS_PROXY_CACHE/<name>/<hash of the pom>), copying them from Maven Central when missing.
func MavenLib(name, pom string) (string, error) {
	b, err := os.ReadFile(pom)
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(pom)
	if err != nil {
		return "", err
	}
	return cached(filepath.Join(Cache(), name, hashOf(b)), func(dir string) error {
		return mvn("-f", abs, "dependency:copy-dependencies", "-DoutputDirectory="+dir)
	})
}

// MavenArtifact returns the path of one artifact (group:artifact:version[:packaging[:classifier]]) copied from
// Maven Central into $HMS_PROXY_CACHE/artifacts/<hash>/.
func MavenArtifact(coords string) (string, error) {
	dir, err := cached(filepath.Join(Cache(), "artifacts", hashOf([]byte(coords))), func(dir string) error {
		return mvn("dependency:copy", "-Dartifact="+coords, "-DoutputDirectory="+dir, "-Dmdep.useBaseVersion=true")
	})
	if err != nil {
		return "", err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if e.Name() != "done" && !e.IsDir() {
			return filepath.Join(dir, e.Name()), nil
		}
	}
	return "", fmt.Errorf("testbed: Maven copied nothing for %s into %s", coords, dir)
}
