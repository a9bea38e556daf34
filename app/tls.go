package app

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/hms-proxy/hms-proxy/configs"
	"github.com/hms-proxy/hms-proxy/monitoring"
	"github.com/hms-proxy/hms-proxy/security/tlsconf"
)

// listenerTLS is a Thrift listener's TLS configuration (nil: plain): its
// certificate and key (server.tls.* or additional-frontends.<n>.tls.*),
// read now and again whenever the files change; each change is logged and
// counted, and the certificate's expiry exported.
func listenerTLS(fc *configs.FrontendConfig, name string, m *monitoring.Metrics, log *slog.Logger) (*tls.Config, error) {
	if !fc.TLS.Enabled {
		return nil, nil
	}
	pre := fc.KeyPrefix()
	cert := tlsconf.File{Key: pre + "tls.certificate-file", Path: fc.TLS.CertFile}
	key := tlsconf.File{Key: pre + "tls.key-file", Path: fc.TLS.KeyFile}
	sc, err := tlsconf.NewServerCert(cert, key, func(leaf *x509.Certificate, err error) {
		if err != nil {
			log.Error("TLS certificate files changed but do not load; the listener keeps serving the previous certificate",
				"listener", name, "err", err)
			m.TLSCertificate(name, time.Time{}, true, false)
			return
		}
		log.Info("TLS certificate files changed; serving the new certificate", "listener", name,
			"subject", leaf.Subject.String(), "not_after", leaf.NotAfter)
		m.TLSCertificate(name, leaf.NotAfter, true, true)
	})
	if err != nil {
		return nil, fmt.Errorf("listener %s: %w", name, err)
	}
	leaf := sc.Leaf()
	if time.Now().After(leaf.NotAfter) {
		return nil, fmt.Errorf("listener %s: %s: the certificate expired at %s", name, cert, leaf.NotAfter.Format(time.RFC3339))
	}
	m.TLSCertificate(name, leaf.NotAfter, false, true)
	log.Info("TLS on the listener", "listener", name, "subject", leaf.Subject.String(), "not_after", leaf.NotAfter)
	return sc.Config(), nil
}

// backendDialer is how a catalog's backend connections are opened: TCP with
// its connect timeout and, with conf hive.metastore.use.SSL=true, TLS
// trusting conf hive.metastore.truststore.* (read again when it changes).
// SASL, set_ugi and DIGEST-MD5 sessions run over what it returns.
func backendDialer(cat *configs.CatalogConfig, log *slog.Logger) (*tlsconf.Dialer, error) {
	nd := &net.Dialer{Timeout: cat.ConnectTimeout, KeepAlive: 30 * time.Second}
	if !cat.UseSSL {
		return tlsconf.NewDialer(nd, tlsconf.File{}, "", "", tlsconf.File{}, nil)
	}
	pre := "catalog." + cat.Name + ".conf."
	d, err := tlsconf.NewDialer(nd, tlsconf.File{Key: pre + "hive.metastore.truststore.path", Path: cat.TrustStorePath},
		cat.TrustStorePassword, pre+"hive.metastore.truststore.password",
		tlsconf.File{Key: pre + "hive.metastore.truststore.type", Path: cat.TrustStoreType},
		func(err error) {
			if err != nil {
				log.Error("the trust store changed but does not load; new backend connections keep trusting the previous one",
					"catalog", cat.Name, "err", err)
				return
			}
			log.Info("the trust store changed; new backend connections trust its certificates", "catalog", cat.Name)
		})
	if err != nil {
		return nil, err
	}
	if t := cat.ConnectTimeout; t > 0 {
		d.HandshakeTimeout = t
	}
	return d, nil
}
