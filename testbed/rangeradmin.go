package testbed

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/jcmturner/goidentity/v6"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/service"
	"github.com/jcmturner/gokrb5/v8/spnego"
)

// RangerAdmin is a hand-written stand-in for Apache Ranger Admin's plugin download API, named as such: Ranger Admin
// is not published as a runnable artifact. It serves the documents a test gives it, in Ranger's download formats
// (ServicePolicies, RangerRoles), on loopback, the way Admin's ServiceREST/RoleREST answer a plugin:
//
//	GET /service/plugins/policies/download/{service}         ?lastKnownVersion=...  200 or 304
//	GET /service/plugins/secure/policies/download/{service}  (Kerberos SPNEGO)
//	GET /service/roles/download/{service}                    ?lastKnownRoleVersion=... 200 or 304
//	GET /service/roles/secure/download/{service}             (Kerberos SPNEGO)
//
// An unknown service is a 404 whose body names it. Every request is recorded.
type RangerAdmin struct {
	URL string

	srv  *http.Server
	ln   net.Listener
	auth http.Handler // SPNEGO for the secure paths (nil: they are served without)

	mu       sync.Mutex
	policies map[string][]byte
	roles    map[string][]byte
	requests []RangerAdminRequest
}

// RangerAdminRequest is one request the stand-in answered.
type RangerAdminRequest struct {
	Path   string
	Query  map[string]string
	Status int
	// User is the Kerberos principal of a secure request ("" otherwise).
	User string
}

// RangerAdminOptions configure the stand-in.
type RangerAdminOptions struct {
	// Keytab and Principal (HTTP/host@REALM) make the secure paths require Kerberos SPNEGO, as a Kerberized Admin
	// does; the plain paths then answer 401.
	Keytab, Principal string
}

// StartRangerAdmin listens on a free loopback port.
func StartRangerAdmin(o RangerAdminOptions) (*RangerAdmin, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	a := &RangerAdmin{ln: ln, URL: "http://" + ln.Addr().String(), policies: map[string][]byte{}, roles: map[string][]byte{}}
	if o.Keytab != "" {
		kt, err := keytab.Load(o.Keytab)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("testbed: Ranger Admin keytab: %w", err)
		}
		name := strings.SplitN(o.Principal, "@", 2)[0]
		a.auth = spnego.SPNEGOKRB5Authenticate(http.HandlerFunc(a.serve), kt, service.KeytabPrincipal(name), service.DecodePAC(false))
	}
	a.srv = &http.Server{Handler: http.HandlerFunc(a.route)}
	go func() { _ = a.srv.Serve(ln) }()
	return a, nil
}

// SetPolicies makes Admin serve a ServicePolicies document for service (its policyVersion decides 304s).
func (a *RangerAdmin) SetPolicies(service string, doc []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.policies[service] = doc
}

// SetRoles makes Admin serve a RangerRoles document for service (nil: none, a 404).
func (a *RangerAdmin) SetRoles(service string, doc []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if doc == nil {
		delete(a.roles, service)
		return
	}
	a.roles[service] = doc
}

// Requests returns the requests answered so far.
func (a *RangerAdmin) Requests() []RangerAdminRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]RangerAdminRequest(nil), a.requests...)
}

// Close stops the server.
func (a *RangerAdmin) Close() { _ = a.srv.Close() }

func (a *RangerAdmin) route(w http.ResponseWriter, r *http.Request) {
	secure := strings.Contains(r.URL.Path, "/secure/")
	switch {
	case secure && a.auth != nil:
		a.auth.ServeHTTP(w, r)
	case !secure && a.auth != nil:
		a.answer(w, r, http.StatusUnauthorized, []byte(`{"statusCode":1,"msgDesc":"Kerberos authentication required: use the secure download"}`))
	default:
		a.serve(w, r)
	}
}

func (a *RangerAdmin) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		a.answer(w, r, http.StatusMethodNotAllowed, nil)
		return
	}
	p := r.URL.Path
	var docs map[string][]byte
	var versionParam, versionField, rest string
	switch {
	case strings.HasPrefix(p, "/service/plugins/policies/download/"), strings.HasPrefix(p, "/service/plugins/secure/policies/download/"):
		docs, versionParam, versionField = a.policies, "lastKnownVersion", "policyVersion"
		rest = p[strings.LastIndex(p, "/download/")+len("/download/"):]
	case strings.HasPrefix(p, "/service/roles/download/"), strings.HasPrefix(p, "/service/roles/secure/download/"):
		docs, versionParam, versionField = a.roles, "lastKnownRoleVersion", "roleVersion"
		rest = p[strings.LastIndex(p, "/download/")+len("/download/"):]
	default:
		a.answer(w, r, http.StatusNotFound, []byte(`{"statusCode":1,"msgDesc":"no such resource"}`))
		return
	}
	a.mu.Lock()
	doc, ok := docs[rest]
	a.mu.Unlock()
	if !ok {
		a.answer(w, r, http.StatusNotFound, []byte(fmt.Sprintf(`{"statusCode":1,"msgDesc":"RangerServiceNotFoundException: service %s not found"}`, rest)))
		return
	}
	var head map[string]json.RawMessage
	_ = json.Unmarshal(doc, &head)
	current, _ := strconv.ParseInt(string(head[versionField]), 10, 64)
	if known, err := strconv.ParseInt(r.URL.Query().Get(versionParam), 10, 64); err == nil && known == current && known != -1 {
		a.answer(w, r, http.StatusNotModified, nil)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	a.answer(w, r, http.StatusOK, doc)
}

func (a *RangerAdmin) answer(w http.ResponseWriter, r *http.Request, status int, body []byte) {
	q := map[string]string{}
	for k, v := range r.URL.Query() {
		q[k] = strings.Join(v, ",")
	}
	rec := RangerAdminRequest{Path: r.URL.Path, Query: q, Status: status}
	if id := goidentity.FromHTTPRequestContext(r); id != nil {
		rec.User = id.UserName() + "@" + id.Domain()
	}
	a.mu.Lock()
	a.requests = append(a.requests, rec)
	a.mu.Unlock()
	w.WriteHeader(status)
	if body != nil {
		_, _ = w.Write(body)
	}
}
