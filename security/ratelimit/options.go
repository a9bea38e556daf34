package ratelimit

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"sort"
	"strings"
	"time"
)

// The limiting dimensions, as hms_proxy_rate_limited_total's dimension label
// spells them.
const (
	DimPrincipal    = "principal"
	DimSource       = "source"
	DimSourceCIDR   = "source_cidr"
	DimMethodFamily = "method_family"
	DimCatalog      = "catalog"
	DimRPCClass     = "rpc_class"
)

// DefaultScope is the scope label of the two per-key dimensions (principal,
// source), which have one configured rule each.
const DefaultScope = "default"

// The method families and RPC classes a rule may name (the specification's
// lists; the router's method table uses the same words).
var (
	Families = []string{"metadata_read", "metadata_write", "service_global_read", "service_global_write",
		"acid_namespace_bound_write", "acid_id_bound_lifecycle", "admin_introspection", "compatibility_only_rpc"}
	RPCClasses = []string{"write", "ddl", "txn", "lock"}
)

// Defaults of the bounds on the per-key tables (no key in the specification;
// see Options).
const (
	DefaultIdleTTL       = 15 * time.Minute
	DefaultMaxKeys       = 50000
	DefaultSweepInterval = time.Second
)

// Limit is one token bucket: RPS tokens per second, at most Burst saved up.
// Burst 0 means the default, RPS rounded up (the Java proxy's default is the
// integer rate itself).
type Limit struct {
	RPS   float64 // <scope>.requests-per-second
	Burst int     // <scope>.burst
}

// effective returns the limit with its default burst filled in.
func (l Limit) effective() Limit {
	if l.Burst == 0 {
		l.Burst = int(math.Ceil(l.RPS))
	}
	return l
}

func (l Limit) check(key string) error {
	if math.IsNaN(l.RPS) || math.IsInf(l.RPS, 0) || l.RPS <= 0 {
		return fmt.Errorf("%s.requests-per-second=%v: must be a positive number", key, l.RPS)
	}
	if l.Burst < 0 {
		return fmt.Errorf("%s.burst=%d: must be at least 1 (or unset for the default, requests-per-second rounded up)", key, l.Burst)
	}
	if l.RPS > 1e9 {
		return fmt.Errorf("%s.requests-per-second=%v: larger than 1e9", key, l.RPS)
	}
	return nil
}

// CIDRRule is one rate-limit.source-cidr.<name> rule: one bucket shared by
// every address inside any of its prefixes.
type CIDRRule struct {
	Name     string         // <name>
	Prefixes []netip.Prefix // .cidrs (a bare address is a /32 or /128; see ParsePrefixes)
	Limit    Limit          // .requests-per-second, .burst
}

// Options configure a Limiter: each field is one rate-limit.* scope; a nil
// pointer or an absent map entry means that scope has no limit.
type Options struct {
	Principal    *Limit           // rate-limit.principal.*: one bucket per authenticated principal
	Source       *Limit           // rate-limit.source.*: one bucket per exact client IP
	SourceCIDRs  []CIDRRule       // rate-limit.source-cidr.<name>.*: one bucket per rule
	MethodFamily map[string]Limit // rate-limit.method-family.<family>.*
	Catalog      map[string]Limit // rate-limit.catalog.<catalog>.*
	RPCClass     map[string]Limit // rate-limit.rpc-class.<class>.*

	// Catalogs are the configured catalog names; a rate-limit.catalog rule
	// naming another catalog is an error. Nil skips that check.
	Catalogs []string

	// Bounds of the per-principal and per-source tables (hms-proxy
	// additions; 0 = default). An idle bucket is forgotten only once it is
	// full again, so forgetting it never hands anyone tokens they would not
	// have had anyway; see Limiter.
	IdleTTL       time.Duration // forget a full bucket unused this long (DefaultIdleTTL)
	MaxKeys       int           // tracked keys per dimension (DefaultMaxKeys)
	SweepInterval time.Duration // at most one capacity sweep this often (DefaultSweepInterval)

	Metrics *Metrics         // nil: none
	Now     func() time.Time // nil: time.Now (tests inject a clock)
}

// Enabled reports whether any scope has a limit.
func (o *Options) Enabled() bool {
	return o.Principal != nil || o.Source != nil || len(o.SourceCIDRs) > 0 ||
		len(o.MethodFamily) > 0 || len(o.Catalog) > 0 || len(o.RPCClass) > 0
}

// Validate checks every rule and reports every problem at once, each naming
// the configuration key it comes from.
func (o *Options) Validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if o.Principal != nil {
		add(o.Principal.check("rate-limit.principal"))
	}
	if o.Source != nil {
		add(o.Source.check("rate-limit.source"))
	}
	seen := map[string]bool{}
	for _, r := range o.SourceCIDRs {
		key := "rate-limit.source-cidr." + r.Name
		switch {
		case r.Name == "" || strings.Contains(r.Name, "."):
			add(fmt.Errorf("rate-limit.source-cidr.<name>: rule name %q must be one non-empty key segment", r.Name))
		case seen[r.Name]:
			add(fmt.Errorf("%s: rule defined twice", key))
		}
		seen[r.Name] = true
		if len(r.Prefixes) == 0 {
			add(fmt.Errorf("%s.cidrs: missing: a source-cidr rule needs at least one address or CIDR", key))
		}
		for _, p := range r.Prefixes {
			if !p.IsValid() {
				add(fmt.Errorf("%s.cidrs: invalid prefix %v", key, p))
			}
		}
		add(r.Limit.check(key))
	}
	checkNamed := func(prefix string, m map[string]Limit, allowed []string, what string) {
		for _, name := range sortedKeys(m) {
			key := prefix + name
			if allowed != nil && !contains(allowed, name) {
				add(fmt.Errorf("%s: unknown %s %q (one of %s)", key, what, name, strings.Join(allowed, ", ")))
				continue
			}
			add(m[name].check(key))
		}
	}
	checkNamed("rate-limit.method-family.", o.MethodFamily, Families, "method family")
	checkNamed("rate-limit.catalog.", o.Catalog, o.Catalogs, "catalog; not in catalogs=")
	checkNamed("rate-limit.rpc-class.", o.RPCClass, RPCClasses, "RPC class")
	if o.IdleTTL < 0 || o.MaxKeys < 0 || o.SweepInterval < 0 {
		add(fmt.Errorf("rate limiter bounds must not be negative (idle TTL %v, max keys %d, sweep interval %v)",
			o.IdleTTL, o.MaxKeys, o.SweepInterval))
	}
	return errors.Join(errs...)
}

// ParsePrefixes reads a rate-limit.source-cidr.<name>.cidrs value: a comma
// separated list of CIDR prefixes (10.10.0.0/16, 2001:db8::/64) or single
// addresses. key names the configuration key in errors.
func ParsePrefixes(key, value string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	var errs []error
	for _, item := range strings.Split(value, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if strings.Contains(item, "/") {
			p, err := netip.ParsePrefix(item)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s=%s: %q is not a CIDR prefix: %v", key, value, item, err))
				continue
			}
			if p.Addr().Is4In6() {
				p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(item)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%s: %q is neither an address nor a CIDR prefix", key, value, item))
			continue
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	if len(out) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("%s=%q: no address or CIDR prefix", key, value))
	}
	return out, errors.Join(errs...)
}

// SourceAddr extracts the client IP from a connection's remote address
// ("10.1.2.3:51234", "[2001:db8::1]:51234" or a bare address); IPv4-mapped
// IPv6 addresses become IPv4. ok is false when there is no IP in it.
func SourceAddr(remote string) (addr netip.Addr, ok bool) {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	if a, err := netip.ParseAddr(remote); err == nil {
		return a.Unmap().WithZone(""), true
	}
	return netip.Addr{}, false
}

func sortedKeys(m map[string]Limit) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
