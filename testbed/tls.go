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
	if _, err := keytool(); err == nil {
		f.TrustStore, f.TrustStorePassword = filepath.Join(dir, "truststore.p12"), "changeit"
		if err := KeytoolTrustStore(f.TrustStore, f.CAFile, "PKCS12", f.TrustStorePassword); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// Issue writes a new server certificate and key (named cn, for 127.0.0.1, ::1 and localhost) over CertFile and
// KeyFile, each through a rename, as a certificate rotation does.
func (f *TLSFiles) Issue(cn string) error { return f.IssueFor(cn, "127.0.0.1", "::1", "localhost") }

// IssueFor is Issue for other hosts (DNS names or IP addresses).
func (f *TLSFiles) IssueFor(cn string, hosts ...string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(7 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
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
