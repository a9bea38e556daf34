package restcatalog_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/hms-proxy/hms-proxy/restcatalog"
	"github.com/hms-proxy/hms-proxy/router/naming"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// idp is an identity provider of the test's own: a discovery document and a
// JWKS served over loopback HTTP, and keys to sign tokens with. (The real
// provider, Keycloak, is in e2e's OAuth2 tests; this one can sign
// what no provider would: alg none, HMAC with the public key, foreign keys.)
type idp struct {
	srv      *httptest.Server
	key      *rsa.PrivateKey
	jwksHits atomic.Int64
}

func newIDP(t *testing.T) *idp {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := &idp{key: key}
	mux := http.NewServeMux()
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": p.srv.URL, "jwks_uri": p.srv.URL + "/keys",
			"token_endpoint": p.srv.URL + "/token", "authorization_endpoint": p.srv.URL + "/auth"})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		p.jwksHits.Add(1)
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	return p
}

// sign makes a compact JWS of claims with key (kid k1).
func sign(t *testing.T, alg jose.SignatureAlgorithm, key any, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(claims)
	jws, err := s.Sign(b)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (p *idp) claims(now time.Time, extra map[string]any) map[string]any {
	c := map[string]any{"iss": p.srv.URL, "aud": []string{"account", "hms-proxy"}, "sub": "7d1f-uuid",
		"preferred_username": "alice", "groups": []string{"analysts", "etl"}, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix()}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

// authServer is a REST handler with bearer tokens only (no metastore is
// reached: /v1/config needs none) and the caller it saw.
func authServer(t *testing.T, p *idp, now func() time.Time) (string, *atomic.Pointer[restcatalog.Caller]) {
	t.Helper()
	return bearerServer(t, restcatalog.OAuth2Options{Issuer: p.srv.URL, Audience: "hms-proxy", UserClaim: "preferred_username",
		ClockSkew: 30 * time.Second, Algorithms: []string{"RS256", "ES256"}, Now: now})
}

// bearerServer is a REST handler whose only authentication is o.
func bearerServer(t *testing.T, o restcatalog.OAuth2Options) (string, *atomic.Pointer[restcatalog.Caller]) {
	t.Helper()
	oa, err := restcatalog.NewOAuth2(o)
	if err != nil {
		t.Fatal(err)
	}
	var seen atomic.Pointer[restcatalog.Caller]
	ns := naming.NewNamespace("__", "c1", false, []*naming.Catalog{{Name: "c1", BackendName: "hive"}})
	h, err := restcatalog.New(restcatalog.Options{Naming: ns, OAuth2: oa,
		Metastore: func(context.Context, restcatalog.Caller) (*thriftgen.Client, func(), error) {
			return nil, nil, errors.New("no metastore in this test")
		},
		WriteIsolated: func(string) bool { return true },
		OnRequest:     func(ri restcatalog.RequestInfo) { c := ri.Caller; seen.Store(&c) },
		Log:           discardLog()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL, &seen
}

type authAnswer struct {
	status    int
	challenge []string
	typ, msg  string
	raw       string
}

func getWith(t *testing.T, url, authz string) authAnswer {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := authAnswer{status: resp.StatusCode, challenge: resp.Header.Values("WWW-Authenticate"), raw: string(b)}
	var m struct {
		Error struct{ Type, Message string } `json:"error"`
	}
	if json.Unmarshal(b, &m) == nil {
		a.typ, a.msg = m.Error.Type, m.Error.Message
	}
	return a
}

// Bearer tokens on the REST listener: a good token runs as its user claim
// with its groups; every bad one is 401 NotAuthorizedException in Iceberg's
// error model with an RFC 6750 challenge, and says what was wrong.
func TestOAuth2BearerTokens(t *testing.T) {
	p := newIDP(t)
	now := time.Now()
	clock := func() time.Time { return now }
	url, seen := authServer(t, p, clock)
	cfgURL := url + "/v1/config"

	good := sign(t, jose.RS256, p.key, p.claims(now, nil))
	a := getWith(t, cfgURL, "Bearer "+good)
	if a.status != 200 {
		t.Fatalf("a good token: %d %s", a.status, a.raw)
	}
	if c := seen.Load(); c == nil || c.User != "alice" || strings.Join(c.Groups, ",") != "analysts,etl" || c.Mechanism != restcatalog.MechanismOAuth2 {
		t.Fatalf("the caller of a good token: %+v", c)
	}
	if a := getWith(t, cfgURL, "bearer "+good); a.status != 200 {
		t.Fatalf("the scheme is case-insensitive: %d %s", a.status, a.raw)
	}

	foreign, _ := rsa.GenerateKey(rand.Reader, 2048)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	parts := strings.Split(good, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(payload), `"alice"`, `"admin"`, 1))) + "." + parts[2]
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
	pub, _ := x509.MarshalPKIXPublicKey(&p.key.PublicKey)
	for _, c := range []struct {
		name, authz, want string
	}{
		{"no header", "", "requires an OAuth2 bearer token"},
		{"basic", "Basic YWxpY2U6eA==", "requires an OAuth2 bearer token"},
		{"empty bearer", "Bearer ", "requires an OAuth2 bearer token"},
		{"garbage", "Bearer not.a.jwt", "not accepted"},
		{"expired beyond the skew", "Bearer " + sign(t, jose.RS256, p.key, p.claims(now, map[string]any{"exp": now.Add(-31 * time.Second).Unix()})), "expired"},
		{"wrong audience", "Bearer " + sign(t, jose.RS256, p.key, p.claims(now, map[string]any{"aud": "other-service"})), "audience"},
		{"no audience", "Bearer " + sign(t, jose.RS256, p.key, p.claims(now, map[string]any{"aud": nil})), "audience"},
		{"wrong issuer", "Bearer " + sign(t, jose.RS256, p.key, p.claims(now, map[string]any{"iss": "https://evil.example"})), "issued by https://evil.example"},
		{"unsigned (alg none)", "Bearer " + none, "not accepted"},
		{"tampered payload", "Bearer " + tampered, "not accepted"},
		{"signed by another key", "Bearer " + sign(t, jose.RS256, foreign, p.claims(now, nil)), "not accepted"},
		{"ES256 by a key the provider does not publish", "Bearer " + sign(t, jose.ES256, ec, p.claims(now, nil)), "not accepted"},
		{"HMAC with the public key as secret", "Bearer " + sign(t, jose.HS256, pub, p.claims(now, nil)), "not accepted"},
		{"no user claim", "Bearer " + sign(t, jose.RS256, p.key, p.claims(now, map[string]any{"preferred_username": nil})), `no "preferred_username" claim`},
		{"groups not strings", "Bearer " + sign(t, jose.RS256, p.key, p.claims(now, map[string]any{"groups": []int{1}})), `"groups" claim`},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := getWith(t, cfgURL, c.authz)
			if a.status != 401 || a.typ != "NotAuthorizedException" || !strings.Contains(a.msg, c.want) {
				t.Fatalf("%d %s %q, want 401 NotAuthorizedException containing %q", a.status, a.typ, a.msg, c.want)
			}
			if len(a.challenge) != 1 || !strings.HasPrefix(a.challenge[0], "Bearer ") {
				t.Fatalf("WWW-Authenticate %q", a.challenge)
			}
			if c.authz != "" && strings.Contains(c.authz, ".") && !strings.Contains(a.challenge[0], `error="invalid_token"`) {
				t.Fatalf("a refused token's challenge names invalid_token: %q", a.challenge)
			}
		})
	}

	// Within the skew an expired token is still accepted; one string is
	// one group; the keys were fetched once for all of it.
	within := sign(t, jose.RS256, p.key, p.claims(now, map[string]any{"exp": now.Add(-29 * time.Second).Unix(), "groups": "solo"}))
	if a := getWith(t, cfgURL, "Bearer "+within); a.status != 200 {
		t.Fatalf("a token 29 s past exp with 30 s of skew: %d %s", a.status, a.raw)
	}
	if c := seen.Load(); strings.Join(c.Groups, ",") != "solo" {
		t.Fatalf("groups of a one-string claim: %v", c.Groups)
	}
	if n := p.jwksHits.Load(); n < 1 || n > 4 {
		t.Errorf("the JWKS was fetched %d times", n)
	}

	// The token endpoint: no credential needed, OAuth2's error form, the
	// provider's endpoint named.
	resp, err := http.Post(url+"/v1/oauth/tokens", "application/x-www-form-urlencoded", strings.NewReader("grant_type=client_credentials&client_id=x&client_secret=y"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var oe struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	_ = json.Unmarshal(b, &oe)
	if resp.StatusCode != 400 || oe.Error != "invalid_request" || !strings.Contains(oe.Description, p.srv.URL+"/token") {
		t.Fatalf("POST /v1/oauth/tokens: %d %s", resp.StatusCode, b)
	}
}

// A provider that cannot be reached is 503 (the client may retry), not 401.
func TestOAuth2ProviderDownIs503(t *testing.T) {
	p := newIDP(t)
	now := time.Now()
	url, _ := authServer(t, p, func() time.Time { return now })
	tok := sign(t, jose.RS256, p.key, p.claims(now, nil))
	p.srv.Close()
	a := getWith(t, url+"/v1/config", "Bearer "+tok)
	if a.status != 503 || a.typ != "ServiceUnavailableException" || !strings.Contains(a.msg, p.srv.URL) {
		t.Fatalf("provider down: %d %s %q", a.status, a.typ, a.msg)
	}
}

func TestOAuth2RefusesUnsafeAlgorithms(t *testing.T) {
	for _, alg := range []string{"none", "HS256"} {
		if _, err := restcatalog.NewOAuth2(restcatalog.OAuth2Options{Issuer: "https://idp", Audience: "a", Algorithms: []string{alg}}); err == nil ||
			!strings.Contains(err.Error(), alg) {
			t.Errorf("algorithm %s: %v", alg, err)
		}
	}
}
