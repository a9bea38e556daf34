package digestmd5

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hms-proxy/hms-proxy/security/sasl"
	"github.com/hms-proxy/hms-proxy/security/tokens"
)

// ClientOptions configure the client mechanism.
type ClientOptions struct {
	// Username and Password; TokenClientOptions fills them from a token.
	Username, Password string
	// AuthzID is sent when not empty (Hive's client sends none).
	AuthzID string
	// QOPs the client accepts, preferred first (nil: auth). The first the
	// server offers is chosen.
	QOPs []sasl.QOP
	// Ciphers accepted for auth-conf, preferred first (nil: AllCiphers).
	Ciphers []string
	// Protocol and ServerName make the digest-uri (default "null/default").
	Protocol, ServerName string
	// MaxBuf is the receive buffer size announced (0: 65536).
	MaxBuf int
	Rand   io.Reader
}

// TokenClientOptions returns options for a Hive delegation token string (as
// get_delegation_token returned it), with Hive's names and qops.
func TokenClientOptions(token string, qops ...sasl.QOP) (ClientOptions, error) {
	t, err := tokens.DecodeToken(token)
	if err != nil {
		return ClientOptions{}, err
	}
	return ClientOptions{Username: tokens.EncodeIdentifierName(t.Identifier), Password: tokens.EncodePassword(t.Password), QOPs: qops}, nil
}

// NewClient returns a client mechanism for one handshake.
func NewClient(o ClientOptions) (sasl.ClientMech, error) {
	if o.Username == "" {
		return nil, errors.New("digestmd5: ClientOptions.Username is required")
	}
	if o.QOPs == nil {
		o.QOPs = []sasl.QOP{sasl.QOPAuth}
	}
	for _, q := range o.QOPs {
		if !validQOP(q) {
			return nil, fmt.Errorf("digestmd5: unknown QOP %q", q)
		}
	}
	if o.Ciphers == nil {
		o.Ciphers = AllCiphers
	}
	for _, c := range o.Ciphers {
		if !validCipher(c) {
			return nil, fmt.Errorf("digestmd5: unknown cipher %q", c)
		}
	}
	if o.Protocol == "" {
		o.Protocol = HiveProtocol
	}
	if o.ServerName == "" {
		o.ServerName = HiveServerName
	}
	if o.MaxBuf == 0 {
		o.MaxBuf = defaultMaxBuf
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	return &client{o: o}, nil
}

type client struct {
	o      ClientOptions
	step   int
	in     *digestInput
	layer  sasl.Layer
	cipher string
}

func (c *client) Name() string { return Mechanism }

// Start implements sasl.ClientMech: DIGEST-MD5 has no initial response.
func (c *client) Start() ([]byte, error) { return []byte{}, nil }

// Layer implements sasl.ClientMech.
func (c *client) Layer() sasl.Layer { return c.layer }

// Step implements sasl.ClientMech.
func (c *client) Step(challenge []byte) ([]byte, bool, error) {
	switch c.step {
	case 0:
		c.step = 3
		resp, err := c.respond(challenge)
		if err != nil {
			return nil, false, err
		}
		c.step = 1
		return resp, false, nil
	case 1:
		c.step = 3
		if err := c.checkRspAuth(challenge); err != nil {
			return nil, false, err
		}
		c.step = 2
		return nil, true, nil
	default:
		return nil, false, fail("client is not expecting a challenge")
	}
}

func (c *client) respond(ch []byte) ([]byte, error) {
	if len(ch) == 0 || len(ch) > maxChallengeLength {
		return nil, fail("digest challenge of %d bytes (expected 1..%d)", len(ch), maxChallengeLength)
	}
	d, err := parseDirectives(ch, "realm")
	if err != nil {
		return nil, fail("digest challenge format violation: %v", err)
	}
	if alg, ok := d.get("algorithm"); !ok || alg != "md5-sess" {
		return nil, fail("digest challenge format violation: algorithm %q is not md5-sess", alg)
	}
	nonce, ok := d.get("nonce")
	if !ok || nonce == "" {
		return nil, fail("digest challenge format violation: missing nonce")
	}
	if _, ok := d.get("stale"); ok {
		return nil, fail("server sent stale=true: subsequent authentication is not supported")
	}
	utf8Charset := false
	if cs, ok := d.get("charset"); ok {
		if cs != "utf-8" {
			return nil, fail("digest challenge format violation: charset %q", cs)
		}
		utf8Charset = true
	}
	if mb, ok := d.get("maxbuf"); ok {
		if n, err := strconv.Atoi(mb); err != nil || n < 32 || n > maxMaxBuf {
			return nil, fail("digest challenge format violation: maxbuf %q", mb)
		}
	}
	realm := ""
	if rs := d["realm"]; len(rs) > 0 {
		realm = decodeValue(rs[0], utf8Charset) // Hive's client takes the default (first) realm
	}
	offered := []sasl.QOP{sasl.QOPAuth}
	if v, ok := d.get("qop"); ok {
		offered = parseQOPList(v)
	}
	var qop sasl.QOP
	for _, q := range c.o.QOPs {
		if contains(qopNames(offered), string(q)) {
			qop = q
			break
		}
	}
	if qop == "" {
		return nil, fail("no common qop: server offers %s, client accepts %s", qopStrings(offered), qopStrings(c.o.QOPs))
	}
	if qop == sasl.QOPAuthConf {
		v, _ := d.get("cipher")
		serverCiphers := strings.Split(v, ",")
		for i := range serverCiphers {
			serverCiphers[i] = strings.TrimSpace(serverCiphers[i])
		}
		for _, ci := range c.o.Ciphers {
			if contains(serverCiphers, ci) {
				c.cipher = ci
				break
			}
		}
		if c.cipher == "" {
			return nil, fail("no common cipher: server offers %q, client accepts %s", v, strings.Join(c.o.Ciphers, ","))
		}
	}
	raw := make([]byte, 30)
	if _, err := io.ReadFull(c.o.Rand, raw); err != nil {
		return nil, fail("making a cnonce: %v", err)
	}
	c.in = &digestInput{username: c.o.Username, realm: realm, password: c.o.Password, nonce: nonce,
		cnonce: base64.StdEncoding.EncodeToString(raw), authzid: c.o.AuthzID, hasAuthzID: c.o.AuthzID != "",
		digestURI: c.o.Protocol + "/" + c.o.ServerName, qop: qop, nc: 1}
	w := &directiveWriter{}
	if utf8Charset {
		w.token("charset", "utf-8")
	}
	w.quoted("username", c.o.Username)
	if realm != "" {
		w.quoted("realm", realm)
	}
	w.quoted("nonce", nonce)
	w.token("nc", "00000001")
	w.quoted("cnonce", c.in.cnonce)
	w.quoted("digest-uri", c.in.digestURI)
	w.token("maxbuf", strconv.Itoa(c.o.MaxBuf))
	w.token("response", c.in.response("AUTHENTICATE"))
	w.token("qop", string(qop))
	if c.cipher != "" {
		w.token("cipher", c.cipher)
	}
	if c.o.AuthzID != "" {
		w.quoted("authzid", c.o.AuthzID)
	}
	return w.b, nil
}

func (c *client) checkRspAuth(ch []byte) error {
	d, err := parseDirectives(ch)
	if err != nil {
		return fail("server's rspauth format violation: %v", err)
	}
	got, ok := d.get("rspauth")
	if !ok {
		return fail("server sent no rspauth")
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(c.in.response(""))) != 1 {
		return fail("server's rspauth does not match: the server does not know the password")
	}
	if c.in.qop != sasl.QOPAuth {
		l, err := newLayer(c.in.hA1(), c.in.qop, c.cipher, true)
		if err != nil {
			return err
		}
		c.layer = l
	}
	return nil
}
