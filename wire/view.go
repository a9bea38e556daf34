package wire

import "unsafe"

// View returns a string sharing b's bytes (no copy). The router and its
// planner use it only for values read from the message being served, whose
// buffer is neither changed nor reused until the call is answered; nothing
// that outlives the call may keep such a string.
func View(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
