package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/audit"
	"github.com/hms-proxy/hms-proxy/configs"
	"github.com/hms-proxy/hms-proxy/fileio"
	"github.com/hms-proxy/hms-proxy/frontdoor"
	"github.com/hms-proxy/hms-proxy/monitoring"
	"github.com/hms-proxy/hms-proxy/restcatalog"
	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/security"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// The Iceberg REST frontend reaches the metastores through the router, never
// straight to a backend: each REST request gets an in-process Thrift
// connection into a listener of its own (never bound to a port), so routing,
// the policy chain, access modes, exposure, rate limits, metrics and audit
// apply to its calls exactly as to a Thrift client's. The listener's calls
// are counted under listener "rest".

const restListenerName = "rest"

func (a *App) buildREST(cfg *configs.Config, auditLog *audit.Logger, log *slog.Logger, oauth2Now func() time.Time) error {
	rc := cfg.RESTCatalog
	strict, err := wire.NewStrictSchema(0)
	if err != nil {
		return err
	}
	m := a.Metrics
	inner := frontdoor.New(frontdoor.Config{Name: restListenerName, MaxWorkers: max(rc.MaxWorkerThreads, 1),
		ClientSocketTimeout: 5 * time.Minute, MaxMessage: int(cfg.Server.MaxMessageSize), Strict: strict, Budget: a.Budget},
		&planner.Frontend{Name: restListenerName, Internal: true}, &a.sw, log,
		frontdoor.Hooks{BadInput: func(reason string) { m.BadFrame(restListenerName, reason) },
			Refused:  func(reason string) { m.FrontendRefused(restListenerName, reason) },
			InFlight: func(d int) { m.FrontendInFlight(restListenerName, d) }})
	a.restInner = inner
	metrics, err := restcatalog.NewMetrics(a.Registry)
	if err != nil {
		return err
	}
	var spnego *restcatalog.SPNEGO
	if rc.KerberosPrincipal != "" {
		if spnego, err = restcatalog.NewSPNEGO(restcatalog.SPNEGOOptions{Principal: rc.KerberosPrincipal,
			Keytab: rc.KerberosKeytab, SecurityMode: cfg.Security.Mode, Log: log}); err != nil {
			return fmt.Errorf("rest-catalog.kerberos.principal: %w", err)
		}
	}
	var oauth2 *restcatalog.OAuth2
	if rc.OAuth2Issuer != "" {
		client, err := idpClient(rc.OAuth2CAFile)
		if err != nil {
			return err
		}
		if oauth2, err = restcatalog.NewOAuth2(restcatalog.OAuth2Options{Issuer: rc.OAuth2Issuer, Audience: rc.OAuth2Audience,
			JWKSURI: rc.OAuth2JWKSURI, UserClaim: rc.OAuth2UserClaim, GroupsClaim: rc.OAuth2GroupsClaim,
			ClockSkew: rc.OAuth2ClockSkew, Algorithms: rc.OAuth2Algorithms, HTTPClient: client, Now: oauth2Now, Log: log}); err != nil {
			return err
		}
	}
	mode, err := restcatalog.ParsePurgeMode(rc.PurgeMode)
	if err != nil {
		return fmt.Errorf("rest-catalog.purge.mode: %w", err)
	}
	h, err := restcatalog.New(restcatalog.Options{
		Naming:    a.Router.Namespace(),
		Metastore: restMetastore(inner),
		WriteIsolated: func(catalog string) bool {
			// The default catalog (its metastore's lock) and every catalog
			// whose locks the isolating lock shim serves.
			if a.Router.WriteIsolated(catalog) {
				return true
			}
			// A catalog whose commits skip the lock
			// (iceberg.engine.hive.lock-enabled=false; Validate refuses it
			// on runtimes without the compare-and-swap) is guarded by the
			// metastore's compare-and-swap of metadata_location instead.
			cc := cfg.Catalog(catalog)
			return compareAndSwap(cc) && cc.IcebergEngineHiveLockEnabled != nil && !*cc.IcebergEngineHiveLockEnabled
		},
		WriteRefusal: a.Router.WriteRefusal,
		CompareAndSwap: func(catalog string) bool {
			return compareAndSwap(cfg.Catalog(catalog))
		},
		CatalogConf: func(catalog, key string) (string, bool) {
			cc := cfg.Catalog(catalog)
			if cc == nil {
				return "", false
			}
			v, ok := cc.Conf[key]
			return v, ok
		},
		FileIO: func(_ context.Context, catalog, location string) (fileio.IO, error) {
			return a.Files.For(catalog, location)
		},
		PurgeMode:            mode,
		PurgeAllowedPrefixes: rc.PurgeAllowedPrefixes,
		HiveEngineDescriptor: rc.HiveEngineDescriptor,
		SPNEGO:               spnego,
		OAuth2:               oauth2,
		Metrics:              metrics,
		OnRequest:            restAudit(auditLog),
		Log:                  log,
	})
	if err != nil {
		return err
	}
	a.restHandler = h
	a.restOptions = restcatalog.ServerOptions{BindHost: rc.BindHost, Port: rc.Port, MaxInFlight: rc.MaxWorkerThreads,
		TLSCertFile: rc.TLSCertFile, TLSKeyFile: rc.TLSKeyFile, Metrics: metrics, Log: log}
	st := &monitoring.RESTCatalogStatus{Address: net.JoinHostPort(rc.BindHost, strconv.Itoa(rc.Port)), TLS: rc.TLS()}
	if spnego != nil {
		st.Authentication = append(st.Authentication, "spnego")
	}
	if oauth2 != nil {
		st.Authentication = append(st.Authentication, "oauth2")
	}
	if len(st.Authentication) == 0 {
		st.Authentication = []string{"none"}
		st.Warning = configs.AnonymousRESTWarning(rc.BindHost, rc.Port)
	}
	a.restStatus = st
	return nil
}

// idpClient is the HTTP client that reaches the identity provider
// (discovery, JWKS): the system's roots, or rest-catalog.oauth2.ca-file's.
func idpClient(caFile string) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("rest-catalog.oauth2.ca-file: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("rest-catalog.oauth2.ca-file=%s: no PEM certificate in it", caFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}, nil
}

// readiness is the /readyz source, with the REST listener's section once it
// is built.
func (a *App) readiness() readiness {
	r := newReadiness(a.Current, a.Security, a.Listeners)
	r.rest = a.restStatus
	return r
}

// restMetastore opens an in-process Thrift client into the REST listener for
// one REST request, as its caller.
func restMetastore(l *frontdoor.Listener) restcatalog.Metastore {
	return func(ctx context.Context, c restcatalog.Caller) (*thriftgen.Client, func(), error) {
		cli, srv := net.Pipe()
		var id *security.Identity
		switch {
		case c.User == "":
		case c.Mechanism == restcatalog.MechanismOAuth2:
			// The token's user claim as it is: the provider's name.
			id = &security.Identity{User: c.User, Groups: c.Groups, Mechanism: security.OAuth2, Principal: c.User}
		default:
			user := c.User
			if i := strings.IndexAny(user, "/@"); i > 0 {
				user = user[:i]
			}
			id = &security.Identity{User: user, Mechanism: security.Kerberos, Principal: c.User}
		}
		remote := c.RemoteAddr
		if remote == "" {
			remote = "rest"
		}
		go l.ServeConn(srv, remote, id)
		tc := &thrift.TConfiguration{SocketTimeout: 5 * time.Minute}
		trans := thrift.NewTBufferedTransport(thrift.NewTSocketFromConnConf(cli, tc), 64<<10)
		proto := thrift.NewTBinaryProtocolConf(trans, tc)
		return thriftgen.NewClient(thrift.NewTStandardClient(proto, proto)), func() { _ = trans.Close() }, nil
	}
}

// restAudit writes one audit record per REST request (its Thrift calls have
// records of their own).
func restAudit(l *audit.Logger) func(restcatalog.RequestInfo) {
	if !l.Enabled() {
		return nil
	}
	return func(ri restcatalog.RequestInfo) {
		status := "ok"
		if ri.Status >= 400 {
			status = "error"
		}
		catalog := ri.Catalog
		if catalog == "" {
			catalog = "none"
		}
		l.Log(&audit.Record{Method: "REST " + ri.Route, OperationClass: "rest_catalog", Catalog: catalog, Backend: catalog,
			Status: status, DurationMs: ri.Duration.Milliseconds(), RemoteAddress: ri.Caller.RemoteAddr,
			AuthenticatedUser: ri.Caller.User, Routed: ri.Catalog != ""})
	}
}

// compareAndSwap reports whether a catalog's metastore compares
// metadata_location on alter (compat.Runtime.CompareAndSwap).
func compareAndSwap(cc *configs.CatalogConfig) bool {
	if cc == nil {
		return false
	}
	rt, err := runtimeOf(cc)
	return err == nil && rt.CompareAndSwap
}
