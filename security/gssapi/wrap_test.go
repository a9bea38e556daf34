package gssapi

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/types"
)

func testKey(etype int32, n int) types.EncryptionKey {
	k := make([]byte, n)
	for i := range k {
		k[i] = byte(i*7 + 1)
	}
	return types.EncryptionKey{KeyType: etype, KeyValue: k}
}

// pair returns an acceptor and an initiator layer of one context.
func pair(t testing.TB, key types.EncryptionKey, seal bool) (acc, ini *Layer) {
	t.Helper()
	acc, err := NewLayer(key, true, false, seal, 1000, 5000)
	if err != nil {
		t.Fatal(err)
	}
	ini, err = NewLayer(key, false, false, seal, 5000, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return acc, ini
}

var etypes = []struct {
	name string
	key  types.EncryptionKey
	mac  int
}{
	{"aes256-cts-hmac-sha1-96", testKey(etypeID.AES256_CTS_HMAC_SHA1_96, 32), 12},
	{"aes128-cts-hmac-sha1-96", testKey(etypeID.AES128_CTS_HMAC_SHA1_96, 16), 12},
	{"aes128-cts-hmac-sha256-128", testKey(etypeID.AES128_CTS_HMAC_SHA256_128, 16), 16},
	{"aes256-cts-hmac-sha384-192", testKey(etypeID.AES256_CTS_HMAC_SHA384_192, 32), 24},
}

// TestWrapFormat: the header fields of both token kinds, as the real Java peers send them (see the research
// notes: 05 04 | flags | ff | EC | RRC=0 | seq) and as TestJavaVectors checks on real traffic.
func TestWrapFormat(t *testing.T) {
	for _, e := range etypes {
		for _, seal := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/sealed=%v", e.name, seal), func(t *testing.T) {
				acc, ini := pair(t, e.key, seal)
				msg := []byte("get_all_databases call bytes")
				tok, err := acc.Wrap(msg)
				if err != nil {
					t.Fatal(err)
				}
				wantFlags, wantEC := byte(0x01), uint16(e.mac)
				if seal {
					wantFlags, wantEC = 0x03, 0
				}
				hdr := []byte{0x05, 0x04, wantFlags, 0xff, byte(wantEC >> 8), byte(wantEC), 0, 0, 0, 0, 0, 0, 0, 0, 0x03, 0xe8}
				if !bytes.Equal(tok[:16], hdr) {
					t.Fatalf("header %s, want %s", hex.EncodeToString(tok[:16]), hex.EncodeToString(hdr))
				}
				if !seal && !bytes.Equal(tok[16:16+len(msg)], msg) {
					t.Fatal("integrity token does not carry the payload in clear")
				}
				if seal && bytes.Contains(tok, msg) {
					t.Fatal("sealed token carries the payload in clear")
				}
				got, err := ini.Unwrap(tok)
				if err != nil || !bytes.Equal(got, msg) {
					t.Fatalf("unwrap: %q, %v", got, err)
				}
				// and the other direction
				tok2, _ := ini.Wrap(msg)
				if tok2[2]&flagSentByAcceptor != 0 {
					t.Fatal("initiator token flagged as sent by the acceptor")
				}
				if got, err := acc.Unwrap(tok2); err != nil || !bytes.Equal(got, msg) {
					t.Fatalf("acceptor unwrap: %q, %v", got, err)
				}
			})
		}
	}
}

// rotate applies RRC as a sender may: the body rotated right by rrc octets.
func rotate(tok []byte, rrc int) []byte {
	body := tok[16:]
	r := rrc % len(body)
	out := append([]byte{}, tok[:16]...)
	binary.BigEndian.PutUint16(out[6:8], uint16(rrc))
	out = append(out, body[len(body)-r:]...)
	return append(out, body[:len(body)-r]...)
}

// TestUnwrapRejects: every check of Unwrap fails on the token it is meant for.
func TestUnwrapRejects(t *testing.T) {
	key := etypes[0].key
	for _, seal := range []bool{false, true} {
		acc, ini := pair(t, key, seal)
		msg := bytes.Repeat([]byte("x"), 100)
		t.Run(fmt.Sprintf("sealed=%v", seal), func(t *testing.T) {
			// a rotated token (MIT may send RRC != 0) is accepted
			tok, _ := acc.Wrap(msg)
			if got, err := ini.Unwrap(rotate(tok, 28)); err != nil || !bytes.Equal(got, msg) {
				t.Fatalf("RRC 28: %v", err)
			}
			tok, _ = acc.Wrap(msg)
			if _, err := ini.Unwrap(tok); err != nil {
				t.Fatal(err)
			}
			cases := map[string][]byte{}
			cases["replayed"] = tok
			next, _ := acc.Wrap(msg)
			cases["reflected"] = func() []byte { b, _ := ini.Wrap(msg); return b }()
			flipped := append([]byte{}, next...)
			flipped[40] ^= 1
			cases["tampered body"] = flipped
			hdrFlip := append([]byte{}, next...)
			hdrFlip[15] ^= 1
			cases["tampered sequence number"] = hdrFlip
			cases["truncated"] = next[:10]
			cases["not a wrap token"] = append([]byte{0x04, 0x04}, next[2:]...)
			other := append([]byte{}, next...)
			other[2] ^= flagSealed
			cases["protection changed"] = other
			for name, b := range cases {
				if _, err := ini.Unwrap(b); !errors.Is(err, ErrBadToken) {
					t.Errorf("%s: %v, want ErrBadToken", name, err)
				}
			}
			// the untouched next token is still fine: failed checks did not advance the sequence
			if _, err := ini.Unwrap(next); err != nil {
				t.Fatalf("next token after rejected ones: %v", err)
			}
			// a skipped token is a gap
			acc.Wrap(msg)
			later, _ := acc.Wrap(msg)
			if _, err := ini.Unwrap(later); !errors.Is(err, ErrBadToken) {
				t.Fatalf("gap: %v", err)
			}
		})
	}
	if _, err := NewLayer(types.EncryptionKey{KeyType: etypeID.RC4_HMAC, KeyValue: make([]byte, 16)}, true, false, false, 0, 0); err == nil {
		t.Fatal("an RC4 context was accepted for RFC 4121 tokens")
	}
}

// BenchmarkWrapUnwrap measures one wrap and one unwrap per message size and protection (the make bench row).
func BenchmarkWrapUnwrap(b *testing.B) {
	for _, seal := range []bool{false, true} {
		for _, size := range []int{64, 1 << 10, 16 << 10, 256 << 10, 4 << 20} {
			name := "auth-int"
			if seal {
				name = "auth-conf"
			}
			b.Run(fmt.Sprintf("%s/%dB", name, size), func(b *testing.B) {
				acc, ini := pair(b, etypes[0].key, seal)
				msg := bytes.Repeat([]byte{0x5a}, size)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					tok, err := acc.Wrap(msg)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := ini.Unwrap(tok); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
