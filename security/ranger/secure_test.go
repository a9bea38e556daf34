package ranger

import (
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
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/security/gssapi"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// The Kerberized download against a real MIT KDC: the secure paths, with an
// "Authorization: Negotiate" token from the proxy's own keytab login, which
// the stand-in's SPNEGO acceptor (gokrb5, with the HTTP/localhost keytab)
// verifies. A plugin without Kerberos is refused by the Kerberized Admin.
func TestSPNEGODownload(t *testing.T) {
	kdc := testbed.StartKDCT(t, testbed.KDCOptions{})
	httpKeytab, err := kdc.PrincipalKeytab("http.keytab", "HTTP/localhost")
	if err != nil {
		t.Fatal(err)
	}
	proxyKeytab, err := kdc.PrincipalKeytab("proxy.keytab", "hms/proxy1")
	if err != nil {
		t.Fatal(err)
	}
	a := startAdmin(t, testbed.RangerAdminOptions{Keytab: httpKeytab, Principal: kdc.Principal("HTTP/localhost")})
	url := strings.Replace(a.URL, "127.0.0.1", "localhost", 1)

	kt, err := gssapi.LoadKeytab(proxyKeytab)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := gssapi.LoadConfig(kdc.Krb5Conf)
	if err != nil {
		t.Fatal(err)
	}
	login, err := gssapi.NewLogin(gssapi.LoginOptions{Principal: kdc.Principal("hms/proxy1"), Keytab: kt, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	p := newPlugin(t, []string{url}, "", func(o *Options) { o.Admin.Negotiate = login })
	if err := refresh(t, p); err != nil {
		t.Fatal(err)
	}
	if err := p.Ready(); err != nil {
		t.Fatal(err)
	}
	reqs := a.Requests()
	if len(reqs) != 2 || reqs[0].Path != "/service/roles/secure/download/hms_hive" || reqs[1].Path != "/service/plugins/secure/policies/download/hms_hive" ||
		reqs[1].User != kdc.Principal("hms/proxy1") || reqs[1].Status != 200 {
		t.Fatalf("requests %+v", reqs)
	}
	// the next round authenticates again (a fresh authenticator) and is told nothing changed
	if err := refresh(t, p); err != nil {
		t.Fatal(err)
	}
	if r := a.Requests()[3]; r.Status != 304 || r.User != kdc.Principal("hms/proxy1") {
		t.Fatalf("second round %+v", r)
	}

	plain := newPlugin(t, []string{url}, "", nil)
	err = refresh(t, plain)
	if err == nil || !strings.Contains(err.Error(), "HTTP 401") || plain.Ready() == nil {
		t.Fatalf("a plugin without Kerberos against a Kerberized Admin: %v / %v", err, plain.Ready())
	}
}

// An https Admin is trusted through ranger.ssl.truststore.file in each format
// a Java plugin's truststore comes in: JKS and PKCS12 written by the JDK's
// keytool, and PEM. A wrong password or an untrusted server is an error
// naming the key.
func TestTruststore(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ranger-admin"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := filepath.Join(dir, "admin.pem")
	if err := os.WriteFile(certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/service/roles/") {
			_, _ = w.Write(testdataBytes(t, "hms_hive-roles.json"))
			return
		}
		_, _ = w.Write(testdataBytes(t, "hms_hive-policies.json"))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	keytool, err := exec.LookPath("keytool")
	if err != nil {
		t.Skip("keytool (JDK) not installed")
	}
	stores := map[string]string{"pem": certPEM}
	for _, typ := range []string{"JKS", "PKCS12"} {
		f := filepath.Join(dir, "truststore."+strings.ToLower(typ))
		out, err := exec.Command(keytool, "-importcert", "-noprompt", "-alias", "ranger-admin", "-file", certPEM,
			"-keystore", f, "-storepass", "changeit", "-storetype", typ).CombinedOutput()
		if err != nil {
			t.Fatalf("keytool %s: %v\n%s", typ, err, out)
		}
		stores[typ] = f
	}
	for typ, f := range stores {
		pool, n, err := LoadTruststore(f, "changeit")
		if err != nil || n != 1 {
			t.Fatalf("%s: %d certificates, %v", typ, n, err)
		}
		p := newPlugin(t, []string{srv.URL}, "", func(o *Options) { o.Admin.TLS = &tls.Config{RootCAs: pool} })
		if err := refresh(t, p); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
	}
	if _, _, err := LoadTruststore(stores["JKS"], "wrong"); err == nil || !strings.Contains(err.Error(), "ranger.ssl.truststore.password") {
		t.Fatalf("JKS with a wrong password: %v", err)
	}
	if _, _, err := LoadTruststore(stores["PKCS12"], "wrong"); err == nil || !strings.Contains(err.Error(), "ranger.ssl.truststore.password") {
		t.Fatalf("PKCS12 with a wrong password: %v", err)
	}
	p := newPlugin(t, []string{srv.URL}, "", nil)
	if err := refresh(t, p); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("an untrusted Admin: %v", err)
	}
}
