package restcatalog_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/hms-proxy/hms-proxy/restcatalog"
)

// A token's times against an injected clock and the configured skew
// (rest-catalog.oauth2.clock-skew-seconds), for exp, nbf and iat alike:
// a token is good from nbf - skew to exp + skew, and one issued (iat) more
// than the skew in the future is refused; exp is required. The skew is the
// operator's, not a fixed five minutes: with 30 s a token not valid for
// another 31 s is refused, with 10 min a fresh token is accepted.
func TestOAuth2TokenTimesFollowTheClockSkew(t *testing.T) {
	p := newIDP(t)
	t0 := time.Unix(1_900_000_000, 0)
	for _, skew := range []time.Duration{30 * time.Second, 10 * time.Minute} {
		t.Run(skew.String(), func(t *testing.T) {
			var clock atomic.Int64
			clock.Store(t0.Unix())
			now := func() time.Time { return time.Unix(clock.Load(), 0) }
			url, _ := bearerServer(t, restcatalog.OAuth2Options{Issuer: p.srv.URL, Audience: "hms-proxy", UserClaim: "preferred_username",
				ClockSkew: skew, Now: now})
			at := func(d time.Duration) int64 { return t0.Add(d).Unix() }
			in, out := skew-time.Second, skew+time.Second
			for _, c := range []struct {
				name   string
				claims map[string]any
				want   string // "" accepted, else a fragment of the 401's message
			}{
				{"fresh, nbf = iat = now", map[string]any{"nbf": at(0), "iat": at(0)}, ""},
				{"nbf within the skew", map[string]any{"nbf": at(in)}, ""},
				{"nbf beyond the skew", map[string]any{"nbf": at(out)}, "not valid before"},
				{"iat within the skew", map[string]any{"iat": at(in)}, ""},
				{"iat beyond the skew", map[string]any{"iat": at(out), "exp": at(time.Hour)}, "issued at " + t0.Add(out).UTC().Format(time.RFC3339) + ", in the future"},
				{"iat an hour ahead", map[string]any{"iat": at(time.Hour), "exp": at(2 * time.Hour)}, "in the future"},
				{"exp within the skew", map[string]any{"iat": at(-time.Hour), "exp": at(-in)}, ""},
				{"exp beyond the skew", map[string]any{"iat": at(-time.Hour), "exp": at(-out)}, "expired at"},
				{"no exp", map[string]any{"exp": nil}, "no exp claim"},
				{"no iat, no nbf", map[string]any{"iat": nil}, ""},
			} {
				a := getWith(t, url+"/v1/config", "Bearer "+sign(t, jose.RS256, p.key, p.claims(t0, c.claims)))
				switch {
				case c.want == "" && a.status != 200:
					t.Errorf("%s: %d %s, want it accepted", c.name, a.status, a.raw)
				case c.want != "" && (a.status != 401 || a.typ != "NotAuthorizedException" || !strings.Contains(a.msg, c.want) ||
					!strings.Contains(a.msg, "rest-catalog.oauth2.clock-skew-seconds") && c.want != "no exp claim"):
					t.Errorf("%s: %d %s %q, want 401 naming %q and the skew's key", c.name, a.status, a.typ, a.msg, c.want)
				}
			}

			// A token not valid yet becomes valid as the clock moves, and
			// expires with it: no sleeping, the clock is the test's.
			early := "Bearer " + sign(t, jose.RS256, p.key, p.claims(t0, map[string]any{"nbf": at(2 * time.Hour), "exp": at(3 * time.Hour)}))
			if a := getWith(t, url+"/v1/config", early); a.status != 401 {
				t.Fatalf("nbf in two hours: %d %s", a.status, a.raw)
			}
			clock.Store(at(2*time.Hour - in))
			if a := getWith(t, url+"/v1/config", early); a.status != 200 {
				t.Fatalf("the clock at nbf - skew + 1 s: %d %s", a.status, a.raw)
			}
			clock.Store(at(3*time.Hour + out))
			if a := getWith(t, url+"/v1/config", early); a.status != 401 || !strings.Contains(a.msg, "expired at") {
				t.Fatalf("the clock past exp + skew: %d %s", a.status, a.raw)
			}
		})
	}
}
