// Package proxyuser is Hadoop's proxy-user rules (DefaultImpersonationProvider):
// which service (the real user) may act for which users, from which hosts.
// The proxy checks them when a service principal such as HiveServer2 asks it
// for a delegation token for an end user (get_delegation_token("alice", …)).
//
//	hadoop.proxyuser.<svc>.users   users <svc> may impersonate ("*": any)
//	hadoop.proxyuser.<svc>.groups  groups whose members <svc> may impersonate ("*": any)
//	hadoop.proxyuser.<svc>.hosts   addresses <svc> may connect from: "*", IPs, CIDRs, host names
//
// <svc> is the real user's short name. A user is admitted when it is in the
// users list or one of its groups is in the groups list; with neither key
// set nobody is; with no hosts key no host is.
package proxyuser

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os/user"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Prefix starts every key; keys are given in hms-proxy.properties as
// security.front-door-conf.hadoop.proxyuser.<svc>.<kind>.
const Prefix = "hadoop.proxyuser."

// Resolver resolves host names for host rules (net.DefaultResolver fits).
type Resolver interface {
	LookupAddr(ctx context.Context, addr string) ([]string, error)
	LookupHost(ctx context.Context, host string) ([]string, error)
}

// Options configure the rules' environment.
type Options struct {
	// Groups returns a user's groups (nil: OSGroups, the local account
	// database as Hadoop's default shell group mapping reads it).
	Groups func(user string) ([]string, error)
	// Resolver resolves host rules (nil: net.DefaultResolver).
	Resolver Resolver
	// ResolveTimeout bounds one host check's DNS lookups (0: 5 s).
	ResolveTimeout time.Duration
	// ShortName maps a principal to the name rules are keyed and matched by
	// (nil: the part before the first '/' or '@').
	ShortName func(principal string) string
	Metrics   *Metrics
}

// OSGroups returns the groups of a local account, primary group first.
func OSGroups(name string) ([]string, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, err
	}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, err
	}
	var out []string
	primary := -1
	for _, id := range ids {
		g, err := user.LookupGroupId(id)
		if err != nil {
			return nil, err
		}
		if id == u.Gid {
			primary = len(out)
		}
		out = append(out, g.Name)
	}
	if primary > 0 {
		out[0], out[primary] = out[primary], out[0]
	}
	return out, nil
}

func defaultShortName(p string) string {
	if i := strings.IndexAny(p, "/@"); i >= 0 {
		return p[:i]
	}
	return p
}

// rule is one service's rules.
type rule struct {
	svc                 string
	usersSet, groupsSet bool
	anyUser             bool
	users, groups       map[string]bool
	hostsSet, anyHost   bool
	ips                 map[netip.Addr]bool
	cidrs               []netip.Prefix
	hostNames           []string
	usersKey, groupsKey string
	hostsKey            string
}

// Rules are parsed proxy-user rules. Safe for concurrent use.
type Rules struct {
	o     Options
	rules map[string]*rule
}

// ParseConf reads the hadoop.proxyuser.* keys of conf (front-door HiveConf
// keys, without the security.front-door-conf. prefix); prefix is put before
// key names in errors. Keys of another form under hadoop.proxyuser. are
// refused (Hadoop would ignore them silently).
func ParseConf(conf map[string]string, prefix string, o Options) (*Rules, error) {
	if o.Groups == nil {
		o.Groups = OSGroups
	}
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	if o.ResolveTimeout <= 0 {
		o.ResolveTimeout = 5 * time.Second
	}
	if o.ShortName == nil {
		o.ShortName = defaultShortName
	}
	r := &Rules{o: o, rules: map[string]*rule{}}
	keys := make([]string, 0, len(conf))
	for k := range conf {
		if strings.HasPrefix(k, Prefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var errs []error
	for _, k := range keys {
		rest := strings.TrimPrefix(k, Prefix)
		dot := strings.LastIndex(rest, ".")
		if dot <= 0 {
			errs = append(errs, fmt.Errorf("%s%s: not of the form %s<service>.users|groups|hosts", prefix, k, Prefix))
			continue
		}
		svc, kind := rest[:dot], rest[dot+1:]
		if strings.Contains(svc, ".") {
			errs = append(errs, fmt.Errorf("%s%s: service name %q contains a '.', which Hadoop's rules cannot match", prefix, k, svc))
			continue
		}
		ru := r.rules[svc]
		if ru == nil {
			ru = &rule{svc: svc, users: map[string]bool{}, groups: map[string]bool{}, ips: map[netip.Addr]bool{},
				usersKey: prefix + Prefix + svc + ".users", groupsKey: prefix + Prefix + svc + ".groups", hostsKey: prefix + Prefix + svc + ".hosts"}
			r.rules[svc] = ru
		}
		items := split(conf[k])
		switch kind {
		case "users", "groups":
			target := ru.users
			if kind == "users" {
				ru.usersSet = true
			} else {
				ru.groupsSet = true
				target = ru.groups
			}
			if strings.TrimSpace(conf[k]) == "*" {
				ru.anyUser = true
			}
			for _, it := range items {
				if it == "*" && strings.TrimSpace(conf[k]) != "*" {
					errs = append(errs, fmt.Errorf("%s%s: %q mixes '*' with names; use '*' alone", prefix, k, conf[k]))
				}
				target[it] = true
			}
		case "hosts":
			ru.hostsSet = true
			for _, it := range items {
				switch {
				case it == "*":
					ru.anyHost = true
				case strings.Contains(it, "/"):
					p, err := netip.ParsePrefix(it)
					if err != nil {
						errs = append(errs, fmt.Errorf("%s%s: %q is not a CIDR range: %v", prefix, k, it, err))
						continue
					}
					ru.cidrs = append(ru.cidrs, p.Masked())
				default:
					if a, err := netip.ParseAddr(it); err == nil {
						ru.ips[a.Unmap()] = true
					} else if validHostName(it) {
						ru.hostNames = append(ru.hostNames, strings.ToLower(strings.TrimSuffix(it, ".")))
					} else {
						errs = append(errs, fmt.Errorf("%s%s: %q is neither an IP address, a CIDR range nor a host name", prefix, k, it))
					}
				}
			}
		default:
			errs = append(errs, fmt.Errorf("%s%s: unknown proxy-user key kind %q (users, groups or hosts)", prefix, k, kind))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return r, nil
}

// split is Hadoop's getTrimmedStringCollection: comma-separated, trimmed,
// empty entries and duplicates dropped.
func split(v string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func validHostName(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// Services returns the services that have rules, sorted.
func (r *Rules) Services() []string {
	out := make([]string, 0, len(r.rules))
	for s := range r.rules {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// AuthorizationError is a refusal; its text follows Hadoop's
// AuthorizationException and adds which rule refused.
type AuthorizationError struct {
	Service, RealUser, User, Addr string
	msg                           string
}

func (e *AuthorizationError) Error() string { return e.msg }

// Authorize checks that realUser (the authenticated service) may act as
// effectiveUser from remoteAddr (an IP, or IP:port). A realUser equal to
// effectiveUser (by short name, or exactly) needs no rule.
func (r *Rules) Authorize(realUser, effectiveUser, remoteAddr string) error {
	err := r.authorize(realUser, effectiveUser, remoteAddr)
	r.o.Metrics.observe(err)
	return err
}

func (r *Rules) authorize(realUser, effectiveUser, remoteAddr string) error {
	if realUser == "" {
		return &AuthorizationError{User: effectiveUser, Addr: remoteAddr, msg: "proxy-user check without a real user"}
	}
	if effectiveUser == "" {
		return &AuthorizationError{RealUser: realUser, Addr: remoteAddr, msg: fmt.Sprintf("User: %s asked to impersonate an empty user name", realUser)}
	}
	svc := r.o.ShortName(realUser)
	if realUser == effectiveUser || svc == effectiveUser {
		return nil // asking for itself, as Hive's token manager allows without a rule
	}
	short := r.o.ShortName(effectiveUser)
	ip := remoteAddr
	if h, _, err := net.SplitHostPort(remoteAddr); err == nil {
		ip = h
	}
	deny := func(format string, args ...any) error {
		return &AuthorizationError{Service: svc, RealUser: realUser, User: effectiveUser, Addr: ip, msg: fmt.Sprintf(format, args...)}
	}
	ru := r.rules[svc]
	if ru == nil {
		return deny("User: %s is not allowed to impersonate %s (from %s: no %s%s.* rules for service %s)",
			realUser, effectiveUser, ip, Prefix, svc, svc)
	}
	allowed := ru.anyUser || ru.users[short]
	groupNote := ""
	if !allowed && len(ru.groups) > 0 {
		groups, err := r.o.Groups(short)
		if err != nil {
			groupNote = fmt.Sprintf("; groups of %s unknown: %v", short, err)
		}
		for _, g := range groups {
			if ru.groups[g] {
				allowed = true
				break
			}
		}
		if !allowed && err == nil {
			groupNote = fmt.Sprintf("; groups of %s: %s", short, strings.Join(groups, ","))
		}
	}
	if !allowed {
		return deny("User: %s is not allowed to impersonate %s (from %s: neither %s nor %s admits %s%s)",
			realUser, effectiveUser, ip, ru.usersKey, ru.groupsKey, short, groupNote)
	}
	if !r.hostAllowed(ru, ip) {
		how := "not in " + ru.hostsKey
		if !ru.hostsSet {
			how = ru.hostsKey + " is not set"
		}
		return deny("Unauthorized connection for super-user: %s from IP %s (impersonating %s: %s)", realUser, ip, effectiveUser, how)
	}
	return nil
}

func (r *Rules) hostAllowed(ru *rule, ip string) bool {
	if ru.anyHost {
		return true
	}
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	addr = addr.Unmap()
	if ru.ips[addr] {
		return true
	}
	for _, p := range ru.cidrs {
		if p.Contains(addr) {
			return true
		}
	}
	if len(ru.hostNames) == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.o.ResolveTimeout)
	defer cancel()
	// The address's names (reverse lookup), then each rule host's addresses.
	if names, err := r.o.Resolver.LookupAddr(ctx, addr.String()); err == nil {
		for _, n := range names {
			if contains(ru.hostNames, strings.ToLower(strings.TrimSuffix(n, "."))) {
				return true
			}
		}
	}
	for _, h := range ru.hostNames {
		addrs, err := r.o.Resolver.LookupHost(ctx, h)
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if pa, err := netip.ParseAddr(a); err == nil && pa.Unmap() == addr {
				return true
			}
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// MetricAuthorizationsTotal counts proxy-user checks by result.
const MetricAuthorizationsTotal = "hms_proxy_proxyuser_authorizations_total"

// Metrics are the proxy-user metrics; a nil *Metrics records nothing.
type Metrics struct{ checks *prometheus.CounterVec }

// NewMetrics registers the metrics with reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{checks: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricAuthorizationsTotal,
		Help: "Front-door proxy-user checks (a service obtaining a delegation token for another user), by result (allowed, denied).",
	}, []string{"result"})}
	m.checks.WithLabelValues("allowed")
	m.checks.WithLabelValues("denied")
	if reg != nil {
		reg.MustRegister(m.checks)
	}
	return m
}

func (m *Metrics) observe(err error) {
	if m == nil {
		return
	}
	if err != nil {
		m.checks.WithLabelValues("denied").Inc()
	} else {
		m.checks.WithLabelValues("allowed").Inc()
	}
}
