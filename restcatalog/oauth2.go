package restcatalog

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// OAuth2Options configure bearer-token authentication of the REST listener
// (rest-catalog.oauth2.*): JWTs an identity provider signed, checked with
// go-oidc against the provider's published keys.
type OAuth2Options struct {
	// Issuer is the iss every token must carry (the provider's URL).
	Issuer string
	// Audience must be among the token's aud.
	Audience string
	// JWKSURI is where the provider publishes its keys; "" discovers it from
	// <Issuer>/.well-known/openid-configuration on first use.
	JWKSURI string
	// UserClaim names the user (default "sub"); GroupsClaim lists the
	// groups (default "groups": a JSON array of strings or one string).
	UserClaim, GroupsClaim string
	// ClockSkew is how far the provider's clock and this one may disagree:
	// a token is accepted until exp + ClockSkew, from nbf - ClockSkew, and
	// refused when its iat is more than ClockSkew in the future.
	ClockSkew time.Duration
	// Algorithms a token may be signed with (default RS256).
	Algorithms []string
	// HTTPClient reaches the provider (discovery, keys); default a client
	// with a 10 s timeout.
	HTTPClient *http.Client
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
	Log *slog.Logger
}

// OAuth2 authenticates "Authorization: Bearer <JWT>" requests: the token's
// signature (against the provider's JWKS; "none" and unknown algorithms are
// refused), issuer, audience and expiry (with the clock skew) are checked;
// the configured claims give the user and the groups.
type OAuth2 struct {
	o   OAuth2Options
	ctx context.Context // carries the HTTP client for go-oidc

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier // nil until the keys' location is known
	tokenEP  string                // the provider's token endpoint, once discovered
}

// NewOAuth2 validates the options. The provider is not contacted until the
// first token arrives, so a proxy starts while its provider is down (those
// requests answer 503).
func NewOAuth2(o OAuth2Options) (*OAuth2, error) {
	if o.Issuer == "" || o.Audience == "" {
		return nil, fmt.Errorf("rest-catalog.oauth2.issuer and rest-catalog.oauth2.audience must both be set (issuer=%q, audience=%q)", o.Issuer, o.Audience)
	}
	if o.UserClaim == "" {
		o.UserClaim = "sub"
	}
	if o.GroupsClaim == "" {
		o.GroupsClaim = "groups"
	}
	if len(o.Algorithms) == 0 {
		o.Algorithms = []string{oidc.RS256}
	}
	for _, a := range o.Algorithms {
		if strings.EqualFold(a, "none") || strings.HasPrefix(strings.ToUpper(a), "HS") {
			return nil, fmt.Errorf("rest-catalog.oauth2.algorithms: %s is not accepted (unsigned or shared-secret tokens)", a)
		}
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	a := &OAuth2{o: o, ctx: oidc.ClientContext(context.Background(), o.HTTPClient)}
	if o.JWKSURI != "" {
		a.verifier = a.newVerifier(oidc.NewRemoteKeySet(a.ctx, o.JWKSURI))
	}
	return a, nil
}

func (a *OAuth2) newVerifier(keys oidc.KeySet) *oidc.IDTokenVerifier {
	return oidc.NewVerifier(a.o.Issuer, keys, &oidc.Config{
		ClientID:             a.o.Audience,
		SupportedSigningAlgs: a.o.Algorithms,
		// The token's times are checkTimes' (go-oidc allows a fixed five
		// minutes before nbf, measured from its own clock, and reads no iat).
		SkipExpiryCheck: true,
	})
}

// checkTimes holds a verified token's times to the clock and the configured
// skew (RFC 7519 4.1.4-4.1.6, RFC 9068 2.2 and 4): exp is required and must
// not have passed, nbf (optional) must have come, and iat (optional) must
// not lie in the future: a token "issued" later than now comes from a
// provider whose clock is wrong, or was minted ahead to outlive a key.
// It returns why the token is refused, or "".
func (a *OAuth2) checkTimes(exp, iat time.Time, claims map[string]any) string {
	now, skew := a.o.Now(), a.o.ClockSkew
	at := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	if exp.IsZero() {
		return "the bearer token has no exp claim (an access token must say when it expires)"
	}
	if now.After(exp.Add(skew)) {
		return fmt.Sprintf("the bearer token expired at %s (clock skew allowed: %s, rest-catalog.oauth2.clock-skew-seconds)", at(exp), skew)
	}
	if nbf, ok := claims["nbf"].(float64); ok {
		if t := time.Unix(int64(nbf), 0); now.Add(skew).Before(t) {
			return fmt.Sprintf("the bearer token is not valid before %s (nbf; it is %s here, clock skew allowed: %s, rest-catalog.oauth2.clock-skew-seconds)", at(t), at(now), skew)
		}
	}
	if !iat.IsZero() && now.Add(skew).Before(iat) {
		return fmt.Sprintf("the bearer token was issued at %s, in the future (iat; it is %s here, clock skew allowed: %s, rest-catalog.oauth2.clock-skew-seconds)", at(iat), at(now), skew)
	}
	return ""
}

// keys returns the verifier, discovering the provider's key set first when
// its location was not configured.
func (a *OAuth2) keys(ctx context.Context) (*oidc.IDTokenVerifier, *Error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.verifier != nil {
		return a.verifier, nil
	}
	dctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, a.o.HTTPClient), 15*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(dctx, a.o.Issuer)
	if err != nil {
		return nil, errorf(http.StatusServiceUnavailable, typeUnavailable,
			"cannot discover the keys of identity provider %s (rest-catalog.oauth2.issuer; or set rest-catalog.oauth2.jwks-uri): %v", a.o.Issuer, err)
	}
	var meta struct {
		JWKS string `json:"jwks_uri"`
	}
	if err := p.Claims(&meta); err != nil || meta.JWKS == "" {
		return nil, errorf(http.StatusServiceUnavailable, typeUnavailable, "identity provider %s publishes no jwks_uri", a.o.Issuer)
	}
	a.verifier = a.newVerifier(oidc.NewRemoteKeySet(a.ctx, meta.JWKS))
	a.tokenEP = p.Endpoint().TokenURL
	return a.verifier, nil
}

// tokenEndpoint is the provider's token endpoint from its discovery
// document ("" when it cannot be read), for the answer of the token route.
func (a *OAuth2) tokenEndpoint(ctx context.Context) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.tokenEP == "" {
		dctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, a.o.HTTPClient), 5*time.Second)
		defer cancel()
		if p, err := oidc.NewProvider(dctx, a.o.Issuer); err == nil {
			a.tokenEP = p.Endpoint().TokenURL
		}
	}
	return a.tokenEP
}

// challenge is the WWW-Authenticate value of a bearer-token listener.
func bearerChallenge(code, desc string) string {
	if code == "" {
		return `Bearer realm="hms-proxy"`
	}
	return fmt.Sprintf(`Bearer realm="hms-proxy", error=%q, error_description=%q`, code, strings.ReplaceAll(desc, `"`, "'"))
}

// authenticate checks the request's bearer token and returns who it names.
func (a *OAuth2) authenticate(w http.ResponseWriter, r *http.Request) (Caller, *Error) {
	var c Caller
	scheme, token, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		w.Header().Add("WWW-Authenticate", bearerChallenge("", ""))
		return c, errorf(http.StatusUnauthorized, typeNotAuthorized, "this listener requires an OAuth2 bearer token of %s (Authorization: Bearer <token>)", a.o.Issuer)
	}
	v, e := a.keys(r.Context())
	if e != nil {
		return c, e
	}
	refuse := func(format string, args ...any) (Caller, *Error) {
		msg := fmt.Sprintf(format, args...)
		w.Header().Add("WWW-Authenticate", bearerChallenge("invalid_token", msg))
		return c, errorf(http.StatusUnauthorized, typeNotAuthorized, "%s", msg)
	}
	// A token of another provider fails its signature check first; say
	// what is wrong with it (refusing on an unverified claim refuses only).
	if iss := unverifiedIssuer(token); iss != "" && iss != a.o.Issuer {
		return refuse("the bearer token was issued by %s; this listener accepts tokens of %s (rest-catalog.oauth2.issuer)", iss, a.o.Issuer)
	}
	tok, err := v.Verify(r.Context(), token)
	if err != nil {
		switch {
		case strings.Contains(err.Error(), "fetching keys"):
			a.o.Log.Warn("cannot fetch the identity provider's keys", "issuer", a.o.Issuer, "err", err)
			return c, errorf(http.StatusServiceUnavailable, typeUnavailable, "cannot fetch the keys of identity provider %s to check the bearer token", a.o.Issuer)
		}
		return refuse("the bearer token was not accepted: %s", strings.TrimPrefix(err.Error(), "oidc: "))
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return refuse("the bearer token's claims do not parse: %v", err)
	}
	if why := a.checkTimes(tok.Expiry, tok.IssuedAt, claims); why != "" {
		return refuse("%s", why)
	}
	user, _ := claims[a.o.UserClaim].(string)
	if user == "" {
		return refuse("the bearer token has no %q claim naming its user (rest-catalog.oauth2.user-claim)", a.o.UserClaim)
	}
	groups, ok := stringsClaim(claims[a.o.GroupsClaim])
	if !ok {
		return refuse("the bearer token's %q claim is not a string or a list of strings (rest-catalog.oauth2.groups-claim)", a.o.GroupsClaim)
	}
	return Caller{User: user, Groups: groups, Mechanism: MechanismOAuth2}, nil
}

// unverifiedIssuer is the iss claim of a JWT before any check ("" when it
// cannot be read); only ever used to refuse.
func unverifiedIssuer(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var c struct {
		Iss string `json:"iss"`
	}
	if json.Unmarshal(b, &c) != nil {
		return ""
	}
	return c.Iss
}

// stringsClaim reads a claim that is absent, one string, or a JSON array of
// strings.
func stringsClaim(v any) ([]string, bool) {
	switch v := v.(type) {
	case nil:
		return nil, true
	case string:
		return []string{v}, true
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}
