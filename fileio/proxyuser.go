package fileio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// proxyUserConn states an HDFS proxy user on a NameNode connection, as
// Hadoop's own client does for UserGroupInformation.createProxyUser: the
// connection context (the packet with call id -3 that follows the "hrpc"
// preamble and any SASL exchange) names the impersonated user as effective
// user, and without Kerberos the proxy's own user as real user. The
// NameNode then authorizes the proxy (hadoop.proxyuser.<proxy>.hosts,
// .groups, .users) and runs every call of the connection as that user: the
// files it creates are the user's.
//
// The HDFS library has no option for it (its context always names the
// login user), so this wrapper rewrites that one packet on its way out;
// every other byte passes unchanged. It runs before any SASL wrapping: the
// library writes the context unwrapped whatever the QOP.
type proxyUserConn struct {
	net.Conn
	effective, real string

	preamble int    // bytes of the 7-byte "hrpc" preamble still to pass
	buf      []byte // a packet being collected
	done     bool   // the context was rewritten: pass everything
	err      error

	// After the context: the first answer is read whole, to turn the
	// NameNode's refusal of the context (its call id -3) into an error
	// that says why, instead of an answer to the wrong call.
	checked bool
	pending []byte
}

func newProxyUserConn(c net.Conn, effective, real string) *proxyUserConn {
	return &proxyUserConn{Conn: c, effective: effective, real: real, preamble: 7}
}

// connectionContextCallID is the call id of the IpcConnectionContextProto.
const connectionContextCallID = -3

func (c *proxyUserConn) Write(b []byte) (int, error) {
	if c.done {
		return c.Conn.Write(b)
	}
	if c.err != nil {
		return 0, c.err
	}
	n := len(b)
	if c.preamble > 0 {
		k := min(c.preamble, len(b))
		if _, err := c.Conn.Write(b[:k]); err != nil {
			return 0, err
		}
		c.preamble -= k
		b = b[k:]
	}
	c.buf = append(c.buf, b...)
	for !c.done && len(c.buf) >= 4 {
		size := int(binary.BigEndian.Uint32(c.buf))
		if size > 64<<20 {
			c.err = fmt.Errorf("fileio: NameNode connection: a %d-byte packet before the connection context", size)
			return 0, c.err
		}
		if len(c.buf) < 4+size {
			break
		}
		pkt := c.buf[:4+size]
		out, isContext, err := c.rewrite(pkt[4:])
		if err != nil {
			c.err = err
			return 0, err
		}
		if isContext {
			pkt = binary.BigEndian.AppendUint32(nil, uint32(len(out)))
			pkt = append(pkt, out...)
			c.done = true
		}
		if _, err := c.Conn.Write(pkt); err != nil {
			return 0, err
		}
		c.buf = c.buf[4+size:]
	}
	if c.done && len(c.buf) > 0 {
		rest := c.buf
		c.buf = nil
		if _, err := c.Conn.Write(rest); err != nil {
			return 0, err
		}
	}
	return n, nil
}

func (c *proxyUserConn) Read(b []byte) (int, error) {
	if !c.done || c.checked && len(c.pending) == 0 {
		return c.Conn.Read(b)
	}
	if !c.checked {
		c.checked = true
		var hdr [4]byte
		if _, err := io.ReadFull(c.Conn, hdr[:]); err != nil {
			return 0, err
		}
		size := binary.BigEndian.Uint32(hdr[:])
		if size > 64<<20 {
			return 0, fmt.Errorf("fileio: NameNode connection: a %d-byte first answer", size)
		}
		body := make([]byte, size)
		if _, err := io.ReadFull(c.Conn, body); err != nil {
			return 0, err
		}
		if msg, refused := contextRefusal(body); refused {
			return 0, fmt.Errorf("the NameNode refused to let %s act as %s (is it an HDFS proxy user? hadoop.proxyuser.*): %s",
				c.realName(), c.effective, msg)
		}
		c.pending = append(hdr[:], body...)
	}
	n := copy(b, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

func (c *proxyUserConn) realName() string {
	if c.real != "" {
		return c.real
	}
	return "the proxy's principal"
}

// contextRefusal reads an RpcResponseHeaderProto: an answer to call id -3
// (the context) is a refusal; its exception class and message say why.
func contextRefusal(body []byte) (string, bool) {
	hdr, n := protowire.ConsumeBytes(body)
	if n < 0 {
		return "", false
	}
	var id uint64
	var class, msg string
	for len(hdr) > 0 {
		num, typ, k := protowire.ConsumeTag(hdr)
		if k < 0 {
			return "", false
		}
		hdr = hdr[k:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			id, k = protowire.ConsumeVarint(hdr)
		case (num == 4 || num == 5) && typ == protowire.BytesType:
			var v []byte
			v, k = protowire.ConsumeBytes(hdr)
			if num == 4 {
				class = string(v)
			} else {
				msg = string(v)
			}
		default:
			k = protowire.ConsumeFieldValue(num, typ, hdr)
		}
		if k < 0 {
			return "", false
		}
		hdr = hdr[k:]
	}
	if uint32(id) != uint32(0xfffffffd) { // -3
		return "", false
	}
	return strings.TrimSpace(class + ": " + msg), true
}

// rewrite returns the packet body with the context's user information
// replaced when it is the connection context.
func (c *proxyUserConn) rewrite(body []byte) ([]byte, bool, error) {
	hdr, n := protowire.ConsumeBytes(body)
	if n < 0 {
		return nil, false, errors.New("fileio: NameNode connection: unreadable RPC request header")
	}
	if callID(hdr) != connectionContextCallID {
		return body, false, nil
	}
	msg, m := protowire.ConsumeBytes(body[n:])
	if m < 0 {
		return nil, false, errors.New("fileio: NameNode connection: unreadable connection context")
	}
	ctx, err := c.context(msg)
	if err != nil {
		return nil, false, err
	}
	out := protowire.AppendBytes(nil, hdr)
	out = protowire.AppendBytes(out, ctx)
	return out, true, nil
}

// callID reads field 3 (sint32 callId) of an RpcRequestHeaderProto; 0 when
// absent.
func callID(hdr []byte) int32 {
	for len(hdr) > 0 {
		num, typ, n := protowire.ConsumeTag(hdr)
		if n < 0 {
			return 0
		}
		hdr = hdr[n:]
		if num == 3 && typ == protowire.VarintType {
			v, k := protowire.ConsumeVarint(hdr)
			if k < 0 {
				return 0
			}
			return int32(protowire.DecodeZigZag(v & 0xffffffff))
		}
		k := protowire.ConsumeFieldValue(num, typ, hdr)
		if k < 0 {
			return 0
		}
		hdr = hdr[k:]
	}
	return 0
}

// context rebuilds an IpcConnectionContextProto: userInfo (field 2) is
// replaced, every other field kept.
func (c *proxyUserConn) context(msg []byte) ([]byte, error) {
	var out []byte
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return nil, errors.New("fileio: NameNode connection: unreadable connection context field")
		}
		k := protowire.ConsumeFieldValue(num, typ, msg[n:])
		if k < 0 {
			return nil, errors.New("fileio: NameNode connection: unreadable connection context field")
		}
		if num != 2 {
			out = append(out, msg[:n+k]...)
		}
		msg = msg[n+k:]
	}
	var ui []byte
	ui = protowire.AppendTag(ui, 1, protowire.BytesType)
	ui = protowire.AppendString(ui, c.effective)
	if c.real != "" {
		ui = protowire.AppendTag(ui, 2, protowire.BytesType)
		ui = protowire.AppendString(ui, c.real)
	}
	out = protowire.AppendTag(out, 2, protowire.BytesType)
	out = protowire.AppendBytes(out, ui)
	return out, nil
}
