package gssapi

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/errorcode"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/hms-proxy/hms-proxy/security/sasl"
)

// Mechanism is the SASL name of this mechanism.
const Mechanism = "GSSAPI"

// Failure reasons a GSSAPI handshake reports (the reason label of
// hms_proxy_authentication_failures_total, next to the transport's).
const (
	ReasonBadToken      = "bad_token"     // not a GSS-API Kerberos AP-REQ, or a bad layer message
	ReasonWrongService  = "wrong_service" // a ticket for another service principal
	ReasonWrongRealm    = "wrong_realm"   // a ticket issued by another realm
	ReasonNoKey         = "no_key"        // no keytab key for the ticket (kvno/enctype) or it does not decrypt
	ReasonExpired       = "expired"       // ticket expired or not yet valid
	ReasonSkew          = "clock_skew"    // authenticator time too far off
	ReasonReplay        = "replay"        // an authenticator seen before
	ReasonBadAddress    = "bad_address"   // the ticket's client addresses do not include the peer
	ReasonEnctype       = "unsupported_enctype"
	ReasonQOP           = "qop"       // the client chose a layer not offered
	ReasonAuthzID       = "authzid"   // the client asked to act as someone else
	ReasonIntegrity     = "integrity" // a handshake wrap token failed its checks
	ReasonUnexpectedMsg = "unexpected_message"
	ReasonAuthToLocal   = "auth_to_local" // the principal maps to no user
)

// peerFailure is what the client sees in the BAD frame, as a Hive metastore
// answers every GSSAPI failure; the details stay in the server's log.
const peerFailure = "GSS initiate failed"

// DefaultMaxClockSkew is Kerberos' usual allowed clock difference.
const DefaultMaxClockSkew = 5 * time.Minute

// defaultMaxBuffer is the receive buffer size offered (Java's default).
const defaultMaxBuffer = 65536

// AcceptorOptions configure the front-door GSSAPI mechanism.
type AcceptorOptions struct {
	// Principal is the service principal clients get tickets for
	// (security.server-principal, _HOST already expanded), e.g.
	// "hive/proxy.example.com@EXAMPLE.COM".
	Principal string
	// Keytab holds the principal's keys (security.keytab; see LoadKeytab).
	Keytab *keytab.Keytab
	// QOPs are the layers offered (hadoop.rpc.protection of the front door);
	// empty means auth only.
	QOPs []sasl.QOP
	// MaxClockSkew bounds ticket times and the authenticator's time
	// (DefaultMaxClockSkew).
	MaxClockSkew time.Duration
	// Now is the clock (time.Now).
	Now func() time.Time
	// Authorize, when set, is asked about the client principal before the
	// exchange completes (auth_to_local mapping); an error refuses the client
	// with BAD and reason "auth_to_local".
	Authorize func(principal string) error
	// Replay holds the replay caches shared with the other acceptors of
	// this process (one per service principal, as Java keeps one per
	// principal per JVM), so an authenticator seen on one listener is a
	// replay on every other; nil: this acceptor's own.
	Replay *ReplayCaches
}

// Acceptor verifies Java/MIT GSSAPI clients against a keytab. It is safe for
// concurrent use; one Acceptor serves a listener (its replay cache is shared
// by all connections).
type Acceptor struct {
	o       AcceptorOptions
	service types.PrincipalName
	realm   string
	mask    byte
	replay  *replayCache
}

// NewAcceptor checks the options: a principal of the form name/host@REALM or
// name@REALM, a keytab that holds keys for it, valid QOPs.
func NewAcceptor(o AcceptorOptions) (*Acceptor, error) {
	if o.Keytab == nil {
		return nil, errors.New("gssapi: acceptor needs a keytab (security.keytab)")
	}
	name, realm, err := SplitPrincipal(o.Principal)
	if err != nil {
		return nil, fmt.Errorf("gssapi: security.server-principal: %w", err)
	}
	if strings.Contains(o.Principal, "_HOST") {
		return nil, fmt.Errorf("gssapi: security.server-principal %q still contains _HOST: expand it first (kerberos.ExpandHost)", o.Principal)
	}
	pn := types.NewPrincipalName(2 /* KRB_NT_SRV_INST */, name)
	if !keytabHas(o.Keytab, pn, realm) {
		return nil, fmt.Errorf("gssapi: the keytab holds no key for %s (security.server-principal); it has: %s",
			o.Principal, keytabPrincipals(o.Keytab))
	}
	if len(o.QOPs) == 0 {
		o.QOPs = []sasl.QOP{sasl.QOPAuth}
	}
	var mask byte
	for _, q := range o.QOPs {
		switch q {
		case sasl.QOPAuth:
			mask |= layerNone
		case sasl.QOPAuthInt:
			mask |= layerIntegrity
		case sasl.QOPAuthConf:
			mask |= layerPrivacy
		default:
			return nil, fmt.Errorf("gssapi: unknown QOP %q", q)
		}
	}
	if o.MaxClockSkew <= 0 {
		o.MaxClockSkew = DefaultMaxClockSkew
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Replay == nil {
		o.Replay = NewReplayCaches()
	}
	return &Acceptor{o: o, service: pn, realm: realm, mask: mask, replay: o.Replay.forPrincipal(o.Principal, o.MaxClockSkew)}, nil
}

// Principal is the service principal the acceptor answers for.
func (a *Acceptor) Principal() string { return a.o.Principal }

// Factory returns the sasl.ServerMechFactory of this acceptor (Server.Mechs["GSSAPI"]).
func (a *Acceptor) Factory() sasl.ServerMechFactory {
	return func() (sasl.ServerMech, error) { return &acceptorMech{a: a}, nil }
}

type acceptorMech struct {
	a      *Acceptor
	peer   string
	state  int // 0: AP-REQ, 1: empty after AP-REP, 2: layer choice, 3: done
	layer  *Layer
	client string
	res    sasl.Result
}

func (m *acceptorMech) Name() string          { return Mechanism }
func (m *acceptorMech) SetPeer(remote string) { m.peer = remote }
func (m *acceptorMech) Result() sasl.Result   { return m.res }

func fail(reason string, format string, args ...any) error {
	return &sasl.MechError{Reason: reason, Peer: peerFailure, Err: fmt.Errorf(format, args...)}
}

func (m *acceptorMech) Step(resp []byte) ([]byte, bool, error) {
	switch m.state {
	case 0:
		return m.acceptAPReq(resp)
	case 1:
		if len(resp) != 0 {
			return nil, false, fail(ReasonUnexpectedMsg, "expected an empty response after the AP-REP, got %d bytes", len(resp))
		}
		return m.offer()
	case 2:
		return m.choose(resp)
	}
	return nil, false, fail(ReasonUnexpectedMsg, "the GSSAPI exchange is already complete")
}

// krbReason maps a Kerberos error of the AP-REQ checks to a reason.
func krbReason(err error) string {
	var ke messages.KRBError
	if errors.As(err, &ke) {
		switch ke.ErrorCode {
		case errorcode.KRB_AP_ERR_TKT_EXPIRED, errorcode.KRB_AP_ERR_TKT_NYV:
			return ReasonExpired
		case errorcode.KRB_AP_ERR_SKEW:
			return ReasonSkew
		case errorcode.KRB_AP_ERR_BADADDR:
			return ReasonBadAddress
		case errorcode.KRB_AP_ERR_REPEAT:
			return ReasonReplay
		case errorcode.KRB_AP_ERR_BAD_INTEGRITY, errorcode.KRB_AP_ERR_BADMATCH:
			return ReasonBadToken
		}
	}
	return ReasonNoKey
}

func (m *acceptorMech) acceptAPReq(tok []byte) ([]byte, bool, error) {
	a := m.a
	id, inner, err := parseContextToken(tok)
	if err != nil {
		return nil, false, fail(ReasonBadToken, "%v", err)
	}
	if id != tokAPReq {
		return nil, false, fail(ReasonBadToken, "GSS-API token id % x is not an AP-REQ", id[:])
	}
	var req messages.APReq
	if err := req.Unmarshal(inner); err != nil {
		return nil, false, fail(ReasonBadToken, "decoding the AP-REQ: %v", err)
	}
	sname := req.Ticket.SName.PrincipalNameString() + "@" + req.Ticket.Realm
	if req.Ticket.Realm != a.realm {
		return nil, false, fail(ReasonWrongRealm, "ticket for %s is from realm %s, this service is %s", sname, req.Ticket.Realm, a.o.Principal)
	}
	if !req.Ticket.SName.Equal(a.service) {
		return nil, false, fail(ReasonWrongService, "ticket is for %s, this service is %s", sname, a.o.Principal)
	}
	var addr types.HostAddress
	if host, _, err := net.SplitHostPort(m.peer); err == nil {
		if ip := net.ParseIP(host); ip != nil {
			addr = types.HostAddressFromNetIP(ip)
		}
	}
	// keytab key (kvno, enctype), ticket times +- skew, client addresses, authenticator, cname, skew
	ok, err := req.Verify(a.o.Keytab, a.o.MaxClockSkew, addr, nil)
	if err != nil || !ok {
		if err == nil {
			err = errors.New("ticket not valid")
		}
		return nil, false, fail(krbReason(err), "verifying the AP-REQ for %s from %s: %v", sname, m.peer, err)
	}
	auth := &req.Authenticator
	m.client = auth.CName.PrincipalNameString() + "@" + auth.CRealm
	if err := a.replay.check(req.Ticket.SName, auth, a.o.Now()); err != nil {
		return nil, false, fail(ReasonReplay, "authenticator of %s: %v", m.client, err)
	}
	flags, err := gssChecksumFlags(auth)
	if err != nil {
		return nil, false, fail(ReasonBadToken, "%v", err)
	}
	key := req.Ticket.DecryptedEncPart.Key
	if auth.SubKey.KeyType != 0 {
		key = auth.SubKey
	}
	if !supportedEtype(key.KeyType) {
		return nil, false, fail(ReasonEnctype, "%s uses encryption type %d; only AES enctypes are supported", m.client, key.KeyType)
	}
	initSeq := uint64(auth.SeqNumber)
	if flags&gssFlagMutual == 0 {
		// no AP-REP: the acceptor's sequence starts where the initiator's does (Java's and MIT's default)
		if m.layer, err = NewLayer(key, true, false, false, initSeq, initSeq); err != nil {
			return nil, false, fail(ReasonEnctype, "%v", err)
		}
		return m.offer()
	}
	seq, err := randomSeq()
	if err != nil {
		return nil, false, fail(sasl.ReasonInternal, "%v", err)
	}
	rep, err := buildAPRep(&req, seq)
	if err != nil {
		return nil, false, fail(sasl.ReasonInternal, "%v", err)
	}
	if m.layer, err = NewLayer(key, true, false, false, uint64(seq), initSeq); err != nil {
		return nil, false, fail(ReasonEnctype, "%v", err)
	}
	m.state = 1
	return rep, false, nil
}

// offer sends the wrapped layer offer: the configured QOP mask and the
// receive buffer size.
func (m *acceptorMech) offer() ([]byte, bool, error) {
	tok, err := m.layer.wrapIntegrity(securityMessage(m.a.mask, defaultMaxBuffer, ""))
	if err != nil {
		return nil, false, fail(sasl.ReasonInternal, "%v", err)
	}
	m.state = 2
	return tok, false, nil
}

func (m *acceptorMech) choose(tok []byte) ([]byte, bool, error) {
	msg, err := m.layer.unwrapAny(tok)
	if err != nil {
		return nil, false, fail(ReasonIntegrity, "layer choice of %s: %v", m.client, err)
	}
	if len(msg) < 4 {
		return nil, false, fail(ReasonBadToken, "layer choice of %s is %d bytes, want at least 4", m.client, len(msg))
	}
	chosen := msg[0]
	if chosen&m.a.mask == 0 {
		return nil, false, fail(ReasonQOP, "%s chose security layer mask %#x, offered %#x", m.client, chosen, m.a.mask)
	}
	authz := string(msg[4:])
	if authz != "" && authz != m.client {
		return nil, false, fail(ReasonAuthzID, "%s asked to act as %q", m.client, authz)
	}
	if m.a.o.Authorize != nil {
		if err := m.a.o.Authorize(m.client); err != nil {
			return nil, false, fail(ReasonAuthToLocal, "%s: %v", m.client, err)
		}
	}
	res := sasl.Result{Mechanism: Mechanism, Principal: m.client, AuthzID: authz}
	switch {
	case chosen&m.a.mask&layerPrivacy != 0:
		res.QOP = sasl.QOPAuthConf
		m.layer.seal = true
		res.Layer = m.layer
	case chosen&m.a.mask&layerIntegrity != 0:
		res.QOP = sasl.QOPAuthInt
		res.Layer = m.layer
	default:
		res.QOP = sasl.QOPAuth
	}
	m.res = res
	m.state = 3
	return nil, true, nil
}

// ReplayCaches are the replay caches of one process, one per service
// principal. Safe for concurrent use.
type ReplayCaches struct {
	mu sync.Mutex
	m  map[string]*replayCache
}

// NewReplayCaches returns an empty set of replay caches.
func NewReplayCaches() *ReplayCaches { return &ReplayCaches{m: map[string]*replayCache{}} }

// forPrincipal is principal's cache; a larger skew widens its window.
func (r *ReplayCaches) forPrincipal(principal string, skew time.Duration) *replayCache {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.m[principal]
	if c == nil {
		c = newReplayCache(skew)
		r.m[principal] = c
	}
	c.mu.Lock()
	c.window = max(c.window, 2*skew)
	c.mu.Unlock()
	return c
}

// replayCache remembers authenticators (client, time, service) for the skew
// window, as RFC 4120 3.2.3 asks of a service.
type replayCache struct {
	window time.Duration
	mu     sync.Mutex
	seen   map[string]time.Time // key -> when it may be forgotten
	sweep  time.Time
}

func newReplayCache(skew time.Duration) *replayCache {
	return &replayCache{window: 2 * skew, seen: map[string]time.Time{}}
}

func (c *replayCache) check(sname types.PrincipalName, a *types.Authenticator, now time.Time) error {
	key := fmt.Sprintf("%s@%s|%s|%d|%d", a.CName.PrincipalNameString(), a.CRealm, sname.PrincipalNameString(),
		a.CTime.Unix(), a.Cusec)
	c.mu.Lock()
	defer c.mu.Unlock()
	if now.After(c.sweep) {
		for k, until := range c.seen {
			if now.After(until) {
				delete(c.seen, k)
			}
		}
		c.sweep = now.Add(c.window / 4)
	}
	if until, ok := c.seen[key]; ok && !now.After(until) {
		return errors.New("request is a replay (the same authenticator was presented before)")
	}
	c.seen[key] = now.Add(c.window)
	return nil
}
