package configs

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"time"
)

// A valueType reads one kind of value. parse receives the value trimmed of
// surrounding blanks (untrimmed for keys marked raw) and returns the Go value
// the key's typed field holds; format renders such a value back as text that
// parse accepts again (the canonical form check-config prints); doc names the
// kind of value for the key reference.
type valueType interface {
	parse(v string) (any, error)
	format(v any) string
	doc() string
}

// ---- text ----

type strT struct{ nonEmpty bool }

func (t strT) parse(v string) (any, error) {
	if t.nonEmpty && v == "" {
		return nil, errors.New("must not be empty")
	}
	return v, nil
}
func (strT) format(v any) string { return v.(string) }
func (t strT) doc() string {
	if t.nonEmpty {
		return "text, non-empty"
	}
	return "text"
}

// ---- booleans: only true and false, any case ----

const boolMsg = "not a boolean: only true or false (any case) are accepted"

type boolT struct{}

func parseBool(v string) (bool, bool) {
	switch strings.ToLower(v) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

func (boolT) parse(v string) (any, error) {
	b, ok := parseBool(v)
	if !ok {
		return nil, errors.New(boolMsg)
	}
	return b, nil
}
func (boolT) format(v any) string { return strconv.FormatBool(v.(bool)) }
func (boolT) doc() string         { return "boolean" }

// optBoolT is a boolean that may be left unset (a *bool, nil when unset).
type optBoolT struct{}

func (optBoolT) parse(v string) (any, error) {
	b, ok := parseBool(v)
	if !ok {
		return nil, errors.New(boolMsg)
	}
	return &b, nil
}
func (optBoolT) format(v any) string { return strconv.FormatBool(*v.(*bool)) }
func (optBoolT) doc() string         { return "boolean" }

// ---- numbers ----

func rangeDesc(lo, hi int64) string {
	if hi >= math.MaxInt32 {
		return fmt.Sprintf("at least %d", lo)
	}
	return fmt.Sprintf("between %d and %d", lo, hi)
}

func parseRange(v string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not an integer (must be %s)", rangeDesc(lo, hi))
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("out of range: must be %s", rangeDesc(lo, hi))
	}
	return n, nil
}

// intT is an integer in [min, max] held in an int (wide: an int64).
type intT struct {
	min, max int64
	wide     bool
}

func count(min int64) intT { return intT{min: min, max: math.MaxInt32} }

func (t intT) parse(v string) (any, error) {
	hi := t.max
	if hi == 0 {
		hi = math.MaxInt32
	}
	n, err := parseRange(v, t.min, hi)
	if err != nil {
		return nil, err
	}
	if t.wide {
		return n, nil
	}
	return int(n), nil
}
func (t intT) format(v any) string {
	if t.wide {
		return strconv.FormatInt(v.(int64), 10)
	}
	return strconv.Itoa(v.(int))
}
func (t intT) doc() string {
	hi := t.max
	if hi == 0 {
		hi = math.MaxInt32
	}
	return "integer, " + rangeDesc(t.min, hi)
}

var portT = intT{min: 0, max: 65535}

// unitT is an integer count of a unit (milliseconds, seconds) held as a
// time.Duration.
type unitT struct {
	unit time.Duration
	min  int64
}

func millis(min int64) unitT  { return unitT{unit: time.Millisecond, min: min} }
func seconds(min int64) unitT { return unitT{unit: time.Second, min: min} }

func (t unitT) parse(v string) (any, error) {
	n, err := parseRange(v, t.min, math.MaxInt64/int64(t.unit))
	if err != nil {
		return nil, err
	}
	return time.Duration(n) * t.unit, nil
}
func (t unitT) format(v any) string {
	return strconv.FormatInt(int64(v.(time.Duration)/t.unit), 10)
}
func (t unitT) doc() string {
	name := "milliseconds"
	if t.unit == time.Second {
		name = "seconds"
	}
	return fmt.Sprintf("%s, %s", name, rangeDesc(t.min, math.MaxInt64))
}

const mib = 1 << 20

// mibT is a size in MiB held in bytes (int64).
type mibT struct{ min int64 }

func (t mibT) parse(v string) (any, error) {
	n, err := parseRange(v, t.min, math.MaxInt64/mib)
	if err != nil {
		return nil, err
	}
	return n * mib, nil
}
func (mibT) format(v any) string { return strconv.FormatInt(v.(int64)/mib, 10) }
func (t mibT) doc() string       { return "MiB, " + rangeDesc(t.min, math.MaxInt64) }

// floatT is a decimal number in [min, max] (minOpen: min itself excluded).
type floatT struct {
	min, max float64
	minOpen  bool
}

func (t floatT) parse(v string) (any, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("not a number (must be %s)", t.rangeText())
	}
	if f < t.min || (t.minOpen && f == t.min) || f > t.max {
		return nil, fmt.Errorf("out of range: must be %s", t.rangeText())
	}
	return f, nil
}
func (floatT) format(v any) string { return strconv.FormatFloat(v.(float64), 'g', -1, 64) }
func (t floatT) rangeText() string {
	lo := fmt.Sprintf("at least %g", t.min)
	if t.minOpen {
		lo = fmt.Sprintf("above %g", t.min)
	}
	if t.max < math.MaxFloat64 {
		return fmt.Sprintf("%s and at most %g", lo, t.max)
	}
	return lo
}
func (t floatT) doc() string { return "number, " + t.rangeText() }

// ---- enumerations: case-insensitive, canonical spelling kept ----

type enumT struct{ values []string }

func enum(values ...string) enumT { return enumT{values: values} }

func (t enumT) match(v string) (string, bool) {
	for _, a := range t.values {
		if strings.EqualFold(v, a) {
			return a, true
		}
	}
	return "", false
}

func (t enumT) parse(v string) (any, error) {
	if a, ok := t.match(v); ok {
		return a, nil
	}
	return nil, fmt.Errorf("unknown value; allowed (any case): %s", strings.Join(t.values, ", "))
}
func (enumT) format(v any) string { return v.(string) }
func (t enumT) doc() string       { return "one of " + strings.Join(t.values, ", ") }

// enumListT is a comma-separated list of enum values (hadoop.rpc.protection).
type enumListT struct{ values []string }

func (t enumListT) parse(v string) (any, error) {
	items := splitList(v)
	if len(items) == 0 {
		return nil, fmt.Errorf("must name at least one of %s", strings.Join(t.values, ", "))
	}
	e := enumT(t)
	out := make([]string, 0, len(items))
	for _, it := range items {
		a, ok := e.match(it)
		if !ok {
			return nil, fmt.Errorf("unknown item %q; allowed (any case, comma-separated): %s", it, strings.Join(t.values, ", "))
		}
		out = append(out, a)
	}
	return out, nil
}
func (enumListT) format(v any) string { return strings.Join(v.([]string), ",") }
func (t enumListT) doc() string {
	return "comma-separated list of " + strings.Join(t.values, ", ")
}

// ---- lists ----

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

// listT is a comma-separated list of text items (lower: lower-cased).
type listT struct{ lower bool }

func (t listT) parse(v string) (any, error) {
	items := splitList(v)
	if t.lower {
		for i := range items {
			items[i] = strings.ToLower(items[i])
		}
	}
	return items, nil
}
func (listT) format(v any) string { return strings.Join(v.([]string), ",") }
func (t listT) doc() string {
	if t.lower {
		return "comma-separated list (lower-cased)"
	}
	return "comma-separated list"
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// namesT is the list of catalogs or additional frontends: names of letters,
// digits, '_' and '-', unique (ignoring case when fold is set, since Hive
// lower-cases names).
type namesT struct {
	what     string // "catalog", "frontend"
	fold     bool
	nonEmpty bool
}

func (t namesT) parse(v string) (any, error) {
	names := splitList(v)
	if t.nonEmpty && len(names) == 0 {
		return nil, fmt.Errorf("must name at least one %s", t.what)
	}
	seen := map[string]string{}
	var problems []string
	for _, n := range names {
		k := n
		if t.fold {
			k = strings.ToLower(n)
		}
		prev, dup := seen[k]
		switch {
		case !namePattern.MatchString(n):
			problems = append(problems, fmt.Sprintf("%s name %q may contain only letters, digits, '_' and '-'", t.what, n))
		case dup && prev == n:
			problems = append(problems, fmt.Sprintf("%s %q is listed twice", t.what, n))
		case dup:
			problems = append(problems, fmt.Sprintf("%s names %q and %q differ only in case; Hive clients lower-case names, so they would be ambiguous", t.what, prev, n))
		default:
			seen[k] = n
		}
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return names, nil
}
func (namesT) format(v any) string { return strings.Join(v.([]string), ",") }
func (t namesT) doc() string {
	return "comma-separated " + t.what + " names ([A-Za-z0-9_-])"
}

// separatorT is routing.catalog-db-separator, taken as written (raw): blanks
// are refused rather than trimmed, since names never contain them.
type separatorT struct{}

func (separatorT) parse(v string) (any, error) {
	switch {
	case v == "":
		return nil, errors.New("must not be empty")
	case strings.ContainsAny(v, " \t\f\r\n,"):
		return nil, errors.New("must not contain blanks or commas")
	}
	return v, nil
}
func (separatorT) format(v any) string { return v.(string) }
func (separatorT) doc() string         { return "text without blanks or commas" }

// ---- Hive durations ----

// hiveDurT is a Hive time value (HiveConf getTimeVar): an integer with an
// optional unit; no unit means the key's default unit. A value Hive refuses
// is refused here too.
type hiveDurT struct{ unit time.Duration }

func (t hiveDurT) parse(v string) (any, error) {
	d, err := ParseHiveDuration(v, t.unit)
	if err != nil {
		return nil, fmt.Errorf("not a Hive duration: %v (Hive's getTimeVar refuses it too)", err)
	}
	if d < 0 {
		return nil, errors.New("must not be negative")
	}
	return d, nil
}
func (hiveDurT) format(v any) string { return formatHiveDuration(v.(time.Duration)) }
func (t hiveDurT) doc() string {
	u := "seconds"
	if t.unit == time.Millisecond {
		u = "milliseconds"
	}
	return "Hive duration (ns, us, ms, s, m, h, d; no unit = " + u + ")"
}

// ---- network values ----

// uriListT is hive.metastore.uris: comma-separated thrift://host:port.
type uriListT struct{}

func (uriListT) parse(v string) (any, error) {
	items := splitList(v)
	if len(items) == 0 {
		return nil, errors.New("no URI given: expected comma-separated thrift://host:port")
	}
	var out []string
	var problems []string
	for _, item := range items {
		u, err := normalizeThriftURI(item)
		if err != nil {
			problems = append(problems, fmt.Sprintf("URI %q: %v", item, err))
			continue
		}
		out = append(out, u)
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return out, nil
}
func (uriListT) format(v any) string { return strings.Join(v.([]string), ",") }
func (uriListT) doc() string         { return "comma-separated thrift://host:port" }

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

// cidrListT is a comma-separated list of IP addresses and CIDR blocks, IPv4
// or IPv6; an address is kept as a one-address block.
type cidrListT struct{ nonEmpty bool }

func (t cidrListT) parse(v string) (any, error) {
	items := splitList(v)
	if t.nonEmpty && len(items) == 0 {
		return nil, errors.New("must name at least one address or CIDR block")
	}
	out := make([]netip.Prefix, 0, len(items))
	var problems []string
	for _, it := range items {
		if strings.Contains(it, "/") {
			p, err := netip.ParsePrefix(it)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%q is not a CIDR block (like 10.20.0.0/16 or 2001:db8::/64)", it))
				continue
			}
			if p.Masked() != p {
				problems = append(problems, fmt.Sprintf("%q has host bits set; the block is %s", it, p.Masked()))
				continue
			}
			out = append(out, p)
			continue
		}
		a, err := netip.ParseAddr(it)
		if err != nil || a.Zone() != "" {
			problems = append(problems, fmt.Sprintf("%q is not an IP address or CIDR block", it))
			continue
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return out, nil
}
func (cidrListT) format(v any) string {
	ps := v.([]netip.Prefix)
	out := make([]string, len(ps))
	for i, p := range ps {
		if p.Bits() == p.Addr().BitLen() {
			out[i] = p.Addr().String()
		} else {
			out[i] = p.String()
		}
	}
	return strings.Join(out, ",")
}
func (cidrListT) doc() string { return "comma-separated IP addresses and CIDR blocks (IPv4, IPv6)" }

// zkConnectT is a ZooKeeper connect string: host:port,host:port[/chroot].
type zkConnectT struct{}

func (zkConnectT) parse(v string) (any, error) {
	hosts, chroot := v, ""
	if i := strings.IndexByte(v, '/'); i >= 0 {
		hosts, chroot = v[:i], v[i:]
	}
	items := splitList(hosts)
	if len(items) == 0 {
		return nil, errors.New("names no ZooKeeper server (host:port,host:port[/chroot])")
	}
	for _, it := range items {
		h, p, err := net.SplitHostPort(it)
		if err != nil || h == "" {
			return nil, fmt.Errorf("%q is not host:port (host:port,host:port[/chroot])", it)
		}
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%q needs a port between 1 and 65535", it)
		}
	}
	if chroot != "" && (chroot == "/" || strings.HasSuffix(chroot, "/")) {
		return nil, fmt.Errorf("chroot %q must be an absolute path without a trailing /", chroot)
	}
	return v, nil
}
func (zkConnectT) format(v any) string { return v.(string) }
func (zkConnectT) doc() string         { return "host:port,host:port[/chroot]" }

// znodeT is an absolute ZooKeeper path.
type znodeT struct{}

func (znodeT) parse(v string) (any, error) {
	if !strings.HasPrefix(v, "/") || (len(v) > 1 && strings.HasSuffix(v, "/")) || strings.Contains(v, "//") {
		return nil, errors.New("must be an absolute ZooKeeper path like /hms-proxy-synthetic-read-locks")
	}
	return v, nil
}
func (znodeT) format(v any) string { return v.(string) }
func (znodeT) doc() string         { return "absolute ZooKeeper path" }

// prefixListT is a comma-separated list of location prefixes (URIs like
// hdfs://ns/data/ or absolute paths); ".." segments are refused, since a
// prefix must bound what may be deleted.
type prefixListT struct{}

func (prefixListT) parse(v string) (any, error) {
	items := splitList(v)
	for _, it := range items {
		path := it
		if u, err := url.Parse(it); err == nil && u.Scheme != "" {
			path = u.Path
			if u.Host == "" && u.Scheme != "file" {
				return nil, fmt.Errorf("prefix %q names no authority (write scheme://authority/path)", it)
			}
		}
		if !strings.HasPrefix(path, "/") {
			return nil, fmt.Errorf("prefix %q is not absolute", it)
		}
		for _, seg := range strings.Split(path, "/") {
			if seg == ".." || seg == "." {
				return nil, fmt.Errorf("prefix %q contains a %q segment", it, seg)
			}
		}
	}
	return items, nil
}
func (prefixListT) format(v any) string { return strings.Join(v.([]string), ",") }
func (prefixListT) doc() string {
	return "comma-separated absolute location prefixes (scheme://authority/path or /path)"
}

// ---- exposure regexes ----

// patternListT is a comma-separated list of exposure regexes: Go RE2, full
// match, case-insensitive.
type patternListT struct{}

func (patternListT) parse(v string) (any, error) {
	var out []*regexp.Regexp
	var problems []string
	for _, src := range splitList(v) {
		re, err := compilePattern(src)
		if err != nil {
			problems = append(problems, fmt.Sprintf("invalid regular expression %q: %v", src, regexpReason(err)))
			continue
		}
		out = append(out, re)
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return out, nil
}
func (patternListT) format(v any) string { return joinPatterns(v.([]*regexp.Regexp)) }
func (patternListT) doc() string {
	return "comma-separated regexes (RE2, whole name, any case)"
}

const patternPrefix, patternSuffix = `(?i)^(?:`, `)$`

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

// regexpReason shortens Go's regexp error: the pattern we compiled is wrapped
// in (?i)^(?:...)$ and the operator should only see their own text.
func regexpReason(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return fmt.Sprintf("%s: %s (Go RE2 syntax: no look-around, no back-references)", se.Code, se.Expr)
	}
	return err.Error()
}

// joinPatterns gives back the patterns as the operator wrote them.
func joinPatterns(res []*regexp.Regexp) string {
	out := make([]string, len(res))
	for k, re := range res {
		out[k] = patternSource(re)
	}
	return strings.Join(out, ",")
}

// patternSource strips the anchoring compilePattern added.
func patternSource(re *regexp.Regexp) string {
	s := re.String()
	return strings.TrimSuffix(strings.TrimPrefix(s, patternPrefix), patternSuffix)
}
