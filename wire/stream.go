package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// Limits bound what one message may make the proxy read and allocate.
type Limits struct {
	MaxMessage int // total bytes of one message (envelope + body)
}

// ReadMessage reads exactly one unframed TBinaryProtocol message from r.
//
// Unframed Thrift has no length prefix, so the only way to find the end of a
// message is to walk its structure; the walk enforces MaxMessage on the total
// and on every declared string and container length before reading it.
// A clean EOF before the first byte returns io.EOF; an EOF inside a message is
// ErrTruncated. It reads exactly the message's bytes from r (use Reader on a
// connection of your own: it reads ahead and is much cheaper).
func ReadMessage(r *bufio.Reader, lim Limits, scratch []byte) (*Message, error) {
	rd := &Reader{src: r, exact: true, buf: scratch[:0], max: lim.MaxMessage}
	m := new(Message)
	if err := rd.Next(m); err != nil {
		return nil, err
	}
	return m, nil
}

// Sizes of the read buffers. A buffer grows by at most doubling, and only
// when it is full of bytes actually received: memory follows what a peer
// sends, never what it declares.
const (
	baseBuffer  = 16 << 10 // what a connection reading a message starts with
	shrinkAbove = 4 << 20  // buffers grown past this by one message are released after it
)

// ErrBudget reports that the shared in-flight message budget stayed exhausted.
var ErrBudget = errors.New("in-flight message budget exhausted")

// Budget bounds the bytes that all readers sharing it hold for messages in
// progress beyond their base buffers, and pools the base buffers of
// connections that are between messages, so an idle connection holds none.
// A nil *Budget bounds nothing and pools nothing.
type Budget struct {
	sem   *semaphore.Weighted
	used  atomic.Int64
	total int64
	wait  time.Duration
	pool  sync.Pool
}

// NewBudget allows total bytes in flight; a reader that cannot grow within
// wait fails its message with ErrBudget.
func NewBudget(total int64, wait time.Duration) *Budget {
	b := &Budget{sem: semaphore.NewWeighted(total), total: total, wait: wait}
	b.pool.New = func() any { s := make([]byte, baseBuffer); return &s }
	return b
}

// Total is the budget in bytes.
func (b *Budget) Total() int64 { return b.total }

// Used is the number of bytes readers hold beyond their base buffers now.
func (b *Budget) Used() int64 { return b.used.Load() }

func (b *Budget) acquire(n int64) error {
	if b == nil || n <= 0 {
		return nil
	}
	if b.sem.TryAcquire(n) {
		b.used.Add(n)
		return nil
	}
	if n > b.total {
		return fmt.Errorf("%w: a message needs %d bytes, the budget is %d", ErrBudget, n, b.total)
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.wait)
	defer cancel()
	if err := b.sem.Acquire(ctx, n); err != nil {
		return fmt.Errorf("%w: %d bytes did not free up within %v (budget %d bytes)", ErrBudget, n, b.wait, b.total)
	}
	b.used.Add(n)
	return nil
}

func (b *Budget) release(n int64) {
	if b != nil && n > 0 {
		b.used.Add(-n)
		b.sem.Release(n)
	}
}

func (b *Budget) base() *[]byte {
	if b == nil {
		s := make([]byte, baseBuffer)
		return &s
	}
	return b.pool.Get().(*[]byte)
}

func (b *Budget) putBase(p *[]byte) {
	if b != nil && p != nil && cap(*p) == baseBuffer {
		*p = (*p)[:baseBuffer]
		b.pool.Put(p)
	}
}

// Reader reads unframed messages from a stream it owns. It reads ahead and
// parses in place; bytes past one message start the next. A Message it
// returns stays valid until the next call of Next*.
type Reader struct {
	src        io.Reader
	exact      bool // read only what a message needs (the stream is shared)
	buf        []byte
	start, end int
	max        int
	budget     *Budget
	bufp       *[]byte // the pooled base buffer's holder, kept to give it back without allocating
	held       int64   // budget bytes held for buf beyond the base buffer
	lazy       bool    // release buf between messages (front-door connections)
	idle       [64]byte
}

// NewReader reads messages of at most max bytes (0: 100 MiB) from src. It
// keeps its buffer between messages (backend sessions, load generators).
func NewReader(src io.Reader, max int) *Reader {
	return &Reader{src: src, buf: make([]byte, 0, 32<<10), max: max}
}

// NewLazyReader is a Reader for a client connection: between messages it
// holds no buffer (the base buffer goes back to budget's pool), and what it
// grows beyond the base buffer is charged to budget (nil: unbounded).
func NewLazyReader(src io.Reader, max int, budget *Budget) *Reader {
	return &Reader{src: src, max: max, budget: budget, lazy: true}
}

// Peek returns the next n bytes without consuming them (n <= 64 when the
// reader holds no buffer yet).
func (rd *Reader) Peek(n int) ([]byte, error) {
	if err := rd.ensure(); err != nil {
		return nil, err
	}
	for rd.end-rd.start < n {
		if err := rd.read(n - (rd.end - rd.start)); err != nil {
			return nil, err
		}
	}
	return rd.buf[rd.start : rd.start+n], nil
}

// Buffered is the number of bytes read ahead and not yet consumed.
func (rd *Reader) Buffered() int { return rd.end - rd.start }

// Close gives the reader's buffer back (call it when the connection ends).
func (rd *Reader) Close() {
	rd.releaseBuf()
}

func (rd *Reader) releaseBuf() {
	if rd.buf == nil {
		return
	}
	rd.budget.release(rd.held)
	rd.held = 0
	// The base buffer goes back even when the message outgrew it: the
	// message it held is done.
	rd.budget.putBase(rd.bufp)
	rd.bufp = nil
	rd.buf, rd.start, rd.end = nil, 0, 0
}

// ensure gives a lazy reader a buffer, reading the first bytes of the next
// message into a small array first so that an idle connection waits on no
// buffer at all.
func (rd *Reader) ensure() error {
	if rd.buf != nil {
		return nil
	}
	if !rd.lazy {
		rd.buf = make([]byte, 0, 32<<10)
		return nil
	}
	n, err := rd.src.Read(rd.idle[:])
	if n == 0 {
		if err == nil {
			err = io.ErrNoProgress
		}
		return err
	}
	rd.bufp = rd.budget.base()
	rd.buf = *rd.bufp
	rd.end = copy(rd.buf, rd.idle[:n])
	rd.start = 0
	return nil
}

// Next reads one message into m.
func (rd *Reader) Next(m *Message) error { return rd.NextWalkVisitor(m, nil, nil) }

func (rd *Reader) begin() error {
	if rd.max <= 0 {
		rd.max = 100 << 20
	}
	if rd.start == rd.end {
		rd.start, rd.end = 0, 0
		if rd.lazy {
			rd.releaseBuf()
		} else if cap(rd.buf) > shrinkAbove && !rd.exact {
			// One huge message (a 100k-partition answer) must not pin its
			// buffer for the life of the connection.
			rd.buf = make([]byte, 0, 32<<10)
		}
		if err := rd.ensure(); err != nil {
			return err
		}
		if rd.end == 0 {
			if err := rd.read(1); err != nil {
				return err
			}
		}
	}
	return nil
}

// NextWalk reads one message into m and, when it is a REPLY and plan is not
// nil, reports the role spans of its body to visit while reading it (span
// positions relative to the body): one pass instead of one to find the
// message's end and another to find its names.
func (rd *Reader) NextWalk(m *Message, plan *Plan, visit func(*Span) error) error {
	var v Visitor
	if visit != nil {
		v = VisitFunc(visit)
	}
	return rd.NextWalkVisitor(m, plan, v)
}

// NextWalkVisitor is NextWalk with a Visitor.
func (rd *Reader) NextWalkVisitor(m *Message, plan *Plan, visit Visitor) error {
	if err := rd.begin(); err != nil {
		return err
	}
	b := Buf{B: rd.buf[rd.start:rd.end], Limit: rd.max, src: rd, max: rd.max}
	if plan == nil {
		if err := b.message(m); err != nil {
			return err
		}
		rd.start += b.Pos
		return nil
	}
	h, err := b.ParseHeader()
	if err != nil {
		return err
	}
	off := b.Pos
	if h.Type == Reply {
		w := walker{b: b, visit: visit, base: off}
		err = w.b.walkStruct(plan, &w, 0)
		b = w.b
	} else {
		err = b.Skip(TStruct, 0)
	}
	if err != nil {
		return err
	}
	*m = Message{Header: h, Raw: b.B[:b.Pos], BodyOff: off}
	rd.start += b.Pos
	return nil
}

// NextCall reads one client message strictly (see StrictSchema): a message
// Hive's reader could parse differently is refused with a *StrictError.
func (rd *Reader) NextCall(m *Message, s *StrictSchema) error {
	if err := rd.begin(); err != nil {
		return err
	}
	b := Buf{B: rd.buf[rd.start:rd.end], Limit: rd.max, src: rd, max: rd.max}
	h, err := b.ParseHeader()
	if err != nil {
		return err
	}
	off := b.Pos
	if err := s.readStrict(&b, &h, off); err != nil {
		return err
	}
	*m = Message{Header: h, Raw: b.B[:b.Pos], BodyOff: off}
	rd.start += b.Pos
	return nil
}

// read appends at least n bytes to the window. The buffer grows only when it
// is full of received bytes, to at most twice its size (never to a declared
// length), and what it holds beyond the base buffer is charged to the
// budget. An io.EOF with no byte read is returned as is.
func (rd *Reader) read(n int) error {
	got := 0
	for got < n {
		if rd.start > 0 && cap(rd.buf)-rd.end < n-got {
			copy(rd.buf[:cap(rd.buf)], rd.buf[rd.start:rd.end])
			rd.end -= rd.start
			rd.start = 0
		}
		if cap(rd.buf) == rd.end {
			if err := rd.grow(n - got); err != nil {
				return err
			}
		}
		rd.buf = rd.buf[:cap(rd.buf)]
		want := rd.buf[rd.end:]
		if rd.exact && len(want) > n-got {
			want = want[:n-got]
		}
		k, err := rd.src.Read(want)
		rd.end += k
		got += k
		rd.buf = rd.buf[:rd.end]
		if err != nil {
			if got >= n {
				return nil
			}
			if got > 0 && errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		if k == 0 {
			return io.ErrNoProgress
		}
	}
	return nil
}

// grow makes room for more bytes: double the buffer (at least the base
// size), up to the message limit. It grows only when full of received bytes,
// so it never holds more than twice what arrived; always doubling keeps the
// copying linear in the message's size (growing by just the bytes the next
// field needs copied the whole buffer for every field: quadratic).
func (rd *Reader) grow(need int) error {
	c := cap(rd.buf)
	nc := max(2*c, baseBuffer)
	if nc > rd.max+64 {
		nc = rd.max + 64
	}
	if nc <= c {
		return perr(ErrTooLarge, rd.end, "message grows past %d bytes", rd.max)
	}
	if rd.lazy {
		extra := int64(nc - baseBuffer)
		if err := rd.budget.acquire(extra - rd.held); err != nil {
			return err
		}
		if extra > rd.held {
			rd.held = extra
		}
	}
	nb := make([]byte, rd.end, nc)
	copy(nb, rd.buf[:rd.end])
	rd.buf = nb // the old buffer is left to the collector: spans of this message may still point into it
	return nil
}

// fillFrom extends the message being parsed by at least n bytes.
func (b *Buf) fillFrom(n int) error {
	rd := b.src
	if len(b.B)+n > b.max {
		return perr(ErrTooLarge, len(b.B), "message grows past %d bytes", b.max)
	}
	have := len(b.B)
	if err := rd.read(n); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return perr(ErrTruncated, have, "connection ended inside a message")
		}
		return err
	}
	b.B = rd.buf[rd.start:rd.end]
	return nil
}

// ReadFramed reads one TFramedTransport frame and parses the message in it.
// The frame buffer grows with the bytes received, not with the declared
// frame size.
func ReadFramed(r io.Reader, lim Limits) (*Message, error) {
	raw, err := readFrame(r, lim)
	if err != nil {
		return nil, err
	}
	return ParseMessage(raw, lim.MaxMessage)
}

// ReadFramedCall reads one frame and parses its message strictly.
func ReadFramedCall(r io.Reader, lim Limits, s *StrictSchema) (*Message, error) {
	raw, err := readFrame(r, lim)
	if err != nil {
		return nil, err
	}
	return s.CheckCall(raw, lim.MaxMessage)
}

func readFrame(r io.Reader, lim Limits) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, perr(ErrTruncated, 0, "connection ended inside a frame header")
		}
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(hdr[:])))
	max := lim.MaxMessage
	if max <= 0 {
		max = 100 << 20
	}
	if n < 0 {
		return nil, perr(ErrMalformed, 0, "negative frame size %d", n)
	}
	if n > max {
		return nil, perr(ErrTooLarge, 0, "frame of %d bytes exceeds limit %d", n, max)
	}
	raw := make([]byte, 0, min(n, baseBuffer))
	for len(raw) < n {
		if len(raw) == cap(raw) {
			nb := make([]byte, len(raw), min(n, 2*cap(raw)))
			copy(nb, raw)
			raw = nb
		}
		k, err := r.Read(raw[len(raw):min(n, cap(raw))])
		raw = raw[:len(raw)+k]
		if err != nil && len(raw) < n {
			return nil, perr(ErrTruncated, 4+len(raw), "connection ended inside a frame of %d bytes", n)
		}
	}
	return raw, nil
}

// WriteFramed writes a frame holding msg.
func WriteFramed(w io.Writer, msg []byte) error {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(msg)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := w.Write(msg)
	return err
}
