package frontdoor

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/hms-proxy/hms-proxy/audit"
	"github.com/hms-proxy/hms-proxy/router"
	"github.com/hms-proxy/hms-proxy/wire"
)

// TLS on a listener (server.tls.*, as a Hive metastore with
// hive.metastore.use.SSL=true): every accepted connection does the TLS
// handshake before anything else, SASL included (Hive's server and client
// put SASL inside TLS when both are on). A client that speaks plain Thrift,
// plain SASL or HTTP to the TLS port is told so in its own protocol before
// the connection closes, so it fails with a sentence instead of a reset.

// tlsHandshakeBound bounds a connection's TLS handshake (or the client's
// server.client-socket-timeout-ms, when shorter).
const tlsHandshakeBound = 30 * time.Second

// plainCallsAnswered bounds the plain calls answered on one connection
// before it is closed.
const plainCallsAnswered = 8

// tlsRecordHandshake is the first byte of a TLS ClientHello record.
const tlsRecordHandshake = 0x16

// prefixConn replays bytes already read from its connection.
type prefixConn struct {
	net.Conn
	head []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.head) > 0 {
		n := copy(p, c.head)
		c.head = c.head[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// tlsKeyPrefix is the prefix of the listener's TLS keys.
func tlsKeyPrefix(cfg Config) string {
	if cfg.Name == "" {
		return "server."
	}
	return "additional-frontends." + cfg.Name + "."
}

// startTLS runs the handshake of an accepted connection; on success cn.c is
// the TLS connection. false: the connection is done (closed by serve).
func (l *Listener) startTLS(cn *conn, info *router.ConnInfo) bool {
	bound := tlsHandshakeBound
	if t := l.cfg.ClientSocketTimeout; t > 0 && t < bound {
		bound = t
	}
	_ = cn.c.SetDeadline(time.Now().Add(bound))
	var first [1]byte
	if _, err := io.ReadFull(cn.c, first[:]); err != nil {
		l.log.Debug("client closed before the TLS handshake", "remote", info.Remote, "err", err)
		return false
	}
	pc := &prefixConn{Conn: cn.c, head: first[:]}
	if first[0] != tlsRecordHandshake {
		l.plainOnTLS(pc, info, first[0])
		return false
	}
	tc := tls.Server(pc, l.cfg.TLS)
	if err := tc.Handshake(); err != nil {
		l.bad(info, "tls_handshake", "TLS handshake failed: "+err.Error())
		return false
	}
	_ = cn.c.SetDeadline(time.Time{})
	l.mu.Lock()
	cn.c = tc
	l.mu.Unlock()
	return true
}

// plainOnTLS answers a client that does not speak TLS to a TLS listener in
// the protocol it speaks: a Thrift call gets a TApplicationException, a SASL
// negotiation an ERROR status (Java's client reports "Peer indicated
// failure: ..."), HTTP a 400; then the connection closes.
func (l *Listener) plainOnTLS(c *prefixConn, info *router.ConnInfo, first byte) {
	why := fmt.Sprintf("hms-proxy listener %s speaks TLS (%stls.enabled=true): connect with hive.metastore.use.SSL=true and a trust store holding its certificate (hive.metastore.truststore.path)",
		listenerName(l.cfg), tlsKeyPrefix(l.cfg))
	r := bufio.NewReaderSize(c, 512)
	told := func(what string) {
		l.bad(info, "plaintext_on_tls", audit.Clip(what+" arrived on a TLS listener; the client is told to use TLS", audit.MaxValueLen))
	}
	switch {
	case first == 0x80 || first == 0x00 && l.cfg.Framed: // Thrift calls, unframed or framed
		told("a plain Thrift call")
		// Each call gets the answer (a client may try a few before it gives
		// up: Hive's sends set_ugi first and carries on without it).
		for i := 0; i < plainCallsAnswered; i++ {
			if l.cfg.Framed {
				var n [4]byte
				if _, err := io.ReadFull(r, n[:]); err != nil || binary.BigEndian.Uint32(n[:]) > uint32(l.cfg.MaxMessage) {
					return
				}
			}
			m, err := wire.ReadMessage(r, wire.Limits{MaxMessage: l.cfg.MaxMessage}, nil)
			if err != nil {
				return
			}
			if l.write(c, wire.AppException(m.Name, m.SeqID, wire.AppProtocolError, why)) != nil {
				return
			}
			_ = c.SetReadDeadline(time.Now().Add(tlsHandshakeBound))
		}
	case first == 0x01: // SASL START of a plain Kerberos client
		told("a plain SASL negotiation")
		msg := []byte(why)
		out := make([]byte, 5, 5+len(msg))
		out[0] = 0x04 // ERROR
		binary.BigEndian.PutUint32(out[1:], uint32(len(msg)))
		_, _ = c.Write(append(out, msg...))
	default:
		if head, err := r.Peek(4); err == nil && isHTTP(head) { // (r replays the first byte)
			told("an HTTP request")
			_, _ = io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"+why+"\n")
			return
		}
		told(fmt.Sprintf("bytes that are not TLS (first byte 0x%02x)", first))
	}
}
