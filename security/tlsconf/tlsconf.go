// Package tlsconf builds the TLS settings of hms-proxy's Thrift connections:
// a listener's certificate and key (PEM files, read again when either
// changes) and a backend's trust store (Hive's hive.metastore.truststore.*:
// a JKS or PKCS#12 store as Java's keytool writes it, or PEM certificates).
// Every error names the configuration key and the file it is about.
package tlsconf

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	pkcs12 "software.sslmate.com/src/go-pkcs12"
)

// MinVersion is the oldest TLS version spoken (Hive's own servers turn off
// SSLv2 and SSLv3, hive.ssl.protocol.blacklist; Java 8 speaks TLS 1.2).
const MinVersion = tls.VersionTLS12

// File is a configured file: the key that names it and its path.
type File struct {
	Key, Path string
}

func (f File) String() string { return f.Key + "=" + f.Path }

// stamp identifies a version of a file (its modification time and size).
type stamp struct {
	mod  time.Time
	size int64
	ino  uint64 // a rotation through a rename is a new file
	err  string // the stat failed
}

func stampsOf(files []File) []stamp {
	st := make([]stamp, len(files))
	for i, f := range files {
		fi, err := os.Stat(f.Path)
		if err != nil {
			st[i].err = err.Error()
			continue
		}
		st[i] = stamp{mod: fi.ModTime(), size: fi.Size()}
		if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
			st[i].ino = sys.Ino
		}
	}
	return st
}

// watched is a value read from files, read again when one of them changes
// (looked at on every use: a stat per file). A version that does not load
// (a half-written file, a key of another certificate) leaves the previous
// value in use and is not tried again until the files change again.
type watched[T any] struct {
	files []File
	load  func() (T, error)
	// changed, when set, is told the outcome of every attempt to read
	// changed files (err nil: the new value is in use).
	changed func(v T, err error)

	mu      sync.Mutex
	cur     T
	loaded  []stamp
	refused []stamp
}

func newWatched[T any](files []File, load func() (T, error)) (*watched[T], error) {
	w := &watched[T]{files: files, load: load, loaded: stampsOf(files)}
	v, err := load()
	if err != nil {
		return nil, err
	}
	w.cur = v
	return w, nil
}

func (w *watched[T]) get() T {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := stampsOf(w.files)
	if slices.Equal(st, w.loaded) || slices.Equal(st, w.refused) {
		return w.cur
	}
	v, err := w.load()
	if err != nil {
		w.refused = st
		if w.changed != nil {
			var zero T
			w.changed(zero, err)
		}
		return w.cur
	}
	w.cur, w.loaded, w.refused = v, st, nil
	if w.changed != nil {
		w.changed(v, nil)
	}
	return v
}

// ServerCert is a listener's certificate chain and private key from PEM
// files, read again when either changes (on the next handshake).
type ServerCert struct {
	cert, key File
	w         *watched[*tls.Certificate]
}

// NewServerCert reads the pair once; an error names the keys and files.
// reloaded, when set, is told the outcome of every later reading.
func NewServerCert(cert, key File, reloaded func(leaf *x509.Certificate, err error)) (*ServerCert, error) {
	s := &ServerCert{cert: cert, key: key}
	w, err := newWatched([]File{cert, key}, s.load)
	if err != nil {
		return nil, err
	}
	if reloaded != nil {
		w.changed = func(c *tls.Certificate, err error) {
			if err != nil {
				reloaded(nil, err)
				return
			}
			reloaded(c.Leaf, nil)
		}
	}
	s.w = w
	return s, nil
}

func (s *ServerCert) load() (*tls.Certificate, error) {
	certPEM, err := os.ReadFile(s.cert.Path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.cert, err)
	}
	keyPEM, err := os.ReadFile(s.key.Path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.key, err)
	}
	if !bytes.Contains(certPEM, []byte("-----BEGIN CERTIFICATE-----")) {
		return nil, fmt.Errorf("%s: no PEM certificate in the file (want the certificate chain, its own certificate first, as PEM)", s.cert)
	}
	if !bytes.Contains(keyPEM, []byte("PRIVATE KEY-----")) {
		return nil, fmt.Errorf("%s: no PEM private key in the file (want an unencrypted PKCS#8, PKCS#1 or EC key as PEM)", s.key)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s and %s are not a certificate and its key: %w", s.cert, s.key, err)
	}
	if c.Leaf == nil {
		if c.Leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return nil, fmt.Errorf("%s: %w", s.cert, err)
		}
	}
	return &c, nil
}

// Leaf is the certificate in use.
func (s *ServerCert) Leaf() *x509.Certificate { return s.w.get().Leaf }

// Config is a server configuration serving the pair.
func (s *ServerCert) Config() *tls.Config {
	return &tls.Config{MinVersion: MinVersion,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return s.w.get(), nil }}
}

// TrustStore is what a client trusts: the certificates of a trust store.
type TrustStore struct {
	Pool  *x509.CertPool
	Certs []*x509.Certificate
}

// Store formats.
const (
	TypeJKS    = "JKS"
	TypePKCS12 = "PKCS12"
	TypePEM    = "PEM"
)

// LoadTrustStore reads the trusted certificates of a trust store: a JKS
// (or JCEKS) or PKCS#12 store (Java's keytool -importcert writes PKCS#12
// since Java 9, JKS before or with -storetype JKS) or PEM certificates. typ
// ("" = by the content) must match the file when set; password is the
// store's (checks the JKS digest, decrypts PKCS#12; empty skips the JKS
// check, as Java's KeyStore.load does without one), passwordKey the key it
// is set with. Errors name the keys.
func LoadTrustStore(path File, password, passwordKey string, typ File) (*TrustStore, error) {
	data, err := os.ReadFile(path.Path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	found := formatOf(data)
	if found == "" {
		return nil, fmt.Errorf("%s: not a trust store: neither JKS, PKCS#12 nor PEM certificates", path)
	}
	if want := strings.ToUpper(strings.TrimSpace(typ.Path)); want != "" && want != found {
		return nil, fmt.Errorf("%s: the file is a %s store, not %s (%s)", path, found, want, typ)
	}
	var certs []*x509.Certificate
	switch found {
	case TypeJKS:
		if certs, err = readJKS(data, password, passwordKey); err != nil {
			return nil, fmt.Errorf("%s: cannot read the JKS store: %w", path, err)
		}
	case TypePKCS12:
		if certs, err = pkcs12.DecodeTrustStore(data, password); err != nil {
			return nil, fmt.Errorf("%s: cannot read the PKCS#12 store (wrong %s? a trust store holds trusted certificates, as keytool -importcert writes them): %w", path, passwordKey, err)
		}
	case TypePEM:
		for rest := data; ; {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			if b.Type != "CERTIFICATE" {
				continue
			}
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			certs = append(certs, c)
		}
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("%s: the %s store holds no trusted certificate", path, found)
	}
	t := &TrustStore{Pool: x509.NewCertPool(), Certs: certs}
	for _, c := range certs {
		t.Pool.AddCert(c)
	}
	return t, nil
}

func formatOf(data []byte) string {
	switch {
	case len(data) >= 4 && (binary.BigEndian.Uint32(data) == 0xFEEDFEED || binary.BigEndian.Uint32(data) == 0xCECECECE): // JKS, JCEKS
		return TypeJKS
	case bytes.Contains(data, []byte("-----BEGIN ")):
		return TypePEM
	case len(data) > 0 && data[0] == 0x30: // a DER SEQUENCE: PKCS#12's PFX
		return TypePKCS12
	}
	return ""
}

// Dialer opens a catalog's backend connections: TCP and, with a trust
// store, TLS over it (Hive's hive.metastore.use.SSL client), the trust store
// read again when its file changes.
type Dialer struct {
	Net   *net.Dialer
	trust *watched[*TrustStore]
	// HandshakeTimeout bounds the TLS handshake when the context has no
	// deadline.
	HandshakeTimeout time.Duration
}

// NewDialer reads the trust store (nil path: plain TCP); changed, when set,
// is told the outcome of every later reading of a changed store.
func NewDialer(d *net.Dialer, path File, password, passwordKey string, typ File, changed func(error)) (*Dialer, error) {
	out := &Dialer{Net: d, HandshakeTimeout: 30 * time.Second}
	if path.Path == "" {
		return out, nil
	}
	w, err := newWatched([]File{path}, func() (*TrustStore, error) { return LoadTrustStore(path, password, passwordKey, typ) })
	if err != nil {
		return nil, err
	}
	if changed != nil {
		w.changed = func(_ *TrustStore, err error) { changed(err) }
	}
	out.trust = w
	return out, nil
}

// DialContext connects to addr; with TLS, the handshake is done before it
// returns (a failure says what the certificate lacks).
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := d.Net.DialContext(ctx, network, addr)
	if err != nil || d.trust == nil {
		return c, err
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		c.Close()
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok && d.HandshakeTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.HandshakeTimeout)
		defer cancel()
	}
	tc := tls.Client(c, d.trust.get().ClientConfig(host))
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("TLS handshake with %s failed: %s", addr, Explain(err))
	}
	return tc, nil
}

// ClientConfig is the configuration of a connection to host trusting t: the
// server's chain must lead to a certificate of the store, and name host (a
// DNS name or an IP address in its subject alternative names).
func (t *TrustStore) ClientConfig(host string) *tls.Config {
	return &tls.Config{MinVersion: MinVersion, RootCAs: t.Pool, ServerName: host}
}

// Explain turns a handshake failure into a sentence an operator can act on.
func Explain(err error) string {
	var unknown x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var header tls.RecordHeaderError
	switch {
	case errors.As(err, &unknown):
		return "the server's certificate is not signed by any certificate of the trust store: " + err.Error()
	case errors.As(err, &hostname):
		return "the server's certificate is not for this host: " + err.Error()
	case errors.As(err, &invalid):
		return "the server's certificate is not valid: " + err.Error()
	case errors.As(err, &header):
		return "the server does not speak TLS on this port (is TLS on there?): " + err.Error()
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		return "the server closed the connection during the TLS handshake (is TLS on at the server, with a TLS 1.2 or newer protocol?): " + err.Error()
	}
	return err.Error()
}
