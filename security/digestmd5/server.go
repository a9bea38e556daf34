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

// Credentials are what the server's Lookup returns for a user name.
type Credentials struct {
	// Password is the DIGEST-MD5 password (for a token: EncodePassword of
	// the token password).
	Password string
	// User and RealUser are the identity the connection runs as (for a
	// token: its owner and real user).
	User, RealUser string
}

// ServerOptions configure the server mechanism.
type ServerOptions struct {
	// Lookup returns the credentials of a user name; required. Its error
	// text reaches the client (in a BAD frame), so it must not carry
	// secrets. TokenLookup serves delegation tokens.
	Lookup func(username string) (Credentials, error)
	// QOPs are offered in this order (nil: auth), as javax.security.sasl.qop
	// from hadoop.rpc.protection.
	QOPs []sasl.QOP
	// Ciphers are offered for auth-conf (nil: AllCiphers, the JDK's default).
	Ciphers []string
	// Realm, Protocol and ServerName default to Hive's "default", "null",
	// "default"; the client's digest-uri must be Protocol/ServerName.
	Realm, Protocol, ServerName string
	// MaxBuf is the receive buffer size announced (0: 65536, not sent).
	MaxBuf int
	// Rand makes nonces (nil: crypto/rand).
	Rand io.Reader
}

// TokenLookup serves Hive delegation tokens: the user name is the token
// identifier in Base64, the password the token password in Base64, checked
// by the secret manager (known, not cancelled, not expired, key present).
func TokenLookup(m *tokens.Manager) func(string) (Credentials, error) {
	return func(username string) (Credentials, error) {
		raw, err := tokens.DecodeIdentifierName(username)
		if err != nil {
			return Credentials{}, fmt.Errorf("user name is not a delegation token identifier: %v", err)
		}
		pw, id, err := m.Password(raw)
		if err != nil {
			return Credentials{}, err
		}
		c := Credentials{Password: tokens.EncodePassword(pw), User: id.User(), RealUser: id.RealUser}
		if c.RealUser == c.User {
			c.RealUser = "" // Hadoop's getUser: a real user equal to the owner is no impersonation
		}
		return c, nil
	}
}

func (o *ServerOptions) fill() error {
	if o.Lookup == nil {
		return errors.New("digestmd5: ServerOptions.Lookup is required")
	}
	if o.QOPs == nil {
		o.QOPs = []sasl.QOP{sasl.QOPAuth}
	}
	if len(o.QOPs) == 0 {
		return errors.New("digestmd5: ServerOptions.QOPs is empty")
	}
	for _, q := range o.QOPs {
		if !validQOP(q) {
			return fmt.Errorf("digestmd5: unknown QOP %q (auth, auth-int, auth-conf)", q)
		}
	}
	if o.Ciphers == nil {
		o.Ciphers = AllCiphers
	}
	for _, c := range o.Ciphers {
		if !validCipher(c) {
			return fmt.Errorf("digestmd5: unknown cipher %q (%s)", c, strings.Join(AllCiphers, ", "))
		}
	}
	if contains(qopNames(o.QOPs), string(sasl.QOPAuthConf)) && len(o.Ciphers) == 0 {
		return errors.New("digestmd5: auth-conf offered without a cipher")
	}
	if o.Realm == "" {
		o.Realm = HiveRealm
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
	if o.MaxBuf < 32 || o.MaxBuf > maxMaxBuf {
		return fmt.Errorf("digestmd5: MaxBuf %d out of range 32..%d", o.MaxBuf, maxMaxBuf)
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	return nil
}

func qopNames(qs []sasl.QOP) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = string(q)
	}
	return out
}

// NewServerFactory validates o and returns a factory of server mechanisms.
func NewServerFactory(o ServerOptions) (sasl.ServerMechFactory, error) {
	if err := o.fill(); err != nil {
		return nil, err
	}
	return func() (sasl.ServerMech, error) { return &server{o: &o}, nil }, nil
}

type server struct {
	o      *ServerOptions
	step   int // 0: send challenge; 1: check response; 2: done; 3: failed
	nonce  string
	result sasl.Result
}

func (s *server) Name() string { return Mechanism }

func (s *server) Result() sasl.Result { return s.result }

func fail(format string, args ...any) error {
	return fmt.Errorf("DIGEST-MD5: "+format, args...)
}

// Step implements sasl.ServerMech.
func (s *server) Step(response []byte) ([]byte, bool, error) {
	switch s.step {
	case 0:
		// An initial response (subsequent authentication) is not supported;
		// as the JDK, ignore it and challenge.
		s.step = 1
		ch, err := s.challenge()
		if err != nil {
			s.step = 3
			return nil, false, err
		}
		return ch, false, nil
	case 1:
		s.step = 3
		rspauth, err := s.check(response)
		if err != nil {
			return nil, false, err
		}
		s.step = 2
		return rspauth, true, nil
	case 2:
		return nil, false, fail("authentication is already complete")
	default:
		return nil, false, fail("authentication already failed")
	}
}

func (s *server) challenge() ([]byte, error) {
	raw := make([]byte, 30)
	if _, err := io.ReadFull(s.o.Rand, raw); err != nil {
		return nil, fail("making a nonce: %v", err)
	}
	s.nonce = base64.StdEncoding.EncodeToString(raw)
	w := &directiveWriter{}
	w.quoted("realm", s.o.Realm)
	w.quoted("nonce", s.nonce)
	w.quoted("qop", qopStrings(s.o.QOPs))
	if s.o.MaxBuf != defaultMaxBuf {
		w.token("maxbuf", strconv.Itoa(s.o.MaxBuf))
	}
	w.token("charset", "utf-8")
	if contains(qopNames(s.o.QOPs), string(sasl.QOPAuthConf)) {
		w.quoted("cipher", strings.Join(s.o.Ciphers, ","))
	}
	w.token("algorithm", "md5-sess")
	return w.b, nil
}

// check validates the digest-response and returns rspauth.
func (s *server) check(resp []byte) ([]byte, error) {
	if len(resp) == 0 {
		return nil, fail("empty digest response")
	}
	if len(resp) > maxResponseLength {
		return nil, fail("digest response of %d bytes exceeds %d", len(resp), maxResponseLength)
	}
	d, err := parseDirectives(resp)
	if err != nil {
		return nil, fail("digest response format violation: %v", err)
	}
	utf8Charset := false
	if cs, ok := d.get("charset"); ok {
		if cs != "utf-8" {
			return nil, fail("digest response format violation: incompatible charset value %q", cs)
		}
		utf8Charset = true
	}
	if mb, ok := d.get("maxbuf"); ok {
		n, err := strconv.Atoi(mb)
		if err != nil || n < 32 || n > maxMaxBuf {
			return nil, fail("digest response format violation: maxbuf %q out of range 32..%d", mb, maxMaxBuf)
		}
	}
	username, ok := d.get("username")
	if !ok || username == "" {
		return nil, fail("digest response format violation: missing username")
	}
	username = decodeValue(username, utf8Charset)
	realm, _ := d.get("realm")
	realm = decodeValue(realm, utf8Charset)
	if realm != s.o.Realm {
		return nil, fail("digest response format violation: nonexistent realm %q", realm)
	}
	nonce, ok := d.get("nonce")
	if !ok {
		return nil, fail("digest response format violation: missing nonce")
	}
	if subtle.ConstantTimeCompare([]byte(nonce), []byte(s.nonce)) != 1 {
		return nil, fail("digest response format violation: mismatched nonce")
	}
	cnonce, ok := d.get("cnonce")
	if !ok || cnonce == "" {
		return nil, fail("digest response format violation: missing cnonce")
	}
	nc := 1
	if v, ok := d.get("nc"); ok {
		n, err := strconv.ParseUint(v, 16, 32)
		if err != nil || len(v) != 8 || n != 1 {
			return nil, fail("digest response format violation: nonce count %q is not 00000001 (only initial authentication is supported)", v)
		}
	}
	qop := sasl.QOPAuth
	if v, ok := d.get("qop"); ok {
		qop = sasl.QOP(v)
	}
	if !validQOP(qop) {
		return nil, fail("digest response format violation: invalid qop %q", qop)
	}
	if !contains(qopNames(s.o.QOPs), string(qop)) {
		return nil, fail("server does not support qop %s (offered %s)", qop, qopStrings(s.o.QOPs))
	}
	cipherName := ""
	if qop == sasl.QOPAuthConf {
		v, ok := d.get("cipher")
		if !ok {
			return nil, fail("digest response format violation: no cipher specified")
		}
		if !contains(s.o.Ciphers, v) {
			return nil, fail("server does not support cipher %q (offered %s)", v, strings.Join(s.o.Ciphers, ","))
		}
		cipherName = v
	}
	uri, ok := d.get("digest-uri")
	want := s.o.Protocol + "/" + s.o.ServerName
	if !ok || !strings.EqualFold(uri, want) {
		return nil, fail("digest response format violation: mismatched URI %q; expecting %q", uri, want)
	}
	response, ok := d.get("response")
	if !ok {
		return nil, fail("digest response format violation: missing response")
	}
	authzid, hasAuthzID := d.get("authzid")
	creds, err := s.o.Lookup(username)
	if err != nil {
		return nil, fail("cannot acquire password for %s in realm %s: %v", username, realm, err)
	}
	in := &digestInput{username: username, realm: realm, password: creds.Password, nonce: s.nonce, cnonce: cnonce,
		authzid: authzid, hasAuthzID: hasAuthzID, digestURI: uri, qop: qop, nc: nc}
	if subtle.ConstantTimeCompare([]byte(in.response("AUTHENTICATE")), []byte(response)) != 1 {
		return nil, fail("digest response format violation: mismatched response (wrong password)")
	}
	// Hive's SaslDigestCallbackHandler: authorized only when the
	// authorization id is the authentication id.
	if hasAuthzID && decodeValue(authzid, utf8Charset) != username {
		return nil, fail("%s is not authorized to act as %s", username, decodeValue(authzid, utf8Charset))
	}
	s.result = sasl.Result{Mechanism: Mechanism, Principal: creds.User, RealUser: creds.RealUser, QOP: qop}
	if hasAuthzID {
		s.result.AuthzID = decodeValue(authzid, utf8Charset)
	}
	if qop != sasl.QOPAuth {
		l, err := newLayer(in.hA1(), qop, cipherName, false)
		if err != nil {
			return nil, err
		}
		s.result.Layer = l
	}
	return []byte("rspauth=" + in.response("")), nil
}
