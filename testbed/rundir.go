package testbed

import (
	"errors"
	"os"
	"testing"
)

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
