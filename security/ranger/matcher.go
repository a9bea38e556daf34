package ranger

import (
	"regexp"
	"sort"
	"strings"
)

// A resource value in a policy ("sales", "sal*", "*_tmp", "s?les*x", "{USER}")
// is compiled once into one of four matchers, chosen as Ranger's
// RangerAbstractResourceMatcher chooses: exact, prefix, suffix or wildcard.

type matchKind uint8

const (
	kindExact matchKind = iota
	kindPrefix
	kindSuffix
	kindWildcard
)

// valueMatcher matches one policy value.
type valueMatcher struct {
	kind     matchKind
	value    jstr // the exact value, prefix, suffix or whole pattern
	toks     []wcToken
	ci       bool   // case-insensitive
	quoted   bool   // quotedCaseSensitive: a value starting with a quote char compares case-sensitively
	quotes   string // quote chars
	tokens   *tokenReplacer
	segs     []seg // the value cut at its macros (tokens != nil)
	priority int
}

// seg is a piece of a value with macros: literal text, or a macro ({USER},
// {OWNER}) with the text it stays as when the request has no such value.
type seg struct {
	lit      jstr
	tok      string // "USER", "OWNER", or "" for literal text
	fallback jstr
}

// matchOptions are a resource's matcher options (matcherOptions).
type matchOptions struct {
	ignoreCase, quotedCaseSensitive, wildCard, replaceTokens, replaceExprs bool
	quoteChars                                                             string
	start, end, escape                                                     uint16
	prefix                                                                 string
}

func readMatchOptions(o StringMap) matchOptions {
	m := matchOptions{
		ignoreCase:          matcherOption(o, "ignoreCase", true),
		quotedCaseSensitive: matcherOption(o, "quotedCaseSensitive", false),
		wildCard:            matcherOption(o, "wildCard", true),
		replaceTokens:       matcherOption(o, "replaceTokens", true),
		replaceExprs:        matcherOption(o, "replaceReqExpressions", true),
		quoteChars:          `"`,
		start:               charOption(o, "tokenDelimiterStart", '{'),
		end:                 charOption(o, "tokenDelimiterEnd", '}'),
		escape:              charOption(o, "tokenDelimiterEscape", '\\'),
	}
	if v, ok := o["quoteChars"]; ok {
		m.quoteChars = v
	}
	if v, ok := o["tokenDelimiterPrefix"]; ok {
		m.prefix = v
	}
	if m.replaceTokens {
		p := newJstr(m.prefix)
		bad := m.escape == m.start || m.escape == m.end
		for i := 0; i < p.len(); i++ {
			if c := p.at(i); c == m.escape || c == m.start || c == m.end {
				bad = true
			}
		}
		if bad {
			m.replaceTokens = false // Ranger logs and disables token replacement
		}
	}
	return m
}

// exprPattern finds Ranger's request expressions (${{...}}), which need a
// JavaScript engine; a policy using them is evaluated deny-biased.
var exprPattern = regexp.MustCompile(`\$\{\{.*?\}\}`)

// newValueMatcher compiles one policy value; nil for the empty value.
// unsupported reports a request expression.
func newValueMatcher(value string, o matchOptions) (m *valueMatcher, matchAny, unsupported bool) {
	if value == "" {
		return nil, false, false
	}
	if o.replaceExprs && exprPattern.MatchString(value) {
		unsupported = true
	}
	v := newJstr(value)
	n := v.len()
	startIdx, endIdx := -1, -1
	needWildcard := false
	if o.wildCard {
		for i := 0; i < n; i++ {
			c := v.at(i)
			if c == '?' {
				needWildcard = true
				break
			} else if c == '*' {
				if endIdx == -1 || endIdx == i-1 {
					endIdx = i
					if startIdx == -1 {
						startIdx = i
					}
				} else {
					needWildcard = true
					break
				}
			}
		}
	}
	m = &valueMatcher{ci: o.ignoreCase, quoted: o.ignoreCase && o.quotedCaseSensitive, quotes: o.quoteChars}
	if !o.ignoreCase {
		m.quoted = false
	}
	sub := func(from, to int) jstr {
		if v.u == nil {
			return jstr{s: v.s[from:to]}
		}
		return unitsJstr(v.u[from:to])
	}
	switch {
	case needWildcard:
		m.kind, m.value = kindWildcard, v
	case startIdx == -1:
		m.kind, m.value = kindExact, v
	case startIdx == 0:
		m.kind, m.value = kindSuffix, sub(endIdx+1, n)
	case endIdx != n-1:
		m.kind, m.value = kindWildcard, v
	default:
		m.kind, m.value = kindPrefix, sub(0, startIdx)
	}
	if m.kind == kindWildcard {
		m.toks = splitWildcard(m.value)
	}
	base := map[matchKind][2]int{kindExact: {1, 2}, kindPrefix: {3, 4}, kindSuffix: {3, 4}, kindWildcard: {5, 6}}[m.kind]
	if m.ci {
		m.priority = base[1]
	} else {
		m.priority = base[0]
	}
	if o.replaceTokens && (unsupported || hasToken(m.value, o.start, o.end, o.escape)) {
		m.tokens = &tokenReplacer{start: o.start, end: o.end, escape: o.escape, prefix: o.prefix}
		m.segs = m.tokens.segments(m.value)
		m.priority += 8
	}
	if m.value.len() == 0 {
		return m, true, unsupported
	}
	return m, false, unsupported
}

// hasToken is StringTokenReplacer.hasToken.
func hasToken(v jstr, start, end, escape uint16) bool {
	hasStart, hasEnd := false, false
	for i := 0; i < v.len(); i++ {
		switch v.at(i) {
		case escape:
			return true
		case start:
			hasStart = true
		case end:
			hasEnd = true
		}
	}
	return hasStart && hasEnd
}

// tokens are the request's macro values: {USER}, {OWNER}.
type tokens struct {
	user, owner       string
	hasUser, hasOwner bool
}

// tokenReplacer is Ranger's StringTokenReplacer.
type tokenReplacer struct {
	start, end, escape uint16
	prefix             string
}

// segments cuts v as StringTokenReplacer.replaceTokens walks it: escapes
// resolved, "{name}" tokens apart (an unterminated one stays literal).
func (r *tokenReplacer) segments(v jstr) []seg {
	if !hasToken(v, r.start, r.end, r.escape) {
		return []seg{{lit: v}}
	}
	var segs []seg
	var out, tok []uint16
	inTok := false
	flush := func() {
		if len(out) > 0 {
			segs = append(segs, seg{lit: unitsJstr(out)})
			out = nil
		}
	}
	n := v.len()
	for i := 0; i < n; i++ {
		c := v.at(i)
		if c == r.escape {
			i++
			if i < n {
				c = v.at(i)
				if inTok {
					if c != r.escape && c != r.end {
						tok = append(tok, r.escape)
					}
					tok = append(tok, c)
				} else {
					if c != r.escape && c != r.start {
						out = append(out, r.escape)
					}
					out = append(out, c)
				}
			} else if inTok {
				tok = append(tok, r.escape)
			} else {
				out = append(out, r.escape)
			}
			continue
		}
		if !inTok {
			if c == r.start {
				inTok, tok = true, tok[:0]
			} else {
				out = append(out, c)
			}
			continue
		}
		if c != r.end {
			tok = append(tok, c)
			continue
		}
		raw := unitsJstr(tok).String()
		lit := append(append([]uint16{r.start}, tok...), r.end)
		name := ""
		if strings.HasPrefix(raw, r.prefix) {
			switch raw[len(r.prefix):] {
			case "USER", "OWNER":
				name = raw[len(r.prefix):]
			}
		}
		if name == "" {
			out = append(out, lit...)
		} else {
			flush()
			segs = append(segs, seg{tok: name, fallback: unitsJstr(lit)})
		}
		inTok = false
	}
	if inTok {
		out = append(out, r.start)
		out = append(out, tok...)
	}
	flush()
	return segs
}

// piece is a segment's text for the request.
func (s *seg) piece(t *tokens) jstr {
	switch s.tok {
	case "":
		return s.lit
	case "USER":
		if t.hasUser {
			return newJstr(t.user)
		}
	case "OWNER":
		if t.hasOwner {
			return newJstr(t.owner)
		}
	}
	return s.fallback
}

// expand is the value with the request's macros replaced.
func expand(segs []seg, t *tokens) jstr {
	var out []uint16
	for i := range segs {
		p := segs[i].piece(t)
		for k := 0; k < p.len(); k++ {
			out = append(out, p.at(k))
		}
	}
	return unitsJstr(out)
}

// segsMatchAt compares the expanded value with rv from off, piece by piece.
func segsMatchAt(rv jstr, off int, segs []seg, t *tokens, ci bool) bool {
	for i := range segs {
		p := segs[i].piece(t)
		if !regionMatches(rv, off, p, ci) {
			return false
		}
		off += p.len()
	}
	return true
}

func segsLen(segs []seg, t *tokens) int {
	n := 0
	for i := range segs {
		n += segs[i].piece(t).len()
	}
	return n
}

// match tells whether a request value matches.
func (m *valueMatcher) match(rv jstr, t *tokens) bool {
	ci := m.ci
	if m.quoted && rv.len() > 0 && strings.ContainsRune(m.quotes, rune(rv.at(0))) {
		ci = false
	}
	p, toks := m.value, m.toks
	if m.tokens != nil {
		// macros: compared piece by piece, without building the value
		switch m.kind {
		case kindExact:
			return segsLen(m.segs, t) == rv.len() && segsMatchAt(rv, 0, m.segs, t, ci)
		case kindPrefix:
			return segsLen(m.segs, t) <= rv.len() && segsMatchAt(rv, 0, m.segs, t, ci)
		case kindSuffix:
			n := segsLen(m.segs, t)
			return n <= rv.len() && segsMatchAt(rv, rv.len()-n, m.segs, t, ci)
		}
		p = expand(m.segs, t)
		toks = splitWildcard(p)
	}
	switch m.kind {
	case kindExact:
		return jEquals(rv, p, ci)
	case kindPrefix:
		return jStartsWith(rv, p, ci)
	case kindSuffix:
		return jEndsWith(rv, p, ci)
	default:
		return wildcardMatch(rv, toks, ci)
	}
}

// resourceMatcher is the matcher of one resource of a policy
// (RangerDefaultResourceMatcher): its values, excludes, match-any.
type resourceMatcher struct {
	values   []*valueMatcher
	excludes bool
	matchAny bool
	dynamic  bool
}

func newResourceMatcher(pr *PolicyResource, o matchOptions) (rm *resourceMatcher, unsupported bool) {
	rm = &resourceMatcher{excludes: pr.IsExcludes}
	any := false
	for _, v := range nonNil(pr.Values) {
		m, isAny, unsup := newValueMatcher(v, o)
		unsupported = unsupported || unsup
		if m == nil {
			continue
		}
		if isAny {
			any = true
			break
		}
		rm.values = append(rm.values, m)
		rm.dynamic = rm.dynamic || m.tokens != nil
	}
	if any || len(rm.values) == 0 {
		// a match-any value drops the others, macros included: nothing
		// left to expand per request
		rm.values, rm.matchAny, rm.dynamic = nil, true, false
	}
	sort.SliceStable(rm.values, func(i, j int) bool { return rm.values[i].priority < rm.values[j].priority })
	return rm, unsupported
}

// match is getMatchType for one value; present is false for a resource the
// request does not name (Java's null).
func (rm *resourceMatcher) match(v jstr, present bool, t *tokens) bool {
	all := !present || v.len() == 0 || (v.len() == 1 && v.at(0) == '*')
	var self bool
	if rm.matchAny || all {
		self = rm.matchAny
	} else {
		for _, m := range rm.values {
			if m.match(v, t) {
				self = true
				break
			}
		}
	}
	if !rm.excludes || (all && !rm.matchAny) {
		return self
	}
	return !self
}
