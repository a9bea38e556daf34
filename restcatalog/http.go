package restcatalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"
	"unicode/utf8"
)

// route is one endpoint of the REST protocol.
type route struct {
	verb  string
	path  string // template as in the OpenAPI spec
	write bool   // one of the thirteen write routes
	body  bool   // takes a JSON request body
	fn    func(h *Handler, rc *requestCtx) (int, any, *Error)
	segs  []string
}

// endpoint is the route's name in /v1/config's endpoints list and in the
// route metric label.
func (r *route) endpoint() string { return r.verb + " " + r.path }

// Route label values that are not endpoints.
const (
	routeUnmatched = "unmatched"
)

// routes lists every endpoint served, reads first. The nine read and thirteen
// write routes are those the specification lists; /v1/config and
// /v1/{prefix}/config are served but are not endpoints of the list.
func newRoutes() []route {
	rt := []route{
		{verb: "GET", path: "/v1/{prefix}/namespaces", fn: (*Handler).listNamespaces},
		{verb: "GET", path: "/v1/{prefix}/namespaces/{namespace}", fn: (*Handler).loadNamespace},
		{verb: "HEAD", path: "/v1/{prefix}/namespaces/{namespace}", fn: (*Handler).namespaceExists},
		{verb: "GET", path: "/v1/{prefix}/namespaces/{namespace}/tables", fn: (*Handler).listTables},
		{verb: "GET", path: "/v1/{prefix}/namespaces/{namespace}/tables/{table}", fn: (*Handler).loadTable},
		{verb: "HEAD", path: "/v1/{prefix}/namespaces/{namespace}/tables/{table}", fn: (*Handler).tableExists},
		{verb: "GET", path: "/v1/{prefix}/namespaces/{namespace}/views", fn: (*Handler).listViews},
		{verb: "GET", path: "/v1/{prefix}/namespaces/{namespace}/views/{view}", fn: (*Handler).loadView},
		{verb: "HEAD", path: "/v1/{prefix}/namespaces/{namespace}/views/{view}", fn: (*Handler).viewExists},

		{verb: "POST", path: "/v1/{prefix}/namespaces/{namespace}/tables", write: true, body: true, fn: (*Handler).createTable},
		{verb: "POST", path: "/v1/{prefix}/namespaces/{namespace}/tables/{table}", write: true, body: true, fn: (*Handler).commitTable},
		{verb: "DELETE", path: "/v1/{prefix}/namespaces/{namespace}/tables/{table}", write: true, fn: (*Handler).dropTable},
		{verb: "POST", path: "/v1/{prefix}/tables/rename", write: true, body: true, fn: (*Handler).renameTable},
		{verb: "POST", path: "/v1/{prefix}/namespaces/{namespace}/register", write: true, body: true, fn: (*Handler).registerTable},
		{verb: "POST", path: "/v1/{prefix}/namespaces/{namespace}/views", write: true, body: true, fn: (*Handler).createView},
		{verb: "POST", path: "/v1/{prefix}/namespaces/{namespace}/views/{view}", write: true, body: true, fn: (*Handler).replaceView},
		{verb: "DELETE", path: "/v1/{prefix}/namespaces/{namespace}/views/{view}", write: true, fn: (*Handler).dropView},
		{verb: "POST", path: "/v1/{prefix}/views/rename", write: true, body: true, fn: (*Handler).renameView},
		{verb: "POST", path: "/v1/{prefix}/namespaces", write: true, body: true, fn: (*Handler).createNamespace},
		{verb: "POST", path: "/v1/{prefix}/namespaces/{namespace}/properties", write: true, body: true, fn: (*Handler).updateNamespaceProperties},
		{verb: "DELETE", path: "/v1/{prefix}/namespaces/{namespace}", write: true, fn: (*Handler).dropNamespace},
		{verb: "POST", path: "/v1/{prefix}/transactions/commit", write: true, body: true, fn: (*Handler).commitTransaction},

		{verb: "GET", path: "/v1/config", fn: (*Handler).config},
		{verb: "POST", path: tokenPath, fn: (*Handler).tokens},
		{verb: "GET", path: "/v1/{prefix}/config", fn: (*Handler).prefixConfig},
	}
	for i := range rt {
		rt[i].segs = strings.Split(strings.TrimPrefix(rt[i].path, "/"), "/")
	}
	return rt
}

// endpoints lists the routes /v1/config announces for a catalog: the nine
// reads always, the thirteen writes only where writes are allowed.
func (h *Handler) endpoints(writes bool) []string {
	var out []string
	for i := range h.routes {
		r := &h.routes[i]
		if strings.HasSuffix(r.path, "/config") || r.path == tokenPath {
			continue
		}
		if r.write && !writes {
			continue
		}
		out = append(out, r.endpoint())
	}
	return out
}

// match finds the route of a path (split into escaped segments) and method.
// It returns the route (nil when none), the decoded parameters, and the
// methods the path has when the method is not one of them.
func match(routes []route, method string, segs []string) (*route, map[string]string, []string, *Error) {
	var allowed []string
	for i := range routes {
		r := &routes[i]
		if len(r.segs) != len(segs) {
			continue
		}
		params := map[string]string{}
		ok := true
		var bad *Error
		for j, s := range r.segs {
			if strings.HasPrefix(s, "{") {
				v, err := url.PathUnescape(segs[j])
				if err != nil {
					bad = badRequest("malformed path segment %q: %v", segs[j], err)
				}
				params[strings.Trim(s, "{}")] = v
				continue
			}
			if s != segs[j] {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		if r.verb != method {
			allowed = append(allowed, r.verb)
			continue
		}
		return r, params, nil, bad
	}
	return nil, nil, allowed, nil
}

// recorder captures the status of the answer.
type recorder struct {
	http.ResponseWriter
	status int
	head   bool
}

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.head {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// ServeHTTP serves one REST request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w, head: r.Method == http.MethodHead}
	info := RequestInfo{Method: r.Method, Route: routeUnmatched, Caller: callerOf(r)}
	ctx, cancel := context.WithTimeout(r.Context(), h.opts.RequestTimeout)
	defer cancel()
	rc := &requestCtx{h: h, ctx: ctx, r: r, caller: info.Caller}
	defer func() {
		if p := recover(); p != nil {
			h.log.Error("REST request panicked", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
			e := errorf(http.StatusInternalServerError, typeInternal, "internal error while serving %s %s", r.Method, r.URL.Path)
			if rec.status == 0 {
				writeError(rec, e)
			}
			info.Error = e.Type
		}
		rc.close()
		info.Status = rec.status
		info.Prefix = rc.prefix
		info.Catalog = rc.catalog
		info.Duration = time.Since(start)
		h.opts.Metrics.observe(info.Prefix, info.Route, info.Status, info.Duration)
		if h.opts.OnRequest != nil {
			h.opts.OnRequest(info)
		}
	}()
	if r.URL.Path != tokenPath {
		c, e := h.authenticate(rec, r)
		if e != nil {
			info.Error = e.Type
			writeError(rec, e)
			return
		}
		c.RemoteAddr = rc.caller.RemoteAddr
		rc.caller, info.Caller = c, c
	}
	status, body, e := h.serve(rc, &info)
	if e != nil {
		info.Error = e.Type
		if rc.allow != "" {
			rec.Header().Set("Allow", rc.allow)
		}
		writeError(rec, e)
		return
	}
	writeJSON(rec, status, body)
}

func (h *Handler) serve(rc *requestCtx, info *RequestInfo) (int, any, *Error) {
	r := rc.r
	p := r.URL.EscapedPath()
	if !strings.HasPrefix(p, "/v1/") {
		return 0, nil, errorf(http.StatusNotFound, typeNotFound, "no such endpoint: %s %s (the Iceberg REST API lives under /v1/)", r.Method, r.URL.Path)
	}
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	rt, params, allowed, bad := match(h.routes, r.Method, segs)
	if rt == nil {
		if len(allowed) > 0 {
			rc.allow = strings.Join(allowed, ", ")
			return 0, nil, errorf(http.StatusMethodNotAllowed, typeMethodNotAllowed, "method %s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, rc.allow)
		}
		return 0, nil, errorf(http.StatusNotFound, typeNotFound, "no such endpoint: %s %s", r.Method, r.URL.Path)
	}
	info.Route = rt.endpoint()
	rc.route = info.Route
	if bad != nil {
		return 0, nil, bad
	}
	rc.params = params
	if raw, ok := params["prefix"]; ok {
		c := h.ns.Lookup(raw)
		if c == nil {
			return 0, nil, errorf(http.StatusNotFound, typeNoSuchCatalog, "unknown catalog prefix %q: configured catalogs are %s", raw, h.catalogList())
		}
		rc.prefix = c.Name
	}
	return rt.fn(h, rc)
}

// labels are the metric labels of a request that is answered without being
// served (the listener's admission bound): its catalog prefix (when
// configured) and route, as ServeHTTP would record them.
func (h *Handler) labels(r *http.Request) (prefix, route string) {
	p := r.URL.EscapedPath()
	if !strings.HasPrefix(p, "/v1/") {
		return "", routeUnmatched
	}
	rt, params, _, _ := match(h.routes, r.Method, strings.Split(strings.TrimPrefix(p, "/"), "/"))
	if rt == nil {
		return "", routeUnmatched
	}
	if c := h.ns.Lookup(params["prefix"]); c != nil && params["prefix"] != "" {
		prefix = c.Name
	}
	return prefix, rt.endpoint()
}

func (h *Handler) catalogList() string {
	var names []string
	for _, c := range h.ns.Catalogs() {
		names = append(names, c.Name)
	}
	return strings.Join(names, ", ")
}

// decodeBody reads the JSON request body into v: the content type must be
// JSON (or absent), the size within MaxBodyBytes, the text one JSON value
// whose top-level fields v knows.
func (rc *requestCtx) decodeBody(v any) *Error {
	r := rc.r
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return errorf(http.StatusUnsupportedMediaType, typeMediaType, "Content-Type %q is not accepted: the request body must be application/json", ct)
		}
	}
	limit := rc.h.opts.MaxBodyBytes
	b, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return errorf(http.StatusRequestEntityTooLarge, typeTooLarge, "request body exceeds the limit of %d bytes", limit)
		}
		return badRequest("cannot read the request body: %v", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return badRequest("the request body is empty; this endpoint takes a JSON object")
	}
	if !utf8.Valid(b) {
		return badRequest("the request body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("malformed request body: %s", jsonErrorText(err))
	}
	if dec.More() {
		return badRequest("malformed request body: unexpected data after the JSON object")
	}
	var rest json.RawMessage
	if err := dec.Decode(&rest); err != io.EOF {
		return badRequest("malformed request body: unexpected data after the JSON object")
	}
	return nil
}

func jsonErrorText(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d: %v", se.Offset, se)
	case errors.As(err, &te):
		if te.Field != "" {
			return fmt.Sprintf("field %q: expected %s, got JSON %s", te.Field, te.Type, te.Value)
		}
		return fmt.Sprintf("expected %s, got JSON %s", te.Type, te.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON text ends early"
	}
	return err.Error()
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	if body == nil {
		if status == 0 {
			status = http.StatusNoContent
		}
		w.WriteHeader(status)
		return
	}
	b, err := json.Marshal(body)
	if err != nil {
		writeError(w, errorf(http.StatusInternalServerError, typeInternal, "cannot encode the answer: %v", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeError(w http.ResponseWriter, e *Error) {
	var m errorModel
	m.Error.Message, m.Error.Type, m.Error.Code = e.Message, e.Type, e.Code
	b, _ := json.Marshal(m)
	if e.Type == oauthInvalidRequest { // the token endpoint answers in OAuth2's form
		b, _ = json.Marshal(map[string]string{"error": e.Type, "error_description": e.Message})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Code)
	_, _ = w.Write(b)
}
