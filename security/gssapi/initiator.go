package gssapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"

	"github.com/hms-proxy/hms-proxy/security/kerberos"
	"github.com/hms-proxy/hms-proxy/security/sasl"
)

// InitiatorOptions configure outbound Kerberos to one backend.
type InitiatorOptions struct {
	// Login supplies the tickets (security.client-principal/-keytab).
	Login *Login
	// Principal is the backend's service principal
	// (hive.metastore.kerberos.principal), "_HOST" allowed: it becomes the
	// canonical name of the host dialled.
	Principal string
	// QOPs are the acceptable layers in order of preference (the backend's
	// hadoop.rpc.protection); empty means auth.
	QOPs []sasl.QOP
	// CanonicalHost maps a dialled host to the name _HOST becomes (nil:
	// kerberos.CanonicalHost, the reverse lookup Hive 3's client does).
	CanonicalHost func(host string) (string, error)
	// HandshakeTimeout bounds dial plus negotiation when the context has no
	// deadline (sasl.DefaultHandshakeTimeout).
	HandshakeTimeout time.Duration
}

// Initiator opens Kerberos/SASL connections to a backend metastore.
type Initiator struct {
	o     InitiatorOptions
	realm string
}

// NewInitiator checks the options.
func NewInitiator(o InitiatorOptions) (*Initiator, error) {
	if o.Login == nil {
		return nil, errors.New("gssapi: initiator needs a login (security.client-principal / security.client-keytab)")
	}
	name, realm, err := SplitPrincipal(o.Principal)
	if err != nil {
		return nil, fmt.Errorf("gssapi: hive.metastore.kerberos.principal: %w", err)
	}
	if !strings.Contains(name, "/") {
		return nil, fmt.Errorf("gssapi: hive.metastore.kerberos.principal %q is not of the form service/host@REALM", o.Principal)
	}
	if len(o.QOPs) == 0 {
		o.QOPs = []sasl.QOP{sasl.QOPAuth}
	}
	for _, q := range o.QOPs {
		if q != sasl.QOPAuth && q != sasl.QOPAuthInt && q != sasl.QOPAuthConf {
			return nil, fmt.Errorf("gssapi: unknown QOP %q", q)
		}
	}
	if o.CanonicalHost == nil {
		o.CanonicalHost = kerberos.CanonicalHost
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = sasl.DefaultHandshakeTimeout
	}
	return &Initiator{o: o, realm: realm}, nil
}

// ServicePrincipal is the principal used for host: _HOST replaced by the
// canonical name of host.
func (i *Initiator) ServicePrincipal(host string) (string, error) {
	if !strings.Contains(i.o.Principal, "_HOST") {
		return i.o.Principal, nil
	}
	canon, err := i.o.CanonicalHost(host)
	if err != nil {
		return "", fmt.Errorf("gssapi: _HOST in %s for %s: %w", i.o.Principal, host, err)
	}
	return strings.Replace(i.o.Principal, "_HOST", canon, 1), nil
}

// Mech returns a fresh client mechanism for one connection to host.
func (i *Initiator) Mech(host string) (sasl.ClientMech, error) {
	p, err := i.ServicePrincipal(host)
	if err != nil {
		return nil, err
	}
	spn, realm, _ := SplitPrincipal(p)
	return &initiatorMech{i: i, spn: spn, realm: realm}, nil
}

// ContextDialer opens the transport SASL runs over: TCP (*net.Dialer), or
// TLS over TCP (hive.metastore.use.SSL: Hive's client puts SASL inside TLS).
type ContextDialer interface {
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// Dial returns a pool-shaped dial function: TCP, then the SASL GSSAPI
// handshake, bounded by ctx's deadline or HandshakeTimeout.
func (i *Initiator) Dial(d ContextDialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if d == nil {
		d = &net.Dialer{KeepAlive: 30 * time.Second}
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("gssapi: backend address %q: %w", addr, err)
		}
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, i.o.HandshakeTimeout)
			defer cancel()
		}
		m, err := i.Mech(host)
		if err != nil {
			return nil, err
		}
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		dl, _ := ctx.Deadline()
		_ = c.SetDeadline(dl)
		stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
		sc, err := sasl.Client(c, m)
		stop()
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("gssapi: Kerberos handshake with %s: %w", addr, err)
		}
		if err := c.SetDeadline(time.Time{}); err != nil {
			c.Close()
			return nil, err
		}
		return sc, nil
	}
}

type initiatorMech struct {
	i          *Initiator
	spn, realm string
	state      int
	auth       types.Authenticator
	sessionKey types.EncryptionKey
	layer      *Layer
	chosen     sasl.QOP
}

func (m *initiatorMech) Name() string { return Mechanism }

func (m *initiatorMech) Layer() sasl.Layer {
	if m.chosen == sasl.QOPAuth || m.layer == nil {
		return nil
	}
	return m.layer
}

// Start builds the AP-REQ as the Java client does: a fresh subkey and
// sequence number, the 0x8003 checksum asking for mutual authentication,
// replay and sequence detection, integrity and confidentiality.
func (m *initiatorMech) Start() ([]byte, error) {
	tkt, key, err := m.i.o.Login.ServiceTicket(m.spn, m.realm)
	if err != nil {
		return nil, err
	}
	cname, crealm, err := m.i.o.Login.credentials()
	if err != nil {
		return nil, err
	}
	tok, auth, err := buildAPReq(tkt, key, cname, crealm)
	if err != nil {
		return nil, fmt.Errorf("building the AP-REQ for %s@%s: %w", m.spn, m.realm, err)
	}
	m.auth, m.sessionKey = auth, key
	return tok, nil
}

// buildAPReq makes the framed AP-REQ for a ticket: a fresh authenticator with
// subkey and sequence number and the 0x8003 checksum flags Java sends.
func buildAPReq(tkt messages.Ticket, key types.EncryptionKey, cname types.PrincipalName, crealm string) ([]byte, types.Authenticator, error) {
	return buildAPReqFlags(tkt, key, cname, crealm, gssFlagMutual|gssFlagReplay|gssFlagSequence|gssFlagConf|gssFlagInteg)
}

func buildAPReqFlags(tkt messages.Ticket, key types.EncryptionKey, cname types.PrincipalName, crealm string, flags uint32) ([]byte, types.Authenticator, error) {
	auth, err := types.NewAuthenticator(crealm, cname)
	if err != nil {
		return nil, auth, err
	}
	et, err := crypto.GetEtype(key.KeyType)
	if err != nil {
		return nil, auth, err
	}
	if err := auth.GenerateSeqNumberAndSubKey(key.KeyType, et.GetKeyByteSize()); err != nil {
		return nil, auth, err
	}
	auth.Cksum = gssChecksum(flags)
	req, err := messages.NewAPReq(tkt, key, auth)
	if err != nil {
		return nil, auth, err
	}
	b, err := req.Marshal()
	if err != nil {
		return nil, auth, fmt.Errorf("encoding the AP-REQ: %w", err)
	}
	return frameContextToken(tokAPReq, b), auth, nil
}

func (m *initiatorMech) Step(ch []byte) ([]byte, bool, error) {
	switch m.state {
	case 0:
		return m.apRep(ch)
	case 1:
		return m.chooseLayer(ch)
	}
	return nil, false, errors.New("GSSAPI exchange already complete")
}

// apRep verifies the acceptor's AP-REP (mutual authentication).
func (m *initiatorMech) apRep(tok []byte) ([]byte, bool, error) {
	id, inner, err := parseContextToken(tok)
	if err != nil {
		return nil, false, fmt.Errorf("expected the AP-REP of mutual authentication: %w", err)
	}
	if id == tokKRBError {
		var ke messages.KRBError
		if ke.Unmarshal(inner) == nil {
			return nil, false, fmt.Errorf("the server refused the ticket for %s@%s: %v", m.spn, m.realm, ke)
		}
		return nil, false, errors.New("the server answered with a KRB-ERROR")
	}
	if id != tokAPRep {
		return nil, false, fmt.Errorf("expected an AP-REP, got GSS token id % x", id[:])
	}
	var rep messages.APRep
	if err := rep.Unmarshal(inner); err != nil {
		return nil, false, fmt.Errorf("decoding the AP-REP: %w", err)
	}
	plain, err := crypto.DecryptEncPart(rep.EncPart, m.sessionKey, keyusage.AP_REP_ENCPART)
	if err != nil {
		return nil, false, fmt.Errorf("AP-REP does not decrypt with the session key (not the real %s): %w", m.spn, err)
	}
	var part messages.EncAPRepPart
	if err := part.Unmarshal(plain); err != nil {
		return nil, false, fmt.Errorf("decoding the AP-REP: %w", err)
	}
	if part.CTime.Unix() != m.auth.CTime.Unix() || part.Cusec != m.auth.Cusec {
		return nil, false, errors.New("mutual authentication failed: the AP-REP does not echo the authenticator's time")
	}
	key, accSub := m.auth.SubKey, false
	if part.Subkey.KeyType != 0 {
		key, accSub = part.Subkey, true
	}
	m.layer, err = NewLayer(key, false, accSub, false, uint64(m.auth.SeqNumber), uint64(part.SequenceNumber))
	if err != nil {
		return nil, false, err
	}
	m.state = 1
	return nil, false, nil
}

// chooseLayer reads the acceptor's offer and answers with the first QOP of
// the preference list it offers.
func (m *initiatorMech) chooseLayer(tok []byte) ([]byte, bool, error) {
	msg, err := m.layer.unwrapAny(tok)
	if err != nil {
		return nil, false, fmt.Errorf("the security layer offer: %w", err)
	}
	if len(msg) != 4 {
		return nil, false, fmt.Errorf("the security layer offer is %d bytes, want 4", len(msg))
	}
	offered := msg[0]
	bits := map[sasl.QOP]byte{sasl.QOPAuth: layerNone, sasl.QOPAuthInt: layerIntegrity, sasl.QOPAuthConf: layerPrivacy}
	var pick byte
	for _, q := range m.i.o.QOPs {
		if offered&bits[q] != 0 {
			pick, m.chosen = bits[q], q
			break
		}
	}
	if pick == 0 {
		return nil, false, fmt.Errorf("the server offers security layers %#x, none of the configured %v (hadoop.rpc.protection)", offered, m.i.o.QOPs)
	}
	maxBuf := 0
	if pick != layerNone {
		maxBuf = defaultMaxBuffer
	}
	out, err := m.layer.wrapIntegrity(securityMessage(pick, maxBuf, ""))
	if err != nil {
		return nil, false, err
	}
	m.layer.seal = pick == layerPrivacy
	m.state = 2
	return out, true, nil
}
