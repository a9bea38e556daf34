package gssapi

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/asn1tools"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/asnAppTag"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/iana/msgtype"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// The Kerberos V5 GSS-API mechanism OID 1.2.840.113554.1.2.2, DER encoded.
var krb5OID = []byte{0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02}

// Context token ids (RFC 1964 section 1.1).
var (
	tokAPReq    = [2]byte{0x01, 0x00}
	tokAPRep    = [2]byte{0x02, 0x00}
	tokKRBError = [2]byte{0x03, 0x00}
)

// GSS checksum (type 0x8003) flags of the Authenticator (RFC 4121 4.1.1.1).
const (
	gssFlagDeleg    = 1
	gssFlagMutual   = 2
	gssFlagReplay   = 4
	gssFlagSequence = 8
	gssFlagConf     = 16
	gssFlagInteg    = 32
	cksumTypeGSS    = 0x8003
)

// SASL GSSAPI security-layer bits (RFC 4752 3.3).
const (
	layerNone      = 1
	layerIntegrity = 2
	layerPrivacy   = 4
)

// frameContextToken puts inner behind the RFC 2743 initial-context token
// header: 0x60, DER length, the Kerberos OID, the 2-byte token id.
func frameContextToken(id [2]byte, inner []byte) []byte {
	body := make([]byte, 0, len(krb5OID)+2+len(inner))
	body = append(append(append(body, krb5OID...), id[:]...), inner...)
	return asn1tools.AddASNAppTag(body, 0)
}

// parseContextToken checks the header and the OID and returns the token id
// and the inner Kerberos message.
func parseContextToken(b []byte) ([2]byte, []byte, error) {
	var id [2]byte
	if len(b) < 2 || b[0] != 0x60 {
		return id, nil, errors.New("not a GSS-API context token (no 0x60 header)")
	}
	n, l, ok := derLength(b[1:])
	if !ok || 1+n+l != len(b) {
		return id, nil, fmt.Errorf("GSS-API context token: bad length header for its %d bytes", len(b))
	}
	body := b[1+n:]
	if !bytes.HasPrefix(body, krb5OID) || len(body) < len(krb5OID)+2 {
		return id, nil, errors.New("GSS-API context token is not for the Kerberos V5 mechanism")
	}
	copy(id[:], body[len(krb5OID):])
	return id, body[len(krb5OID)+2:], nil
}

// derLength reads a DER length: the bytes it takes and its value.
func derLength(b []byte) (n, l int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	if b[0] < 0x80 {
		return 1, int(b[0]), true
	}
	k := int(b[0] & 0x7f)
	if k == 0 || k > 4 || len(b) < 1+k {
		return 0, 0, false
	}
	for _, c := range b[1 : 1+k] {
		l = l<<8 | int(c)
	}
	return 1 + k, l, l >= 0
}

// encAPRepPart is EncAPRepPart without the subkey: the acceptor never sends
// one, so both sides keep the initiator's subkey (as the Java acceptor does).
type encAPRepPart struct {
	CTime          time.Time `asn1:"generalized,explicit,tag:0"`
	Cusec          int       `asn1:"explicit,tag:1"`
	SequenceNumber int64     `asn1:"optional,explicit,tag:3"`
}

// buildAPRep makes the framed AP-REP of a mutual authentication: the
// Authenticator's ctime and cusec and the acceptor's sequence number,
// encrypted with the ticket session key (key usage 12).
func buildAPRep(apreq *messages.APReq, seq int64) ([]byte, error) {
	part, err := asn1.Marshal(encAPRepPart{CTime: apreq.Authenticator.CTime, Cusec: apreq.Authenticator.Cusec,
		SequenceNumber: seq})
	if err != nil {
		return nil, fmt.Errorf("encoding EncAPRepPart: %w", err)
	}
	part = asn1tools.AddASNAppTag(part, asnAppTag.EncAPRepPart)
	ed, err := crypto.GetEncryptedData(part, apreq.Ticket.DecryptedEncPart.Key, keyusage.AP_REP_ENCPART, 0)
	if err != nil {
		return nil, fmt.Errorf("encrypting EncAPRepPart: %w", err)
	}
	rep, err := asn1.Marshal(messages.APRep{PVNO: 5, MsgType: msgtype.KRB_AP_REP, EncPart: ed})
	if err != nil {
		return nil, fmt.Errorf("encoding AP-REP: %w", err)
	}
	return frameContextToken(tokAPRep, asn1tools.AddASNAppTag(rep, asnAppTag.APREP)), nil
}

// randomSeq returns a random initial sequence number below 2^30, as MIT and
// gokrb5 choose them.
func randomSeq() (int64, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(1<<30))
	if err != nil {
		return 0, err
	}
	return n.Int64(), nil
}

// gssChecksumFlags reads the flags of the Authenticator's 0x8003 checksum.
func gssChecksumFlags(a *types.Authenticator) (uint32, error) {
	if a.Cksum.CksumType != cksumTypeGSS {
		return 0, fmt.Errorf("the authenticator carries checksum type %d, not the GSS-API checksum 0x8003", a.Cksum.CksumType)
	}
	c := a.Cksum.Checksum
	if len(c) < 24 || binary.LittleEndian.Uint32(c[:4]) != 16 {
		return 0, errors.New("malformed GSS-API checksum in the authenticator")
	}
	return binary.LittleEndian.Uint32(c[20:24]), nil
}

// gssChecksum builds a 0x8003 checksum without channel bindings.
func gssChecksum(flags uint32) types.Checksum {
	c := make([]byte, 24)
	binary.LittleEndian.PutUint32(c[:4], 16)
	binary.LittleEndian.PutUint32(c[20:24], flags)
	return types.Checksum{CksumType: cksumTypeGSS, Checksum: c}
}

// securityMessage is the 4-byte body of the SASL GSSAPI layer negotiation:
// layer mask, 3-byte maximum buffer size, then an optional authzid.
func securityMessage(mask byte, maxBuf int, authzid string) []byte {
	b := []byte{mask, byte(maxBuf >> 16), byte(maxBuf >> 8), byte(maxBuf)}
	return append(b, authzid...)
}
