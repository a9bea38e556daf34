package peer

import (
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestCheckLoopbackOnlySeesWildcardListeners(t *testing.T) {
	lo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lo.Close()
	if err := CheckLoopbackOnly(os.Getpid()); err != nil {
		t.Fatalf("a loopback listener: %v", err)
	}
	ls, err := Listeners(os.Getpid())
	if err != nil || !slices.ContainsFunc(ls, func(l Listener) bool { return l.Addr.String() == lo.Addr().String() }) {
		t.Fatalf("Listeners = %v (%v), want %s among them", ls, err, lo.Addr())
	}
	for _, network := range []string{"tcp4", "tcp6"} {
		addr := map[string]string{"tcp4": "0.0.0.0:0", "tcp6": "[::]:0"}[network]
		w, err := net.Listen(network, addr)
		if err != nil {
			t.Fatal(err)
		}
		err = CheckLoopbackOnly(os.Getpid())
		port := w.Addr().(*net.TCPAddr).Port
		w.Close()
		if err == nil || !strings.Contains(err.Error(), "listens outside loopback") || !strings.Contains(err.Error(), ":"+strconv.Itoa(port)) {
			t.Errorf("a %s wildcard listener on port %d: %v", network, port, err)
		}
	}
}
