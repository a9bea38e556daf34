// Package zksasl authenticates go-zookeeper sessions with SASL/Kerberos
// (GSSAPI), as ZooKeeper's Java client does, without changing go-zookeeper:
// it is a zk.Dialer whose connection runs the SASL exchange right after the
// session handshake.
//
// What ZooKeeper does, as read in apache/zookeeper (ZooKeeperSaslClient,
// ClientCnxn, SecurityUtils, SaslServerPrincipal, ZooKeeperServer.processSasl,
// SaslServerCallbackHandler, PrepRequestProcessor.fixupACL, zookeeper.jute):
//
//   - The client authenticates once per TCP connection, after the
//     ConnectResponse: ClientCnxn starts the SASL client when the session is
//     established, and a reconnect (the same session on a new connection)
//     authenticates again: the server keeps auth info per connection
//     (cnxn.addAuthInfo).
//   - Each step is an ordinary request: RequestHeader{int xid, int type=102
//     (OpCode.sasl)} + GetSASLRequest{buffer token}; the answer is
//     ReplyHeader{int xid, long zxid, int err} + SetSASLResponse{buffer
//     token}, a null token being length -1. Every packet carries ZooKeeper's
//     4-byte big-endian length prefix. The server echoes the xid and does not
//     check it against later ones, so the steps here use their own xids and
//     go-zookeeper's numbering is untouched.
//   - The Java client sends the GSSAPI initial response (the AP-REQ), then
//     each token evaluateChallenge returns, an empty one included; with GSSAPI
//     the server answers the last client token too (a null token) and only
//     then is the exchange over (ZooKeeperSaslClient.respondToServer:
//     "GSSAPI: server sends a final packet after authentication succeeds or
//     fails").
//   - A failed exchange is answered with err AUTHFAILED (-115), or
//     SESSIONCLOSEDREQUIRESASLAUTH (-124) when the server requires SASL, and
//     the connection is closed. A server without a JAAS Server section
//     answers with no token at all.
//   - The SASL client is created with no properties (SecurityUtils:
//     Sasl.createSaslClient(…, null, …)): quality of protection "auth", no
//     security layer; nothing after the handshake is wrapped. The authorization
//     id is the client principal, which is what the server uses anyway.
//   - The service principal is zookeeper.server.principal if set, else
//     zookeeper.sasl.client.username (default "zookeeper") + "/" + the
//     canonical host name of the server address (unless it is the bare
//     address), in the client's realm (zookeeper.server.realm).
//   - The server authorizes every authenticated principal and adds the id
//     sasl:<name>, name being the principal's short name + "/host" + "@REALM"
//     unless zookeeper.kerberos.removeHostFromPrincipal /
//     removeRealmFromPrincipal are set: by default the full principal.
//   - An ACL entry auth:: (ZooDefs.Ids.AUTH_IDS, CREATOR_ALL_ACL) becomes the
//     creating session's authenticated ids, that is sasl:<that name>; this is
//     what Hive's ZooKeeperTokenStore uses under Kerberos and what DefaultACL
//     returns.
//
// The GSSAPI steps themselves (AP-REQ with mutual authentication, the AP-REP,
// the wrapped security-layer offer and the "no layer" answer) are
// security/gssapi's Initiator, the client the proxy uses for Kerberized
// metastores.
package zksasl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/hms-proxy/hms-proxy/security/gssapi"
	"github.com/hms-proxy/hms-proxy/security/kerberos"
	"github.com/hms-proxy/hms-proxy/security/sasl"
)

// opSASL is ZooKeeper's OpCode.sasl.
const opSASL = 102

// ZooKeeper error codes a SASL step can be answered with.
const (
	errAuthFailed                   = -115
	errSessionClosedRequireSASLAuth = -124
)

// DefaultServerPrincipal is the service principal asked for when none is
// configured: ZooKeeper's default user name "zookeeper" and the canonical
// name of the server dialled; the realm is the client's.
const DefaultServerPrincipal = "zookeeper/_HOST"

// DefaultTimeout bounds one SASL exchange (ticket requests included).
const DefaultTimeout = 15 * time.Second

// maxPacket bounds one answer of the server during the exchange.
const maxPacket = 1 << 20

// Options configure an Authenticator.
type Options struct {
	// Store names the user of the session in errors ("synthetic lock store").
	Store string
	// Login holds the client principal's credentials (a keytab login).
	Login *gssapi.Login
	// ServerPrincipal is ZooKeeper's service principal; "_HOST" becomes the
	// canonical name of the server dialled; without "@REALM" the client's
	// realm is used. "" = DefaultServerPrincipal.
	ServerPrincipal string
	// ServerPrincipalKey names the setting of ServerPrincipal in errors.
	ServerPrincipalKey string
	// CanonicalHost maps a dialled host to the name _HOST becomes (nil:
	// kerberos.CanonicalHost).
	CanonicalHost func(host string) (string, error)
	// Timeout bounds the exchange on one connection (0 = DefaultTimeout).
	Timeout time.Duration
	// Dialer opens the TCP connection (nil: a net.Dialer with the timeout
	// go-zookeeper passes).
	Dialer *net.Dialer
}

// Authenticator makes SASL-authenticated ZooKeeper connections. Safe for
// concurrent use; one serves any number of zk.Conn.
type Authenticator struct {
	o     Options
	init  *gssapi.Initiator
	realm string

	mu      sync.Mutex
	lastErr error
	okCount int64
}

// New checks the options. It does not contact the KDC or ZooKeeper.
func New(o Options) (*Authenticator, error) {
	if o.Store == "" {
		o.Store = "ZooKeeper client"
	}
	if o.Login == nil {
		return nil, fmt.Errorf("%s: ZooKeeper SASL needs a Kerberos login", o.Store)
	}
	if o.ServerPrincipal == "" {
		o.ServerPrincipal = DefaultServerPrincipal
	}
	if o.ServerPrincipalKey == "" {
		o.ServerPrincipalKey = "the ZooKeeper server principal"
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.CanonicalHost == nil {
		o.CanonicalHost = kerberos.CanonicalHost
	}
	_, realm, err := gssapi.SplitPrincipal(o.Login.Principal())
	if err != nil {
		return nil, fmt.Errorf("%s: ZooKeeper SASL client principal: %w", o.Store, err)
	}
	p := o.ServerPrincipal
	if !strings.Contains(p, "@") {
		p += "@" + realm
	}
	name, _, err := gssapi.SplitPrincipal(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", o.Store, o.ServerPrincipalKey, err)
	}
	if parts := strings.Split(name, "/"); len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return nil, fmt.Errorf("%s: %s %q is not of the form service/host[@REALM] (ZooKeeper's is zookeeper/<host>)",
			o.Store, o.ServerPrincipalKey, o.ServerPrincipal)
	}
	o.ServerPrincipal = p
	canon := o.CanonicalHost
	in, err := gssapi.NewInitiator(gssapi.InitiatorOptions{Login: o.Login, Principal: p, QOPs: []sasl.QOP{sasl.QOPAuth},
		CanonicalHost: func(h string) (string, error) {
			// ZooKeeper keeps the dialled name when the lookup only gives the address back
			c, err := canon(h)
			if err == nil && net.ParseIP(c) != nil && net.ParseIP(h) == nil {
				c = strings.ToLower(h)
			}
			return c, err
		}, HandshakeTimeout: o.Timeout})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.Store, err)
	}
	return &Authenticator{o: o, init: in, realm: realm}, nil
}

// ClientPrincipal is the principal the sessions authenticate as.
func (a *Authenticator) ClientPrincipal() string { return a.o.Login.Principal() }

// ServicePrincipal is the principal asked for when dialling host.
func (a *Authenticator) ServicePrincipal(host string) (string, error) {
	return a.init.ServicePrincipal(host)
}

// DefaultACL is the ACL of znodes created under Kerberos: all permissions
// for the creating session's SASL identity (ZooKeeper's CREATOR_ALL_ACL,
// auth::cdrwa, which the server turns into sasl:<principal>:cdrwa).
func DefaultACL() []zk.ACL { return zk.AuthACL(zk.PermAll) }

// Check logs in (when not yet logged in) and gets a service ticket for every
// server, so that a wrong keytab, a principal the KDC does not know or a
// ZooKeeper principal missing from the KDC fails at start with an error
// naming it, not as a stream of failed reconnects.
func (a *Authenticator) Check(servers []string) error {
	if err := a.o.Login.Login(); err != nil {
		return fmt.Errorf("%s: ZooKeeper SASL: %w", a.o.Store, err)
	}
	for _, s := range servers {
		host, _, err := net.SplitHostPort(s)
		if err != nil {
			return fmt.Errorf("%s: ZooKeeper server %q: %w", a.o.Store, s, err)
		}
		spn, err := a.init.ServicePrincipal(host)
		if err != nil {
			return fmt.Errorf("%s: %s for ZooKeeper %s: %w", a.o.Store, a.o.ServerPrincipalKey, s, err)
		}
		name, realm, _ := gssapi.SplitPrincipal(spn)
		if _, _, err := a.o.Login.ServiceTicket(name, realm); err != nil {
			return fmt.Errorf("%s: ZooKeeper SASL with %s (%s=%s): %w", a.o.Store, s, a.o.ServerPrincipalKey, spn, err)
		}
	}
	return nil
}

// Servers splits a ZooKeeper connect string (host:port,…[/chroot]) into
// host:port pairs, port 2181 when none is given.
func Servers(connect string) []string {
	if i := strings.IndexByte(connect, '/'); i >= 0 {
		connect = connect[:i]
	}
	var out []string
	for _, s := range strings.Split(connect, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(s); err != nil {
			s = net.JoinHostPort(s, "2181")
		}
		out = append(out, s)
	}
	return out
}

// LastError is the last failed exchange (nil once one has succeeded since).
func (a *Authenticator) LastError() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lastErr
}

// Authentications is the number of successful exchanges (one per
// connection: a reconnect counts again).
func (a *Authenticator) Authentications() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.okCount
}

func (a *Authenticator) record(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.lastErr = err
		return
	}
	a.lastErr = nil
	a.okCount++
}

// Dial is a zk.Dialer (zk.WithDialer(a.Dial)): the TCP connection, wrapped
// so that the SASL exchange runs once go-zookeeper has sent its
// ConnectRequest and before it sees the ConnectResponse.
func (a *Authenticator) Dial(network, address string, timeout time.Duration) (net.Conn, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("%s: ZooKeeper server %q: %w", a.o.Store, address, err)
	}
	d := a.o.Dialer
	if d == nil {
		d = &net.Dialer{Timeout: timeout}
	}
	c, err := d.Dial(network, address)
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c, a: a, host: host, addr: address}, nil
}

// conn passes go-zookeeper's writes through; its first read takes the whole
// ConnectResponse from the server, runs the SASL exchange (go-zookeeper is
// blocked in that read, so nothing else is on the wire) and then hands the
// ConnectResponse over unchanged.
type conn struct {
	net.Conn
	a          *Authenticator
	host, addr string

	done    bool
	pending []byte
}

func (c *conn) Read(p []byte) (int, error) {
	if !c.done {
		if err := c.handshake(); err != nil {
			_ = c.Conn.Close()
			return 0, err
		}
		c.done = true
	}
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

func (c *conn) handshake() error {
	resp, err := readPacket(c.Conn)
	if err != nil {
		return err // go-zookeeper reports a connection that failed before the session
	}
	c.pending = resp
	// ConnectResponse{int protocolVersion, int timeOut, long sessionId, …}:
	// session id 0 means the session expired; go-zookeeper starts a new one
	// on the next connection, and this one carries nothing to authenticate.
	if len(resp) < 4+16 || binary.BigEndian.Uint64(resp[12:20]) == 0 {
		return nil
	}
	dl := time.Now().Add(c.a.o.Timeout)
	_ = c.Conn.SetDeadline(dl)
	defer func() { _ = c.Conn.SetDeadline(time.Time{}) }()
	if err := c.exchange(); err != nil {
		spn, _ := c.a.init.ServicePrincipal(c.host)
		err = fmt.Errorf("%s: ZooKeeper SASL (GSSAPI) authentication with %s as %s for %s failed: %w",
			c.a.o.Store, c.addr, c.a.o.Login.Principal(), spn, err)
		c.a.record(err) // only failed exchanges: a connection lost before the session is go-zookeeper's to report
		return err
	}
	c.a.record(nil)
	return nil
}

func (c *conn) exchange() error {
	m, err := c.a.init.Mech(c.host)
	if err != nil {
		return err
	}
	tok, err := m.Start()
	if err != nil {
		return err
	}
	for xid := int32(1); xid <= 8; xid++ {
		reply, err := c.step(xid, tok)
		if err != nil {
			return err
		}
		if reply == nil {
			return errors.New("the server answered without a SASL token (is SASL enabled on the ZooKeeper server: a JAAS Server section and the SASLAuthenticationProvider?)")
		}
		next, done, err := m.Step(reply)
		if err != nil {
			return err
		}
		if next == nil {
			next = []byte{} // Java sends the empty token evaluateChallenge returns
		}
		if done {
			// the server answers the last token too (a null token): only then
			// does the session carry the SASL identity
			_, err := c.step(xid+1, next)
			return err
		}
		tok = next
	}
	return errors.New("the server did not finish the exchange within 8 steps")
}

// step sends one GetSASLRequest and returns the SetSASLResponse's token
// (nil for a null token).
func (c *conn) step(xid int32, tok []byte) ([]byte, error) {
	b := make([]byte, 4+4+4+4+len(tok))
	binary.BigEndian.PutUint32(b[0:], uint32(len(b)-4))
	binary.BigEndian.PutUint32(b[4:], uint32(xid))
	binary.BigEndian.PutUint32(b[8:], opSASL)
	binary.BigEndian.PutUint32(b[12:], uint32(len(tok)))
	copy(b[16:], tok)
	if _, err := c.Conn.Write(b); err != nil {
		return nil, fmt.Errorf("sending SASL token: %w", err)
	}
	resp, err := readPacket(c.Conn)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the server closed the connection during the SASL exchange (see its log)")
		}
		return nil, fmt.Errorf("reading the server's SASL answer: %w", err)
	}
	body := resp[4:]
	if len(body) < 16 {
		return nil, fmt.Errorf("the server's SASL answer is %d bytes, too short for a reply header", len(body))
	}
	if got := int32(binary.BigEndian.Uint32(body[0:])); got != xid {
		return nil, fmt.Errorf("the server answered xid %d to SASL request %d", got, xid)
	}
	switch code := int32(binary.BigEndian.Uint32(body[12:])); code {
	case 0:
	case errAuthFailed:
		return nil, errors.New("the server refused the authentication (AUTHFAILED; the server log says why)")
	case errSessionClosedRequireSASLAuth:
		return nil, errors.New("the server refused the authentication and requires SASL (SESSIONCLOSEDREQUIRESASLAUTH; the server log says why)")
	default:
		return nil, fmt.Errorf("the server answered the SASL request with error %d", code)
	}
	rest := body[16:]
	if len(rest) < 4 {
		return nil, nil // no SetSASLResponse
	}
	n := int32(binary.BigEndian.Uint32(rest))
	if n < 0 {
		return nil, nil
	}
	if int(n) > len(rest)-4 {
		return nil, fmt.Errorf("the server's SASL token is cut short (%d of %d bytes)", len(rest)-4, n)
	}
	return rest[4 : 4+n], nil
}

// readPacket reads one length-prefixed ZooKeeper packet, prefix included.
func readPacket(r io.Reader) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if n > maxPacket {
		return nil, fmt.Errorf("ZooKeeper packet of %d bytes (more than %d)", n, maxPacket)
	}
	b := make([]byte, 4+n)
	copy(b, h[:])
	if _, err := io.ReadFull(r, b[4:]); err != nil {
		return nil, err
	}
	return b, nil
}

// LoginOptions name the client credentials and the settings they come from.
type LoginOptions struct {
	Principal, PrincipalKey string // _HOST becomes the canonical name of Host
	Host                    string // "" = this machine (kerberos.ExpandHost)
	Keytab, KeytabKey       string
	Krb5Conf                string // "" = $KRB5_CONFIG or /etc/krb5.conf
}

// NewLogin reads the keytab and krb5.conf for the client principal (no KDC
// contact; Check logs in). Errors name the setting.
func NewLogin(o LoginOptions) (*gssapi.Login, error) {
	if o.Principal == "" {
		return nil, fmt.Errorf("%s is required for ZooKeeper SASL", o.PrincipalKey)
	}
	if o.Keytab == "" {
		return nil, fmt.Errorf("%s is required for ZooKeeper SASL", o.KeytabKey)
	}
	p, err := kerberos.ExpandHost(o.Principal, o.Host)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.PrincipalKey, err)
	}
	kt, err := gssapi.LoadKeytab(o.Keytab)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.KeytabKey, err)
	}
	cfg, err := gssapi.LoadConfig(gssapi.Krb5ConfPath(o.Krb5Conf))
	if err != nil {
		return nil, err
	}
	l, err := gssapi.NewLogin(gssapi.LoginOptions{Principal: p, Keytab: kt, Config: cfg})
	if err != nil {
		return nil, fmt.Errorf("%s / %s: %w", o.PrincipalKey, o.KeytabKey, err)
	}
	return l, nil
}
