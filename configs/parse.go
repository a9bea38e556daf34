package configs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

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
	var notes []string // warnings about the file text itself
	for _, e := range entries {
		for _, n := range e.Notes {
			notes = append(notes, fmt.Sprintf("line %d (%s): %s", e.Line, e.Key, n))
		}
	}
	for k, ls := range lines {
		if len(ls) > 1 {
			notes = append(notes, fmt.Sprintf("%s is set %d times (lines %s); the last value is used",
				k, len(ls), joinInts(ls)))
		}
	}
	cfg, err := Parse(props)
	var ve *ValidationError
	switch {
	case errors.As(err, &ve):
		ve.Warnings = sortedUnique(append(ve.Warnings, notes...))
	case err == nil:
		cfg.Warnings = sortedUnique(append(cfg.Warnings, notes...))
	}
	return cfg, err
}

// Parse validates a key/value map (as ReadProperties returns it) and builds
// the Config. On any problem it returns a *ValidationError holding all of
// them, and no Config.
func Parse(props map[string]string) (*Config, error) {
	return parseWith(props, nil)
}

// parseWith parses with the registry's feature statuses, some of them
// replaced (tests use it to exercise a feature's rules as they will apply
// once it is built).
func parseWith(props map[string]string, statusOverride map[string]Status) (*Config, error) {
	p := newParser(reg, props, statusOverride)
	p.run()
	if len(p.errs) > 0 {
		sortErrors(p.errs)
		return nil, &ValidationError{Errors: p.errs, Warnings: sortedUnique(p.warns)}
	}
	p.cfg.Warnings = sortedUnique(p.warns)
	p.cfg.settings = p.order
	p.cfg.features = p.reg.features
	p.cfg.status = p.status
	return p.cfg, nil
}

// setting is the effective value of one concrete key.
type setting struct {
	key      *keyDef
	m        match
	name     string // the name as set in the file (an alias if that was used), else the primary name
	primary  string // the primary name
	text     string // canonical value, when has
	has      bool
	fromFile bool
	raw      string // the value as written (trimmed), when fromFile
	defText  string
	hasDef   bool
	bad      bool // the file's value was refused (the default is then in force)
}

// isDefault: the value in force is the default (set or not).
func (s *setting) isDefault() bool {
	return s.has && s.hasDef && s.text == s.defText || !s.has && !s.hasDef
}

type parser struct {
	reg      *registry
	status   map[string]Status
	props    map[string]string
	files    map[string]classified // file keys that match a registry pattern
	used     map[string]bool
	bad      map[string]bool // keys that produced an error, to avoid follow-up noise
	settings map[string]*setting
	order    []*setting
	cfg      *Config
	errs     []*Error
	warns    []string
}

func newParser(r *registry, props map[string]string, override map[string]Status) *parser {
	p := &parser{reg: r, status: map[string]Status{}, props: props, files: map[string]classified{},
		used: map[string]bool{}, bad: map[string]bool{}, settings: map[string]*setting{}, cfg: &Config{}}
	for _, f := range r.features {
		p.status[f.id] = f.status
	}
	for id, st := range override {
		p.status[id] = st
	}
	for k := range props {
		if c, ok := r.lookup(k); ok {
			p.files[k] = c
		}
	}
	return p
}

func (p *parser) run() {
	for _, k := range p.reg.keys {
		for _, m := range p.instances(k) {
			p.parseInstance(k, m)
		}
		if k.then != nil {
			k.then(p)
		}
	}
	for _, f := range p.reg.features {
		if f.validate != nil {
			f.validate(p, p.cfg)
		}
	}
	p.gateFeatures()
	p.checkLeftovers()
}

func (p *parser) fail(e *Error) {
	p.errs = append(p.errs, e)
	p.bad[e.Key] = true
}

func (p *parser) warnf(format string, args ...any) {
	p.warns = append(p.warns, fmt.Sprintf(format, args...))
}

func (p *parser) has(key string) bool {
	_, ok := p.props[key]
	return ok
}

// shown is the trimmed value of a key for an error message.
func (p *parser) shown(key string) string { return strings.TrimSpace(p.props[key]) }

// setting returns the effective setting of a concrete primary key name, or
// nil.
func (p *parser) setting(name string) *setting { return p.settings[name] }

// isSet reports whether the file sets the key (under any of its names).
func (p *parser) isSet(name string) bool {
	s := p.settings[name]
	return s != nil && s.fromFile
}

// ---- instances ----

// instances lists the concrete keys a registry entry stands for: one for a
// plain key; one per listed catalog or frontend for the keys of those
// objects; otherwise the instances the file writes.
func (p *parser) instances(k *keyDef) []match {
	if !hasVars(k.segs) {
		return []match{{}}
	}
	switch ownedBy(k.segs) {
	case "catalog":
		var out []match
		for _, c := range p.cfg.Catalogs {
			out = append(out, match{vars: map[string]string{"catalog": c.Name}})
		}
		return out
	case "frontend":
		var out []match
		for _, f := range p.cfg.AdditionalFrontends {
			out = append(out, match{vars: map[string]string{"frontend": f.Name}})
		}
		return out
	}
	// The instances of a group of keys (rate-limit.source-cidr.<rule>.*)
	// are the wildcard values any key of the group is written with; an
	// open key's instances are the keys written under it.
	group := k.segs
	if !hasRest(group) {
		last := 0
		for i, s := range group {
			if s.v != "" {
				last = i
			}
		}
		group = group[:last+1]
	}
	seen := map[string]match{}
	for name, c := range p.files {
		var m match
		if hasRest(group) {
			if c.key != k {
				continue
			}
			m = c.m
		} else {
			var ok bool
			if m, ok = matchPrefix(group, name); !ok {
				continue
			}
		}
		if !p.validVars(m) {
			continue
		}
		seen[instantiate(k.segs, m)] = m
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]match, len(names))
	for i, n := range names {
		out[i] = seen[n]
	}
	return out
}

// matchPrefix matches the first segments of a key against a pattern prefix
// without an open suffix.
func matchPrefix(segs []segment, key string) (match, bool) {
	parts := strings.Split(key, ".")
	if len(parts) <= len(segs) {
		return match{}, false
	}
	return matchSegments(segs, strings.Join(parts[:len(segs)], "."))
}

// validVars reports whether every wildcard value names something that
// exists: a listed catalog or frontend, a method family, an RPC class.
func (p *parser) validVars(m match) bool {
	for v, val := range m.vars {
		switch v {
		case "catalog":
			if p.catalogByExactName(val) == nil {
				return false
			}
		case "frontend":
			if p.frontendByName(val) == nil {
				return false
			}
		case "family":
			if !containsFold(methodFamilies, val) {
				return false
			}
		case "class":
			if !containsFold(rpcClasses, val) {
				return false
			}
		}
	}
	return true
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func (p *parser) catalogByExactName(n string) *CatalogConfig {
	for _, c := range p.cfg.Catalogs {
		if c.Name == n {
			return c
		}
	}
	return nil
}

func (p *parser) frontendByName(n string) *FrontendConfig {
	for _, f := range p.cfg.AdditionalFrontends {
		if f.Name == n {
			return f
		}
	}
	return nil
}

// ---- one key ----

func (p *parser) parseInstance(k *keyDef, m match) {
	name := instantiate(k.segs, m)
	s := &setting{key: k, m: m, name: name, primary: name}
	defText, hasDef := p.defaultText(k, m)
	s.defText, s.hasDef = defText, hasDef

	type found struct {
		name, raw string
		alias     int
		val       any
	}
	var fs []found
	look := func(n string, alias int) {
		v, ok := p.props[n]
		if !ok {
			return
		}
		p.used[n] = true
		if !k.raw {
			v = strings.TrimSpace(v)
		}
		fs = append(fs, found{name: n, raw: v, alias: alias})
	}
	look(name, -1)
	for i, a := range k.aliases {
		look(instantiate(a.segs, m), i)
	}

	var val any
	ok := true
	for i := range fs {
		f := &fs[i]
		if hasRest(k.segs) && m.rest == "" {
			p.fail(errorf(f.name, f.raw, "names nothing after %s", strings.TrimSuffix(f.name, ".")+"."))
			ok = false
			continue
		}
		v, err := k.typeOf(f.alias).parse(f.raw)
		if err != nil {
			p.fail(errorf(f.name, f.raw, "%v", err))
			ok = false
			continue
		}
		f.val = v
	}
	if ok && len(fs) > 1 {
		for _, f := range fs[1:] {
			if !reflect.DeepEqual(f.val, fs[0].val) {
				p.fail(errorf(f.name, f.raw, "contradicts %s=%s; set only one of the two names", fs[0].name, quoteValue(fs[0].raw)))
				ok = false
			}
		}
	}
	if len(fs) > 0 {
		s.fromFile = true
		s.name, s.raw = fs[0].name, fs[0].raw
		if ok {
			val = fs[0].val
			s.text = k.typeOf(fs[0].alias).format(val)
			s.has = true
			if fs[0].alias >= 0 && k.aliases[fs[0].alias].typ != nil && hasDef {
				// Compare with the default in the primary name's terms.
				s.defText = k.typeOf(fs[0].alias).format(mustParse(k.typ, defText))
			}
		} else {
			s.bad = true
		}
	}
	if val == nil && hasDef {
		val = mustParse(k.typ, defText)
		if !s.fromFile {
			s.text, s.has = defText, true
		}
	}
	if val == nil && !s.fromFile && k.required != "" {
		p.fail(missingf(name, "%s", expand(k.required, m)))
	}
	if val != nil {
		if err := assign(k.bind(p.cfg, m), val); err != nil {
			p.fail(errorf(s.name, s.raw, "%v", err))
			s.bad = true
		}
	}
	p.settings[name] = s
	p.order = append(p.order, s)
}

// expand writes a message template's <catalog> (etc.) with the match.
func expand(msg string, m match) string {
	for v, val := range m.vars {
		msg = strings.ReplaceAll(msg, "<"+v+">", val)
	}
	return msg
}

func mustParse(t valueType, text string) any {
	v, err := t.parse(text)
	if err != nil {
		panic(fmt.Sprintf("configs: default %q does not parse: %v", text, err))
	}
	return v
}

// defaultText returns the default of one instance in canonical text.
func (p *parser) defaultText(k *keyDef, m match) (string, bool) {
	switch {
	case k.defFunc != nil:
		return k.defFunc(p, m)
	case k.defOf != "":
		src := p.settings[instantiate(compileSegments(k.defOf), m)]
		if src == nil || !src.has {
			if src != nil && src.bad && src.hasDef {
				return src.defText, true
			}
			return "", false
		}
		return src.text, true
	case k.def != "":
		return k.def, true
	}
	return "", false
}

// assign stores a parsed value through a key's binding: a setter, or a
// pointer to a field of the same kind (a string into a Profile, and so on).
func assign(target, v any) error {
	if set, ok := target.(setter); ok {
		return set(v)
	}
	dst := reflect.ValueOf(target)
	if dst.Kind() != reflect.Pointer {
		panic(fmt.Sprintf("configs: binding is %T, not a pointer or setter", target))
	}
	dst = dst.Elem()
	val := reflect.ValueOf(v)
	switch {
	case val.Type().AssignableTo(dst.Type()):
		dst.Set(val)
	case val.Kind() == dst.Kind() && val.Type().ConvertibleTo(dst.Type()):
		dst.Set(val.Convert(dst.Type()))
	default:
		panic(fmt.Sprintf("configs: cannot store %T in %s", v, dst.Type()))
	}
	return nil
}

// ---- features: refusals and warnings ----

// asks reports whether a key's value asks for its feature.
func (s *setting) asks() bool {
	switch s.key.gate {
	case gateAlways:
		return true
	case gateNonDefault:
		if s.isDefault() {
			return false
		}
		if _, isBool := s.key.typ.(boolT); isBool && s.text == "false" {
			return false // a switch turned off asks for nothing
		}
		for _, n := range s.key.neutral {
			if s.text == n {
				return false
			}
		}
		return true
	}
	return false
}

// gateFeatures applies each feature's status to the keys the file sets: a
// key asking for a refused feature refuses start; a key of a feature that is
// off (or not built) has no effect and says so; an accepted-and-ignored key
// says why it is not needed.
func (p *parser) gateFeatures() {
	ignored := map[string][]*setting{} // open-pattern instance → settings, to report together
	var ignoredOrder []string
	for _, f := range p.reg.features {
		st := p.status[f.id]
		on := f.on == nil || f.on(p.cfg)
		refused := false
		for _, s := range p.order {
			if s.key.feature != f || !s.fromFile || s.bad {
				continue
			}
			k := s.key
			if k.ignored != "" {
				if !s.isDefault() {
					g := s.primary
					if hasRest(k.segs) {
						g = strings.TrimSuffix(s.primary, s.m.rest) + "*"
					}
					if ignored[g] == nil {
						ignoredOrder = append(ignoredOrder, g)
					}
					ignored[g] = append(ignored[g], s)
				}
				continue
			}
			if st == StatusRefused && on && s.asks() {
				p.errs = append(p.errs, &Error{Key: s.name, Value: s.raw, NotBuilt: true,
					Msg: fmt.Sprintf("%s is not built yet in this build; refusing to start rather than %s", f.title, f.loss)})
				refused = true
				continue
			}
			if s.isDefault() || k.sw {
				continue
			}
			switch {
			case !on && k.offToo:
			case !on:
				p.warnf("%s=%s: has no effect: %s", s.name, s.shownRaw(), f.off(p.cfg))
			case st == StatusRefused:
				p.warnf("%s=%s: has no effect: %s is not built yet in this build", s.name, s.shownRaw(), f.title)
			}
		}
		if st == StatusRefused && on && !refused && f.defaultOn != nil {
			if w := f.defaultOn(p.cfg); w != "" {
				p.warns = append(p.warns, w)
			}
		}
	}
	for _, g := range ignoredOrder {
		ss := ignored[g]
		if len(ss) == 1 {
			s := ss[0]
			p.warnf("%s=%s: accepted and ignored: %s", s.name, s.shownRaw(), s.key.ignored)
			continue
		}
		names := make([]string, len(ss))
		for i, s := range ss {
			names[i] = s.m.rest
		}
		p.warnf("%s: %d settings accepted and ignored (%s): %s", g, len(ss), strings.Join(names, ", "), ss[0].key.ignored)
	}
}

// ---- unknown keys ----

func (p *parser) checkLeftovers() {
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
	catalogsKnown := !p.bad["catalogs"] && p.has("catalogs")
	for _, k := range rest {
		v := strings.TrimSpace(p.props[k])
		if c, ok := p.files[k]; ok {
			if p.explainVars(k, v, c.m, catalogsKnown) {
				continue
			}
		}
		msg := "unknown key"
		if s := suggest(k, p.candidates(k)); s != "" {
			msg += fmt.Sprintf("; did you mean %s?", s)
		}
		p.fail(errorf(k, v, "%s", msg))
	}
}

// explainVars reports a key whose pattern is known but whose wildcard names
// nothing that exists; it reports whether it did.
func (p *parser) explainVars(k, v string, m match, catalogsKnown bool) bool {
	for _, name := range sortedVarNames(m) {
		val := m.vars[name]
		switch name {
		case "catalog":
			if p.catalogByExactName(val) == nil {
				if catalogsKnown {
					p.fail(errorf(k, v, "catalog %q is not listed in catalogs=%s", val, p.shown("catalogs")))
				}
				return true
			}
		case "frontend":
			if p.frontendByName(val) == nil {
				if !p.bad["additional-frontends"] {
					p.fail(errorf(k, v, "frontend %q is not listed in additional-frontends=%s", val, p.shown("additional-frontends")))
				}
				return true
			}
		case "family":
			if !containsFold(methodFamilies, val) {
				p.fail(errorf(k, v, "unknown method family %q; allowed: %s", val, strings.Join(methodFamilies, ", ")))
				return true
			}
		case "class":
			if !containsFold(rpcClasses, val) {
				p.fail(errorf(k, v, "unknown RPC class %q; allowed: %s", val, strings.Join(rpcClasses, ", ")))
				return true
			}
		}
	}
	return false
}

func sortedVarNames(m match) []string {
	out := make([]string, 0, len(m.vars))
	for n := range m.vars {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// candidates lists concrete key names an unknown key may be a typo of.
func (p *parser) candidates(unknown string) []string {
	parts := strings.Split(unknown, ".")
	var out []string
	for _, k := range p.reg.keys {
		if hasRest(k.segs) {
			continue
		}
		fill := []match{{}}
		for i, s := range k.segs {
			if s.v == "" {
				continue
			}
			var vals []string
			switch s.v {
			case "catalog":
				for _, c := range p.cfg.Catalogs {
					vals = append(vals, c.Name)
				}
			case "frontend":
				for _, f := range p.cfg.AdditionalFrontends {
					vals = append(vals, f.Name)
				}
			case "family":
				vals = methodFamilies
			case "class":
				vals = rpcClasses
			default:
				if i < len(parts) {
					vals = []string{parts[i]}
				}
			}
			var next []match
			for _, m := range fill {
				for _, val := range vals {
					nm := match{vars: map[string]string{s.v: val}}
					for kk, vv := range m.vars {
						nm.vars[kk] = vv
					}
					next = append(next, nm)
				}
			}
			fill = next
		}
		for _, m := range fill {
			out = append(out, instantiate(k.segs, m))
		}
	}
	return out
}

// suggest returns the candidate closest to key by edit distance when it is
// close enough to be a likely typo, or "".
func suggest(key string, candidates []string) string {
	best, bestD := "", -1
	lk := strings.ToLower(key)
	for _, c := range candidates {
		if c == key {
			continue
		}
		d := EditDistance(lk, strings.ToLower(c))
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	limit := min(max(len(key)/4, 2), 4)
	if bestD >= 0 && bestD <= limit {
		return best
	}
	return ""
}

// EditDistance is the Levenshtein distance of two byte strings (for "did
// you mean" suggestions of keys and commands).
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
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
