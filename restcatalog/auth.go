package restcatalog

import (
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/jcmturner/goidentity/v6"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/service"
	"github.com/jcmturner/gokrb5/v8/spnego"
)

// SPNEGOOptions configure Kerberos SPNEGO authentication of the REST
// listener (rest-catalog.kerberos.principal and .keytab).
type SPNEGOOptions struct {
	// Principal is the service principal, HTTP/<host>@REALM; "_HOST" is
	// replaced by Hostname (lower-cased), as Hadoop does.
	Principal string
	// Keytab holds the principal's keys.
	Keytab string
	// SecurityMode is security.mode; SPNEGO requires KERBEROS.
	SecurityMode string
	// Hostname replaces _HOST (default os.Hostname).
	Hostname string
	Log      *slog.Logger
}

// SPNEGO authenticates requests with Kerberos SPNEGO (RFC 4559): a request
// without a valid "Authorization: Negotiate" token answers 401 with
// "WWW-Authenticate: Negotiate"; an accepted one runs as its principal.
type SPNEGO struct {
	kt        *keytab.Keytab
	principal string // HTTP/host@REALM
	settings  []func(*service.Settings)
}

// NewSPNEGO validates the settings and loads the keytab.
func NewSPNEGO(o SPNEGOOptions) (*SPNEGO, error) {
	if o.Principal == "" || o.Keytab == "" {
		return nil, fmt.Errorf("rest-catalog.kerberos.principal and rest-catalog.kerberos.keytab must both be set (principal=%q, keytab=%q)", o.Principal, o.Keytab)
	}
	if !strings.EqualFold(o.SecurityMode, "KERBEROS") {
		return nil, fmt.Errorf("rest-catalog.kerberos.principal is set but security.mode=%s: SPNEGO on the REST listener requires security.mode=KERBEROS", o.SecurityMode)
	}
	host := o.Hostname
	if host == "" {
		var err error
		if host, err = os.Hostname(); err != nil {
			return nil, fmt.Errorf("rest-catalog.kerberos.principal=%s: cannot resolve _HOST: %v", o.Principal, err)
		}
	}
	p := strings.ReplaceAll(o.Principal, "_HOST", strings.ToLower(host))
	at := strings.LastIndexByte(p, '@')
	if at <= 0 || at == len(p)-1 {
		return nil, fmt.Errorf("rest-catalog.kerberos.principal=%s: must be HTTP/<host>@REALM", o.Principal)
	}
	name, realm := p[:at], p[at+1:]
	parts := strings.Split(name, "/")
	if len(parts) != 2 || parts[0] != "HTTP" || parts[1] == "" {
		return nil, fmt.Errorf("rest-catalog.kerberos.principal=%s: SPNEGO needs a principal of the form HTTP/<host>@REALM", o.Principal)
	}
	kt, err := keytab.Load(o.Keytab)
	if err != nil {
		return nil, fmt.Errorf("rest-catalog.kerberos.keytab=%s: %v", o.Keytab, err)
	}
	found := false
	for _, e := range kt.Entries {
		if e.Principal.Realm == realm && strings.Join(e.Principal.Components, "/") == name {
			found = true
			break
		}
	}
	if !found {
		return nil, fmt.Errorf("rest-catalog.kerberos.keytab=%s holds no key for %s", o.Keytab, p)
	}
	lg := o.Log
	if lg == nil {
		lg = slog.Default()
	}
	return &SPNEGO{kt: kt, principal: p, settings: []func(*service.Settings){
		service.KeytabPrincipal(name),
		service.DecodePAC(false),
		service.Logger(log.New(slogWriter{lg}, "", 0)),
	}}, nil
}

// Principal is the service principal after _HOST substitution.
func (s *SPNEGO) Principal() string { return s.principal }

// authenticate runs gokrb5's SPNEGO acceptor on the request. It returns the
// client principal (user@REALM), or the error to answer; the acceptor's
// response headers (WWW-Authenticate) are copied to w.
func (s *SPNEGO) authenticate(w http.ResponseWriter, r *http.Request) (string, *Error) {
	var user string
	reached := false
	inner := http.HandlerFunc(func(_ http.ResponseWriter, r2 *http.Request) {
		reached = true
		if id := goidentity.FromHTTPRequestContext(r2); id != nil {
			user = id.UserName() + "@" + id.Domain()
		}
	})
	cw := &captureWriter{h: http.Header{}}
	spnego.SPNEGOKRB5Authenticate(inner, s.kt, s.settings...).ServeHTTP(cw, r)
	if v := cw.h.Get("WWW-Authenticate"); v != "" {
		w.Header().Set("WWW-Authenticate", v)
	}
	if reached && user != "" {
		return user, nil
	}
	if cw.status == http.StatusInternalServerError {
		return "", errorf(http.StatusInternalServerError, typeInternal, "SPNEGO authentication failed on the server side")
	}
	if r.Header.Get("Authorization") == "" {
		return "", errorf(http.StatusUnauthorized, typeNotAuthorized, "this listener requires Kerberos SPNEGO authentication (Authorization: Negotiate)")
	}
	return "", errorf(http.StatusUnauthorized, typeNotAuthorized, "the Kerberos SPNEGO token was not accepted for %s", s.principal)
}

// tokenPath is the REST specification's token endpoint, which Iceberg
// clients call with a client credential unless oauth2-server-uri points
// elsewhere. The proxy issues no tokens (see tokens).
const tokenPath = "/v1/oauth/tokens"

// authenticate proves who sent a request: the Authorization scheme picks
// SPNEGO (Negotiate) or OAuth2 (Bearer) among those configured; with
// neither configured every request is anonymous. A request without a
// credential the listener takes answers 401 with a challenge per scheme.
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request) (Caller, *Error) {
	sp, oa := h.opts.SPNEGO, h.opts.OAuth2
	if sp == nil && oa == nil {
		return Caller{}, nil
	}
	scheme, _, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	switch {
	case oa != nil && strings.EqualFold(scheme, "Bearer"):
		return oa.authenticate(w, r)
	case sp != nil && (strings.EqualFold(scheme, "Negotiate") || oa == nil):
		user, e := sp.authenticate(w, r)
		return Caller{User: user, Mechanism: MechanismKerberos}, e
	case sp == nil:
		return oa.authenticate(w, r)
	}
	// Both configured, and neither scheme was sent.
	w.Header().Add("WWW-Authenticate", "Negotiate")
	w.Header().Add("WWW-Authenticate", bearerChallenge("", ""))
	return Caller{}, errorf(http.StatusUnauthorized, typeNotAuthorized,
		"this listener requires an OAuth2 bearer token of %s (Authorization: Bearer) or Kerberos SPNEGO (Authorization: Negotiate)", oa.o.Issuer)
}

// tokens answers POST /v1/oauth/tokens. The proxy is no authorization
// server: it never sees client secrets and mints no tokens. A client
// configured with a credential must fetch its token from the identity
// provider (oauth2-server-uri in pyiceberg and Iceberg's Java client,
// iceberg.rest-catalog.oauth2.server-uri in Trino); this answer, in OAuth2's
// error form (RFC 6749), says so and names the provider's token endpoint
// where it is known.
func (h *Handler) tokens(rc *requestCtx) (int, any, *Error) {
	where := "this listener accepts no bearer tokens (rest-catalog.oauth2.issuer is not set)"
	if oa := h.opts.OAuth2; oa != nil {
		where = fmt.Sprintf("fetch the token from identity provider %s: set the client's oauth2-server-uri to its token endpoint", oa.o.Issuer)
		if ep := oa.tokenEndpoint(rc.ctx); ep != "" {
			where += " (" + ep + ")"
		}
	}
	return 0, nil, &Error{Code: http.StatusBadRequest, Type: oauthInvalidRequest,
		Message: "hms-proxy issues no OAuth2 tokens; " + where}
}

// captureWriter keeps what gokrb5's acceptor answers, so the REST error
// model (and HEAD's empty body) apply to authentication failures too.
type captureWriter struct {
	h      http.Header
	status int
}

func (c *captureWriter) Header() http.Header { return c.h }
func (c *captureWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
}
func (c *captureWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	return len(b), nil
}

// slogWriter feeds gokrb5's log.Logger lines into slog at debug level.
type slogWriter struct{ l *slog.Logger }

func (s slogWriter) Write(b []byte) (int, error) {
	s.l.Debug("spnego", "msg", strings.TrimSpace(string(b)))
	return len(b), nil
}
