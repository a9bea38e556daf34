package restcatalog_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/restcatalog"
)

// testCA issues loopback server certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hms-proxy test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue writes a server certificate for 127.0.0.1 named cn and its key.
func (ca *testCA) issue(t *testing.T, cn, certFile, keyFile string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	// Written to temporary names and renamed, as a rotation does.
	for file, data := range map[string][]byte{
		certFile: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyFile:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}),
	} {
		if err := os.WriteFile(file+".new", data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(file+".new", file); err != nil {
			t.Fatal(err)
		}
	}
}

// servedCN is the CommonName of the certificate a new TLS connection gets.
func servedCN(t *testing.T, addr string, roots *x509.CertPool) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatalf("TLS to %s: %v", addr, err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName
}

// The REST listener serves HTTPS from its certificate files and takes a
// rotated pair on the next handshake; a pair that does not load leaves the
// previous one in service; plain HTTP is not answered.
func TestRESTListenerTLSReloadsItsCertificate(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "rest.crt"), filepath.Join(dir, "rest.key")
	ca := newTestCA(t)
	ca.issue(t, "first", certFile, keyFile)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.pem)

	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	srv, err := restcatalog.Listen(ok, restcatalog.ServerOptions{BindHost: "127.0.0.1", TLSCertFile: certFile, TLSKeyFile: keyFile, Log: discardLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	if !strings.HasPrefix(srv.URL(), "https://") {
		t.Fatalf("URL %s", srv.URL())
	}
	addr := srv.Addr().String()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	resp, err := client.Get(srv.URL() + "/v1/config")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := servedCN(t, addr, roots); got != "first" {
		t.Fatalf("served %q", got)
	}
	if resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + addr + "/v1/config"); err == nil {
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Fatalf("plain HTTP was answered %d", resp.StatusCode)
		}
	}

	ca.issue(t, "second", certFile, keyFile)
	if got := servedCN(t, addr, roots); got != "second" {
		t.Fatalf("after rotation served %q", got)
	}
	// A key that does not match the certificate: the previous pair stays.
	if err := os.WriteFile(keyFile, []byte("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := servedCN(t, addr, roots); got != "second" {
		t.Fatalf("after a broken rotation served %q", got)
	}
	ca.issue(t, "third", certFile, keyFile)
	if got := servedCN(t, addr, roots); got != "third" {
		t.Fatalf("after the repaired rotation served %q", got)
	}

	// A pair that does not load refuses the listener, naming the keys.
	_, err = restcatalog.Listen(ok, restcatalog.ServerOptions{BindHost: "127.0.0.1", TLSCertFile: certFile, TLSKeyFile: filepath.Join(dir, "missing.key")})
	if err == nil || !strings.Contains(err.Error(), "rest-catalog.tls") {
		t.Fatalf("a missing key: %v", err)
	}
}
