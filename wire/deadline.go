package wire

import (
	"net"
	"time"
)

// MaxDeadlineSlack bounds how late a Deadline may let a timeout fire.
const MaxDeadlineSlack = 250 * time.Millisecond

// Deadline remembers the deadline last set on one connection, so that a
// connection serving call after call does not move its deadline (a runtime
// timer reset, two for SetDeadline) on every call. A deadline is set a slack
// past the one wanted and left alone while it still lies between the wanted
// deadline and that slack after it: a timeout fires at most the slack late
// (a sixteenth of its timeout, at most MaxDeadlineSlack), never early. A
// deadline set on the connection by other code must be followed by Forget.
type Deadline struct {
	at    time.Time // the deadline set on the connection
	known bool      // at is what the connection has
}

// Forget says the connection's deadline was changed elsewhere: the next
// Set sets it.
func (d *Deadline) Forget() { d.known = false }

// Set bounds c's reads (read) or reads and writes (!read) by want, which is
// timeout after now (want zero: no deadline). It returns the deadline the
// connection has.
func (d *Deadline) Set(c net.Conn, read bool, want time.Time, timeout time.Duration) time.Time {
	if want.IsZero() {
		if d.known && d.at.IsZero() {
			return d.at
		}
		d.at = want
	} else {
		slack := max(0, min(timeout/16, MaxDeadlineSlack))
		if d.known && !d.at.IsZero() && !d.at.Before(want) && !d.at.After(want.Add(slack)) {
			return d.at
		}
		d.at = want.Add(slack)
	}
	d.known = true
	if read {
		_ = c.SetReadDeadline(d.at)
	} else {
		_ = c.SetDeadline(d.at)
	}
	return d.at
}
