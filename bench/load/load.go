// Package load drives Hive Metastore calls over real Thrift connections at a
// fixed concurrency, for a bounded time and a bounded count, and records the
// latency of every operation.
package load

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hms-proxy/hms-proxy/bench/msg"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Conn is one client connection speaking unframed TBinaryProtocol, as Hive's
// own client does by default.
type Conn struct {
	c   net.Conn
	rd  *wire.Reader // reads ahead and parses in place: the client must cost little
	m   wire.Message
	seq int32
}

// Dial opens a connection to addr.
func Dial(addr string, timeout time.Duration) (*Conn, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	return &Conn{c: c, rd: wire.NewReader(c, 256<<20)}, nil
}

// NewConn wraps an open connection (a Kerberized one: SASL frames, one per
// Write, which is how Call writes a request).
func NewConn(c net.Conn) *Conn { return &Conn{c: c, rd: wire.NewReader(c, 256<<20)} }

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// SetDeadline bounds every call made until the next SetDeadline.
func (c *Conn) SetDeadline(t time.Time) { _ = c.c.SetDeadline(t) }

// Call sends req (a whole call message whose sequence id sits at seqOff; it is
// overwritten) and reads and checks the reply, which stays valid until the
// next call.
func (c *Conn) Call(req []byte, seqOff int) (*wire.Message, error) {
	c.seq++
	msg.SetSeq(req, seqOff, c.seq)
	if _, err := c.c.Write(req); err != nil {
		return nil, err
	}
	m := &c.m
	if err := c.rd.Next(m); err != nil {
		return nil, err
	}
	if err := msg.CheckReply(m, c.seq); err != nil {
		return m, &ReplyError{err}
	}
	return m, nil
}

// ReplyError is a well-formed reply that is not a success (an exception): the
// connection stays usable.
type ReplyError struct{ Err error }

func (e *ReplyError) Error() string { return e.Err.Error() }
func (e *ReplyError) Unwrap() error { return e.Err }

// Op is one operation of a workload on one connection (one or more calls).
type Op interface {
	Do(c *Conn) error
}

// Static sends the same request every time.
type Static struct {
	req    []byte
	seqOff int
}

// NewStatic copies req (the copy's sequence id is rewritten per call).
func NewStatic(req []byte) (*Static, error) {
	off, err := msg.SeqOffset(req)
	if err != nil {
		return nil, err
	}
	return &Static{req: append([]byte(nil), req...), seqOff: off}, nil
}

// Do makes the call.
func (s *Static) Do(c *Conn) error {
	_, err := c.Call(s.req, s.seqOff)
	return err
}

// Unique fills one or more templates with a fresh value per operation and
// sends them in order (create_table then drop_table of the same new name;
// add_partitions with new partition values).
type Unique struct {
	Templates []*msg.Template
	Next      func(dst []byte) []byte // appends the next unique value (marker-length)
	bufs      [][]byte
	offs      []int
	val       []byte
}

// Do sends every template filled with one new value.
func (u *Unique) Do(c *Conn) error {
	if u.bufs == nil {
		u.bufs = make([][]byte, len(u.Templates))
		u.offs = make([]int, len(u.Templates))
		for i, t := range u.Templates {
			off, err := msg.SeqOffset(t.Msg)
			if err != nil {
				return err
			}
			u.offs[i] = off
		}
	}
	u.val = u.Next(u.val[:0])
	for i, t := range u.Templates {
		if len(u.val) != len(t.Marker) {
			return fmt.Errorf("unique value %q has length %d, marker %q %d", u.val, len(u.val), t.Marker, len(t.Marker))
		}
		u.bufs[i] = t.Fill(u.bufs[i], u.val)
		if _, err := c.Call(u.bufs[i], u.offs[i]); err != nil {
			return err
		}
	}
	return nil
}

// Counter hands out unique fixed-width decimal values.
type Counter struct {
	n     atomic.Uint64
	Width int
}

// Next appends the next value, zero-padded to Width digits.
func (k *Counter) Next(dst []byte) []byte {
	v := k.n.Add(1)
	var d [20]byte
	i := len(d)
	for v > 0 || i == len(d) {
		i--
		d[i] = byte('0' + v%10)
		v /= 10
	}
	for pad := k.Width - (len(d) - i); pad > 0; pad-- {
		dst = append(dst, '0')
	}
	return append(dst, d[i:]...)
}

// Bounds limit one measured slice: it stops issuing operations at the first
// of MaxOps operations (over all workers) or Dur elapsed; operations in flight
// finish (each bounded by the connection deadline).
type Bounds struct {
	Dur    time.Duration
	MaxOps int
	// CallTimeout bounds a single operation (connection deadline).
	CallTimeout time.Duration
}

// Result is one slice's outcome.
type Result struct {
	Latencies []time.Duration // one per successful operation
	Errors    int
	FirstErr  string
	Wall      time.Duration
}

// RunSlice runs ops[i] on conns[i], one worker per connection, within b.
// A connection that fails is dropped for the rest of the slice (its error is
// counted); conns[i] is set to nil so the caller can redial.
func RunSlice(conns []*Conn, ops []Op, b Bounds) Result {
	start := time.Now()
	end := start.Add(b.Dur)
	var tickets atomic.Int64
	var mu sync.Mutex
	var res Result
	var wg sync.WaitGroup
	for i := range conns {
		if conns[i] == nil {
			continue
		}
		conns[i].SetDeadline(end.Add(b.CallTimeout))
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			lat := make([]time.Duration, 0, 256)
			errs, first := 0, ""
			for time.Now().Before(end) && tickets.Add(1) <= int64(b.MaxOps) {
				t0 := time.Now()
				err := ops[i].Do(conns[i])
				d := time.Since(t0)
				if err != nil {
					errs++
					if first == "" {
						first = err.Error()
					}
					var re *ReplyError
					if !errors.As(err, &re) {
						conns[i].Close()
						conns[i] = nil
						break
					}
					continue
				}
				lat = append(lat, d)
			}
			mu.Lock()
			res.Latencies = append(res.Latencies, lat...)
			res.Errors += errs
			if res.FirstErr == "" {
				res.FirstErr = first
			}
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	res.Wall = time.Since(start)
	return res
}
