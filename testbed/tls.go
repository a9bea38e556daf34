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
	"strings"
	"time"
)

// TLS material for tests, made the way operators make it: a Hive metastore's
// keystore with the JDK's keytool (as Hive's documentation does), Java trust
// stores imported with keytool, and PEM files for hms-proxy's listeners.

// MetastoreTLS makes a metastore serve TLS (hive.metastore.use.SSL=true with
// its keystore; StartMetastoreWith).
type MetastoreTLS struct {
	KeyStore string // JKS keystore with the metastore's key pair (keytool -genkeypair)
	Password string // of the keystore and its key
	CertPEM  string // the metastore's certificate, exported as PEM (keytool -exportcert -rfc)
}

func keytool() (string, error) {
	java, err := javaBin()
	if err != nil {
		return "", err
	}
	kt := filepath.Join(filepath.Dir(java), "keytool")
	if resolved, err := filepath.EvalSymlinks(java); err == nil {
		if p := filepath.Join(filepath.Dir(resolved), "keytool"); fileExists(p) {
			kt = p
		}
	}
	if !fileExists(kt) {
		return "", fmt.Errorf("testbed: keytool not found next to %s (install a JDK, not only a JRE)", java)
	}
	return kt, nil
}

func runKeytool(args ...string) error {
	kt, err := keytool()
	if err != nil {
		return err
	}
	out, err := exec.Command(kt, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("testbed: keytool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// NewMetastoreKeyStore makes a metastore's keystore in dir with keytool: an
// RSA key pair whose certificate names cn and the subject alternative names
// san (keytool's -ext form, e.g. "ip:127.0.0.1,dns:localhost"), valid two
// days, and its certificate exported as PEM.
func NewMetastoreKeyStore(dir, cn, san string) (*MetastoreTLS, error) {
	t := &MetastoreTLS{KeyStore: filepath.Join(dir, "metastore-keystore.jks"), Password: "hmsbed-ks",
		CertPEM: filepath.Join(dir, "metastore-cert.pem")}
	if err := runKeytool("-genkeypair", "-alias", "metastore", "-keyalg", "RSA", "-keysize", "2048", "-validity", "2",
		"-dname", "CN="+cn, "-ext", "SAN="+san, "-keystore", t.KeyStore, "-storetype", "JKS",
		"-storepass", t.Password, "-keypass", t.Password); err != nil {
		return nil, err
	}
	if err := runKeytool("-exportcert", "-rfc", "-alias", "metastore", "-keystore", t.KeyStore,
		"-storepass", t.Password, "-file", t.CertPEM); err != nil {
		return nil, err
	}
	return t, nil
}

// KeytoolTrustStore imports the PEM certificate certFile into a new trust
// store of storeType (JKS or PKCS12) at path, as keytool -importcert does
// for Hive's hive.metastore.truststore.path.
func KeytoolTrustStore(path, certFile, storeType, password string) error {
	return runKeytool("-importcert", "-noprompt", "-alias", "trusted", "-file", certFile, "-keystore", path,
		"-storetype", storeType, "-storepass", password)
}

// CA is a test certificate authority for hms-proxy's PEM files.
type CA struct {
	Cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	CertPEM string // the CA certificate's PEM file
}

// NewCA makes a CA whose certificate is written to dir/<name>-ca.pem.
func NewCA(dir, name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name + " test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	ca := &CA{Cert: c, key: key, CertPEM: filepath.Join(dir, name+"-ca.pem")}
	return ca, os.WriteFile(ca.CertPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

// Issue writes a server certificate for hosts (DNS names or IP addresses)
// signed by the CA, and its key, as PEM files dir/<name>.pem and
// dir/<name>.key.
func (ca *CA) Issue(dir, name string, hosts ...string) (certFile, keyFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return "", "", err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return "", "", err
	}
	return certFile, keyFile, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600)
}

// ClientTLS is a Java client's TLS, as Hive's client is configured:
// hive.metastore.use.SSL=true with a trust store (both Hive key names).
type ClientTLS struct {
	TrustStore, Password, Type string // Type: JKS or PKCS12
}

// Args are the driver's --conf arguments for it.
func (c ClientTLS) Args() []string {
	var out []string
	for _, kv := range [][2]string{{"use.SSL", "true"}, {"truststore.path", c.TrustStore},
		{"truststore.password", c.Password}, {"truststore.type", c.Type}} {
		out = append(out, "--conf", "metastore."+kv[0]+"="+kv[1], "--conf", "hive.metastore."+kv[0]+"="+kv[1])
	}
	return out
}

// NewListenerCert makes a CA in dir and a certificate of it for 127.0.0.1
// and localhost (an hms-proxy TLS listener on loopback): the CA, and the
// certificate's and key's PEM files.
func NewListenerCert(dir string) (ca *CA, certFile, keyFile string, err error) {
	if ca, err = NewCA(dir, "proxy"); err != nil {
		return nil, "", "", err
	}
	certFile, keyFile, err = ca.Issue(dir, "hms-proxy", "127.0.0.1", "localhost")
	return ca, certFile, keyFile, err
}
