package fileio

import (
	"container/list"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/user"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/colinmarc/hdfs/v2/hadoopconf"
	krbclient "github.com/jcmturner/gokrb5/v8/client"
	"github.com/minio/minio-go/v7"

	"github.com/hms-proxy/hms-proxy/security/gssapi"
	"github.com/hms-proxy/hms-proxy/security/kerberos"
)

// Catalog is one catalog's storage settings.
type Catalog struct {
	Name string
	// Conf is catalog.<name>.conf.* without the prefix.
	Conf map[string]string
	// Impersonate: HDFS calls run as the request's user (WithUser), the
	// proxy's principal being an HDFS proxy user
	// (catalog.<name>.impersonation-enabled).
	Impersonate bool
}

// Options configure New.
type Options struct {
	Catalogs []Catalog
	// ClientPrincipal and ClientKeytab are the proxy's outbound Kerberos
	// login (security.client-principal / security.client-keytab), for
	// catalogs with hadoop.security.authentication=kerberos.
	ClientPrincipal, ClientKeytab string
	// Krb5Conf is the krb5.conf ("" = $KRB5_CONFIG or /etc/krb5.conf).
	Krb5Conf string
	// MaxTreeObjects bounds one S3 RemoveTree (default
	// DefaultMaxTreeObjects).
	MaxTreeObjects int
	// MidWrite, when set, runs halfway through every HDFS or S3 Create:
	// fault injection for tests (stop the server mid-write).
	MidWrite func(loc string)
	Log      *slog.Logger
}

// Resolver hands out the file system of a location for a catalog, by
// scheme. Build it with New; Close it when done.
type Resolver struct {
	catalogs map[string]*catalogFS
	log      *slog.Logger

	krbMu  sync.Mutex
	krb    *krbclient.Client
	krbNew func() (*krbclient.Client, error)
}

type catalogFS struct {
	hdfs *hdfsFS
	s3   *s3FS
}

// New validates every catalog's storage keys (an error names the key; a
// credential's value is never shown) and builds the resolver. Nothing is
// contacted: connections open on first use.
func New(o Options) (*Resolver, error) {
	r := &Resolver{catalogs: map[string]*catalogFS{}, log: o.Log}
	if r.log == nil {
		r.log = slog.Default()
	}
	if o.MaxTreeObjects <= 0 {
		o.MaxTreeObjects = DefaultMaxTreeObjects
	}
	var errs []error
	needKerberos := ""
	for _, cat := range o.Catalogs {
		pre := "catalog." + cat.Name + ".conf."
		hc, err := parseHDFS(pre, cat.Conf)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sc, err := parseS3(pre, cat.Conf)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if hc.kerberos && needKerberos == "" {
			needKerberos = pre + "hadoop.security.authentication"
		}
		log := func(msg string, args ...any) { r.log.Warn(msg, append(args, "catalog", cat.Name)...) }
		r.catalogs[strings.ToLower(cat.Name)] = &catalogFS{
			hdfs: &hdfsFS{cfg: hc, kerberos: r.kerberos, impersonate: cat.Impersonate, midWrite: o.MidWrite, log: log,
				clients: map[clientKey]*list.Element{}, lru: list.New()},
			s3: &s3FS{cfg: sc, midWrite: o.MidWrite, maxObjects: o.MaxTreeObjects, clients: map[string]*minio.Client{}},
		}
	}
	if needKerberos != "" {
		newClient, err := keytabClient(o)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=kerberos: HDFS is reached with the proxy's keytab login: %w", needKerberos, err))
		}
		r.krbNew = newClient
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return r, nil
}

// keytabClient checks the proxy's login settings and returns how to log in.
func keytabClient(o Options) (func() (*krbclient.Client, error), error) {
	if o.ClientPrincipal == "" || o.ClientKeytab == "" {
		return nil, errors.New("security.client-principal and security.client-keytab (or security.server-principal and security.keytab) are required")
	}
	principal, err := kerberos.ExpandHost(o.ClientPrincipal, "")
	if err != nil {
		return nil, fmt.Errorf("security.client-principal: %w", err)
	}
	kt, err := gssapi.LoadKeytab(o.ClientKeytab)
	if err != nil {
		return nil, fmt.Errorf("security.client-keytab: %w", err)
	}
	cfg, err := gssapi.LoadConfig(gssapi.Krb5ConfPath(o.Krb5Conf))
	if err != nil {
		return nil, err
	}
	// NewLogin checks the principal's form and that the keytab holds it.
	if _, err := gssapi.NewLogin(gssapi.LoginOptions{Principal: principal, Keytab: kt, Config: cfg}); err != nil {
		return nil, fmt.Errorf("security.client-principal: %w", err)
	}
	name, realm, _ := gssapi.SplitPrincipal(principal)
	return func() (*krbclient.Client, error) {
		cl := krbclient.NewWithKeytab(name, realm, kt, cfg, krbclient.DisablePAFXFAST(true))
		if err := cl.Login(); err != nil {
			return nil, fmt.Errorf("keytab login of %s for HDFS: %w", principal, err)
		}
		return cl, nil
	}, nil
}

// kerberos returns the proxy's logged-in Kerberos client (one for every
// catalog; the library renews its tickets from the keytab).
func (r *Resolver) kerberos() (*krbclient.Client, error) {
	r.krbMu.Lock()
	defer r.krbMu.Unlock()
	if r.krb != nil {
		return r.krb, nil
	}
	if r.krbNew == nil {
		return nil, errors.New("no Kerberos login configured")
	}
	cl, err := r.krbNew()
	if err != nil {
		return nil, err
	}
	r.krb = cl
	return cl, nil
}

// For returns the file system of a location in a catalog.
func (r *Resolver) For(catalog, loc string) (IO, error) {
	scheme, err := Scheme(loc)
	if err != nil {
		return nil, err
	}
	if scheme == "file" {
		return Local{}, nil
	}
	c := r.catalogs[strings.ToLower(catalog)]
	if c == nil {
		return nil, fmt.Errorf("no storage settings for catalog %q", catalog)
	}
	switch scheme {
	case "hdfs":
		return c.hdfs, nil
	case "s3", "s3a":
		return c.s3, nil
	}
	return nil, fmt.Errorf("scheme %q of %s is not supported (supported: file, hdfs, s3, s3a)", scheme, loc)
}

// Supported reports whether For serves a location's scheme.
func Supported(loc string) bool {
	s, err := Scheme(loc)
	return err == nil && (s == "file" || s == "hdfs" || s == "s3" || s == "s3a")
}

// Close closes every open connection.
func (r *Resolver) Close() error {
	if r == nil {
		return nil
	}
	for _, c := range r.catalogs {
		c.hdfs.close()
	}
	r.krbMu.Lock()
	if r.krb != nil {
		r.krb.Destroy()
		r.krb = nil
	}
	r.krbMu.Unlock()
	return nil
}

// confErr names a key and, unless it is a credential, its value.
func confErr(pre, key, value, format string, a ...any) error {
	shown := strconv.Quote(value)
	if isCredentialKey(key) {
		shown = "(value not shown)"
	}
	return fmt.Errorf("%s%s=%s: %s", pre, key, shown, fmt.Sprintf(format, a...))
}

// isCredentialKey: keys whose values are never shown.
func isCredentialKey(key string) bool {
	k := strings.ToLower(key)
	return strings.HasSuffix(k, ".access.key") || strings.HasSuffix(k, ".secret.key") || strings.HasSuffix(k, ".session.token") ||
		strings.Contains(k, "password") || strings.Contains(k, "secret")
}

func parseBool(pre, key string, conf map[string]string, def bool) (bool, error) {
	v, ok := conf[key]
	if !ok || strings.TrimSpace(v) == "" {
		return def, nil
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, confErr(pre, key, v, "must be true or false")
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// errDataProtection says why DataNode connections beyond SASL
// authentication are refused: the HDFS client library negotiates the
// DataNode's first offered QOP and, at integrity or privacy, fails to read
// blocks back (measured against Hadoop 3.3.6: every read fails with "proto:
// cannot parse invalid wire-format data" while writes succeed; fileio's
// TestHDFSProtection). Refused at start rather than failing at run time.
const errDataProtection = "only authentication is supported: the HDFS client this proxy uses (github.com/colinmarc/hdfs/v2 v2.4.0) " +
	"cannot read blocks over DataNode connections with SASL integrity or privacy (or dfs.encrypt.data.transfer); " +
	"set the cluster's dfs.data.transfer.protection to authentication, or keep this catalog's tables off HDFS"

// parseHDFS reads a catalog's HDFS keys.
func parseHDFS(pre string, conf map[string]string) (*hdfsConfig, error) {
	c := &hdfsConfig{nameservices: map[string][]string{}, conf: hadoopconf.HadoopConf{}}
	for k, v := range conf {
		c.conf[k] = v
	}
	key := "fs.defaultFS"
	def, ok := conf[key]
	if !ok {
		key = "fs.default.name"
		def, ok = conf[key]
	}
	if ok && strings.TrimSpace(def) != "" {
		u, err := url.Parse(strings.TrimSpace(def))
		if err != nil || u.Scheme == "" {
			return nil, confErr(pre, key, def, "not a file system URI (e.g. hdfs://nameservice or hdfs://namenode:8020)")
		}
		if strings.EqualFold(u.Scheme, "hdfs") {
			if u.Host == "" {
				return nil, confErr(pre, key, def, "an hdfs:// URI needs a NameNode or name service")
			}
			c.defaultAuthority = u.Host
		}
	}
	for _, ns := range splitList(conf["dfs.nameservices"]) {
		nnKey := "dfs.ha.namenodes." + ns
		nns := splitList(conf[nnKey])
		var addrs []string
		if len(nns) == 0 {
			k := "dfs.namenode.rpc-address." + ns
			a, err := hostPort(pre, k, conf)
			if err != nil {
				return nil, fmt.Errorf("%w (name service %s of dfs.nameservices has neither %s%s nor %s)", err, ns, pre, nnKey, k)
			}
			addrs = append(addrs, a)
		}
		for _, nn := range nns {
			a, err := hostPort(pre, "dfs.namenode.rpc-address."+ns+"."+nn, conf)
			if err != nil {
				return nil, fmt.Errorf("%w (NameNode %s of %s%s)", err, nn, pre, nnKey)
			}
			addrs = append(addrs, a)
		}
		c.nameservices[strings.ToLower(ns)] = addrs
	}
	auth := strings.ToLower(strings.TrimSpace(conf["hadoop.security.authentication"]))
	switch auth {
	case "", "simple":
	case "kerberos":
		c.kerberos = true
		spn := strings.TrimSpace(conf["dfs.namenode.kerberos.principal"])
		if spn == "" {
			return nil, fmt.Errorf("%sdfs.namenode.kerberos.principal: required with %shadoop.security.authentication=kerberos (the NameNode's principal, e.g. nn/_HOST@EXAMPLE.COM)", pre, pre)
		}
		c.spn, _, _ = strings.Cut(spn, "@")
	default:
		return nil, confErr(pre, "hadoop.security.authentication", conf["hadoop.security.authentication"], "must be simple or kerberos")
	}
	if v := conf["dfs.data.transfer.protection"]; strings.TrimSpace(v) != "" {
		for _, p := range splitList(strings.ToLower(v)) {
			switch p {
			case "authentication", "integrity", "privacy":
			default:
				return nil, confErr(pre, "dfs.data.transfer.protection", v, "want authentication, integrity or privacy (a comma list)")
			}
		}
		if !c.kerberos {
			return nil, confErr(pre, "dfs.data.transfer.protection", v, "needs %shadoop.security.authentication=kerberos (DataNodes authenticate the block tokens of a Kerberized cluster)", pre)
		}
		if strings.ToLower(strings.Join(splitList(v), ",")) != "authentication" {
			return nil, confErr(pre, "dfs.data.transfer.protection", v, "%s", errDataProtection)
		}
	}
	for _, k := range []string{"dfs.encrypt.data.transfer", "dfs.client.use.datanode.hostname"} {
		if _, err := parseBool(pre, k, conf, false); err != nil {
			return nil, err
		}
	}
	if enc, _ := parseBool(pre, "dfs.encrypt.data.transfer", conf, false); enc {
		return nil, confErr(pre, "dfs.encrypt.data.transfer", conf["dfs.encrypt.data.transfer"], "%s", errDataProtection)
	}
	if !c.kerberos {
		c.user = os.Getenv("HADOOP_USER_NAME")
		if c.user == "" {
			if u, err := user.Current(); err == nil {
				c.user = u.Username
			}
		}
		if c.user == "" {
			c.user = "hms-proxy"
		}
	}
	return c, nil
}

func hostPort(pre, key string, conf map[string]string) (string, error) {
	v := strings.TrimSpace(conf[key])
	if v == "" {
		return "", fmt.Errorf("%s%s: required", pre, key)
	}
	h, p, err := net.SplitHostPort(v)
	if err != nil || h == "" {
		return "", confErr(pre, key, v, "want host:port")
	}
	if n, err := strconv.Atoi(p); err != nil || n <= 0 || n > 65535 {
		return "", confErr(pre, key, v, "want host:port")
	}
	return v, nil
}

// s3Config is a catalog's fs.s3a.* keys: the defaults and per-bucket
// overrides (fs.s3a.bucket.<bucket>.<key>, as Hadoop's S3A reads them).
type s3Config struct {
	base    s3Bucket
	buckets map[string]s3Bucket
}

type s3Bucket struct {
	host         string // endpoint host[:port]
	secure       bool
	region       string
	pathStyle    bool
	accessKey    string
	secretKey    string
	sessionToken string
}

func (c *s3Config) bucket(name string) s3Bucket {
	if b, ok := c.buckets[name]; ok {
		return b
	}
	return c.base
}

// s3Keys are the fs.s3a.* keys this package reads (after fs.s3a. or
// fs.s3a.bucket.<bucket>.).
var s3Keys = []string{"endpoint", "endpoint.region", "path.style.access", "connection.ssl.enabled", "access.key", "secret.key", "session.token"}

func parseS3(pre string, conf map[string]string) (*s3Config, error) {
	c := &s3Config{buckets: map[string]s3Bucket{}}
	get := func(prefix string) map[string]string {
		m := map[string]string{}
		for _, k := range s3Keys {
			if v, ok := conf[prefix+k]; ok {
				m[k] = strings.TrimSpace(v)
			}
		}
		return m
	}
	base := get("fs.s3a.")
	b, err := s3Settings(pre, "fs.s3a.", base, nil)
	if err != nil {
		return nil, err
	}
	c.base = b
	var names []string
	for k := range conf {
		if rest, ok := strings.CutPrefix(k, "fs.s3a.bucket."); ok {
			for _, s := range s3Keys {
				if name, ok := strings.CutSuffix(rest, "."+s); ok && name != "" {
					names = append(names, name)
				}
			}
		}
	}
	sort.Strings(names)
	for _, name := range names {
		if _, done := c.buckets[name]; done {
			continue
		}
		prefix := "fs.s3a.bucket." + name + "."
		over := get(prefix)
		merged := map[string]string{}
		for k, v := range base {
			merged[k] = v
		}
		for k, v := range over {
			merged[k] = v
		}
		// A bucket's own credentials replace the defaults' as a pair.
		if _, ok := over["access.key"]; ok {
			if _, ok := over["secret.key"]; !ok {
				delete(merged, "secret.key")
			}
			if _, ok := over["session.token"]; !ok {
				delete(merged, "session.token")
			}
		}
		bb, err := s3Settings(pre, prefix, merged, over)
		if err != nil {
			return nil, err
		}
		c.buckets[name] = bb
	}
	return c, nil
}

// s3Settings checks one bucket's keys; prefix names them in errors (keys
// not in own came from fs.s3a.*).
func s3Settings(pre, prefix string, m, own map[string]string) (s3Bucket, error) {
	name := func(k string) string {
		_, mine := own[k]
		if _, set := m[k]; own != nil && set && !mine {
			return "fs.s3a." + k // inherited from the defaults
		}
		return prefix + k
	}
	b := s3Bucket{host: "s3.amazonaws.com", secure: true, region: "us-east-1"}
	for _, k := range []string{"path.style.access", "connection.ssl.enabled"} {
		v, ok := m[k]
		if !ok || v == "" {
			continue
		}
		switch strings.ToLower(v) {
		case "true", "false":
		default:
			return b, confErr(pre, name(k), v, "must be true or false")
		}
	}
	b.pathStyle = strings.EqualFold(m["path.style.access"], "true")
	if v, ok := m["connection.ssl.enabled"]; ok && v != "" {
		b.secure = strings.EqualFold(v, "true")
	}
	if v := m["endpoint.region"]; v != "" {
		b.region = v
	}
	if ep := m["endpoint"]; ep != "" {
		host, secure, err := parseEndpoint(ep, b.secure)
		if err != nil {
			return b, fmt.Errorf("%s%s: %v", pre, name("endpoint"), err) // the value may hold credentials
		}
		b.host, b.secure = host, secure
	}
	b.accessKey, b.secretKey, b.sessionToken = m["access.key"], m["secret.key"], m["session.token"]
	switch {
	case b.accessKey != "" && b.secretKey == "":
		return b, fmt.Errorf("%s%s is set but %s%s is not: static credentials need both", pre, name("access.key"), pre, name("secret.key"))
	case b.accessKey == "" && b.secretKey != "":
		return b, fmt.Errorf("%s%s is set but %s%s is not: static credentials need both", pre, name("secret.key"), pre, name("access.key"))
	case b.accessKey == "" && b.sessionToken != "":
		return b, fmt.Errorf("%s%s needs %s%s and %s%s", pre, name("session.token"), pre, name("access.key"), pre, name("secret.key"))
	}
	return b, nil
}

// parseEndpoint reads fs.s3a.endpoint: http(s)://host[:port] or
// host[:port] (then fs.s3a.connection.ssl.enabled says https).
func parseEndpoint(ep string, secure bool) (string, bool, error) {
	if !strings.Contains(ep, "://") {
		ep = map[bool]string{true: "https://", false: "http://"}[secure] + ep
	}
	u, err := url.Parse(ep)
	if err != nil {
		return "", false, errors.New("not a URL (want http(s)://host[:port] or host[:port])")
	}
	switch {
	case u.User != nil:
		return "", false, errors.New("the endpoint URL must not carry credentials; use fs.s3a.access.key and fs.s3a.secret.key")
	case u.Scheme != "http" && u.Scheme != "https":
		return "", false, fmt.Errorf("scheme %q: want http or https", u.Scheme)
	case u.Host == "":
		return "", false, errors.New("no host (want http(s)://host[:port] or host[:port])")
	case u.Path != "" && u.Path != "/", u.RawQuery != "":
		return "", false, errors.New("an endpoint is a host, without a path or query")
	}
	return u.Host, u.Scheme == "https", nil
}
