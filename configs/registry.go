package configs

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Status says what this build does with a key.
type Status string

const (
	// StatusImplemented: the key is read into a typed field that the proxy
	// uses.
	StatusImplemented Status = "implemented"
	// StatusRefused: the key parses and validates, and its neutral or
	// default value is accepted, but a value that asks for behaviour the
	// build lacks refuses start, naming the key, the value and "not built
	// yet".
	StatusRefused Status = "refused-until-built"
	// StatusIgnored: the key is accepted so that files of the Java proxy
	// load unchanged; setting it is a warning that says why it is not
	// needed.
	StatusIgnored Status = "accepted-and-ignored"
)

// feature is one switchable part of the proxy and the keys that configure
// it. The features table (features.go) is the one place where a feature's
// status is kept: flipping a feature from refused-until-built to
// implemented is a one-line change there, once its code reads the typed
// struct.
type feature struct {
	id     string
	title  string
	status Status
	// on reports whether the configuration turns the feature on; nil means
	// always on. A set key of a feature that is off "has no effect"
	// (warning); a key that asks for a refused feature that is on refuses
	// start.
	on func(c *Config) bool
	// off says why the feature is off, for those warnings.
	off func(c *Config) string
	// loss completes "not built yet in this build; refusing to start rather
	// than ...": what the operator would silently not get.
	loss string
	// defaultOn is the warning of a refused feature that is on by default
	// (the specification's default asks for it) and was not asked for
	// explicitly, e.g. view SQL rewrite.
	defaultOn func(c *Config) string
	// validate holds the feature's cross-key rules (contradictions,
	// requirements); it runs after every key is parsed.
	validate func(p *parser, c *Config)
	keys     []*keyDef
}

// gateKind says when a key of a refused feature asks for the feature.
type gateKind int

const (
	gateNone       gateKind = iota // a tuning value: never asks by itself
	gateNonDefault                 // asks when set to a value that is neither its default nor neutral (nor false, for a boolean)
	gateAlways                     // asks whenever set (e.g. a ZooKeeper key selects the ZooKeeper store)
)

// keyDef is one entry of the registry.
//
// Pattern syntax: dot-separated segments; "<catalog>", "<frontend>",
// "<family>", "<class>", "<rule>", "<service>" and "<name>" stand for one
// segment; a final "*" stands for the rest of the key (one or more segments).
type keyDef struct {
	pattern string
	typ     valueType
	// def is the default in canonical text ("" = none). defOf names another
	// key (same wildcards) whose effective value is the default; defFunc
	// computes it; defDoc shows a computed default in the key reference.
	def     string
	defOf   string
	defFunc func(p *parser, m match) (string, bool)
	defDoc  string
	// required: the key must be set (or have a default); the text says why.
	required string
	// ignored makes the key accepted-and-ignored; the text says why it is
	// not needed.
	ignored string
	gate    gateKind
	neutral []string // values that ask for nothing, beside the default
	// sw marks the key that switches its feature on or off: it never gets a
	// "has no effect" warning itself.
	sw bool
	// offToo marks a key that takes effect while its feature is off as well
	// (routing.hedged-read.fanout-timeout-ms bounds every fan-out, hedged
	// or not): no "has no effect" warning either.
	offToo  bool
	aliases []alias
	secret  bool // masked in check-config output
	raw     bool // the value is taken untrimmed
	isNew   bool // a key of hms-proxy, not of the Java proxy
	meaning string
	// example is a valid value different from the default, used by the
	// binding test and shown in the key reference.
	example string
	// bind returns a pointer to the typed field the value is stored in, or
	// a setter.
	bind func(c *Config, m match) any
	// then runs after the key (its every instance) has been parsed.
	then func(p *parser)

	feature *feature
	segs    []segment
}

// setter stores a parsed value where a pointer cannot reach (a map entry).
type setter func(v any) error

// alias is another name of the same setting (Hive's metastore.* and hive.*
// names, ttl-seconds for ttl-ms). Setting both names to different values is
// an error.
type alias struct {
	pattern string
	typ     valueType // nil: the key's own type
	segs    []segment
}

func (k *keyDef) status() Status {
	if k.ignored != "" {
		return StatusIgnored
	}
	return k.feature.status
}

// typeOf returns the type of the key's primary name (i < 0) or of alias i.
func (k *keyDef) typeOf(i int) valueType {
	if i >= 0 && k.aliases[i].typ != nil {
		return k.aliases[i].typ
	}
	return k.typ
}

// ---- patterns ----

type segment struct {
	lit  string // a literal segment
	v    string // a wildcard's name ("catalog"), or ""
	rest bool   // the final "*"
}

func compileSegments(pattern string) []segment {
	parts := strings.Split(pattern, ".")
	out := make([]segment, len(parts))
	for i, s := range parts {
		switch {
		case s == "*":
			if i != len(parts)-1 {
				panic("configs: * must be the last segment: " + pattern)
			}
			out[i] = segment{rest: true}
		case strings.HasPrefix(s, "<") && strings.HasSuffix(s, ">"):
			out[i] = segment{v: s[1 : len(s)-1]}
		default:
			out[i] = segment{lit: s}
		}
	}
	return out
}

// match is one instance of a pattern: the values of its wildcards.
type match struct {
	vars map[string]string
	rest string
}

func (m match) get(v string) string { return m.vars[v] }

func (m match) catalog() string { return m.vars["catalog"] }

// matchSegments matches a concrete key against a pattern.
func matchSegments(segs []segment, key string) (match, bool) {
	parts := strings.Split(key, ".")
	m := match{}
	for i, s := range segs {
		if s.rest {
			if i >= len(parts) {
				return match{}, false
			}
			m.rest = strings.Join(parts[i:], ".")
			return m, true
		}
		if i >= len(parts) {
			return match{}, false
		}
		if s.v != "" {
			if parts[i] == "" {
				return match{}, false
			}
			if m.vars == nil {
				m.vars = map[string]string{}
			}
			m.vars[s.v] = parts[i]
			continue
		}
		if parts[i] != s.lit {
			return match{}, false
		}
	}
	return m, len(parts) == len(segs)
}

// instantiate writes a pattern with a match's values.
func instantiate(segs []segment, m match) string {
	parts := make([]string, len(segs))
	for i, s := range segs {
		switch {
		case s.rest:
			parts[i] = m.rest
		case s.v != "":
			parts[i] = m.vars[s.v]
		default:
			parts[i] = s.lit
		}
	}
	return strings.Join(parts, ".")
}

// specificity ranks patterns matching the same key: more literal segments
// first, then patterns without an open suffix.
func specificity(segs []segment) int {
	n := 0
	for _, s := range segs {
		if s.lit != "" {
			n += 2
		}
		if s.rest {
			n--
		}
	}
	return n
}

func hasVars(segs []segment) bool {
	for _, s := range segs {
		if s.v != "" || s.rest {
			return true
		}
	}
	return false
}

func hasRest(segs []segment) bool { return len(segs) > 0 && segs[len(segs)-1].rest }

// ownedBy reports whether every instance of the pattern exists because an
// object of that name is listed (catalog.<catalog>.…, additional-frontends.
// <frontend>.…): such keys get their default for every listed object. Other
// wildcard keys exist only as the file writes them.
func ownedBy(segs []segment) string {
	if len(segs) < 2 || hasRest(segs) {
		return ""
	}
	for _, s := range segs[2:] {
		if s.v != "" {
			return ""
		}
	}
	switch {
	case segs[0].lit == "catalog" && segs[1].v == "catalog":
		return "catalog"
	case segs[0].lit == "additional-frontends" && segs[1].v == "frontend":
		return "frontend"
	}
	return ""
}

// ---- the registry ----

// registry is every key of every feature, in parse order, with its compiled
// patterns. It is built once and never changed.
type registry struct {
	features []*feature
	keys     []*keyDef
	byName   map[string]*keyDef // by pattern
}

var reg = buildRegistry(featureTable())

func buildRegistry(fs []*feature) *registry {
	r := &registry{features: fs, byName: map[string]*keyDef{}}
	for _, f := range fs {
		for _, k := range f.keys {
			k.feature = f
			k.segs = compileSegments(k.pattern)
			for i := range k.aliases {
				k.aliases[i].segs = compileSegments(k.aliases[i].pattern)
			}
			if _, dup := r.byName[k.pattern]; dup {
				panic("configs: key registered twice: " + k.pattern)
			}
			r.byName[k.pattern] = k
			r.keys = append(r.keys, k)
		}
	}
	return r
}

// classified is a file key resolved to its registry entry.
type classified struct {
	key   *keyDef
	alias int // -1: the primary name
	m     match
}

// lookup finds the registry entry of a concrete key: the most specific
// pattern (primary name or alias) that matches.
func (r *registry) lookup(key string) (classified, bool) {
	best, bestScore, found := classified{}, -1000, false
	try := func(k *keyDef, alias int, segs []segment) {
		m, ok := matchSegments(segs, key)
		if !ok {
			return
		}
		if s := specificity(segs); s > bestScore {
			best, bestScore, found = classified{key: k, alias: alias, m: m}, s, true
		}
	}
	for _, k := range r.keys {
		try(k, -1, k.segs)
		for i, a := range k.aliases {
			try(k, i, a.segs)
		}
	}
	return best, found
}

// wildcards the parser checks against a fixed list of names.
var (
	methodFamilies = []string{"metadata_read", "metadata_write", "service_global_read", "service_global_write",
		"acid_namespace_bound_write", "acid_id_bound_lifecycle", "admin_introspection", "compatibility_only_rpc"}
	rpcClasses = []string{"write", "ddl", "txn", "lock"}
)

// checkRegistry verifies invariants a table edit could break; the tests call
// it (see registry_test.go).
func checkRegistry(r *registry) []string {
	var problems []string
	seen := map[string]int{}
	for i, k := range r.keys {
		seen[k.pattern] = i
		if k.typ == nil {
			problems = append(problems, k.pattern+": no type")
			continue
		}
		if k.bind == nil {
			problems = append(problems, k.pattern+": not bound to a typed field")
		}
		if k.meaning == "" {
			problems = append(problems, k.pattern+": no meaning")
		}
		if k.def != "" {
			if _, err := k.typ.parse(k.def); err != nil {
				problems = append(problems, fmt.Sprintf("%s: default %q does not parse: %v", k.pattern, k.def, err))
			}
		}
		if k.defOf != "" {
			j, ok := seen[k.defOf]
			if !ok || j >= i {
				problems = append(problems, fmt.Sprintf("%s: default taken from %s, which is not registered before it", k.pattern, k.defOf))
			}
		}
		if (k.defOf != "" || k.defFunc != nil) && k.defDoc == "" && k.defOf == "" {
			problems = append(problems, k.pattern+": computed default without defDoc")
		}
		for _, n := range k.neutral {
			if _, err := k.typ.parse(n); err != nil {
				problems = append(problems, fmt.Sprintf("%s: neutral value %q does not parse", k.pattern, n))
			}
		}
		if k.example != "" {
			if _, err := k.typ.parse(k.example); err != nil {
				problems = append(problems, fmt.Sprintf("%s: example %q does not parse: %v", k.pattern, k.example, err))
			}
			if k.example == k.def {
				problems = append(problems, k.pattern+": example equals the default")
			}
		} else {
			problems = append(problems, k.pattern+": no example value")
		}
	}
	ids := map[string]bool{}
	for _, f := range r.features {
		if ids[f.id] {
			problems = append(problems, "feature listed twice: "+f.id)
		}
		ids[f.id] = true
		if !slices.Contains([]Status{StatusImplemented, StatusRefused}, f.status) {
			problems = append(problems, f.id+": a feature is implemented or refused-until-built")
		}
		if f.status == StatusRefused && f.loss == "" {
			problems = append(problems, f.id+": a refused feature needs its loss text")
		}
		if f.on != nil && f.off == nil {
			problems = append(problems, f.id+": on without off")
		}
	}
	sort.Strings(problems)
	return problems
}
