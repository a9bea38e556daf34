package restcatalog_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/restcatalog"
	"github.com/hms-proxy/hms-proxy/testbed"
)

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
	files, err := testbed.NewTLSFiles(dir, "first")
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := files.CertFile, files.KeyFile
	caPEM, _ := os.ReadFile(files.CAFile)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	issue := func(cn string) {
		if err := files.Issue(cn); err != nil {
			t.Fatal(err)
		}
	}

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

	issue("second")
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
	issue("third")
	if got := servedCN(t, addr, roots); got != "third" {
		t.Fatalf("after the repaired rotation served %q", got)
	}

	// A pair that does not load refuses the listener, naming the keys.
	_, err = restcatalog.Listen(ok, restcatalog.ServerOptions{BindHost: "127.0.0.1", TLSCertFile: certFile, TLSKeyFile: filepath.Join(dir, "missing.key")})
	if err == nil || !strings.Contains(err.Error(), "rest-catalog.tls") {
		t.Fatalf("a missing key: %v", err)
	}
}
