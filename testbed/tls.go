package testbed

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// TLSFiles are a test CA and a loopback server certificate it issued, as files: what a TLS listener of the proxy
// is configured with and what its clients trust.
type TLSFiles struct {
	CAFile   string // PEM certificate of the CA (pyiceberg's ssl.cabundle, curl --cacert)
	CertFile string // PEM server certificate for 127.0.0.1 and localhost
	KeyFile  string // its PEM private key
	// TrustStore is a PKCS12 trust store holding the CA, for JVM clients (javax.net.ssl.trustStore), with password
	// TrustStorePassword; "" when no keytool was found.
	TrustStore         string
	TrustStorePassword string

	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
}

// NewTLSFiles writes a fresh CA and a server certificate named cn into dir.
func NewTLSFiles(dir, cn string) (*TLSFiles, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hms-proxy test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(7 * 24 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, _ := x509.ParseCertificate(der)
	f := &TLSFiles{CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "server.pem"), KeyFile: filepath.Join(dir, "server.key"),
		ca: ca, caKey: caKey}
	if err := os.WriteFile(f.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, err
	}
	if err := f.Issue(cn); err != nil {
		return nil, err
	}
	if keytool, err := exec.LookPath("keytool"); err == nil {
		f.TrustStore, f.TrustStorePassword = filepath.Join(dir, "truststore.p12"), "changeit"
		out, err := exec.Command(keytool, "-importcert", "-noprompt", "-alias", "hms-proxy-test-ca", "-file", f.CAFile,
			"-keystore", f.TrustStore, "-storetype", "PKCS12", "-storepass", f.TrustStorePassword).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("testbed: keytool -importcert: %v\n%s", err, out)
		}
	}
	return f, nil
}

// Issue writes a new server certificate and key (named cn) over CertFile and KeyFile, each through a rename, as a
// certificate rotation does.
func (f *TLSFiles) Issue(cn string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(7 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}, DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, f.ca, &key.PublicKey, f.caKey)
	if err != nil {
		return err
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	for file, data := range map[string][]byte{
		f.CertFile: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		f.KeyFile:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}),
	} {
		if err := os.WriteFile(file+".new", data, 0o600); err != nil {
			return err
		}
		if err := os.Rename(file+".new", file); err != nil {
			return err
		}
	}
	return nil
}
