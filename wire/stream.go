package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
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

// shrinkAbove: buffers grown past this by one message are released after it.
const shrinkAbove = 4 << 20

// Reader reads unframed messages from a stream it owns. It reads ahead in
// large chunks and parses in place; bytes past one message start the next.
// A Message it returns stays valid until the next call of Next.
type Reader struct {
	src        io.Reader
	exact      bool // read only what a message needs (the stream is shared)
	buf        []byte
	start, end int
	max        int
}

// NewReader reads messages of at most max bytes (0: 100 MiB) from src.
func NewReader(src io.Reader, max int) *Reader {
	return &Reader{src: src, buf: make([]byte, 0, 32<<10), max: max}
}

// Peek returns the next n bytes without consuming them.
func (rd *Reader) Peek(n int) ([]byte, error) {
	for rd.end-rd.start < n {
		if err := rd.read(n - (rd.end - rd.start)); err != nil {
			return nil, err
		}
	}
	return rd.buf[rd.start : rd.start+n], nil
}

// Buffered is the number of bytes read ahead and not yet consumed.
func (rd *Reader) Buffered() int { return rd.end - rd.start }

// Next reads one message into m.
func (rd *Reader) Next(m *Message) error { return rd.NextWalk(m, nil, nil) }

// NextWalk reads one message into m and, when it is a REPLY and plan is not
// nil, reports the role spans of its body to visit while reading it (span
// positions relative to the body): one pass instead of one to find the
// message's end and another to find its names.
func (rd *Reader) NextWalk(m *Message, plan *Plan, visit func(*Span) error) error {
	if rd.max <= 0 {
		rd.max = 100 << 20
	}
	if rd.start == rd.end {
		rd.start, rd.end = 0, 0
		if cap(rd.buf) > shrinkAbove && !rd.exact {
			// One huge message (a 100k-partition answer) must not pin its
			// buffer for the life of the connection.
			rd.buf = make([]byte, 0, 32<<10)
		}
		if err := rd.read(1); err != nil {
			return err
		}
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

// read appends at least n bytes to the window, compacting or growing buf;
// an io.EOF with no byte read is returned as is.
func (rd *Reader) read(n int) error {
	if rd.start > 0 && cap(rd.buf)-rd.end < n {
		copy(rd.buf[:cap(rd.buf)], rd.buf[rd.start:rd.end])
		rd.end -= rd.start
		rd.start = 0
	}
	if cap(rd.buf)-rd.end < n {
		nb := make([]byte, rd.end, 2*cap(rd.buf)+n)
		copy(nb, rd.buf[:rd.end])
		rd.buf = nb
	}
	rd.buf = rd.buf[:cap(rd.buf)]
	want := rd.buf[rd.end:]
	if rd.exact {
		want = want[:n]
	}
	got, err := io.ReadAtLeast(rd.src, want, n)
	rd.end += got
	rd.buf = rd.buf[:rd.end]
	if got >= n {
		return nil
	}
	return err
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
func ReadFramed(r *bufio.Reader, lim Limits) (*Message, error) {
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
	raw := make([]byte, n)
	if _, err := io.ReadFull(r, raw); err != nil {
		return nil, perr(ErrTruncated, 4, "connection ended inside a frame of %d bytes", n)
	}
	return ParseMessage(raw, max)
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
