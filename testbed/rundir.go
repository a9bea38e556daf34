package testbed

import (
	"errors"
	"fmt"
	"os"
	"testing"
)

// newRunDir creates a run folder (prefix + random) under the cache's run root, with the owner file that lets later
// runs remove it once its process is gone; folders of processes that are gone are removed first.
func newRunDir(prefix string) (string, error) {
	if err := os.MkdirAll(runRoot(), 0o755); err != nil {
		return "", fmt.Errorf("testbed: %w", err)
	}
	sweepRunDirs()
	dir, err := os.MkdirTemp(runRoot(), prefix)
	if err != nil {
		return "", fmt.Errorf("testbed: %w", err)
	}
	if err := writeOwner(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// onFreePorts calls start with n ports free on loopback right now, again with new ones (four tries) while start
// reports that another process took one first (errPortTaken).
func onFreePorts(n int, start func(ports []int) error) error {
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		ports := make([]int, n)
		for i := range ports {
			if ports[i], err = FreePort(); err != nil {
				return err
			}
		}
		if err = start(ports); !errors.Is(err, errPortTaken) {
			return err
		}
	}
	return err
}

// serverCleanup stops a server when the test ends and removes its folder if the test passed.
func serverCleanup(t testing.TB, what, dir string, stop func()) {
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("%s folder kept: %s", what, dir)
		} else {
			os.RemoveAll(dir)
		}
	})
}
