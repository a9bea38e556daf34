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
// ErrTruncated.
func ReadMessage(r *bufio.Reader, lim Limits, scratch []byte) (*Message, error) {
	if _, err := r.Peek(1); err != nil {
		return nil, err
	}
	max := lim.MaxMessage
	if max <= 0 {
		max = 100 << 20
	}
	b := &Buf{B: scratch[:0], Limit: max, fill: func(b *Buf, n int) error {
		if len(b.B)+n > max {
			return perr(ErrTooLarge, len(b.B), "message grows past %d bytes", max)
		}
		start := len(b.B)
		b.B = grow(b.B, n)
		if _, err := io.ReadFull(r, b.B[start:start+n]); err != nil {
			b.B = b.B[:start]
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return perr(ErrTruncated, start, "connection ended inside a message")
			}
			return err
		}
		return nil
	}}
	return b.message()
}

func grow(s []byte, n int) []byte {
	if cap(s)-len(s) >= n {
		return s[:len(s)+n]
	}
	ns := make([]byte, len(s)+n, 2*cap(s)+n+256)
	copy(ns, s)
	return ns
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
