package gssapi

import (
	"crypto/hmac"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/crypto/etype"
	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/types"
)

// RFC 4121 per-message token flags.
const (
	flagSentByAcceptor = 0x01
	flagSealed         = 0x02
	flagAcceptorSubkey = 0x04
)

// wrapHeaderLen is the RFC 4121 token header: 05 04 | flags | FF | EC | RRC | SND_SEQ.
const wrapHeaderLen = 16

// ErrBadToken marks a per-message token that failed its checks (format,
// direction, integrity, sequence); the connection must be dropped.
var ErrBadToken = errors.New("gssapi: bad wrap token")

// supportedEtype reports whether RFC 4121 tokens can be built with the key's
// encryption type (the AES family; RC4 and DES3 use the older RFC 1964
// tokens, which are not implemented).
func supportedEtype(id int32) bool {
	switch id {
	case etypeID.AES128_CTS_HMAC_SHA1_96, etypeID.AES256_CTS_HMAC_SHA1_96,
		etypeID.AES128_CTS_HMAC_SHA256_128, etypeID.AES256_CTS_HMAC_SHA384_192:
		return true
	}
	return false
}

// Layer is an established RFC 4121 context's per-message protection for one
// side (acceptor or initiator): Wrap makes tokens of this side, Unwrap checks
// and opens the peer's. Both directions keep strict sequence numbers, as the
// Java SASL GSSAPI mechanism requires. It implements sasl.Layer.
type Layer struct {
	key      types.EncryptionKey
	et       etype.EType
	acceptor bool // this side is the acceptor
	// acceptorSubkey: the context key is the acceptor's subkey (flag 0x04 on
	// every token of both sides).
	acceptorSubkey bool
	seal           bool

	smu     sync.Mutex
	sendSeq uint64

	rmu     sync.Mutex
	recvSeq uint64
}

// NewLayer builds a layer: key is the context key, acceptor says which side
// this is, sendSeq and recvSeq are the first sequence numbers of this side's
// and the peer's tokens, seal selects confidentiality (auth-conf) over
// integrity only (auth-int).
func NewLayer(key types.EncryptionKey, acceptor, acceptorSubkey, seal bool, sendSeq, recvSeq uint64) (*Layer, error) {
	if !supportedEtype(key.KeyType) {
		return nil, fmt.Errorf("gssapi: encryption type %d is not supported for RFC 4121 tokens (use an AES enctype)", key.KeyType)
	}
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		return nil, fmt.Errorf("gssapi: %w", err)
	}
	return &Layer{key: key, et: et, acceptor: acceptor, acceptorSubkey: acceptorSubkey, seal: seal,
		sendSeq: sendSeq, recvSeq: recvSeq}, nil
}

// Sealed reports whether the layer encrypts (auth-conf).
func (l *Layer) Sealed() bool { return l.seal }

func (l *Layer) usages() (send, recv uint32) {
	if l.acceptor {
		return keyusage.GSSAPI_ACCEPTOR_SEAL, keyusage.GSSAPI_INITIATOR_SEAL
	}
	return keyusage.GSSAPI_INITIATOR_SEAL, keyusage.GSSAPI_ACCEPTOR_SEAL
}

func (l *Layer) flags(seal bool) byte {
	var f byte
	if l.acceptor {
		f |= flagSentByAcceptor
	}
	if seal {
		f |= flagSealed
	}
	if l.acceptorSubkey {
		f |= flagAcceptorSubkey
	}
	return f
}

func header(flags byte, ec, rrc uint16, seq uint64) []byte {
	h := make([]byte, wrapHeaderLen)
	h[0], h[1], h[2], h[3] = 0x05, 0x04, flags, 0xff
	binary.BigEndian.PutUint16(h[4:6], ec)
	binary.BigEndian.PutUint16(h[6:8], rrc)
	binary.BigEndian.PutUint64(h[8:16], seq)
	return h
}

// Wrap protects plain with the negotiated layer.
func (l *Layer) Wrap(plain []byte) ([]byte, error) { return l.wrap(plain, l.seal) }

// wrapIntegrity makes an integrity-only token whatever the negotiated layer
// (the GSSAPI SASL handshake messages are never sealed).
func (l *Layer) wrapIntegrity(plain []byte) ([]byte, error) { return l.wrap(plain, false) }

func (l *Layer) wrap(plain []byte, seal bool) ([]byte, error) {
	l.smu.Lock()
	seq := l.sendSeq & 0xffffffff // 32-bit sequence numbers, as Java and MIT keep them
	l.sendSeq++
	l.smu.Unlock()
	usage, _ := l.usages()
	f := l.flags(seal)
	if seal {
		// header | E(confounder | plain | header with EC=0, RRC=0) | HMAC, EC = 0, RRC = 0
		h := header(f, 0, 0, seq)
		msg := make([]byte, 0, len(plain)+wrapHeaderLen)
		msg = append(append(msg, plain...), h...)
		_, ct, err := l.et.EncryptMessage(l.key.KeyValue, msg, usage)
		if err != nil {
			return nil, fmt.Errorf("gssapi: sealing: %w", err)
		}
		return append(h, ct...), nil
	}
	// header (EC = checksum length) | plain | checksum over plain | header with EC=0, RRC=0
	cks, err := l.checksum(plain, f, seq, usage)
	if err != nil {
		return nil, err
	}
	tok := header(f, uint16(len(cks)), 0, seq)
	tok = append(tok, plain...)
	return append(tok, cks...), nil
}

func (l *Layer) checksum(plain []byte, flags byte, seq uint64, usage uint32) ([]byte, error) {
	in := make([]byte, 0, len(plain)+wrapHeaderLen)
	in = append(append(in, plain...), header(flags, 0, 0, seq)...)
	cks, err := l.et.GetChecksumHash(l.key.KeyValue, in, usage)
	if err != nil {
		return nil, fmt.Errorf("gssapi: checksum: %w", err)
	}
	return cks, nil
}

// Unwrap checks a peer token (format, direction, key flag, protection,
// integrity, sequence number) and returns its payload.
func (l *Layer) Unwrap(tok []byte) ([]byte, error) { return l.unwrap(tok, &l.seal) }

// unwrapAny accepts a sealed or integrity-only token (the handshake).
func (l *Layer) unwrapAny(tok []byte) ([]byte, error) { return l.unwrap(tok, nil) }

func bad(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrBadToken, fmt.Sprintf(format, a...))
}

func (l *Layer) unwrap(tok []byte, wantSeal *bool) ([]byte, error) {
	if len(tok) < wrapHeaderLen {
		return nil, bad("%d bytes, shorter than the 16-byte header", len(tok))
	}
	if tok[0] != 0x05 || tok[1] != 0x04 || tok[3] != 0xff {
		return nil, bad("not an RFC 4121 wrap token (header % x)", tok[:4])
	}
	f := tok[2]
	if fromAcceptor := f&flagSentByAcceptor != 0; fromAcceptor == l.acceptor {
		return nil, bad("direction flag says the token was sent by this side (reflected)")
	}
	if (f&flagAcceptorSubkey != 0) != l.acceptorSubkey {
		return nil, bad("AcceptorSubkey flag %v does not match the context", f&flagAcceptorSubkey != 0)
	}
	sealed := f&flagSealed != 0
	if wantSeal != nil && sealed != *wantSeal {
		return nil, bad("sealed=%v token on a connection that negotiated sealed=%v", sealed, *wantSeal)
	}
	ec := binary.BigEndian.Uint16(tok[4:6])
	rrc := binary.BigEndian.Uint16(tok[6:8])
	seq := binary.BigEndian.Uint64(tok[8:16])
	body := tok[wrapHeaderLen:]
	if rrc != 0 && len(body) > 0 {
		// the sender rotated the body right by RRC octets; rotate it back
		r := int(rrc) % len(body)
		nb := make([]byte, 0, len(body))
		body = append(append(nb, body[r:]...), body[:r]...)
	}
	_, usage := l.usages()
	var plain []byte
	if sealed {
		if len(body) < l.et.GetConfounderByteSize()+l.et.GetHMACBitLength()/8+wrapHeaderLen+int(ec) {
			return nil, bad("sealed token too short (%d bytes)", len(tok))
		}
		pt, err := l.et.DecryptMessage(l.key.KeyValue, body, usage)
		if err != nil {
			return nil, bad("decryption failed: %v", err)
		}
		if len(pt) < wrapHeaderLen+int(ec) {
			return nil, bad("sealed plaintext too short")
		}
		inner := pt[len(pt)-wrapHeaderLen:]
		// the encrypted copy of the header must match (its RRC is zero)
		want := header(f, ec, 0, seq)
		if !hmac.Equal(inner[:6], want[:6]) || !hmac.Equal(inner[8:], want[8:]) {
			return nil, bad("encrypted header copy does not match the token header")
		}
		plain = pt[:len(pt)-wrapHeaderLen-int(ec)]
	} else {
		n := l.et.GetHMACBitLength() / 8
		if int(ec) != n {
			return nil, bad("EC %d is not the checksum length %d", ec, n)
		}
		if len(body) < n {
			return nil, bad("token too short for its checksum")
		}
		plain = body[:len(body)-n]
		cks, err := l.checksum(plain, f, seq, usage)
		if err != nil {
			return nil, err
		}
		if !hmac.Equal(cks, body[len(body)-n:]) {
			return nil, bad("checksum mismatch (tampered or wrong key)")
		}
	}
	l.rmu.Lock()
	defer l.rmu.Unlock()
	if seq != l.recvSeq&0xffffffff {
		return nil, bad("sequence number %d, expected %d (replayed, lost or reordered token)", seq, l.recvSeq)
	}
	l.recvSeq++
	return plain, nil
}
