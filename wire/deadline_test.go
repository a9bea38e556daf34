package wire

import (
	"net"
	"testing"
	"time"
)

// deadlineConn records the deadlines set on it.
type deadlineConn struct {
	net.Conn
	read, both []time.Time
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error { c.read = append(c.read, t); return nil }
func (c *deadlineConn) SetDeadline(t time.Time) error     { c.both = append(c.both, t); return nil }

// A connection serving call after call keeps its deadline while it lies
// between the wanted one and a slack after it; it is never earlier than
// wanted, a shorter timeout or no timeout moves it at once, and Forget makes
// the next call set it.
func TestDeadlineMovesOnlyPastItsSlack(t *testing.T) {
	c := &deadlineConn{}
	var d Deadline
	t0 := time.Unix(1_000_000, 0)
	timeout := 8 * time.Second // slack: 500 ms, capped at MaxDeadlineSlack
	check := func(step string, now time.Time, timeout time.Duration, wantSets int) time.Time {
		t.Helper()
		var want time.Time
		if timeout > 0 {
			want = now.Add(timeout)
		}
		got := d.Set(c, true, want, timeout)
		if len(c.read) != wantSets {
			t.Fatalf("%s: %d deadlines set, want %d", step, len(c.read), wantSets)
		}
		if got != c.read[len(c.read)-1] {
			t.Fatalf("%s: reported %v, the connection has %v", step, got, c.read[len(c.read)-1])
		}
		if !want.IsZero() && (got.Before(want) || got.After(want.Add(MaxDeadlineSlack))) {
			t.Fatalf("%s: deadline %v outside [%v, +%v]", step, got, want, MaxDeadlineSlack)
		}
		if want.IsZero() && !got.IsZero() {
			t.Fatalf("%s: deadline %v, want none", step, got)
		}
		return got
	}
	first := check("first call", t0, timeout, 1)
	if first != t0.Add(timeout+MaxDeadlineSlack) {
		t.Fatalf("first deadline %v, want the timeout plus the slack", first)
	}
	check("a call 100 ms later", t0.Add(100*time.Millisecond), timeout, 1)
	check("a call just within the slack", t0.Add(MaxDeadlineSlack), timeout, 1)
	check("a call past the slack", t0.Add(MaxDeadlineSlack+time.Millisecond), timeout, 2)
	check("a shorter timeout", t0.Add(time.Second), time.Second, 3)
	check("no timeout", t0.Add(2*time.Second), 0, 4)
	check("no timeout again", t0.Add(3*time.Second), 0, 4)
	check("a timeout again", t0.Add(3*time.Second), timeout, 5)
	d.Forget()
	check("after Forget", t0.Add(3*time.Second), timeout, 6)

	// A small timeout gets a sixteenth of itself; a passed one none.
	small := d.Set(c, true, t0.Add(10*time.Second+160*time.Millisecond), 160*time.Millisecond)
	if want := t0.Add(10*time.Second + 170*time.Millisecond); small != want {
		t.Fatalf("160 ms timeout: deadline %v, want %v", small, want)
	}
	if got := d.Set(c, true, t0, -time.Second); got != t0 {
		t.Fatalf("a passed deadline became %v, want %v", got, t0)
	}

	// !read sets both directions.
	var w Deadline
	w.Set(c, false, t0.Add(timeout), timeout)
	if len(c.both) != 1 {
		t.Fatalf("SetDeadline called %d times, want 1", len(c.both))
	}
}
