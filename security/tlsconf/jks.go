package tlsconf

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // the JKS integrity digest is SHA-1 by its format
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf16"
)

// The trusted certificates of a JKS or JCEKS store, read as Java's
// sun.security.provider.JavaKeyStore writes them (no library reads JCEKS
// and skips the digest for an empty password as Java does).

// readJKS reads the trusted certificates of a JKS or JCEKS store (format of
// sun.security.provider.JavaKeyStore): magic, version, entries (tag 1 private
// key with its chain, tag 2 trusted certificate, tag 3 secret key in JCEKS),
// then a SHA-1 digest over the password, "Mighty Aphrodite" and the body.
func readJKS(data []byte, password, passwordKey string) ([]*x509.Certificate, error) {
	r := &jksReader{b: data}
	r.u32() // magic
	version := r.u32()
	if version != 1 && version != 2 {
		return nil, fmt.Errorf("JKS version %d unknown", version)
	}
	n := r.u32()
	var certs []*x509.Certificate
	readCert := func() error {
		if version == 2 {
			if t := r.utf(); t != "X.509" {
				return fmt.Errorf("JKS certificate type %q is not X.509", t)
			}
		}
		der := r.bytes(int(r.u32()))
		if r.err != nil {
			return r.err
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return fmt.Errorf("JKS certificate: %w", err)
		}
		certs = append(certs, c)
		return nil
	}
	for i := uint32(0); i < n && r.err == nil; i++ {
		tag := r.u32()
		r.utf() // alias
		r.bytes(8)
		switch tag {
		case 1: // private key entry: the protected key, then its chain
			r.bytes(int(r.u32()))
			chain := r.u32()
			for k := uint32(0); k < chain && r.err == nil; k++ {
				if err := readCert(); err != nil {
					return nil, err
				}
			}
		case 2:
			if err := readCert(); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("JKS entry type %d is not supported in a truststore", tag)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if password != "" {
		body := data[:r.off]
		digest := r.bytes(sha1.Size)
		if r.err != nil {
			return nil, r.err
		}
		h := sha1.New()
		for _, u := range utf16.Encode([]rune(password)) {
			h.Write([]byte{byte(u >> 8), byte(u)})
		}
		h.Write([]byte("Mighty Aphrodite"))
		h.Write(body)
		if !bytes.Equal(h.Sum(nil), digest) {
			return nil, fmt.Errorf("the store was tampered with, or %s is wrong", passwordKey)
		}
	}
	return certs, nil
}

type jksReader struct {
	b   []byte
	off int
	err error
}

func (r *jksReader) bytes(n int) []byte {
	if r.err != nil || n < 0 || r.off+n > len(r.b) {
		if r.err == nil {
			r.err = errors.New("JKS data is truncated")
		}
		return nil
	}
	out := r.b[r.off : r.off+n]
	r.off += n
	return out
}

func (r *jksReader) u32() uint32 {
	b := r.bytes(4)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint32(b)
}

func (r *jksReader) utf() string {
	b := r.bytes(2)
	if b == nil {
		return ""
	}
	return string(r.bytes(int(binary.BigEndian.Uint16(b))))
}
