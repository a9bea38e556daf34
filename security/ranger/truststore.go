package ranger

import (
	"crypto/x509"

	"github.com/hms-proxy/hms-proxy/security/tlsconf"
)

// LoadTruststore reads the CA certificates of ranger.ssl.truststore.file,
// in the formats a Java plugin's truststore comes in: JKS (and JCEKS) and
// PKCS12, as Java's keytool writes them, or PEM (security/tlsconf, which
// the Thrift side's trust stores share). The password, when given, is
// checked against the store's integrity digest (JKS, JCEKS) or decrypts it
// (PKCS12); an empty password skips the JKS check as Java's KeyStore.load
// does.
func LoadTruststore(path, password string) (*x509.CertPool, int, error) {
	ts, err := tlsconf.LoadTrustStore(tlsconf.File{Key: "ranger.ssl.truststore.file", Path: path}, password,
		"ranger.ssl.truststore.password", tlsconf.File{})
	if err != nil {
		return nil, 0, err
	}
	return ts.Pool, len(ts.Certs), nil
}
