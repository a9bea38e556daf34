package router_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// tlsProxy is an offline proxy whose primary listener serves TLS with a
// certificate for 127.0.0.1 of a fresh CA.
func tlsProxy(t *testing.T) (*proxytest.Proxy, *testbed.TLSFiles) {
	t.Helper()
	files, err := testbed.NewTLSFiles(t.TempDir(), "first")
	if err != nil {
		t.Fatal(err)
	}
	p := offlineProxy(t, map[string]string{"server.tls.enabled": "true",
		"server.tls.certificate-file": files.CertFile, "server.tls.key-file": files.KeyFile})
	return p, files
}

// pool trusts the CA of files.
func pool(t *testing.T, files *testbed.TLSFiles) *x509.CertPool {
	t.Helper()
	b, err := os.ReadFile(files.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(b) {
		t.Fatalf("%s holds no certificate", files.CAFile)
	}
	return p
}

// A TLS listener serves clients that trust its certificate, inside TLS; a
// client that speaks plain Thrift or plain SASL to it is told in its own
// protocol to use TLS; a client trusting another certificate does not get
// through the handshake.
func TestTLSListener(t *testing.T) {
	p, files := tlsProxy(t)
	uri := p.URI("primary")
	c, err := proxytest.TLSClient(t, uri, &tls.Config{RootCAs: pool(t, files), ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatalf("a client trusting the proxy's CA: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if v, err := c.GetVersion(ctx); err != nil || v == "" {
		t.Fatalf("getVersion over TLS: %q %v", v, err)
	}
	// plain Thrift: every call answered with the reason, in Thrift
	plain := proxytest.Client(t, uri)
	for i := 0; i < 2; i++ {
		if _, err := plain.GetVersion(ctx); err == nil || !strings.Contains(err.Error(), "speaks TLS (server.tls.enabled=true)") ||
			!strings.Contains(err.Error(), "hive.metastore.use.SSL=true") {
			t.Fatalf("a plain Thrift call on the TLS port: %v", err)
		}
	}
	// plain SASL (a Kerberos client without TLS): a SASL ERROR with the reason
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(uri, "thrift://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := conn.Write(append([]byte{1, 0, 0, 0, 6}, "GSSAPI"...)); err != nil {
		t.Fatal(err)
	}
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(conn, hdr); err != nil || hdr[0] != 4 {
		t.Fatalf("a plain SASL START: status %v %v, want ERROR (4)", hdr, err)
	}
	msg := make([]byte, binary.BigEndian.Uint32(hdr[1:]))
	if _, err := io.ReadFull(conn, msg); err != nil || !strings.Contains(string(msg), "speaks TLS") {
		t.Fatalf("SASL ERROR text %q %v", msg, err)
	}
	// a client trusting another CA
	other, err := testbed.NewTLSFiles(t.TempDir(), "other")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := proxytest.TLSClient(t, uri, &tls.Config{RootCAs: pool(t, other), ServerName: "127.0.0.1"}); err == nil ||
		!strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Fatalf("a client that does not trust the certificate: %v", err)
	}
	p.AwaitMetric(t, 2, "hms_proxy_bad_frames_total", "frontend", "primary", "reason", "plaintext_on_tls")
	p.AwaitMetric(t, 1, "hms_proxy_bad_frames_total", "frontend", "primary", "reason", "tls_handshake")
}

// The listener reads its certificate files again when they change: new
// connections get the new certificate; a pair that does not load keeps the
// previous one, and both are counted.
func TestTLSListenerReadsChangedCertificates(t *testing.T) {
	p, files := tlsProxy(t)
	uri := p.URI("primary")
	served := func() string {
		t.Helper()
		conn, err := tls.Dial("tcp", strings.TrimPrefix(uri, "thrift://"), &tls.Config{RootCAs: pool(t, files), ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if cn := served(); cn != "first" {
		t.Fatalf("served %s", cn)
	}
	if err := files.Issue("second"); err != nil { // a rotation: each file replaced through a rename
		t.Fatal(err)
	}
	if cn := served(); cn != "second" {
		t.Fatalf("after the files changed, served %s", cn)
	}
	// a certificate without its key (another pair's certificate copied over)
	third, err := testbed.NewTLSFiles(t.TempDir(), "third")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(third.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(files.CertFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if cn := served(); cn != "second" {
		t.Fatalf("a certificate without its key replaced the served one: %s", cn)
	}
	if n := p.Metric(t, "hms_proxy_tls_certificate_reloads_total", "frontend", "primary", "result", "success"); n != 1 {
		t.Fatalf("reloads{success} = %v", n)
	}
	if n := p.Metric(t, "hms_proxy_tls_certificate_reloads_total", "frontend", "primary", "result", "failure"); n != 1 {
		t.Fatalf("reloads{failure} = %v", n)
	}
	if n := p.Metric(t, "hms_proxy_tls_certificate_expiry_timestamp_seconds", "frontend", "primary"); n < float64(time.Now().Unix()) {
		t.Fatalf("expiry gauge = %v", n)
	}
}
