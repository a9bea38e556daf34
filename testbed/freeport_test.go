package testbed

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// FreePort never hands out a port twice, stays below the kernel's ephemeral range (where outgoing connections take
// their local ports), and holds a claim on each port that another process (another open file, here) cannot take.
func TestFreePortHandsOutEachPortOnceAndClaimsIt(t *testing.T) {
	seen := map[int]bool{}
	for i := 0; i < 300; i++ {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		if p < portLow || p > portHigh {
			t.Fatalf("port %d outside %d-%d", p, portLow, portHigh)
		}
		seen[p] = true
	}
	for p := range seen {
		f, err := os.OpenFile(filepath.Join(os.TempDir(), "hms-proxy-test-ports", strconv.Itoa(p)), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		f.Close()
		if err == nil {
			t.Fatalf("the claim on port %d could be taken by another process", p)
		}
		break
	}
}
