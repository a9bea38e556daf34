package app

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hms-proxy/hms-proxy/configs"
	"github.com/hms-proxy/hms-proxy/frontdoor"
	"github.com/hms-proxy/hms-proxy/monitoring"
	"github.com/hms-proxy/hms-proxy/router"
	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/security"
	"github.com/hms-proxy/hms-proxy/security/digestmd5"
	"github.com/hms-proxy/hms-proxy/security/gssapi"
	"github.com/hms-proxy/hms-proxy/security/proxyuser"
	"github.com/hms-proxy/hms-proxy/security/sasl"
	"github.com/hms-proxy/hms-proxy/security/tlsconf"
	"github.com/hms-proxy/hms-proxy/security/tokens"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Security is the assembled security boundary: the Kerberos front door of
// each listener (GSSAPI, and DIGEST-MD5 with the proxy's own delegation
// tokens), the delegation-token service, the proxy-user rules, outbound
// Kerberos to backends and impersonation. Every part is nil when its
// feature is off.
type Security struct {
	// Fronts are the listeners' front doors by listener name ("primary", ...).
	Fronts   map[string]*gssapi.FrontDoor
	Backend  *gssapi.Login // outbound login (nil: no Kerberized backend)
	Tokens   *tokens.Manager
	Proxy    *proxyuser.Rules
	SASL     *sasl.Metrics
	Imperson *router.ImpersonationMetrics

	// RouterOptions are what the router needs from security.
	dials         map[string]func(ctx context.Context, network, addr string) (net.Conn, error)
	local         map[string]router.LocalHandler
	impersonation map[string]*router.ImpersonationOptions
	log           *slog.Logger
	stopRenewal   func()       // the outbound login's background renewal (nil: not running)
	ranger        *rangerParts // the Ranger plugins (ranger.go); nil: no catalog is guarded
}

// buildSecurity checks and builds every security part the configuration
// turns on; any failure is a start error naming the key.
func buildSecurity(cfg *configs.Config, reg prometheus.Registerer, log *slog.Logger) (*Security, error) {
	s := &Security{Fronts: map[string]*gssapi.FrontDoor{}, log: log}
	sc := &cfg.Security
	kerberos := sc.Mode == configs.SecurityKerberos
	if kerberos {
		var err error
		if s.SASL, err = sasl.NewMetrics(reg); err != nil {
			return nil, err
		}
		tcfg, err := tokens.ParseConf(sc.FrontDoorConf, "security.front-door-conf.", sc.ZooKeeperSASL)
		if err != nil {
			return nil, err
		}
		if err := tokenStoreSession(cfg, tcfg.ZooKeeper); err != nil { // app/zookeeper.go
			return nil, err
		}
		if s.Tokens, err = tcfg.Open(log.With("component", "delegation-tokens"), tokens.NewMetrics(reg)); err != nil {
			return nil, fmt.Errorf("delegation token store: %w", err)
		}
		if s.Proxy, err = proxyuser.ParseConf(sc.FrontDoorConf, proxyuser.Prefix, proxyuser.Options{Metrics: proxyuser.NewMetrics(reg)}); err != nil {
			s.Close()
			return nil, fmt.Errorf("security.front-door-conf.%w", err)
		}
		replay := gssapi.NewReplayCaches() // one per service principal, shared by the listeners
		for _, fc := range cfg.Frontends() {
			name := listenerName(fc)
			protection := saslProtection(strings.Join(sc.RPCProtection, ","), "security.front-door-conf.hadoop.rpc.protection",
				fc.TLS.Enabled, fc.KeyPrefix()+"tls.enabled", log)
			digestQOPs, err := digestmd5.QOPsFromProtection("security.front-door-conf.hadoop.rpc.protection", protection)
			if err != nil {
				s.Close()
				return nil, err
			}
			digest, err := digestmd5.NewServerFactory(digestmd5.ServerOptions{Lookup: digestmd5.TokenLookup(s.Tokens), QOPs: digestQOPs})
			if err != nil {
				s.Close()
				return nil, err
			}
			fd, err := gssapi.NewFrontDoor(gssapi.FrontDoorOptions{Principal: sc.ServerPrincipal, Keytab: sc.Keytab,
				Protection: protection, AuthToLocal: sc.AuthToLocal,
				AuthToLocalMechanism: sc.AuthToLocalMechanism, BindHost: fc.BindHost, Listener: name, Metrics: s.SASL,
				// a client that does not finish the handshake is closed at the socket timeout, as Hive's is
				HandshakeTimeout: fc.ClientSocketTimeout, Replay: replay})
			if err != nil {
				s.Close()
				return nil, fmt.Errorf("listener %s: %w", name, err)
			}
			fd.Server.Mechs[digestmd5.Mechanism] = digest
			s.Fronts[name] = fd
		}
		s.local = map[string]router.LocalHandler{
			"get_delegation_token":    s.getDelegationToken,
			"renew_delegation_token":  s.renewDelegationToken,
			"cancel_delegation_token": s.cancelDelegationToken,
		}
	}
	if err := s.buildBackends(cfg, reg); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.buildRanger(cfg, reg); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// saslProtection is the SASL quality of protection to offer or ask for: the
// configured one, or "authentication" inside TLS. Hive's metastore and
// client do the same (MetaStoreUtils.getMetaStoreSaslProperties overrides
// hadoop.rpc.protection to authentication when hive.metastore.use.SSL is
// on, with a warning): TLS already protects the connection, and a peer with
// TLS on asks for nothing more, so offering only integrity or privacy there
// would refuse it.
func saslProtection(configured, key string, tls bool, tlsKey string, log *slog.Logger) string {
	if !tls || configured == "authentication" {
		return configured
	}
	if log != nil {
		log.Warn("SASL inside TLS uses quality of protection authentication, as Hive does: the configured value is not used on this connection",
			"key", key, "value", configured, "because", tlsKey+"=true")
	}
	return "authentication"
}

// catalogProtection is a catalog's SASL quality of protection (saslProtection).
func catalogProtection(cat *configs.CatalogConfig, log *slog.Logger) string {
	pre := "catalog." + cat.Name + ".conf."
	return saslProtection(strings.Join(cat.RPCProtection, ","), pre+"hadoop.rpc.protection", cat.UseSSL, pre+"hive.metastore.use.SSL", log)
}

func listenerName(fc *configs.FrontendConfig) string {
	if fc.Name == "" {
		return "primary"
	}
	return fc.Name
}

// buildBackends prepares outbound Kerberos and impersonation per catalog.
func (s *Security) buildBackends(cfg *configs.Config, reg prometheus.Registerer) error {
	sc := &cfg.Security
	dialers := map[string]*tlsconf.Dialer{}
	for _, cat := range cfg.Catalogs {
		d, err := backendDialer(cat, s.log)
		if err != nil {
			return err
		}
		dialers[cat.Name] = d
		if cat.UseSSL && !cat.SASLEnabled {
			if s.dials == nil {
				s.dials = map[string]func(ctx context.Context, network, addr string) (net.Conn, error){}
			}
			s.dials[cat.Name] = d.DialContext
		}
	}
	for _, cat := range cfg.Catalogs {
		if !cat.SASLEnabled {
			continue
		}
		if s.Backend == nil {
			// security.client-principal / -keytab default to the server's (configs fills the defaults)
			l, err := gssapi.NewBackendLogin(gssapi.BackendLoginOptions{Principal: sc.ClientPrincipal, Keytab: sc.ClientKeytab})
			if err != nil {
				return err
			}
			s.Backend = l
		}
		dial, err := gssapi.BackendDial(s.Backend, gssapi.BackendOptions{Principal: cat.KerberosPrincipal,
			Protection: catalogProtection(cat, s.log), ConnectTimeout: cat.ConnectTimeout, Dialer: dialers[cat.Name]})
		if err != nil {
			return fmt.Errorf("catalog.%s.conf: %w", cat.Name, err)
		}
		if s.dials == nil {
			s.dials = map[string]func(ctx context.Context, network, addr string) (net.Conn, error){}
		}
		s.dials[cat.Name] = dial
	}
	services := map[string]bool{}
	for _, p := range sc.ServicePrincipals {
		services[strings.TrimSpace(p)] = true
	}
	bypass := func(id *security.Identity) bool {
		return services[id.Principal] || services[id.User] || (id.RealUser == "" && id.Principal != "" && services[tokens.ShortName(id.Principal)])
	}
	for _, cat := range cfg.Catalogs {
		if !cat.ImpersonationEnabled {
			continue
		}
		if s.Imperson == nil {
			m, err := router.NewImpersonationMetrics(reg)
			if err != nil {
				return err
			}
			s.Imperson = m
		}
		o := &router.ImpersonationOptions{MaxClients: cat.ImpersonationMaxClients, ClientIdleTTL: cat.ImpersonationClientIdleTTL,
			PoolSize: cat.ImpersonationPoolMaxSize, SessionIdleTTL: cat.ImpersonationSessionIdleTTL,
			Bypass: bypass, Metrics: s.Imperson, Log: s.log}
		if cat.SASLEnabled {
			qops, err := sasl.ParseProtection(catalogProtection(cat, nil))
			if err != nil {
				return fmt.Errorf("catalog.%s.conf.hadoop.rpc.protection: %w", cat.Name, err)
			}
			o.UserDial = tokenUserDial(cat.Name, tokens.ShortName(s.Backend.Principal()), qops, dialers[cat.Name], s.log)
		} else {
			o.UserDial = setUGIUserDial(dialers[cat.Name], cat.SocketTimeout)
		}
		if s.impersonation == nil {
			s.impersonation = map[string]*router.ImpersonationOptions{}
		}
		s.impersonation[cat.Name] = o
	}
	return nil
}

// routerOptions adds what security gives the router: the calls it answers
// itself (delegation tokens).
func (s *Security) routerOptions(o *router.Options) {
	o.Local = s.local
	s.rangerRouter(o)
}

// laneOptions adds what security gives a catalog's lane: the dialer of its
// backend sessions (outbound Kerberos, TLS) and its impersonation.
func (s *Security) laneOptions(catalog string, o *router.LaneOptions) {
	if d := s.dials[catalog]; d != nil {
		o.Backend.Dial = d
	}
	o.Impersonation = s.impersonation[catalog]
	s.rangerLane(catalog, o)
}

// authenticator is the listener's handshake (nil without Kerberos).
func (s *Security) authenticator(listener string) frontdoor.Authenticator {
	fd := s.Fronts[listener]
	if fd == nil {
		return nil
	}
	return &saslAuth{fd: fd}
}

// Start starts background work (master key rolling, expired token removal,
// the outbound login's renewal before its tickets expire).
func (s *Security) Start() {
	if s.Tokens != nil {
		s.Tokens.Start()
	}
	if s.Backend != nil && s.stopRenewal == nil {
		s.stopRenewal = s.Backend.StartRenewal()
	}
	s.startRanger()
}

// Close stops background work and closes the token store.
func (s *Security) Close() {
	s.stopRanger()
	if s.stopRenewal != nil {
		s.stopRenewal()
		s.stopRenewal = nil
	}
	if s.Tokens != nil {
		if err := s.Tokens.Close(); err != nil {
			s.log.Warn("closing the delegation token store failed", "err", err)
		}
		s.Tokens = nil
	}
}

// saslAuth is a listener's frontdoor.Authenticator.
type saslAuth struct{ fd *gssapi.FrontDoor }

func (a *saslAuth) Accept(c net.Conn) (net.Conn, *security.Identity, error) {
	sc, id, _, err := a.fd.Accept(c)
	return sc, id, err
}

// KerberosReport is the /readyz kerberos section: the primary listener's
// front door and the outbound login.
func (s *Security) KerberosReport() monitoring.KerberosReport {
	// gssapi.Status has monitoring.KerberosStatus's fields: security keeps
	// its own type, the management's report converts it.
	return monitoring.KerberosReport{FrontDoor: monitoring.KerberosStatus(s.Fronts["primary"].Status()),
		Backend: monitoring.KerberosStatus(s.Backend.Status())}
}

// TokenStoreStatus is the /readyz tokenStore section (nil without tokens).
func (s *Security) TokenStoreStatus() *monitoring.TokenStoreStatus {
	if s.Tokens == nil {
		return nil
	}
	st := s.Tokens.Store()
	out := &monitoring.TokenStoreStatus{Store: st.Name(), Healthy: true}
	keys, err := st.Keys()
	if err != nil {
		out.Healthy, out.LastError = false, err.Error()
		return out
	}
	out.MasterKeys = len(keys)
	return out
}

// --- local delegation-token calls (Hive's HadoopThriftAuthBridge.Server rules) ---

func tokenRefusal(method string, err error) *planner.Refusal {
	return &planner.Refusal{Kind: planner.RefuseMeta, Reason: "delegation_token", Message: method + ": " + err.Error()}
}

func (s *Security) getDelegationToken(_ context.Context, c *router.LocalCall) {
	id := c.Identity()
	if id == nil || id.Mechanism != security.Kerberos {
		how := "no authentication"
		if id != nil {
			how = string(id.Mechanism)
		}
		c.Refuse(tokenRefusal(c.Method(), fmt.Errorf("delegation tokens are issued only to Kerberos-authenticated callers (this connection: %s)", how)))
		return
	}
	args, err := c.Args()
	if err != nil {
		c.Refuse(&planner.Refusal{Kind: planner.RefuseProtocol, Reason: "bad_arguments", Message: c.Method() + ": cannot read arguments: " + err.Error()})
		return
	}
	owner, renewer := args.Field(1).String(), args.Field(2).String()
	if owner == "" {
		c.Refuse(tokenRefusal(c.Method(), errors.New("no token owner given")))
		return
	}
	caller := id.Principal
	realUser := ""
	if tokens.ShortName(owner) != id.User && owner != caller {
		host, _, err := net.SplitHostPort(c.Remote())
		if err != nil {
			host = c.Remote()
		}
		if err := s.Proxy.Authorize(caller, owner, host); err != nil {
			c.Refuse(tokenRefusal(c.Method(), err))
			return
		}
		realUser = caller
	}
	tok, err := s.Tokens.Get(owner, renewer, realUser)
	if err != nil {
		c.Refuse(tokenRefusal(c.Method(), err))
		return
	}
	v := wire.Str(tok)
	c.Reply(&v)
}

// tokenCaller is the authenticated caller of renew/cancel.
func tokenCaller(c *router.LocalCall) (string, error) {
	id := c.Identity()
	if !id.Authenticated() {
		return "", errors.New("the caller is not authenticated (SASL)")
	}
	if id.Principal != "" {
		return id.Principal, nil
	}
	return id.User, nil
}

func (s *Security) renewDelegationToken(_ context.Context, c *router.LocalCall) {
	caller, err := tokenCaller(c)
	if err == nil {
		var args wire.Value
		if args, err = c.Args(); err == nil {
			var exp time.Time
			if exp, err = s.Tokens.Renew(args.Field(1).String(), caller); err == nil {
				v := wire.I64(exp.UnixMilli())
				c.Reply(&v)
				return
			}
		}
	}
	c.Refuse(tokenRefusal(c.Method(), err))
}

func (s *Security) cancelDelegationToken(_ context.Context, c *router.LocalCall) {
	caller, err := tokenCaller(c)
	if err == nil {
		var args wire.Value
		if args, err = c.Args(); err == nil {
			if _, err = s.Tokens.Cancel(args.Field(1).String(), caller); err == nil {
				c.Reply(nil)
				return
			}
		}
	}
	c.Refuse(tokenRefusal(c.Method(), err))
}

// --- impersonation: how a user's backend sessions are opened ---

// setUGIUserDial opens a plain backend session as the user: TCP, then
// set_ugi(user, groups), as Hive's client does at session start on a
// metastore without SASL (TUGIBasedProcessor).
func setUGIUserDial(d *tlsconf.Dialer, socketTimeout time.Duration) func(context.Context, *security.Identity, *router.Backend) (router.Dial, func(), error) {
	return func(_ context.Context, id *security.Identity, _ *router.Backend) (router.Dial, func(), error) {
		user, groups := id.User, id.Groups
		return func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			if err := setUGI(ctx, c, user, groups, socketTimeout); err != nil {
				c.Close()
				return nil, fmt.Errorf("set_ugi(%s) at session start: %w", user, err)
			}
			return c, nil
		}, nil, nil
	}
}

// setUGI sends set_ugi on a fresh session and checks the answer.
func setUGI(ctx context.Context, c net.Conn, user string, groups []string, timeout time.Duration) error {
	deadline := time.Now().Add(30 * time.Second)
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = c.SetDeadline(deadline)
	defer c.SetDeadline(time.Time{})
	gl := wire.List(wire.TString)
	for _, g := range groups {
		gl.Elems = append(gl.Elems, wire.Str(g))
	}
	args := wire.Struct(wire.Field{ID: 1, V: wire.Str(user)}, wire.Field{ID: 2, V: gl})
	_, err := c.Write(wire.AppendMessage(nil, wire.Header{Name: "set_ugi", Type: wire.Call, SeqID: 0}, &args))
	if err != nil {
		return err
	}
	_, err = readResult(c, "set_ugi", 0)
	return err
}

// readResult reads one reply of method with seq from c (nothing may follow
// it) and returns its result struct; an exception is an error with its text.
func readResult(c net.Conn, method string, seq int32) (wire.Value, error) {
	br := bufio.NewReader(c)
	m, err := wire.ReadMessage(br, wire.Limits{MaxMessage: 16 << 20}, nil)
	if err != nil {
		return wire.Value{}, err
	}
	if br.Buffered() > 0 {
		return wire.Value{}, fmt.Errorf("%d unexpected bytes after the %s reply", br.Buffered(), method)
	}
	return resultOf(m, method, seq)
}

// resultOf checks a reply and decodes its result; a declared exception or a
// TApplicationException is an error carrying its message.
func resultOf(m *wire.Message, method string, seq int32) (wire.Value, error) {
	if m.Name != method || m.SeqID != seq {
		return wire.Value{}, fmt.Errorf("the reply is %s #%d, not %s #%d", m.Name, m.SeqID, method, seq)
	}
	if m.Type == wire.Exception {
		_, msg, _ := wire.ParseAppException(m.Body())
		return wire.Value{}, fmt.Errorf("%s failed: %s", method, msg)
	}
	v, err := wire.DecodeStruct(m.Body())
	if err != nil {
		return v, fmt.Errorf("unreadable %s reply: %w", method, err)
	}
	for _, f := range v.Fields {
		if f.ID != 0 {
			msg := ""
			if e := f.V.Field(1); e != nil {
				msg = e.String()
			}
			return v, fmt.Errorf("%s failed: %s", method, msg)
		}
	}
	return v, nil
}

// tokenUserDial opens Kerberized backend sessions as the user: the proxy (a
// Hadoop proxy user on the metastore) asks the metastore, over its own
// Kerberos session, for a delegation token owned by the user, then opens the
// user's sessions with SASL DIGEST-MD5 on that token, as HiveServer2 does
// for its impersonated sessions. A tokens.Keeper renews the token on the
// metastore before its renew date and replaces it before its max date, so a
// long-lived pool keeps opening sessions; the token is cancelled when the
// user's pool closes.
func tokenUserDial(catalog, renewer string, qops []sasl.QOP, d *tlsconf.Dialer, log *slog.Logger) func(context.Context, *security.Identity, *router.Backend) (router.Dial, func(), error) {
	return func(ctx context.Context, id *security.Identity, shared *router.Backend) (router.Dial, func(), error) {
		keeper, err := tokens.NewKeeper(ctx, tokens.KeeperOptions{
			What: fmt.Sprintf("catalog %s backend token of %s", catalog, id.User),
			Obtain: func(ctx context.Context) (string, error) {
				v, err := sharedCall(ctx, shared, "get_delegation_token",
					wire.Struct(wire.Field{ID: 1, V: wire.Str(id.User)}, wire.Field{ID: 2, V: wire.Str(renewer)}))
				if err != nil {
					return "", err
				}
				token := v.Field(0).String()
				if _, err := digestmd5.TokenClientOptions(token, qops...); err != nil {
					return "", err
				}
				return token, nil
			},
			Renew: func(ctx context.Context, token string) (time.Time, error) {
				v, err := sharedCall(ctx, shared, "renew_delegation_token", wire.Struct(wire.Field{ID: 1, V: wire.Str(token)}))
				if err != nil {
					return time.Time{}, err
				}
				return time.UnixMilli(v.Field(0).Int), nil
			},
			Cancel: func(ctx context.Context, token string) error {
				_, err := sharedCall(ctx, shared, "cancel_delegation_token", wire.Struct(wire.Field{ID: 1, V: wire.Str(token)}))
				return err
			},
			Log: log.With("catalog", catalog, "user", id.User),
		})
		if err != nil {
			return nil, nil, fmt.Errorf("backend delegation token for %s: %w", id.User, err)
		}
		dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			co, err := digestmd5.TokenClientOptions(keeper.Token(), qops...)
			var mech sasl.ClientMech
			if err == nil {
				mech, err = digestmd5.NewClient(co)
			}
			if err == nil {
				deadline := time.Now().Add(sasl.DefaultHandshakeTimeout)
				if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
					deadline = dl
				}
				_ = c.SetDeadline(deadline)
				var sc net.Conn
				if sc, err = sasl.Client(c, mech); err == nil {
					_ = c.SetDeadline(time.Time{})
					return sc, nil
				}
			}
			c.Close()
			return nil, fmt.Errorf("DIGEST-MD5 session as %s: %w", id.User, err)
		}
		return dial, keeper.Close, nil
	}
}

// sharedCall makes one call of the proxy's own over a catalog's shared pool.
func sharedCall(ctx context.Context, b *router.Backend, method string, args wire.Value) (wire.Value, error) {
	req := wire.AppendMessage(nil, wire.Header{Name: method, Type: wire.Call, SeqID: 1}, &args)
	reply, done, err := b.Call(ctx, req, false)
	if err != nil {
		return wire.Value{}, err
	}
	defer done()
	return resultOf(reply, method, reply.SeqID)
}

// readiness is what /readyz reads: the backends of the router in force
// (a reload swaps it), the Kerberos logins and the token store (read with
// each backend probe, so it shares management.readiness-cache-ms).
type readiness struct {
	cur  func() *router.Router
	sec  *Security
	lis  []*frontdoor.Listener // the Thrift listeners (readiness.go)
	mu   *sync.Mutex
	tok  **monitoring.TokenStoreStatus
	rest *monitoring.RESTCatalogStatus // nil without the REST listener
}

func newReadiness(cur func() *router.Router, s *Security, lis []*frontdoor.Listener) readiness {
	var st *monitoring.TokenStoreStatus
	return readiness{cur: cur, sec: s, lis: lis, mu: &sync.Mutex{}, tok: &st}
}

func (r readiness) BackendStates() []monitoring.BackendState { return r.cur().BackendStates() }

func (r readiness) LockStoreStatus() (monitoring.LockStoreStatus, bool) {
	return r.cur().LockStoreStatus()
}

func (r readiness) ProbeBackends(ctx context.Context) {
	r.cur().ProbeBackends(ctx)
	st := r.sec.TokenStoreStatus()
	r.mu.Lock()
	*r.tok = st
	r.mu.Unlock()
}

func (r readiness) KerberosStatus() monitoring.KerberosReport { return r.sec.KerberosReport() }

func (r readiness) RESTCatalogStatus() *monitoring.RESTCatalogStatus { return r.rest }

func (r readiness) TokenStoreStatus() *monitoring.TokenStoreStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return *r.tok
}
