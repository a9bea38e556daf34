// Package peer holds what the benchmark's peer proxies (JVM programs run
// beside hms-proxy in the same interleaved rounds: Waggle Dance, the Java
// HMS Proxy) share: a Thrift liveness call, a free loopback port, and the
// check that a peer process listens on loopback only.
package peer

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/hms-proxy/hms-proxy/wire"
)

// Ping makes one get_all_databases call to addr and fails unless it is
// answered with a reply (an exception names its message).
func Ping(addr string, timeout time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	args := wire.Struct()
	if _, err := c.Write(wire.AppendMessage(nil, wire.Header{Name: "get_all_databases", Type: wire.Call, SeqID: 1}, &args)); err != nil {
		return err
	}
	var m wire.Message
	if err := wire.NewReader(c, 16<<20).Next(&m); err != nil {
		return err
	}
	if m.Type != wire.Reply {
		_, msg, _ := wire.ParseAppException(m.Body())
		return fmt.Errorf("get_all_databases answered %s", msg)
	}
	return nil
}

// FreePort asks the kernel for a free loopback port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Tail returns the last n lines of s (for error messages quoting a log).
func Tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
