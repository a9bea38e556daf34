package configs

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Defaults of the settings that have one. Where the specification gives a
// default it is used; the others are this project's decisions (README.md, "Decisions where the specification is silent").
const (
	DefaultServerName            = "hms-proxy"
	DefaultBindHost              = "0.0.0.0"
	DefaultPort                  = 9083
	DefaultMinWorkerThreads      = 200
	DefaultMaxWorkerThreads      = 1000
	DefaultClientSocketTimeoutMS = 600000
	DefaultTCPKeepAliveIdleS     = 120
	DefaultTCPKeepAliveIntervalS = 30
	DefaultTCPKeepAliveCount     = 4
	DefaultShutdownTimeoutS      = 30
	DefaultMaxMessageSize        = 104857600 // 100 MiB
	DefaultManagementPortOffset  = 1000
	DefaultManagementThreads     = 4
	DefaultReadinessCacheMS      = 2000
	DefaultCatalogDBSeparator    = "__"
	DefaultSharedSessionPoolSize = 8
	DefaultSocketTimeout         = 600 * time.Second
	DefaultConnectRetries        = 3
	DefaultConnectRetryDelay     = time.Second
	DefaultTxnTimeout            = 300 * time.Second
	DefaultZooKeeperZNode        = "/hms-proxy-synthetic-read-locks"
	DefaultZKConnectionTimeoutMS = 15000
	DefaultZKSessionTimeoutMS    = 60000
	DefaultZKBaseSleepMS         = 1000
	DefaultZKMaxRetries          = 3
	DefaultAuditFile             = "logs/hms-proxy-audit.log"
	DefaultAuditMaxFileSizeMB    = 100
	DefaultAuditMaxBackups       = 10
	DefaultLogLevel              = LevelInfo
	DefaultLogMaxFileSizeMB      = 50
	DefaultLogMaxBackups         = 10
)

const mib = 1 << 20

// Load reads and validates a hms-proxy.properties file.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // *PathError names the file
	}
	defer f.Close()
	cfg, err := ParseReader(f)
	var se *SyntaxError
	if errors.As(err, &se) {
		se.File = path
	}
	return cfg, err
}

// ParseReader reads .properties text (see ReadProperties) and validates it
// like Parse. A key set more than once is a Warning (the last value wins, as
// in Java).
func ParseReader(r io.Reader) (*Config, error) {
	entries, err := readProperties(r)
	if err != nil {
		return nil, err
	}
	props := make(map[string]string, len(entries))
	lines := map[string][]int{}
	for _, e := range entries {
		props[e.Key] = e.Value
		lines[e.Key] = append(lines[e.Key], e.Line)
	}
	var dups []string // warnings about the file text itself
	for _, e := range entries {
		for _, n := range e.Notes {
			dups = append(dups, fmt.Sprintf("line %d (%s): %s", e.Line, e.Key, n))
		}
	}
	for k, ls := range lines {
		if len(ls) > 1 {
			dups = append(dups, fmt.Sprintf("%s is set %d times (lines %s); the last value is used",
				k, len(ls), joinInts(ls)))
		}
	}
	cfg, err := Parse(props)
	var ve *ValidationError
	switch {
	case errors.As(err, &ve):
		ve.Warnings = sortedUnique(append(ve.Warnings, dups...))
	case err == nil:
		cfg.Warnings = sortedUnique(append(cfg.Warnings, dups...))
	}
	return cfg, err
}

// Parse validates a key/value map (as ReadProperties returns it) and builds
// the Config. On any problem it returns a *ValidationError holding all of
// them, and no Config.
func Parse(props map[string]string) (*Config, error) {
	p := &parser{props: props, used: map[string]bool{}, bad: map[string]bool{}}
	cfg := &Config{}
	p.parseServer(cfg)
	p.parseCompatibility(cfg)
	p.parseRoutingSeparator(cfg)
	p.parseSecurity(cfg)
	p.parseCatalogs(cfg)
	p.parseDefaultCatalog(cfg)
	cfg.Federation.PreserveBackendCatalogName, _ = p.boolean("federation.preserve-backend-catalog-name", false)
	p.parseFrontends(cfg)
	p.parseManagement(cfg)
	p.checkImpersonation(cfg)
	p.parseSyntheticLock(cfg)
	p.parseAudit(cfg)
	p.parseLogging(cfg)
	p.checkListenerClashes(cfg)
	p.checkLeftovers(cfg)
	if len(p.errs) > 0 {
		sortErrors(p.errs)
		return nil, &ValidationError{Errors: p.errs, Warnings: sortedUnique(p.warns)}
	}
	cfg.Warnings = sortedUnique(p.warns)
	return cfg, nil
}

type parser struct {
	props map[string]string
	used  map[string]bool
	bad   map[string]bool // keys that produced an error, to avoid follow-up noise
	errs  []*Error
	warns []string
}

func (p *parser) fail(e *Error) {
	p.errs = append(p.errs, e)
	p.bad[e.Key] = true
}

func (p *parser) warnf(format string, args ...any) {
	p.warns = append(p.warns, fmt.Sprintf(format, args...))
}

// get returns the trimmed value of key and marks the key as consumed.
func (p *parser) get(key string) (string, bool) {
	v, ok := p.props[key]
	if !ok {
		return "", false
	}
	p.used[key] = true
	return strings.TrimSpace(v), true
}

func (p *parser) has(key string) bool {
	_, ok := p.props[key]
	return ok
}

// keysWithPrefix returns the keys starting with prefix, sorted.
func (p *parser) keysWithPrefix(prefix string) []string {
	var out []string
	for k := range p.props {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func (p *parser) str(key, def string) string {
	if v, ok := p.get(key); ok {
		return v
	}
	return def
}

// parseBool accepts only true and false, in any case.
func parseBool(v string) (bool, bool) {
	switch strings.ToLower(v) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

const boolMsg = "not a boolean: only true or false (any case) are accepted"

// boolean returns the value of a boolean key, def when absent; ok is false
// when the value was rejected (def is then returned).
func (p *parser) boolean(key string, def bool) (val, ok bool) {
	v, present := p.get(key)
	if !present {
		return def, true
	}
	b, good := parseBool(v)
	if !good {
		p.fail(errorf(key, v, boolMsg))
		return def, false
	}
	return b, true
}

// integer returns the value of an integer key in [lo, hi], def when absent.
func (p *parser) integer(key string, def, lo, hi int64) (int64, bool) {
	v, present := p.get(key)
	if !present {
		return def, true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		p.fail(errorf(key, v, "not an integer (must be %s)", rangeDesc(lo, hi)))
		return def, false
	}
	if n < lo || n > hi {
		p.fail(errorf(key, v, "out of range: must be %s", rangeDesc(lo, hi)))
		return def, false
	}
	return n, true
}

func rangeDesc(lo, hi int64) string {
	if hi >= math.MaxInt32 {
		return fmt.Sprintf("at least %d", lo)
	}
	return fmt.Sprintf("between %d and %d", lo, hi)
}

func (p *parser) intKey(key string, def, lo, hi int) (int, bool) {
	n, ok := p.integer(key, int64(def), int64(lo), int64(hi))
	return int(n), ok
}

func (p *parser) port(key string, def int) (int, bool) { return p.intKey(key, def, 0, 65535) }

// millis reads a key counted in milliseconds.
func (p *parser) millis(key string, defMS, lo int64) (time.Duration, bool) {
	n, ok := p.integer(key, defMS, lo, math.MaxInt64/int64(time.Millisecond))
	return time.Duration(n) * time.Millisecond, ok
}

// seconds reads a key counted in seconds.
func (p *parser) seconds(key string, defS, lo int64) (time.Duration, bool) {
	n, ok := p.integer(key, defS, lo, math.MaxInt64/int64(time.Second))
	return time.Duration(n) * time.Second, ok
}

// mebibytes reads a size key counted in MiB, returned in bytes.
func (p *parser) mebibytes(key string, defMB int64) int64 {
	n, _ := p.integer(key, defMB, 1, math.MaxInt64/mib)
	return n * mib
}

// enum matches a value case-insensitively against allowed; the canonical
// spelling is returned. present tells whether the key was set.
func (p *parser) enum(key, def string, allowed []string) (val string, present, ok bool) {
	v, present := p.get(key)
	if !present {
		return def, false, true
	}
	for _, a := range allowed {
		if strings.EqualFold(v, a) {
			return a, true, true
		}
	}
	p.fail(errorf(key, v, "unknown value; allowed (any case): %s", strings.Join(allowed, ", ")))
	return def, true, false
}

func profileNames() []string {
	ps := Profiles()
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = string(p)
	}
	return out
}

func (p *parser) profile(key string, def Profile) (Profile, bool, bool) {
	v, present, ok := p.enum(key, string(def), profileNames())
	return Profile(v), present, ok
}

// splitList splits a comma-separated value, trims the items and drops empty
// ones.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// ignoredJar records a *-standalone-metastore-jar key: accepted so that
// configurations of the Java proxy load unchanged, but not needed.
func (p *parser) ignoredJar(key string) string {
	v, ok := p.get(key)
	if ok && v != "" {
		p.warnf("%s=%s: ignored: every supported Hive version is compiled into hms-proxy, no standalone-metastore jar is loaded", key, quoteValue(v))
	}
	return v
}

// ---- server ----

func (p *parser) parseServer(cfg *Config) {
	s := &cfg.Server
	s.Name = p.str("server.name", DefaultServerName)
	s.BindHost = p.str("server.bind-host", DefaultBindHost)
	s.Port, _ = p.port("server.port", DefaultPort)
	lt := listenerTuning{}
	p.parseListenerTuning("server.", &lt, listenerTuning{
		MinWorkerThreads:     DefaultMinWorkerThreads,
		MaxWorkerThreads:     DefaultMaxWorkerThreads,
		ClientSocketTimeout:  DefaultClientSocketTimeoutMS * time.Millisecond,
		TCPKeepAlive:         true,
		TCPKeepAliveIdle:     DefaultTCPKeepAliveIdleS * time.Second,
		TCPKeepAliveInterval: DefaultTCPKeepAliveIntervalS * time.Second,
		TCPKeepAliveCount:    DefaultTCPKeepAliveCount,
		FramedTransport:      false,
		MaxMessageSize:       DefaultMaxMessageSize,
	})
	s.MinWorkerThreads, s.MaxWorkerThreads = lt.MinWorkerThreads, lt.MaxWorkerThreads
	s.ClientSocketTimeout = lt.ClientSocketTimeout
	s.TCPKeepAlive, s.TCPKeepAliveIdle, s.TCPKeepAliveInterval, s.TCPKeepAliveCount =
		lt.TCPKeepAlive, lt.TCPKeepAliveIdle, lt.TCPKeepAliveInterval, lt.TCPKeepAliveCount
	s.FramedTransport, s.MaxMessageSize = lt.FramedTransport, lt.MaxMessageSize
	s.ShutdownTimeout, _ = p.seconds("server.shutdown-timeout-seconds", DefaultShutdownTimeoutS, 0)
}

// listenerTuning is what the primary listener and every additional frontend
// share (server.* and additional-frontends.<name>.*).
type listenerTuning struct {
	MinWorkerThreads, MaxWorkerThreads     int
	ClientSocketTimeout                    time.Duration
	TCPKeepAlive                           bool
	TCPKeepAliveIdle, TCPKeepAliveInterval time.Duration
	TCPKeepAliveCount                      int
	FramedTransport                        bool
	MaxMessageSize                         int64
}

func (p *parser) parseListenerTuning(prefix string, lt *listenerTuning, def listenerTuning) {
	var okMin, okMax bool
	lt.MinWorkerThreads, okMin = p.intKey(prefix+"min-worker-threads", def.MinWorkerThreads, 0, math.MaxInt32)
	lt.MaxWorkerThreads, okMax = p.intKey(prefix+"max-worker-threads", def.MaxWorkerThreads, 1, math.MaxInt32)
	if okMin && okMax && lt.MinWorkerThreads > lt.MaxWorkerThreads {
		minKey, maxKey := prefix+"min-worker-threads", prefix+"max-worker-threads"
		key := minKey
		if !p.has(minKey) { // the min is a default: name the key that was written
			key = maxKey
		}
		p.fail(errorf(key, p.shown(key), "%s (%d) must not exceed %s (%d)",
			minKey, lt.MinWorkerThreads, maxKey, lt.MaxWorkerThreads))
	}
	lt.ClientSocketTimeout, _ = p.millis(prefix+"client-socket-timeout-ms", int64(def.ClientSocketTimeout/time.Millisecond), 0)
	lt.TCPKeepAlive, _ = p.boolean(prefix+"tcp-keepalive", def.TCPKeepAlive)
	lt.TCPKeepAliveIdle, _ = p.seconds(prefix+"tcp-keepalive-idle-seconds", int64(def.TCPKeepAliveIdle/time.Second), 1)
	lt.TCPKeepAliveInterval, _ = p.seconds(prefix+"tcp-keepalive-interval-seconds", int64(def.TCPKeepAliveInterval/time.Second), 1)
	lt.TCPKeepAliveCount, _ = p.intKey(prefix+"tcp-keepalive-count", def.TCPKeepAliveCount, 1, math.MaxInt32)
	lt.FramedTransport, _ = p.boolean(prefix+"framed-transport", def.FramedTransport)
	lt.MaxMessageSize, _ = p.integer(prefix+"max-message-size", def.MaxMessageSize, 1, math.MaxInt64)
}

// shown is the trimmed value of a key for an error message.
func (p *parser) shown(key string) string { return strings.TrimSpace(p.props[key]) }

// ---- compatibility, routing ----

func (p *parser) parseCompatibility(cfg *Config) {
	c := &cfg.Compatibility
	c.FrontendProfile, _, _ = p.profile("compatibility.frontend-profile", ProfileApache313)
	c.FrontendStandaloneMetastoreJar = p.ignoredJar("compatibility.frontend-standalone-metastore-jar")
	c.BackendStandaloneMetastoreJar = p.ignoredJar("compatibility.backend-standalone-metastore-jar")
}

func (p *parser) parseRoutingSeparator(cfg *Config) {
	const key = "routing.catalog-db-separator"
	cfg.Routing.CatalogDBSeparator = DefaultCatalogDBSeparator
	raw, ok := p.props[key]
	if !ok {
		return
	}
	p.used[key] = true
	// The separator is taken as written: blanks are not trimmed away but
	// refused, since names never contain them.
	switch {
	case raw == "":
		p.fail(errorf(key, raw, "must not be empty"))
	case strings.ContainsAny(raw, " \t\f\r\n,"):
		p.fail(errorf(key, raw, "must not contain blanks or commas"))
	default:
		cfg.Routing.CatalogDBSeparator = raw
	}
}

func (p *parser) parseDefaultCatalog(cfg *Config) {
	const key = "routing.default-catalog"
	v, ok := p.get(key)
	if p.bad["catalogs"] || !p.has("catalogs") {
		if ok {
			cfg.Routing.DefaultCatalog = v
		}
		return // the catalogs problem is already reported
	}
	switch {
	case !ok && len(cfg.Catalogs) == 1:
		cfg.Routing.DefaultCatalog = cfg.Catalogs[0].Name
	case !ok:
		p.fail(missingf(key, "required when more than one catalog is configured (catalogs=%s): name the catalog that requests without a catalog namespace go to",
			p.shown("catalogs")))
	case cfg.Catalog(v) == nil:
		p.fail(errorf(key, v, "not one of the configured catalogs (catalogs=%s)", p.shown("catalogs")))
	default:
		cfg.Routing.DefaultCatalog = cfg.Catalog(v).Name
	}
}

// ---- catalogs ----

func (p *parser) parseCatalogs(cfg *Config) {
	const key = "catalogs"
	v, ok := p.get(key)
	if !ok {
		p.fail(missingf(key, "required: the comma-separated list of catalog names, e.g. catalogs=catalog1,catalog2"))
		return
	}
	names := splitList(v)
	if len(names) == 0 {
		p.fail(errorf(key, v, "must name at least one catalog"))
		return
	}
	sep := cfg.Routing.CatalogDBSeparator
	seen := map[string]string{}
	var good []string
	for _, n := range names {
		switch prev, dup := seen[strings.ToLower(n)]; {
		case !namePattern.MatchString(n):
			p.fail(errorf(key, v, "catalog name %q may contain only letters, digits, '_' and '-'", n))
		case dup && prev == n:
			p.fail(errorf(key, v, "catalog %q is listed twice", n))
		case dup:
			p.fail(errorf(key, v, "catalog names %q and %q differ only in case; Hive clients lower-case names, so they would be ambiguous", prev, n))
		case !p.bad["routing.catalog-db-separator"] && strings.Contains(n, sep):
			p.fail(errorf(key, v, "catalog name %q contains the catalog/database separator %q (routing.catalog-db-separator), so names like %s%sdb could not be split unambiguously",
				n, sep, n, sep))
		default:
			seen[strings.ToLower(n)] = n
			good = append(good, n)
		}
	}
	for _, n := range good {
		cfg.Catalogs = append(cfg.Catalogs, p.parseCatalog(cfg, n))
	}
}

func (p *parser) parseCatalog(cfg *Config, name string) *CatalogConfig {
	pre := "catalog." + name + "."
	c := &CatalogConfig{Name: name, Conf: map[string]string{}}

	for _, k := range p.keysWithPrefix(pre + "conf.") {
		hk := strings.TrimPrefix(k, pre+"conf.")
		v, _ := p.get(k)
		if hk == "" {
			p.fail(errorf(k, v, "missing the Hive configuration key after %sconf.", pre))
			continue
		}
		c.Conf[hk] = v
		for _, ni := range notImplementedConf {
			if strings.HasPrefix(hk, ni.Prefix) {
				p.warnf("%s=%s: recognised but not implemented yet in this build (%s); ignored", k, quoteValue(v), ni.Feature)
			}
		}
	}
	p.parseURIs(c, pre)
	p.parseHiveClientConf(c, pre)

	// Access mode and the write whitelist are only valid together.
	am, _, amOK := p.enum(pre+"access-mode", string(AccessReadWrite),
		[]string{string(AccessReadWrite), string(AccessReadOnly), string(AccessReadWriteDBWhitelist)})
	c.AccessMode = AccessMode(am)
	wlKey := pre + "write-db-whitelist"
	wlRaw, wlSet := p.get(wlKey)
	var wl []string
	for _, db := range splitList(wlRaw) {
		wl = append(wl, strings.ToLower(db))
	}
	if amOK {
		switch {
		case wlSet && c.AccessMode != AccessReadWriteDBWhitelist:
			p.fail(errorf(wlKey, wlRaw, "only valid with %saccess-mode=READ_WRITE_DB_WHITELIST (access-mode is %s): the whitelist would be ignored",
				pre, c.AccessMode))
		case c.AccessMode == AccessReadWriteDBWhitelist && len(wl) == 0:
			p.fail(errorf(pre+"access-mode", p.shown(pre+"access-mode"), "READ_WRITE_DB_WHITELIST needs a non-empty %s; to refuse every write use READ_ONLY",
				wlKey))
		case c.AccessMode == AccessReadWriteDBWhitelist:
			c.WriteDBWhitelist = wl
		}
	}

	p.parseExposure(c, pre)

	c.SharedSessionPoolSize, _ = p.intKey(pre+"shared-session-pool-size", DefaultSharedSessionPoolSize, 1, math.MaxInt32)
	c.LatencyBudget, _ = p.millis(pre+"latency-budget-ms", 0, 0)
	c.RuntimeProfile, _, _ = p.profile(pre+"runtime-profile", ProfileApache313)
	c.ImpersonationEnabled, _ = p.boolean(pre+"impersonation-enabled", cfg.Security.ImpersonationEnabled)
	c.BackendStandaloneMetastoreJar = cfg.Compatibility.BackendStandaloneMetastoreJar
	if p.has(pre + "backend-standalone-metastore-jar") {
		c.BackendStandaloneMetastoreJar = p.ignoredJar(pre + "backend-standalone-metastore-jar")
	}
	return c
}

// confPair returns the value of a MetastoreConf setting that has a
// "metastore.*" name and a "hive.*" name. Hive prefers the metastore.* name;
// setting both to different values is refused rather than silently
// resolved.
func (p *parser) confPair(c *CatalogConfig, pre, metastoreName, hiveName string) (key, value string, ok bool) {
	mv, mok := c.Conf[metastoreName]
	hv, hok := c.Conf[hiveName]
	switch {
	case mok && hok && mv != hv:
		p.fail(errorf(pre+"conf."+metastoreName, mv, "contradicts %sconf.%s=%s; set only one of the two names",
			pre, hiveName, quoteValue(hv)))
		return pre + "conf." + metastoreName, mv, false
	case mok:
		return pre + "conf." + metastoreName, mv, true
	case hok:
		return pre + "conf." + hiveName, hv, true
	}
	return pre + "conf." + hiveName, "", false
}

func (p *parser) parseURIs(c *CatalogConfig, pre string) {
	key, v, ok := p.confPair(c, pre, "metastore.thrift.uris", "hive.metastore.uris")
	if !ok {
		if !p.bad[key] {
			p.fail(missingf(key, "required: the backend metastore URIs of catalog %q, comma-separated thrift://host:port", c.Name))
		}
		return
	}
	items := splitList(v)
	if len(items) == 0 {
		p.fail(errorf(key, v, "no URI given: expected comma-separated thrift://host:port"))
		return
	}
	for _, item := range items {
		u, err := normalizeThriftURI(item)
		if err != nil {
			p.fail(errorf(key, v, "URI %q: %v", item, err))
			continue
		}
		c.URIs = append(c.URIs, u)
	}
}

func normalizeThriftURI(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", errors.New("not a URI; expected thrift://host:port")
	}
	if !strings.EqualFold(u.Scheme, "thrift") {
		return "", errors.New("scheme must be thrift (thrift://host:port)")
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", errors.New("expected exactly thrift://host:port, nothing after the port")
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return "", errors.New("no host; expected thrift://host:port")
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", errors.New("needs a port between 1 and 65535 (thrift://host:port)")
	}
	return "thrift://" + net.JoinHostPort(host, port), nil
}

// hiveDuration reads a Hive-style duration from the catalog's conf. A value
// Hive itself would reject is a warning and the default applies, as in Hive.
func (p *parser) hiveDuration(c *CatalogConfig, pre, metastoreName, hiveName string, def time.Duration) time.Duration {
	key, v, ok := p.confPair(c, pre, metastoreName, hiveName)
	if !ok {
		return def
	}
	d, err := ParseHiveDuration(v, time.Second)
	if err == nil && d < 0 {
		err = errors.New("negative duration")
	}
	if err != nil {
		p.warnf("%s=%s: %v, which Hive would reject too; the default %s is applied", key, quoteValue(v), err, formatHiveDuration(def))
		return def
	}
	return d
}

// hiveBool reads a boolean HiveConf setting of the catalog, strictly.
func (p *parser) hiveBool(c *CatalogConfig, pre, metastoreName, hiveName string) (key string, val bool) {
	key, v, ok := p.confPair(c, pre, metastoreName, hiveName)
	if !ok {
		return key, false
	}
	b, good := parseBool(v)
	if !good {
		p.fail(errorf(key, v, boolMsg))
	}
	return key, b
}

func (p *parser) parseHiveClientConf(c *CatalogConfig, pre string) {
	c.SocketTimeout = p.hiveDuration(c, pre, "metastore.client.socket.timeout", "hive.metastore.client.socket.timeout", DefaultSocketTimeout)
	c.ConnectTimeout = p.hiveDuration(c, pre, "metastore.client.connection.timeout", "hive.metastore.client.connection.timeout", c.SocketTimeout)
	c.ConnectRetryDelay = p.hiveDuration(c, pre, "metastore.client.connect.retry.delay", "hive.metastore.client.connect.retry.delay", DefaultConnectRetryDelay)
	c.SocketLifetime = p.hiveDuration(c, pre, "metastore.client.socket.lifetime", "hive.metastore.client.socket.lifetime", 0)
	c.TxnTimeout = p.hiveDuration(c, pre, "metastore.txn.timeout", "hive.txn.timeout", DefaultTxnTimeout)

	c.ConnectRetries = DefaultConnectRetries
	if key, v, ok := p.confPair(c, pre, "metastore.connect.retries", "hive.metastore.connect.retries"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			p.fail(errorf(key, v, "not a non-negative integer"))
		} else {
			c.ConnectRetries = n
		}
	}

	_, c.FramedTransport = p.hiveBool(c, pre, "metastore.thrift.framed.transport.enabled", "hive.metastore.thrift.framed.transport.enabled")
	if key, on := p.hiveBool(c, pre, "metastore.sasl.enabled", "hive.metastore.sasl.enabled"); on {
		p.fail(errorf(key, p.confValue(c, key, pre), "Kerberos/SASL connections to backend metastores are not implemented yet in this build; refusing to start rather than connect without it"))
	}
	if key, on := p.hiveBool(c, pre, "metastore.thrift.compact.protocol.enabled", "hive.metastore.thrift.compact.protocol.enabled"); on {
		p.fail(errorf(key, p.confValue(c, key, pre), "the Thrift compact protocol is not supported; hms-proxy speaks TBinaryProtocol to backends, as Hive does by default"))
	}
	if key, on := p.hiveBool(c, pre, "metastore.use.SSL", "hive.metastore.use.SSL"); on {
		p.fail(errorf(key, p.confValue(c, key, pre), "TLS connections to backend metastores are not implemented yet in this build"))
	}
}

func (p *parser) confValue(c *CatalogConfig, key, pre string) string {
	return c.Conf[strings.TrimPrefix(key, pre+"conf.")]
}

// compilePattern compiles an exposure regex: full match, case-insensitive.
// The operator's text is checked on its own first, so that it cannot escape
// the anchoring group (a pattern like "a)|(.*" is refused, not widened).
func compilePattern(src string) (*regexp.Regexp, error) {
	if strings.Count(src, "{") != strings.Count(src, "}") {
		// Lists are split at commas, so "x{1,2}" arrives as "x{1" and "2}",
		// which RE2 would quietly take as literal text.
		return nil, errors.New("unbalanced { } (lists are split at commas, so a {m,n} repetition cannot be written; use {m} or alternatives)")
	}
	if _, err := syntax.Parse(src, syntax.Perl); err != nil {
		return nil, err
	}
	return regexp.Compile(patternPrefix + src + patternSuffix)
}

const patternPrefix, patternSuffix = `(?i)^(?:`, `)$`

func (p *parser) parseExposure(c *CatalogConfig, pre string) {
	em, _, _ := p.enum(pre+"expose-mode", string(ExposeAllowAll), []string{string(ExposeAllowAll), string(ExposeDenyByDefault)})
	c.ExposeMode = ExposeMode(em)

	dbKey := pre + "expose-db-patterns"
	dbRaw, dbSet := p.get(dbKey)
	for _, src := range splitList(dbRaw) {
		re, err := compilePattern(src)
		if err != nil {
			p.fail(errorf(dbKey, dbRaw, "invalid regular expression %q: %v", src, regexpReason(err)))
			continue
		}
		c.ExposeDBPatterns = append(c.ExposeDBPatterns, re)
	}
	tPre := pre + "expose-table-patterns."
	for _, k := range p.keysWithPrefix(tPre) {
		v, _ := p.get(k)
		dbSrc := strings.TrimPrefix(k, tPre)
		if dbSrc == "" {
			p.fail(errorf(k, v, "missing the database regex after %s", tPre))
			continue
		}
		rule := TablePatternRule{DBSource: dbSrc}
		var err error
		if rule.DB, err = compilePattern(dbSrc); err != nil {
			p.fail(errorf(k, v, "invalid database regular expression %q in the key: %v", dbSrc, regexpReason(err)))
			continue
		}
		good := true
		for _, src := range splitList(v) {
			re, err := compilePattern(src)
			if err != nil {
				p.fail(errorf(k, v, "invalid regular expression %q: %v", src, regexpReason(err)))
				good = false
				continue
			}
			rule.Tables = append(rule.Tables, re)
		}
		if good {
			c.ExposeTablePatterns = append(c.ExposeTablePatterns, rule)
		}
	}
	if c.ExposeMode == ExposeAllowAll && dbSet && len(splitList(dbRaw)) > 0 {
		p.warnf("%s=%s: has no effect with %sexpose-mode=ALLOW_ALL (every database stays visible); use DENY_BY_DEFAULT to make it an allowlist",
			dbKey, quoteValue(dbRaw), pre)
	}
	if c.ExposeMode == ExposeDenyByDefault && len(splitList(dbRaw)) == 0 && len(p.keysWithPrefix(tPre)) == 0 {
		p.warnf("%sexpose-mode=DENY_BY_DEFAULT without %s or %s<dbRegex>: every database of catalog %q is hidden",
			pre, dbKey, tPre, c.Name)
	}
}

// regexpReason shortens Go's regexp error: the pattern we compiled is wrapped
// in (?i)^(?:...)$ and the operator should only see their own text.
func regexpReason(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return fmt.Sprintf("%s: %s (Go RE2 syntax: no look-around, no back-references)", se.Code, se.Expr)
	}
	return err.Error()
}

// ---- additional frontends ----

func (p *parser) parseFrontends(cfg *Config) {
	const key = "additional-frontends"
	v, ok := p.get(key)
	if !ok {
		return
	}
	seen := map[string]bool{}
	for _, n := range splitList(v) {
		switch {
		case !namePattern.MatchString(n):
			p.fail(errorf(key, v, "frontend name %q may contain only letters, digits, '_' and '-'", n))
		case seen[n]:
			p.fail(errorf(key, v, "frontend %q is listed twice", n))
		default:
			seen[n] = true
			cfg.AdditionalFrontends = append(cfg.AdditionalFrontends, p.parseFrontend(cfg, n))
		}
	}
}

func (p *parser) parseFrontend(cfg *Config, name string) *FrontendConfig {
	pre := key2(name)
	f := &FrontendConfig{Name: name}
	var ok bool
	if !p.has(pre + "port") {
		p.fail(missingf(pre+"port", "required for additional frontend %q", name))
		p.bad[pre+"port"] = true
	} else if f.Port, ok = p.port(pre+"port", 0); !ok {
		p.bad[pre+"port"] = true
	}
	if !p.has(pre + "frontend-profile") {
		p.fail(missingf(pre+"frontend-profile", "required for additional frontend %q; one of %s", name, strings.Join(profileNames(), ", ")))
	} else {
		f.Profile, _, _ = p.profile(pre+"frontend-profile", "")
	}
	f.StandaloneMetastoreJar = p.ignoredJar(pre + "standalone-metastore-jar")
	f.BindHost = p.str(pre+"bind-host", cfg.Server.BindHost)
	s := &cfg.Server
	var lt listenerTuning
	p.parseListenerTuning(pre, &lt, listenerTuning{
		MinWorkerThreads: s.MinWorkerThreads, MaxWorkerThreads: s.MaxWorkerThreads,
		ClientSocketTimeout: s.ClientSocketTimeout, TCPKeepAlive: s.TCPKeepAlive,
		TCPKeepAliveIdle: s.TCPKeepAliveIdle, TCPKeepAliveInterval: s.TCPKeepAliveInterval,
		TCPKeepAliveCount: s.TCPKeepAliveCount, FramedTransport: s.FramedTransport, MaxMessageSize: s.MaxMessageSize,
	})
	f.MinWorkerThreads, f.MaxWorkerThreads = lt.MinWorkerThreads, lt.MaxWorkerThreads
	f.ClientSocketTimeout = lt.ClientSocketTimeout
	f.TCPKeepAlive, f.TCPKeepAliveIdle, f.TCPKeepAliveInterval, f.TCPKeepAliveCount =
		lt.TCPKeepAlive, lt.TCPKeepAliveIdle, lt.TCPKeepAliveInterval, lt.TCPKeepAliveCount
	f.FramedTransport, f.MaxMessageSize = lt.FramedTransport, lt.MaxMessageSize
	return f
}

func key2(frontend string) string { return "additional-frontends." + frontend + "." }

// ---- management ----

func (p *parser) parseManagement(cfg *Config) {
	m := &cfg.Management
	enabled, enabledOK := p.boolean("management.enabled", false)
	portSet := p.has("management.port")
	m.BindHost = p.str("management.bind-host", cfg.Server.BindHost)
	def := cfg.Server.Port + DefaultManagementPortOffset
	if cfg.Server.Port == 0 {
		def = 0 // an OS-chosen server port: let the OS choose this one too
	}
	var portOK bool
	if portSet {
		m.Port, portOK = p.port("management.port", def)
	} else {
		m.Port, portOK = def, !p.bad["server.port"]
	}
	m.Threads, _ = p.intKey("management.threads", DefaultManagementThreads, 1, math.MaxInt32)
	m.ReadinessCache, _ = p.millis("management.readiness-cache-ms", DefaultReadinessCacheMS, 0)

	switch {
	case p.has("management.enabled") && enabledOK:
		m.Enabled = enabled
		if !enabled && portSet {
			p.warnf("management.port=%s: ignored because management.enabled=false; no management listener is started", quoteValue(p.shown("management.port")))
		}
	case p.has("management.enabled"):
		m.Enabled = portSet // the error is reported; keep checking what the port says
	default:
		m.Enabled = portSet
	}
	if m.Enabled && m.Threads == 1 {
		p.warnf("management.threads=1: a slow /readyz then blocks /healthz and /metrics; use at least 2")
	}
	if m.Enabled && !portSet && portOK && def > 65535 {
		p.fail(missingf("management.port", "not set, and its default server.port + %d = %d is not a valid port; set management.port",
			DefaultManagementPortOffset, def))
		p.bad["management.port"] = true
	}
	if !portOK {
		p.bad["management.port"] = true
	}
}

// ---- security ----

func (p *parser) parseSecurity(cfg *Config) {
	s := &cfg.Security
	mode, _, modeOK := p.enum("security.mode", SecurityNone, []string{SecurityNone, SecurityKerberos})
	s.Mode = mode
	s.ServerPrincipal = p.str("security.server-principal", "")
	s.Keytab = p.str("security.keytab", "")
	s.ClientPrincipal = p.str("security.client-principal", "")
	s.ClientKeytab = p.str("security.client-keytab", "")
	s.ImpersonationEnabled, _ = p.boolean("security.impersonation-enabled", false)
	if !modeOK {
		return
	}
	switch s.Mode {
	case SecurityKerberos:
		if s.ServerPrincipal == "" {
			p.fail(missingf("security.server-principal", "required when security.mode=KERBEROS"))
		}
		if s.Keytab == "" {
			p.fail(missingf("security.keytab", "required when security.mode=KERBEROS"))
		}
		p.fail(errorf("security.mode", p.shown("security.mode"),
			"KERBEROS is not implemented yet in this build; refusing to start rather than serve clients without authentication"))
	case SecurityNone:
		for _, k := range []string{"security.server-principal", "security.keytab", "security.client-principal", "security.client-keytab"} {
			if p.shown(k) != "" {
				p.warnf("%s=%s: ignored because security.mode=NONE (clients are not authenticated)", k, quoteValue(p.shown(k)))
			}
		}
	}
}

// checkImpersonation refuses impersonation: it is not built yet, and a proxy
// that calls backends as itself while the file asks for end-user identity
// would do the opposite of what is written.
func (p *parser) checkImpersonation(cfg *Config) {
	if cfg.Security.ImpersonationEnabled {
		p.fail(errorf("security.impersonation-enabled", p.shown("security.impersonation-enabled"),
			"impersonation is not implemented yet in this build (it also needs security.mode=KERBEROS); refusing to start rather than call backends as the proxy itself"))
	}
	for _, c := range cfg.Catalogs {
		k := "catalog." + c.Name + ".impersonation-enabled"
		if c.ImpersonationEnabled && p.has(k) {
			p.fail(errorf(k, p.shown(k),
				"impersonation is not implemented yet in this build (it also needs security.mode=KERBEROS); refusing to start rather than call backends as the proxy itself"))
		}
	}
}

// ---- synthetic lock store ----

func (p *parser) parseSyntheticLock(cfg *Config) {
	const modeKey = "synthetic-read-lock.store.mode"
	const zkPre = "synthetic-read-lock.store.zookeeper."
	sl := &cfg.SyntheticLock
	mode, present, ok := p.enum(modeKey, LockStoreUnset, []string{LockStoreInMemory, LockStoreZooKeeper})
	if !ok {
		return
	}
	var zkKeys []string
	for _, k := range p.keysWithPrefix(zkPre) {
		if contains(staticKeys, k) {
			zkKeys = append(zkKeys, k)
		}
	}
	switch {
	case present && mode == LockStoreInMemory:
		for _, k := range zkKeys {
			p.get(k)
			p.fail(errorf(k, p.shown(k), "contradicts %s=IN_MEMORY: the ZooKeeper setting would be ignored and locks kept in memory; remove it or set the mode to ZOOKEEPER",
				modeKey))
		}
		if len(zkKeys) == 0 {
			p.warnf("%s=IN_MEMORY: synthetic locks of non-default catalogs are lost when this proxy restarts or a load balancer fails over; use ZOOKEEPER for several instances", modeKey)
		}
	case !present && len(zkKeys) > 0:
		mode = LockStoreZooKeeper // ZooKeeper keys without a mode select ZooKeeper
	}
	sl.StoreMode = mode
	if mode != LockStoreZooKeeper {
		return
	}
	zk := &sl.ZooKeeper
	cs, csSet := p.get(zkPre + "connect-string")
	switch {
	case !csSet || cs == "":
		p.fail(missingf(zkPre+"connect-string", "required for the ZooKeeper synthetic lock store (host:port,host:port[/chroot])"))
	default:
		hosts := cs
		if i := strings.IndexByte(cs, '/'); i >= 0 {
			hosts = cs[:i]
		}
		if len(splitList(hosts)) == 0 {
			p.fail(errorf(zkPre+"connect-string", cs, "names no ZooKeeper server (host:port,host:port[/chroot])"))
		}
		zk.ConnectString = cs
	}
	zk.ZNode = p.str(zkPre+"znode", DefaultZooKeeperZNode)
	if !strings.HasPrefix(zk.ZNode, "/") || (len(zk.ZNode) > 1 && strings.HasSuffix(zk.ZNode, "/")) {
		p.fail(errorf(zkPre+"znode", zk.ZNode, "must be an absolute ZooKeeper path like /hms-proxy-synthetic-read-locks"))
	}
	zk.ConnectionTimeout, _ = p.millis(zkPre+"connection-timeout-ms", DefaultZKConnectionTimeoutMS, 1)
	zk.SessionTimeout, _ = p.millis(zkPre+"session-timeout-ms", DefaultZKSessionTimeoutMS, 1)
	zk.BaseSleep, _ = p.millis(zkPre+"base-sleep-ms", DefaultZKBaseSleepMS, 0)
	zk.MaxRetries, _ = p.intKey(zkPre+"max-retries", DefaultZKMaxRetries, 0, math.MaxInt32)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ---- audit and logging ----

func (p *parser) parseAudit(cfg *Config) {
	a := &cfg.Audit
	a.Enabled, _ = p.boolean("audit.enabled", true)
	a.File = p.str("audit.file", DefaultAuditFile)
	a.MaxFileSizeBytes = p.mebibytes("audit.max-file-size-mb", DefaultAuditMaxFileSizeMB)
	a.MaxBackups, _ = p.intKey("audit.max-backups", DefaultAuditMaxBackups, 0, math.MaxInt32)
	if a.Enabled && a.File == "" {
		p.fail(errorf("audit.file", "", "must name a file while audit.enabled=true (set audit.enabled=false to turn the audit log off)"))
	}
}

func (p *parser) parseLogging(cfg *Config) {
	l := &cfg.Logging
	l.Level, _, _ = p.enum("logging.level", DefaultLogLevel, []string{LevelDebug, LevelInfo, LevelWarn, LevelError})
	l.File = p.str("logging.file", "")
	l.MaxFileSizeBytes = p.mebibytes("logging.max-file-size-mb", DefaultLogMaxFileSizeMB)
	l.MaxBackups, _ = p.intKey("logging.max-backups", DefaultLogMaxBackups, 0, math.MaxInt32)
	l.DebugTracing, _ = p.boolean("logging.debug-tracing", false)
	if l.DebugTracing && l.Level != LevelDebug {
		p.warnf("logging.debug-tracing=true has no effect while logging.level=%s: traces are written at DEBUG", l.Level)
	}
	if cfg.Audit.Enabled && l.File != "" && cfg.Audit.File != "" && filepath.Clean(l.File) == filepath.Clean(cfg.Audit.File) {
		p.fail(errorf("logging.file", l.File, "is also audit.file; the audit log must be a file of its own so it stays valid JSON lines"))
	}
}

// ---- listener clashes ----

type listenerRef struct {
	desc     string // for the message
	portKey  string
	hostKey  string
	host     string
	port     int
	portDflt bool // the port is a default, not written in the file
}

func isWildcard(host string) bool {
	h := strings.Trim(host, "[]")
	return h == "" || h == "0.0.0.0" || h == "::" || h == "0:0:0:0:0:0:0:0"
}

func hostsOverlap(a, b string) bool {
	if isWildcard(a) || isWildcard(b) {
		return true
	}
	return strings.EqualFold(strings.Trim(a, "[]"), strings.Trim(b, "[]"))
}

func (p *parser) checkListenerClashes(cfg *Config) {
	var ls []listenerRef
	if !p.bad["server.port"] {
		ls = append(ls, listenerRef{desc: "the primary listener", portKey: "server.port", hostKey: "server.bind-host",
			host: cfg.Server.BindHost, port: cfg.Server.Port, portDflt: !p.has("server.port")})
	}
	if cfg.Management.Enabled && !p.bad["management.port"] {
		ls = append(ls, listenerRef{desc: "the management listener", portKey: "management.port", hostKey: "management.bind-host",
			host: cfg.Management.BindHost, port: cfg.Management.Port, portDflt: !p.has("management.port")})
	}
	for _, f := range cfg.AdditionalFrontends {
		pre := key2(f.Name)
		if p.bad[pre+"port"] {
			continue
		}
		ls = append(ls, listenerRef{desc: fmt.Sprintf("additional frontend %q", f.Name), portKey: pre + "port", hostKey: pre + "bind-host",
			host: f.BindHost, port: f.Port})
	}
	for j := 1; j < len(ls); j++ {
		for i := 0; i < j; i++ {
			a, b := ls[i], ls[j]
			if a.port == 0 || a.port != b.port || !hostsOverlap(a.host, b.host) {
				continue
			}
			why := ""
			if !strings.EqualFold(a.host, b.host) {
				why = " (a wildcard bind host takes the port on every address)"
			}
			msg := fmt.Sprintf("%s on %s clashes with %s on %s (%s/%s)%s",
				b.desc, net.JoinHostPort(b.host, itoa(b.port)), a.desc, net.JoinHostPort(a.host, itoa(a.port)), a.hostKey, a.portKey, why)
			if b.portDflt {
				p.fail(missingf(b.portKey, "not set; its default %d: %s", b.port, msg))
			} else {
				p.fail(errorf(b.portKey, itoa(b.port), "%s", msg))
			}
		}
	}
}

// ---- unknown and not-implemented keys ----

func (p *parser) checkLeftovers(cfg *Config) {
	var rest []string
	for k := range p.props {
		if !p.used[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	if len(rest) == 0 {
		return
	}
	catalogs := map[string]bool{}
	for _, c := range cfg.Catalogs {
		catalogs[c.Name] = true
	}
	frontends := map[string]bool{}
	for _, f := range cfg.AdditionalFrontends {
		frontends[f.Name] = true
	}
	candidates := append([]string(nil), staticKeys...)
	for _, c := range cfg.Catalogs {
		for _, s := range catalogSuffixes {
			candidates = append(candidates, "catalog."+c.Name+"."+s)
		}
		candidates = append(candidates, "catalog."+c.Name+".conf.hive.metastore.uris")
	}
	for _, f := range cfg.AdditionalFrontends {
		for _, s := range frontendSuffixes {
			candidates = append(candidates, key2(f.Name)+s)
		}
	}
	for _, n := range notImplemented {
		if !strings.Contains(n.Pattern, "*") && !strings.Contains(n.Pattern, "<name>") {
			candidates = append(candidates, n.Pattern)
		}
	}

	for _, k := range rest {
		v := strings.TrimSpace(p.props[k])
		if feature, ok := lookupNotImplemented(k); ok {
			if p.checkKind(k, v) {
				p.warnf("%s=%s: recognised but not implemented yet in this build (%s); ignored", k, quoteValue(v), feature)
			}
			continue
		}
		if name, ok := objectName(k, "catalog."); ok && !catalogs[name] {
			if !p.bad["catalogs"] && p.has("catalogs") {
				p.fail(errorf(k, v, "catalog %q is not listed in catalogs=%s", name, p.shown("catalogs")))
			}
			continue
		}
		if name, ok := objectName(k, "additional-frontends."); ok && !frontends[name] {
			if !p.bad["additional-frontends"] {
				p.fail(errorf(k, v, "frontend %q is not listed in additional-frontends=%s", name, p.shown("additional-frontends")))
			}
			continue
		}
		msg := "unknown key"
		if s := suggest(k, candidates); s != "" {
			msg += fmt.Sprintf("; did you mean %s?", s)
		}
		p.fail(errorf(k, v, "%s", msg))
	}
}

// objectName extracts <name> from "<prefix><name>.<rest>".
func objectName(key, prefix string) (string, bool) {
	if !strings.HasPrefix(key, prefix) {
		return "", false
	}
	rest := key[len(prefix):]
	i := strings.IndexByte(rest, '.')
	if i <= 0 {
		return "", false
	}
	return rest[:i], true
}

// checkKind validates the value of a recognised-but-not-implemented key where
// its kind is obvious; it reports whether the value was acceptable.
func (p *parser) checkKind(k, v string) bool {
	switch notImplementedKind(k) {
	case kindBool:
		if _, ok := parseBool(v); !ok {
			p.fail(errorf(k, v, boolMsg))
			return false
		}
	case kindCount:
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 {
			p.fail(errorf(k, v, "not a non-negative integer"))
			return false
		}
	case kindNumber:
		if f, err := strconv.ParseFloat(v, 64); err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			p.fail(errorf(k, v, "not a non-negative number"))
			return false
		}
	}
	return true
}

// ---- small helpers ----

func itoa(n int) string { return strconv.Itoa(n) }

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

func sortedUnique(ss []string) []string {
	sort.Strings(ss)
	out := ss[:0]
	for i, s := range ss {
		if i == 0 || s != ss[i-1] {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
