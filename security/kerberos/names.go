// Package kerberos maps Kerberos principals to the user names the rest of
// the proxy sees, as Hadoop does: auth_to_local rules
// (hadoop.security.auth_to_local, Hadoop's KerberosName) and _HOST expansion
// of service principals (Hadoop's SecurityUtil).
package kerberos

import (
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/hms-proxy/hms-proxy/security"
	"github.com/hms-proxy/hms-proxy/security/sasl"
)

// Name is a parsed principal: service[/host][@realm].
type Name struct {
	Service, Host, Realm string
}

var principalRE = regexp.MustCompile(`^([^/@]+)(/([^/@]+))?(@([^/@]+))?$`)

// ParseName splits a principal; it refuses names Hadoop would not parse.
func ParseName(p string) (Name, error) {
	m := principalRE.FindStringSubmatch(p)
	if m == nil {
		if strings.Contains(p, "@") {
			return Name{}, fmt.Errorf("malformed Kerberos name %q", p)
		}
		return Name{Service: p}, nil
	}
	return Name{Service: m[1], Host: m[3], Realm: m[5]}, nil
}

func (n Name) String() string {
	s := n.Service
	if n.Host != "" {
		s += "/" + n.Host
	}
	if n.Realm != "" {
		s += "@" + n.Realm
	}
	return s
}

// Mechanisms of hadoop.security.auth_to_local.mechanism.
const (
	// MechanismHadoop refuses principals no rule maps and results that are
	// not simple names (Hadoop's default).
	MechanismHadoop = "hadoop"
	// MechanismMIT passes unmapped principals through whole.
	MechanismMIT = "mit"
)

// rule is one auth_to_local rule.
type rule struct {
	text       string
	isDefault  bool
	components int
	format     string
	match      *regexp.Regexp
	from       *regexp.Regexp
	to         string
	global     bool
	lower      bool
	upper      bool
}

// Mapper applies auth_to_local rules.
type Mapper struct {
	rules        []rule
	defaultRealm string
	mechanism    string
}

// MapperOptions configure NewMapper.
type MapperOptions struct {
	// Rules is hadoop.security.auth_to_local: RULE:[n:format](regex)s/from/to/[g][/L|/U] and DEFAULT, separated by
	// white space or newlines. Empty means "DEFAULT".
	Rules string
	// DefaultRealm is the realm DEFAULT strips (krb5.conf's default_realm).
	DefaultRealm string
	// Mechanism is hadoop.security.auth_to_local.mechanism: "hadoop" (default) or "mit".
	Mechanism string
}

var ruleParser = regexp.MustCompile(`^\s*((DEFAULT)|(RULE:\[(\d*):([^\]]*)\](\(([^)]*)\))?(s/([^/]*)/([^/]*)/(g)?)?))/?([LU])?`)

// NewMapper parses the rules; a rule that does not parse, a bad regular
// expression or an unknown mechanism is an error naming it.
func NewMapper(o MapperOptions) (*Mapper, error) {
	m := &Mapper{defaultRealm: o.DefaultRealm, mechanism: strings.ToLower(strings.TrimSpace(o.Mechanism))}
	switch m.mechanism {
	case "":
		m.mechanism = MechanismHadoop
	case MechanismHadoop, MechanismMIT:
	default:
		return nil, fmt.Errorf("hadoop.security.auth_to_local.mechanism: unknown value %q (allowed: hadoop, mit)", o.Mechanism)
	}
	rest := strings.TrimSpace(o.Rules)
	if rest == "" {
		rest = "DEFAULT"
	}
	for rest != "" {
		g := ruleParser.FindStringSubmatch(rest)
		if g == nil {
			return nil, fmt.Errorf("hadoop.security.auth_to_local: invalid rule at %q", shorten(rest))
		}
		r := rule{text: strings.TrimSpace(g[0])}
		if g[2] != "" {
			r.isDefault = true
		} else {
			n, err := strconv.Atoi(g[4])
			if err != nil || n < 1 || n > 2 {
				return nil, fmt.Errorf("hadoop.security.auth_to_local: rule %q: component count %q must be 1 or 2", r.text, g[4])
			}
			r.components, r.format = n, g[5]
			if g[6] != "" {
				if r.match, err = regexp.Compile("^(?:" + g[7] + ")$"); err != nil {
					return nil, fmt.Errorf("hadoop.security.auth_to_local: rule %q: bad regular expression %q: %v", r.text, g[7], err)
				}
			}
			if g[8] != "" {
				if r.from, err = regexp.Compile(g[9]); err != nil {
					return nil, fmt.Errorf("hadoop.security.auth_to_local: rule %q: bad regular expression %q: %v", r.text, g[9], err)
				}
				r.to, r.global = javaReplacement(g[10]), g[11] != ""
			}
		}
		r.lower, r.upper = g[12] == "L", g[12] == "U"
		m.rules = append(m.rules, r)
		rest = strings.TrimSpace(rest[len(g[0]):])
	}
	if m.defaultRealm == "" {
		for _, r := range m.rules {
			if r.isDefault {
				return nil, fmt.Errorf("hadoop.security.auth_to_local: DEFAULT needs the default realm (krb5.conf default_realm)")
			}
		}
	}
	return m, nil
}

func shorten(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// javaReplacement turns a java.util.regex replacement ($1, \$) into a Go
// template (${1}, $$).
func javaReplacement(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && i+1 < len(s):
			i++
			if s[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(s[i])
			}
		case c == '$' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			b.WriteString("${" + string(s[i+1]) + "}")
			i++
		case c == '$':
			b.WriteString("$$")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

var paramRE = regexp.MustCompile(`\$(\d*)`)

func (r *rule) apply(params []string, defaultRealm string) (string, bool, error) {
	if r.isDefault {
		if params[0] == defaultRealm {
			return params[1], true, nil
		}
		return "", false, nil
	}
	if len(params)-1 != r.components {
		return "", false, nil
	}
	var err error
	base := paramRE.ReplaceAllStringFunc(r.format, func(p string) string {
		n, e := strconv.Atoi(p[1:])
		if e != nil || n >= len(params) {
			err = fmt.Errorf("auth_to_local rule %q: %s is outside the valid range 0 to %d", r.text, p, len(params)-1)
			return ""
		}
		return params[n]
	})
	if err != nil {
		return "", false, err
	}
	if r.match != nil && !r.match.MatchString(base) {
		return "", false, nil
	}
	out := base
	if r.from != nil {
		if r.global {
			out = r.from.ReplaceAllString(base, r.to)
		} else if loc := r.from.FindStringSubmatchIndex(base); loc != nil {
			out = base[:loc[0]] + string(r.from.ExpandString(nil, r.to, base, loc)) + base[loc[1]:]
		}
	}
	return out, true, nil
}

// ShortName maps a principal to a user name: the first rule that applies
// wins. Under the hadoop mechanism a principal no rule maps, or a result with
// '/' or '@' in it, is an error; under mit the principal passes whole.
func (m *Mapper) ShortName(principal string) (string, error) {
	n, err := ParseName(principal)
	if err != nil {
		return "", err
	}
	if n.Host == "" && n.Realm == "" {
		return n.Service, nil
	}
	params := []string{n.Realm, n.Service}
	if n.Host != "" {
		params = append(params, n.Host)
	}
	for _, r := range m.rules {
		out, ok, err := r.apply(params, m.defaultRealm)
		if err != nil {
			return "", err
		}
		if !ok {
			continue
		}
		if strings.ContainsAny(out, "/@") && m.mechanism == MechanismHadoop {
			return "", fmt.Errorf("auth_to_local rule %q maps %s to %q, which is not a simple user name", r.text, principal, out)
		}
		switch {
		case r.lower:
			out = strings.ToLower(out)
		case r.upper:
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	if m.mechanism == MechanismMIT {
		return principal, nil
	}
	return "", fmt.Errorf("no auth_to_local rule maps %s (hadoop.security.auth_to_local)", principal)
}

// Identity is the pipeline's identity of an authenticated SASL peer: the
// principal mapped to its short name.
func (m *Mapper) Identity(res sasl.Result) (*security.Identity, error) {
	user, err := m.ShortName(res.Principal)
	if err != nil {
		return nil, err
	}
	mech := security.Kerberos
	if res.Mechanism != "GSSAPI" {
		mech = security.Token
	}
	return &security.Identity{User: user, Mechanism: mech, Principal: res.Principal, RealUser: res.RealUser}, nil
}

// ExpandHost replaces a "_HOST" host component of principal with host, lower
// case (Hadoop's SecurityUtil.getServerPrincipal). host "", "0.0.0.0" or
// "::" means this machine: its canonical host name. Principals without
// _HOST are returned as they are.
func ExpandHost(principal, host string) (string, error) {
	n, err := ParseName(principal)
	if err != nil {
		return "", err
	}
	if n.Host != "_HOST" {
		return principal, nil
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		if host, err = os.Hostname(); err != nil {
			return "", fmt.Errorf("_HOST in %s: this machine's host name: %w", principal, err)
		}
	}
	canon, err := CanonicalHost(host)
	if err != nil {
		return "", fmt.Errorf("_HOST in %s: %w", principal, err)
	}
	n.Host = canon
	return n.String(), nil
}

// CanonicalHost is Java's InetAddress.getCanonicalHostName as Hadoop uses
// it: the name the host's first address maps back to, lower case, without
// the trailing dot; the address itself when it has no name.
func CanonicalHost(host string) (string, error) {
	ips, err := net.LookupIP(host)
	if err != nil || len(ips) == 0 {
		return "", fmt.Errorf("resolving %q: %v", host, err)
	}
	names, err := net.LookupAddr(ips[0].String())
	if err != nil || len(names) == 0 {
		return strings.ToLower(ips[0].String()), nil
	}
	return strings.ToLower(strings.TrimSuffix(names[0], ".")), nil
}
