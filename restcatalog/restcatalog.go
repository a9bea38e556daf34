// Package restcatalog is the proxy's Iceberg REST Catalog frontend: an HTTP
// handler serving the Iceberg REST protocol (namespaces, tables, views,
// multi-table transactions) over the Hive metastores behind the proxy.
//
// Every metastore call goes through the proxy's own router (Options.Metastore
// hands out a Thrift client into it), so routing, access modes, exposure,
// rate limits and audit apply to REST requests exactly as to Thrift clients.
// Namespaces are HMS databases, tables are the Iceberg tables among their
// tables (parameter table_type=ICEBERG, metadata_location), views the Iceberg
// views (table_type=ICEBERG-VIEW). Table and view metadata files are read and
// written by this module's own package icemeta (built from the Iceberg
// specs); commits swap metadata_location under the table's metastore lock,
// as Iceberg's HiveTableOperations does.
//
// Each configured catalog has its own REST prefix (/v1/<catalog>/...). The
// default catalog's prefix shows its own databases and every other catalog's
// under their federated names (<catalog><sep><db>); any other prefix shows
// only that catalog's databases under their own names.
package restcatalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hms-proxy/hms-proxy/fileio"
	"github.com/hms-proxy/hms-proxy/router/naming"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Caller is who a REST request runs for.
type Caller struct {
	// User is the authenticated user: the SPNEGO principal (user@REALM), or
	// the configured claim of an OAuth2 bearer token; "" when the listener
	// does not authenticate.
	User string
	// Groups are the bearer token's groups claim (none for SPNEGO).
	Groups []string
	// Mechanism is how User was proved: MechanismKerberos, MechanismOAuth2,
	// or "" (anonymous).
	Mechanism string
	// RemoteAddr is the HTTP peer (host:port).
	RemoteAddr string
}

// Authentication mechanisms of a Caller.
const (
	MechanismKerberos = "kerberos"
	MechanismOAuth2   = "oauth2"
)

// Metastore opens a Thrift client into the proxy's router for one REST
// request; release returns it. All metastore access of this package goes
// through it.
type Metastore func(ctx context.Context, caller Caller) (client *thriftgen.Client, release func(), err error)

// PurgeMode is rest-catalog.purge.mode: what DELETE ...?purgeRequested=true may
// delete.
type PurgeMode string

// Purge modes.
const (
	// PurgeAllow deletes every file the table's metadata and manifests
	// name, as Iceberg's own REST catalogs do (the default).
	PurgeAllow PurgeMode = "ALLOW"
	// PurgeAllowlist purges only under rest-catalog.purge.allowed-prefixes,
	// checked before the drop and again for every file while deleting.
	PurgeAllowlist PurgeMode = "ALLOWLIST"
	// PurgeRefuse answers 403 to every purge; a plain drop still works.
	PurgeRefuse PurgeMode = "REFUSE"
)

// RequestInfo describes one finished REST request, for the audit hook.
type RequestInfo struct {
	Method   string // HTTP method
	Route    string // endpoint template, e.g. "GET /v1/{prefix}/namespaces"; "unmatched" when none
	Prefix   string // catalog of the URL prefix, "" for /v1/config and unknown prefixes
	Catalog  string // catalog the request's namespace resolved to, "" when none
	Status   int    // HTTP status answered
	Error    string // ErrorModel type when Status >= 400
	Duration time.Duration
	Caller   Caller
}

// Options configure a Handler. Naming, Metastore and WriteIsolated are
// required.
type Options struct {
	// Naming is the proxy's naming model (catalogs, default catalog,
	// separator), the router's own.
	Naming *naming.Namespace
	// Metastore opens clients into the router.
	Metastore Metastore
	// WriteIsolated reports whether the metastore locks of a catalog
	// isolate concurrent writers (the real HMS lock of the default catalog,
	// or an isolating lock shim). Writes are allowed only there; elsewhere
	// they answer 403 naming the catalog.
	WriteIsolated func(catalog string) bool
	// WriteRefusal, when set, is the catalog's write policy (the router's
	// access mode, Router.WriteRefusal): why a write of what to database db
	// (a backend name; "" for the catalog as a whole) is refused, "" when
	// it is allowed. A refused write answers 403 before any lock, file or
	// metastore write; a catalog refusing every write announces no write
	// endpoint.
	WriteRefusal func(catalog, db, what string) string
	// CatalogConf looks up catalog.<catalog>.conf.<key> (for
	// iceberg.engine.hive.enabled and iceberg.engine.hive.lock-enabled);
	// nil means none is set.
	CatalogConf func(catalog, key string) (string, bool)
	// CompareAndSwap reports whether a catalog's metastore compares
	// metadata_location on alter_table (Hive 4's expected_parameter_key), so
	// a commit may skip the table lock; nil means none does.
	CompareAndSwap func(catalog string) bool

	// PurgeMode is rest-catalog.purge.mode ("" means ALLOW).
	PurgeMode PurgeMode
	// PurgeAllowedPrefixes is rest-catalog.purge.allowed-prefixes: required
	// with ALLOWLIST, refused with the other modes.
	PurgeAllowedPrefixes []string
	// HiveEngineDescriptor is rest-catalog.hive-engine-descriptor: commits
	// write the Hive-readable storage descriptor unless the table or the
	// catalog's iceberg.engine.hive.enabled says otherwise.
	HiveEngineDescriptor bool

	// FileIO opens the file system of a location in a catalog (whose
	// storage settings apply) for metadata files and purges; nil serves
	// local files only (file: URIs and absolute paths). The context names
	// the caller (fileio.UserFrom) for file systems that impersonate.
	FileIO func(ctx context.Context, catalog, location string) (fileio.IO, error)
	// MaxBodyBytes bounds a request body (default 8 MiB).
	MaxBodyBytes int64
	// RequestTimeout bounds one request's metastore work (default 60 s).
	RequestTimeout time.Duration
	// LockTimeout bounds waiting for a table's metastore lock (default
	// 45 s; it must stay below RequestTimeout, which bounds the whole
	// commit). Iceberg's own HiveCatalog waits up to 3 minutes, longer than
	// an HTTP client usually waits for an answer.
	LockTimeout time.Duration
	// LockCheckMinWait and LockCheckMaxWait bound the check_lock backoff
	// (defaults 50 ms and 5 s, as Iceberg's).
	LockCheckMinWait, LockCheckMaxWait time.Duration
	// Hostname goes into lock requests (default os.Hostname).
	Hostname string

	// SPNEGO, when set, authenticates requests that carry "Authorization:
	// Negotiate" (Kerberos); the client principal becomes Caller.User.
	SPNEGO *SPNEGO
	// OAuth2, when set, authenticates requests that carry "Authorization:
	// Bearer" (JWTs of an identity provider). With SPNEGO, OAuth2 or both
	// set, every request but the token endpoint must authenticate.
	OAuth2 *OAuth2

	// Metrics records the spec's REST metrics; nil records nothing.
	Metrics *Metrics
	// OnRequest, when set, is called once per finished request (audit).
	OnRequest func(RequestInfo)
	// Log receives warnings (skipped purge paths, unlock failures);
	// default slog.Default().
	Log *slog.Logger
}

// Handler serves the Iceberg REST protocol. Build it with New.
type Handler struct {
	opts     Options
	ns       *naming.Namespace
	prefixes []string // normalized purge prefixes
	routes   []route
	queues   *tableQueues
	log      *slog.Logger
}

// Defaults of Options.
const (
	DefaultMaxBodyBytes   = 8 << 20
	DefaultRequestTimeout = 60 * time.Second
	DefaultLockTimeout    = 45 * time.Second
)

// ParsePurgeMode parses rest-catalog.purge.mode (case-insensitive).
func ParsePurgeMode(s string) (PurgeMode, error) {
	switch m := PurgeMode(strings.ToUpper(strings.TrimSpace(s))); m {
	case "":
		return PurgeAllow, nil
	case PurgeAllow, PurgeAllowlist, PurgeRefuse:
		return m, nil
	}
	return "", fmt.Errorf("rest-catalog.purge.mode=%s: must be ALLOW, ALLOWLIST or REFUSE", s)
}

// New validates opts and builds the handler.
func New(opts Options) (*Handler, error) {
	if opts.Naming == nil || opts.Naming.Default() == nil {
		return nil, errors.New("restcatalog: Options.Naming with a default catalog is required")
	}
	if opts.Metastore == nil {
		return nil, errors.New("restcatalog: Options.Metastore is required")
	}
	if opts.WriteIsolated == nil {
		return nil, errors.New("restcatalog: Options.WriteIsolated is required")
	}
	mode, err := ParsePurgeMode(string(opts.PurgeMode))
	if err != nil {
		return nil, err
	}
	opts.PurgeMode = mode
	h := &Handler{opts: opts, ns: opts.Naming, log: opts.Log, routes: newRoutes(), queues: newTableQueues()}
	switch {
	case mode == PurgeAllowlist && len(opts.PurgeAllowedPrefixes) == 0:
		return nil, errors.New("rest-catalog.purge.allowed-prefixes is required with rest-catalog.purge.mode=ALLOWLIST")
	case mode != PurgeAllowlist && len(opts.PurgeAllowedPrefixes) > 0:
		return nil, fmt.Errorf("rest-catalog.purge.allowed-prefixes is set but rest-catalog.purge.mode=%s; it applies only to ALLOWLIST", mode)
	}
	for _, p := range opts.PurgeAllowedPrefixes {
		n, err := normalizePrefix(p)
		if err != nil {
			return nil, fmt.Errorf("rest-catalog.purge.allowed-prefixes: %v", err)
		}
		h.prefixes = append(h.prefixes, n)
	}
	// The catalog settings this package reads are booleans; a typo would
	// silently pick the other storage descriptor or locking.
	for _, c := range opts.Naming.Catalogs() {
		for _, key := range []string{confHiveEnabled, confLockEnabled} {
			if v, ok := h.catalogConf(c.Name, key); ok && !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
				return nil, fmt.Errorf("catalog.%s.conf.%s=%s: must be true or false", c.Name, key, v)
			}
		}
	}
	if h.opts.MaxBodyBytes <= 0 {
		h.opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if h.opts.RequestTimeout <= 0 {
		h.opts.RequestTimeout = DefaultRequestTimeout
	}
	if h.opts.LockTimeout <= 0 {
		h.opts.LockTimeout = DefaultLockTimeout
	}
	if h.opts.LockTimeout >= h.opts.RequestTimeout {
		return nil, fmt.Errorf("restcatalog: LockTimeout %s must be shorter than RequestTimeout %s", h.opts.LockTimeout, h.opts.RequestTimeout)
	}
	if h.opts.LockCheckMinWait <= 0 {
		h.opts.LockCheckMinWait = 50 * time.Millisecond
	}
	if h.opts.LockCheckMaxWait <= 0 {
		h.opts.LockCheckMaxWait = 5 * time.Second
	}
	if h.opts.Hostname == "" {
		h.opts.Hostname, _ = os.Hostname()
	}
	if h.opts.FileIO == nil {
		h.opts.FileIO = func(_ context.Context, _, location string) (fileio.IO, error) {
			if _, err := fileio.LocalPath(location); err != nil {
				return nil, err
			}
			return fileio.Local{}, nil
		}
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	return h, nil
}

// catalogConf reads catalog.<catalog>.conf.<key>.
func (h *Handler) catalogConf(catalog, key string) (string, bool) {
	if h.opts.CatalogConf == nil {
		return "", false
	}
	return h.opts.CatalogConf(catalog, key)
}

// writable is the write gate, checked on the catalog a request's namespace
// resolves to (never on the URL prefix alone): the catalog's write policy
// (access mode), then its writer isolation. what names the request.
func (h *Handler) writable(ref nsRef, what string) *Error {
	if h.opts.WriteRefusal != nil {
		_, db, _ := h.ns.SplitDB(ref.Ext)
		if why := h.opts.WriteRefusal(ref.Catalog, db, what); why != "" {
			return forbidden("%s", why)
		}
	}
	if h.opts.WriteIsolated(ref.Catalog) {
		return nil
	}
	def := h.ns.Default().Name
	return forbidden("Writes are only supported in catalogs whose metastore locks isolate writers; namespace '%s' belongs to catalog '%s', "+
		"whose locks provide no writer isolation (the default catalog is '%s')", ref.Name, ref.Catalog, def)
}

// writesAllowed: the catalog takes REST writes at all (announced in
// /v1/config).
func (h *Handler) writesAllowed(catalog string) bool {
	if h.opts.WriteRefusal != nil && h.opts.WriteRefusal(catalog, "", "") != "" {
		return false
	}
	return h.opts.WriteIsolated(catalog)
}

// requestCtx carries one request's state through the handlers.
type requestCtx struct {
	h       *Handler
	ctx     context.Context
	r       *http.Request
	caller  Caller
	prefix  string // canonical catalog of the URL prefix
	catalog string // catalog the request resolved to (for audit)
	params  map[string]string
	route   string // the endpoint served ("POST /v1/{prefix}/namespaces")
	allow   string // the Allow header of a 405

	ms      *thriftgen.Client
	release func()
}

// client returns the request's metastore client, opening it on first use.
func (rc *requestCtx) client() (*thriftgen.Client, *Error) {
	if rc.ms != nil {
		return rc.ms, nil
	}
	c, release, err := rc.h.opts.Metastore(rc.ctx, rc.caller)
	if err != nil {
		return nil, errorf(http.StatusServiceUnavailable, typeUnavailable, "cannot reach the metastore: %v", err)
	}
	rc.ms, rc.release = c, release
	return c, nil
}

func (rc *requestCtx) close() {
	if rc.release != nil {
		rc.release()
		rc.release = nil
	}
}
