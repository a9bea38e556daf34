//go:build !unix

package frontdoor

import "net"

// pendingInput cannot look into the socket here: only bytes the reader
// holds count (see awaitCall).
func pendingInput(net.Conn) bool { return false }
