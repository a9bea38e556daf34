package gssapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/hms-proxy/hms-proxy/security"
	"github.com/hms-proxy/hms-proxy/security/kerberos"
	"github.com/hms-proxy/hms-proxy/security/sasl"
)

// DefaultKrb5Conf is the krb5.conf read when none is configured and
// KRB5_CONFIG is unset (the MIT default).
const DefaultKrb5Conf = "/etc/krb5.conf"

// Krb5ConfPath returns path, else $KRB5_CONFIG, else DefaultKrb5Conf.
func Krb5ConfPath(path string) string {
	if path != "" {
		return path
	}
	if p := os.Getenv("KRB5_CONFIG"); p != "" {
		return p
	}
	return DefaultKrb5Conf
}

// FrontDoorOptions are the front door's Kerberos settings (security.mode=KERBEROS).
type FrontDoorOptions struct {
	// Principal is security.server-principal; "_HOST" becomes the canonical
	// name of BindHost (this machine's for "", 0.0.0.0 or ::).
	Principal string
	// Keytab is the path of security.keytab.
	Keytab string
	// Krb5Conf is the krb5.conf path (Krb5ConfPath: $KRB5_CONFIG, /etc/krb5.conf).
	Krb5Conf string
	// Protection is security.front-door-conf.hadoop.rpc.protection.
	Protection string
	// AuthToLocal is security.front-door-conf.hadoop.security.auth_to_local
	// ("" = DEFAULT); AuthToLocalMechanism is
	// security.front-door-conf.hadoop.security.auth_to_local.mechanism.
	AuthToLocal, AuthToLocalMechanism string
	// BindHost is the listener's bind host (server.bind-host) for _HOST.
	BindHost string
	// Listener names the listener in metrics.
	Listener string
	// Metrics counts handshakes (sasl.NewMetrics); nil: none.
	Metrics *sasl.Metrics
	// HandshakeTimeout, MaxToken, MaxFrame: sasl.Server limits (0 = defaults).
	HandshakeTimeout time.Duration
	MaxToken         int
	MaxFrame         int
	// MaxClockSkew of ticket checks; 0: krb5.conf's libdefaults clockskew
	// (300 s when unset), as MIT's and Java's acceptors use it.
	MaxClockSkew time.Duration
	// Replay is the process's replay caches, shared by every listener's
	// front door (NewReplayCaches); nil: this front door's own.
	Replay *ReplayCaches
}

// FrontDoor is a Kerberos SASL front door: the negotiation, the GSSAPI
// acceptor, the principal-to-user mapping and the server principal's login
// for /readyz.
type FrontDoor struct {
	Server   *sasl.Server
	Acceptor *Acceptor
	Mapper   *kerberos.Mapper
	Login    *Login
}

// NewFrontDoor checks everything the front door needs and logs the server
// principal in from its keytab (as Hadoop's loginUserFromKeytab does at
// start-up): a missing keytab, a principal it has no key for, a bad
// protection list or rule, or a failed login is an error naming the key.
func NewFrontDoor(o FrontDoorOptions) (*FrontDoor, error) {
	if o.Principal == "" {
		return nil, errors.New("security.server-principal is required with security.mode=KERBEROS")
	}
	if o.Keytab == "" {
		return nil, errors.New("security.keytab is required with security.mode=KERBEROS")
	}
	principal, err := kerberos.ExpandHost(o.Principal, o.BindHost)
	if err != nil {
		return nil, fmt.Errorf("security.server-principal: %w", err)
	}
	kt, err := LoadKeytab(o.Keytab)
	if err != nil {
		return nil, fmt.Errorf("security.keytab: %w", err)
	}
	cfg, err := LoadConfig(Krb5ConfPath(o.Krb5Conf))
	if err != nil {
		return nil, err
	}
	qops, err := sasl.ParseProtection(o.Protection)
	if err != nil {
		return nil, fmt.Errorf("security.front-door-conf.%w", err)
	}
	_, realm, _ := SplitPrincipal(principal)
	defaultRealm := cfg.LibDefaults.DefaultRealm
	if defaultRealm == "" {
		defaultRealm = realm
	}
	mapper, err := kerberos.NewMapper(kerberos.MapperOptions{Rules: o.AuthToLocal, DefaultRealm: defaultRealm,
		Mechanism: o.AuthToLocalMechanism})
	if err != nil {
		return nil, fmt.Errorf("security.front-door-conf.%w", err)
	}
	skew := o.MaxClockSkew
	if skew <= 0 {
		skew = cfg.LibDefaults.Clockskew // gokrb5 defaults it to 300 s
	}
	acc, err := NewAcceptor(AcceptorOptions{Principal: principal, Keytab: kt, QOPs: qops, MaxClockSkew: skew, Replay: o.Replay,
		Authorize: func(p string) error { _, err := mapper.ShortName(p); return err }})
	if err != nil {
		return nil, err
	}
	login, err := NewLogin(LoginOptions{Principal: principal, Keytab: kt, Config: cfg})
	if err != nil {
		return nil, fmt.Errorf("security.server-principal: %w", err)
	}
	if err := login.Login(); err != nil {
		return nil, err
	}
	srv := &sasl.Server{Mechs: map[string]sasl.ServerMechFactory{Mechanism: acc.Factory()},
		MaxToken: o.MaxToken, MaxFrame: o.MaxFrame, HandshakeTimeout: o.HandshakeTimeout,
		Listener: o.Listener, Metrics: o.Metrics}
	return &FrontDoor{Server: srv, Acceptor: acc, Mapper: mapper, Login: login}, nil
}

// Accept authenticates an accepted connection: on success the data-phase
// connection, the caller's identity (principal mapped to its user name) and
// the SASL result; on failure the connection is closed, the failure counted
// and a *sasl.HandshakeError returned for the caller to log.
func (f *FrontDoor) Accept(c net.Conn) (net.Conn, *security.Identity, sasl.Result, error) {
	sc, res, err := f.Server.Accept(c)
	if err != nil {
		return nil, nil, res, err
	}
	id, err := f.Mapper.Identity(res)
	if err != nil { // Authorize ran the same mapping; only a changed mapper gets here
		sc.Close()
		return nil, nil, res, &sasl.HandshakeError{Reason: ReasonAuthToLocal, Mechanism: res.Mechanism, Err: err}
	}
	return sc, id, res, nil
}

// Status is the front door's Kerberos state for /readyz.
func (f *FrontDoor) Status() Status {
	if f == nil {
		return Status{State: StateDisabled, Healthy: true}
	}
	return f.Login.Status()
}

// BackendLoginOptions are the proxy's outbound Kerberos credentials.
type BackendLoginOptions struct {
	// Principal is security.client-principal ("" = security.server-principal);
	// "_HOST" becomes this machine's canonical host name.
	Principal string
	// Keytab is security.client-keytab ("" = security.keytab).
	Keytab string
	// Krb5Conf as in FrontDoorOptions.
	Krb5Conf string
	// RenewBefore: see LoginOptions.
	RenewBefore time.Duration
}

// NewBackendLogin prepares the outbound login without contacting the KDC:
// it reports PENDING until the first backend session logs in.
func NewBackendLogin(o BackendLoginOptions) (*Login, error) {
	if o.Principal == "" || o.Keytab == "" {
		return nil, errors.New("outbound Kerberos needs security.client-principal and security.client-keytab (or security.server-principal and security.keytab)")
	}
	principal, err := kerberos.ExpandHost(o.Principal, "")
	if err != nil {
		return nil, fmt.Errorf("security.client-principal: %w", err)
	}
	kt, err := LoadKeytab(o.Keytab)
	if err != nil {
		return nil, fmt.Errorf("security.client-keytab: %w", err)
	}
	cfg, err := LoadConfig(Krb5ConfPath(o.Krb5Conf))
	if err != nil {
		return nil, err
	}
	l, err := NewLogin(LoginOptions{Principal: principal, Keytab: kt, Config: cfg, RenewBefore: o.RenewBefore})
	if err != nil {
		return nil, fmt.Errorf("security.client-principal: %w", err)
	}
	return l, nil
}

// BackendOptions are one catalog's Kerberos settings
// (catalog.<n>.conf.hive.metastore.sasl.enabled=true).
type BackendOptions struct {
	// Principal is catalog.<n>.conf.hive.metastore.kerberos.principal.
	Principal string
	// Protection is catalog.<n>.conf.hadoop.rpc.protection.
	Protection string
	// ConnectTimeout bounds the TCP connect (0: none beyond the context).
	ConnectTimeout time.Duration
	// HandshakeTimeout bounds dial + negotiation when the context has no deadline.
	HandshakeTimeout time.Duration
	// Dialer opens the transport (nil: TCP with ConnectTimeout).
	Dialer ContextDialer
}

// BackendDial returns the catalog's pool Dial: TCP (or TLS, o.Dialer), then
// SASL GSSAPI as the login's principal to the catalog's service principal.
func BackendDial(l *Login, o BackendOptions) (func(ctx context.Context, network, addr string) (net.Conn, error), error) {
	if o.Principal == "" {
		return nil, errors.New("hive.metastore.kerberos.principal is required with hive.metastore.sasl.enabled=true")
	}
	qops, err := sasl.ParseProtection(o.Protection)
	if err != nil {
		return nil, err
	}
	in, err := NewInitiator(InitiatorOptions{Login: l, Principal: o.Principal, QOPs: qops, HandshakeTimeout: o.HandshakeTimeout})
	if err != nil {
		return nil, err
	}
	if o.Dialer != nil {
		return in.Dial(o.Dialer), nil
	}
	return in.Dial(&net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second}), nil
}
