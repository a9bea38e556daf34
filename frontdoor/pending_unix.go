//go:build unix

package frontdoor

import (
	"net"
	"syscall"

	"github.com/hms-proxy/hms-proxy/security/sasl"
)

// pendingInput reports whether bytes a client sent wait in the socket,
// unread: a non-blocking peek of the kernel's receive queue (false when it
// cannot tell).
func pendingInput(c net.Conn) bool {
unwrap:
	for {
		switch w := c.(type) {
		case *sasl.Conn:
			c = w.Conn
		case interface{ NetConn() net.Conn }:
			c = w.NetConn()
		default:
			break unwrap
		}
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	pending := false
	_ = raw.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		pending = err == nil && n > 0
	})
	return pending
}
