package tlsconf

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/testbed"
)

// issuer is a test CA (the test bed's).
type issuer struct {
	*testbed.TLSFiles
	Cert *x509.Certificate
}

func newCA(t *testing.T, name string) *issuer {
	t.Helper()
	files, err := testbed.NewTLSFiles(t.TempDir(), name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(files.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return &issuer{TLSFiles: files, Cert: c}
}

// leaf issues a server certificate for hosts; PEM of the certificate and
// its key.
func (ca *issuer) leaf(t *testing.T, cn string, hosts ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	if err := ca.IssueFor(cn, hosts...); err != nil {
		t.Fatal(err)
	}
	c, err := os.ReadFile(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	k, err := os.ReadFile(ca.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return c, k
}

// write replaces a file and moves its modification time on, so that a
// rewrite within the file system's time granularity is still a change.
func write(t *testing.T, path string, data []byte, age int) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(time.Duration(age) * time.Second)
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

// servedCN handshakes with a server of cfg and returns the common name of
// the certificate it presented.
func servedCN(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() { _ = tls.Server(b, cfg).Handshake() }()
	c := tls.Client(a, &tls.Config{InsecureSkipVerify: true})
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName
}

// A listener's certificate is read again when its files change; a pair that
// does not load leaves the previous one in use and is reported, naming the
// keys and files.
func TestServerCertIsReadAgainWhenItChanges(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, "ca")
	cert, key := File{"server.tls.certificate-file", filepath.Join(dir, "c.pem")}, File{"server.tls.key-file", filepath.Join(dir, "k.pem")}
	c1, k1 := ca.leaf(t, "first", "localhost")
	write(t, cert.Path, c1, -10)
	write(t, key.Path, k1, -10)
	var reports []error
	s, err := NewServerCert(cert, key, func(_ *x509.Certificate, err error) { reports = append(reports, err) })
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.Config()
	if cn := servedCN(t, cfg); cn != "first" {
		t.Fatalf("served %s", cn)
	}
	c2, k2 := ca.leaf(t, "second", "localhost")
	write(t, cert.Path, c2, -5)
	write(t, key.Path, k2, -5)
	if cn := servedCN(t, cfg); cn != "second" {
		t.Fatalf("after the files changed, served %s", cn)
	}
	// a certificate with another certificate's key: the second stays
	c3, _ := ca.leaf(t, "third", "localhost")
	write(t, cert.Path, c3, -1)
	if cn := servedCN(t, cfg); cn != "second" {
		t.Fatalf("a pair that does not match replaced the good one: served %s", cn)
	}
	if len(reports) != 2 || reports[0] != nil || reports[1] == nil ||
		!strings.Contains(reports[1].Error(), "server.tls.certificate-file="+cert.Path) ||
		!strings.Contains(reports[1].Error(), "server.tls.key-file="+key.Path) {
		t.Fatalf("reloads reported %v", reports)
	}
	// the refused version is not read again on every handshake
	servedCN(t, cfg)
	if len(reports) != 2 {
		t.Fatalf("a refused pair was read again: %v", reports)
	}
}

func TestServerCertErrorsNameTheKeyAndFile(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, "ca")
	c, k := ca.leaf(t, "x", "localhost")
	cert, key := File{"additional-frontends.h4.tls.certificate-file", filepath.Join(dir, "c.pem")}, File{"additional-frontends.h4.tls.key-file", filepath.Join(dir, "k.pem")}
	for _, tc := range []struct {
		name        string
		cert, key   []byte
		want, want2 string
	}{
		{"missing", nil, k, cert.String(), "no such file"},
		{"not PEM", []byte("junk"), k, cert.String(), "no PEM certificate"},
		{"no key", c, c, key.String(), "no PEM private key"},
	} {
		os.Remove(cert.Path)
		if tc.cert != nil {
			write(t, cert.Path, tc.cert, 0)
		}
		write(t, key.Path, tc.key, 0)
		_, err := NewServerCert(cert, key, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.want2) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// A trust store is read as keytool writes it (JKS, PKCS#12, written here by
// the JDK's keytool) or as PEM; the password is checked; a declared type
// must match the file.
func TestTrustStoreFormats(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, "trusted-ca")
	path := func(n string) File {
		return File{"catalog.c.conf.hive.metastore.truststore.path", filepath.Join(dir, n)}
	}
	typ := func(v string) File { return File{"catalog.c.conf.hive.metastore.truststore.type", v} }
	const pwKey = "catalog.c.conf.hive.metastore.truststore.password"
	write(t, path("ts.pem").Path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}), 0)
	for name, storeType := range map[string]string{"ts.jks": "JKS", "ts.p12": "PKCS12"} {
		if err := testbed.KeytoolTrustStore(path(name).Path, ca.CAFile, storeType, "changeit"); err != nil {
			t.Skipf("keytool: %v", err)
		}
	}
	for _, name := range []string{"ts.pem", "ts.jks", "ts.p12"} {
		ts, err := LoadTrustStore(path(name), "changeit", pwKey, typ(""))
		if err != nil || len(ts.Certs) != 1 || !ts.Certs[0].Equal(ca.Cert) {
			t.Errorf("%s: %v %v", name, ts, err)
		}
	}
	// Java reads a JKS store without a password, skipping its digest
	if ts, err := LoadTrustStore(path("ts.jks"), "", pwKey, typ("")); err != nil || len(ts.Certs) != 1 {
		t.Errorf("JKS without a password: %v", err)
	}
	for _, tc := range []struct {
		name, file, password, typ, want string
	}{
		{"JKS wrong password", "ts.jks", "nope", "", "tampered with, or " + pwKey + " is wrong"},
		{"PKCS12 wrong password", "ts.p12", "nope", "", "wrong " + pwKey},
		{"declared type differs", "ts.jks", "changeit", "PKCS12", "the file is a JKS store, not PKCS12 (catalog.c.conf.hive.metastore.truststore.type=PKCS12)"},
		{"missing file", "nope.jks", "changeit", "", "no such file"},
	} {
		_, err := LoadTrustStore(path(tc.file), tc.password, pwKey, typ(tc.typ))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "catalog.c.conf.hive.metastore.truststore.path="+path(tc.file).Path) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	write(t, path("empty.pem").Path, []byte("-----BEGIN NOTHING-----\n-----END NOTHING-----\n"), 0)
	if _, err := LoadTrustStore(path("empty.pem"), "", pwKey, typ("")); err == nil || !strings.Contains(err.Error(), "holds no trusted certificate") {
		t.Errorf("empty store: %v", err)
	}
}

// listen serves TLS (cfg) or plain bytes (cfg nil) on loopback until the
// test ends.
func listen(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if cfg == nil {
					buf := make([]byte, 64)
					_, _ = c.Read(buf) // a plain Thrift server: reads and closes on nonsense
					return
				}
				tc := tls.Server(c, cfg)
				if tc.Handshake() == nil {
					_, _ = tc.Write([]byte("ok"))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// The backend dialer refuses a server whose certificate the trust store does
// not vouch for, or that is not for the host it dialled, and says so.
func TestDialerRefusesAWrongCertificate(t *testing.T) {
	dir := t.TempDir()
	trusted, other := newCA(t, "trusted"), newCA(t, "other")
	tsFile := File{"catalog.c.conf.hive.metastore.truststore.path", filepath.Join(dir, "ts.pem")}
	write(t, tsFile.Path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: trusted.Cert.Raw}), 0)
	d, err := NewDialer(&net.Dialer{Timeout: 5 * time.Second}, tsFile, "", "", File{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	server := func(ca *issuer, hosts ...string) string {
		c, k := ca.leaf(t, "metastore", hosts...)
		pair, err := tls.X509KeyPair(c, k)
		if err != nil {
			t.Fatal(err)
		}
		return listen(t, &tls.Config{Certificates: []tls.Certificate{pair}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	good := server(trusted, "127.0.0.1")
	c, err := d.DialContext(ctx, "tcp", good)
	if err != nil {
		t.Fatalf("a certificate of the trusted CA for 127.0.0.1: %v", err)
	}
	c.Close()
	for _, tc := range []struct {
		name, addr, want string
	}{
		{"another CA", server(other, "127.0.0.1"), "not signed by any certificate of the trust store"},
		{"another host", server(trusted, "metastore.example.com"), "not for this host"},
		{"no TLS", listen(t, nil), "TLS handshake with"},
	} {
		_, err := d.DialContext(ctx, "tcp", tc.addr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	// the trust store is read again when it changes: now it trusts the other CA only
	write(t, tsFile.Path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: other.Cert.Raw}), 5)
	if _, err := d.DialContext(ctx, "tcp", good); err == nil || !strings.Contains(err.Error(), "not signed by") {
		t.Errorf("after the trust store changed: %v", err)
	}
}
