// Package msg builds the pre-encoded Thrift requests the benchmark sends and
// checks the replies it gets back, without decoding them into Go structs: the
// load generator must cost as little as possible, since it shares the two
// cores with the processes it measures.
package msg

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/wire"
)

// Encode returns one whole TBinaryProtocol call message (strict envelope,
// sequence id 0) of method with the given argument struct.
func Encode(method string, args thrift.TStruct) ([]byte, error) {
	return encode(method, thrift.CALL, args)
}

// EncodeReply returns a whole reply message of method with the given result
// struct (used to build the instant backend's answers without a metastore).
func EncodeReply(method string, result thrift.TStruct) ([]byte, error) {
	return encode(method, thrift.REPLY, result)
}

func encode(method string, typ thrift.TMessageType, s thrift.TStruct) ([]byte, error) {
	ctx := context.Background()
	buf := thrift.NewTMemoryBufferLen(1024)
	p := thrift.NewTBinaryProtocolConf(buf, &thrift.TConfiguration{})
	if err := p.WriteMessageBegin(ctx, method, typ, 0); err != nil {
		return nil, fmt.Errorf("encode %s: %w", method, err)
	}
	if err := s.Write(ctx, p); err != nil {
		return nil, fmt.Errorf("encode %s: %w", method, err)
	}
	if err := p.WriteMessageEnd(ctx); err != nil {
		return nil, fmt.Errorf("encode %s: %w", method, err)
	}
	if err := p.Flush(ctx); err != nil {
		return nil, fmt.Errorf("encode %s: %w", method, err)
	}
	return append([]byte(nil), buf.Bytes()...), nil
}

// SeqOffset returns where the 4-byte sequence id of a strict message starts.
func SeqOffset(m []byte) (int, error) {
	if len(m) < 8 || binary.BigEndian.Uint32(m)&0xffff0000 != 0x80010000 {
		return 0, fmt.Errorf("not a strict binary Thrift message")
	}
	n := int(binary.BigEndian.Uint32(m[4:]))
	off := 8 + n
	if off+4 > len(m) {
		return 0, fmt.Errorf("truncated message envelope")
	}
	return off, nil
}

// SetSeq overwrites the sequence id of a strict message in place.
func SetSeq(m []byte, off int, seq int32) {
	binary.BigEndian.PutUint32(m[off:], uint32(seq))
}

// Template is an encoded request with placeholder strings that are replaced in
// place, byte for byte, before each send (unique table names, partition
// values). Every placeholder has the length of its replacement.
type Template struct {
	Msg    []byte
	Marker []byte
	Spots  []int // offsets of every occurrence of Marker, in order
}

// NewTemplate finds every occurrence of marker in m.
func NewTemplate(m []byte, marker string) (*Template, error) {
	t := &Template{Msg: m, Marker: []byte(marker)}
	for i := 0; ; {
		j := bytes.Index(m[i:], t.Marker)
		if j < 0 {
			break
		}
		t.Spots = append(t.Spots, i+j)
		i += j + len(marker)
	}
	if len(t.Spots) == 0 {
		return nil, fmt.Errorf("template: marker %q not found in the encoded request", marker)
	}
	return t, nil
}

// Fill copies the template into dst (reused when large enough) with every
// marker replaced by value (same length as the marker).
func (t *Template) Fill(dst []byte, value []byte) []byte {
	dst = append(dst[:0], t.Msg...)
	for _, s := range t.Spots {
		copy(dst[s:], value)
	}
	return dst
}

// CheckReply reports why a reply is not a successful answer to a call with
// sequence id seq: a TApplicationException, a wrong sequence id, or a declared
// exception in the result struct (any field other than 0 "success").
func CheckReply(m *wire.Message, seq int32) error {
	if m.SeqID != seq {
		return fmt.Errorf("%s: reply sequence id %d, sent %d", m.Name, m.SeqID, seq)
	}
	if m.Type == wire.Exception {
		_, text, _ := wire.ParseAppException(m.Body())
		return fmt.Errorf("%s: TApplicationException: %s", m.Name, text)
	}
	if m.Type != wire.Reply {
		return fmt.Errorf("%s: message type %d is not a reply", m.Name, m.Type)
	}
	b := wire.Buf{B: m.Body()}
	for {
		t, id, err := b.FieldHeader()
		if err != nil {
			return fmt.Errorf("%s: unreadable result: %v", m.Name, err)
		}
		if t == wire.TStop {
			return nil
		}
		if id != 0 {
			// A declared exception: its field 1 is the message in every HMS exception.
			text := ""
			if t == wire.TStruct {
				start := b.Pos
				if err := b.Skip(t, 0); err == nil {
					if v, err := wire.DecodeStruct(m.Body()[start:b.Pos]); err == nil {
						text = v.Field(1).String()
					}
				}
			}
			return fmt.Errorf("%s: declared exception (result field %d): %s", m.Name, id, text)
		}
		if err := b.Skip(t, 0); err != nil {
			return fmt.Errorf("%s: unreadable result: %v", m.Name, err)
		}
	}
}
