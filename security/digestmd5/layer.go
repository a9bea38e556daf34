package digestmd5

import (
	"crypto/cipher"
	"crypto/des"
	"crypto/hmac"
	"crypto/md5"
	"crypto/rc4"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/hms-proxy/hms-proxy/security/sasl"
)

// RFC 2831 §2.3/§2.4 security layers, as the JDK builds them.
//
//	integrity:       msg | HMAC-MD5(Ki, seq|msg)[:10] | 0x0001 | seq
//	confidentiality: CIPHER(Kc, msg | pad | HMAC-MD5(Ki, seq|msg)[:10]) | 0x0001 | seq
//
// Sequence numbers start at 0 in each direction. The cipher state runs on
// across messages (CBC chaining for des/3des, the RC4 stream).
const (
	magicClientSign = "Digest session key to client-to-server signing key magic constant"
	magicServerSign = "Digest session key to server-to-client signing key magic constant"
	magicClientSeal = "Digest H(A1) to client-to-server sealing key magic constant"
	magicServerSeal = "Digest H(A1) to server-to-client sealing key magic constant"
	macLen          = 10
	trailerLen      = 6 // message type (2) and sequence number (4)
)

var messageType = [2]byte{0, 1}

// ErrLayer marks every data-phase failure (bad MAC, bad sequence number,
// malformed token): the connection must be closed.
var ErrLayer = errors.New("DIGEST-MD5 security layer")

type direction struct {
	mu      sync.Mutex
	signKey []byte
	seq     uint32
	// exactly one of these is set for confidentiality
	stream cipher.Stream
	block  cipher.BlockMode
}

type layer struct {
	out, in direction
	conf    bool
}

func md5Of(parts ...[]byte) []byte {
	h := md5.New()
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}

// newLayer derives the keys of a negotiated auth-int or auth-conf session.
func newLayer(ha1 []byte, qop sasl.QOP, cipherName string, client bool) (*layer, error) {
	kic := md5Of(ha1, []byte(magicClientSign))
	kis := md5Of(ha1, []byte(magicServerSign))
	l := &layer{}
	if client {
		l.out.signKey, l.in.signKey = kic, kis
	} else {
		l.out.signKey, l.in.signKey = kis, kic
	}
	if qop != sasl.QOPAuthConf {
		return l, nil
	}
	l.conf = true
	n := 16
	switch cipherName {
	case CipherRC440:
		n = 5
	case CipherRC456:
		n = 7
	}
	kcc := md5Of(ha1[:n], []byte(magicClientSeal))
	kcs := md5Of(ha1[:n], []byte(magicServerSeal))
	outKey, inKey := kcs, kcc
	if client {
		outKey, inKey = kcc, kcs
	}
	var err error
	if l.out.stream, l.out.block, err = newCipher(cipherName, outKey, true); err != nil {
		return nil, err
	}
	if l.in.stream, l.in.block, err = newCipher(cipherName, inKey, false); err != nil {
		return nil, err
	}
	return l, nil
}

func newCipher(name string, kc []byte, encrypt bool) (cipher.Stream, cipher.BlockMode, error) {
	switch name {
	case CipherRC4, CipherRC456, CipherRC440:
		c, err := rc4.NewCipher(kc)
		return c, nil, err
	case CipherDES, Cipher3DES:
		var b cipher.Block
		var err error
		if name == CipherDES {
			b, err = des.NewCipher(desKey(kc[0:7]))
		} else {
			k1, k2 := desKey(kc[0:7]), desKey(kc[7:14])
			b, err = des.NewTripleDESCipher(append(append(append([]byte{}, k1...), k2...), k1...))
		}
		if err != nil {
			return nil, nil, err
		}
		iv := kc[8:16]
		if encrypt {
			return nil, cipher.NewCBCEncrypter(b, iv), nil
		}
		return nil, cipher.NewCBCDecrypter(b, iv), nil
	}
	return nil, nil, fmt.Errorf("DIGEST-MD5: unsupported cipher %q", name)
}

// desKey spreads 56 key bits over 8 bytes, 7 bits each in the high bits,
// with odd parity in the low bit (the JDK's addDesParity).
func desKey(raw []byte) []byte {
	var v uint64
	for _, c := range raw {
		v = v<<8 | uint64(c)
	}
	out := make([]byte, 8)
	for i := 7; i >= 0; i-- {
		b := byte(v&0x7f) << 1
		v >>= 7
		ones := 0
		for x := b; x != 0; x &= x - 1 {
			ones++
		}
		if ones%2 == 0 {
			b |= 1
		}
		out[i] = b
	}
	return out
}

func mac(key []byte, seq uint32, msg []byte) []byte {
	m := hmac.New(md5.New, key)
	var s [4]byte
	binary.BigEndian.PutUint32(s[:], seq)
	m.Write(s[:])
	m.Write(msg)
	return m.Sum(nil)[:macLen]
}

// Wrap implements sasl.Layer.
func (l *layer) Wrap(plain []byte) ([]byte, error) {
	if len(plain) == 0 {
		return []byte{}, nil // as the JDK: nothing to protect
	}
	d := &l.out
	d.mu.Lock()
	defer d.mu.Unlock()
	seq := d.seq
	d.seq++
	tag := mac(d.signKey, seq, plain)
	var out []byte
	if !l.conf {
		out = make([]byte, 0, len(plain)+macLen+trailerLen)
		out = append(append(out, plain...), tag...)
	} else {
		body := make([]byte, 0, len(plain)+8+macLen)
		body = append(body, plain...)
		if d.block != nil {
			bs := d.block.BlockSize()
			pad := bs - (len(plain)+macLen)%bs
			for i := 0; i < pad; i++ {
				body = append(body, byte(pad))
			}
		}
		body = append(body, tag...)
		if d.block != nil {
			d.block.CryptBlocks(body, body)
		} else {
			d.stream.XORKeyStream(body, body)
		}
		out = body
	}
	out = append(out, messageType[:]...)
	return binary.BigEndian.AppendUint32(out, seq), nil
}

// Unwrap implements sasl.Layer. Any failure is final for the connection.
func (l *layer) Unwrap(token []byte) ([]byte, error) {
	if len(token) == 0 {
		return []byte{}, nil
	}
	d := &l.in
	d.mu.Lock()
	defer d.mu.Unlock()
	min := macLen + trailerLen
	if l.conf && d.block != nil {
		min = 2*d.block.BlockSize() + trailerLen
	}
	if len(token) < min {
		return nil, fmt.Errorf("%w: token of %d bytes is shorter than the %d-byte minimum", ErrLayer, len(token), min)
	}
	n := len(token) - trailerLen
	body, trailer := token[:n], token[n:]
	seq := binary.BigEndian.Uint32(trailer[2:])
	var msg, tag []byte
	if !l.conf {
		msg, tag = body[:n-macLen], body[n-macLen:]
	} else {
		plain := make([]byte, n)
		if d.block != nil {
			if n%d.block.BlockSize() != 0 {
				return nil, fmt.Errorf("%w: encrypted part of %d bytes is not a multiple of the cipher block size", ErrLayer, n)
			}
			d.block.CryptBlocks(plain, body)
		} else {
			d.stream.XORKeyStream(plain, body)
		}
		msgAndPad := plain[:n-macLen]
		tag = plain[n-macLen:]
		msg = msgAndPad
		if d.block != nil {
			pad := int(msgAndPad[len(msgAndPad)-1])
			if pad < 1 || pad > d.block.BlockSize() || pad > len(msgAndPad) {
				return nil, fmt.Errorf("%w: bad padding (integrity check failed)", ErrLayer)
			}
			for _, c := range msgAndPad[len(msgAndPad)-pad:] {
				if int(c) != pad {
					return nil, fmt.Errorf("%w: bad padding (integrity check failed)", ErrLayer)
				}
			}
			msg = msgAndPad[:len(msgAndPad)-pad]
		}
	}
	if !hmac.Equal(tag, mac(d.signKey, seq, msg)) {
		return nil, fmt.Errorf("%w: integrity check failed (MAC mismatch) on message %d", ErrLayer, seq)
	}
	if seq != d.seq {
		return nil, fmt.Errorf("%w: out-of-order message: sequence number %d, expected %d", ErrLayer, seq, d.seq)
	}
	if trailer[0] != messageType[0] || trailer[1] != messageType[1] {
		return nil, fmt.Errorf("%w: invalid message type %d", ErrLayer, binary.BigEndian.Uint16(trailer[:2]))
	}
	d.seq++
	return append([]byte(nil), msg...), nil
}
