package ranger

import (
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Ranger compares names as Java strings: UTF-16 code units, and "ignore
// case" as String.regionMatches does (upper case equal, or the lower case
// of the upper case equal). A jstr holds a string in that form: ASCII (the
// normal case for Hive names, which the metastore lowercases) as is, with no
// copy; anything else as UTF-16 units.
type jstr struct {
	s string   // ASCII form (u == nil)
	u []uint16 // UTF-16 form
}

func newJstr(s string) jstr {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return jstr{u: utf16.Encode([]rune(s))}
		}
	}
	return jstr{s: s}
}

func (j jstr) len() int {
	if j.u != nil {
		return len(j.u)
	}
	return len(j.s)
}

func (j jstr) at(i int) uint16 {
	if j.u != nil {
		return j.u[i]
	}
	return uint16(j.s[i])
}

func (j jstr) String() string {
	if j.u != nil {
		return string(utf16.Decode(j.u))
	}
	return j.s
}

// utf16At is the i-th UTF-16 unit of s.
func utf16At(s string, i int) uint16 { return newJstr(s).at(i) }

// foldEq is Java's case-insensitive char comparison.
func foldEq(a, b uint16) bool {
	if a == b {
		return true
	}
	if a < utf8.RuneSelf && b < utf8.RuneSelf {
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		return a == b
	}
	ua, ub := upper16(a), upper16(b)
	return ua == ub || lower16(ua) == lower16(ub)
}

func upper16(c uint16) uint16 { return mapBMP(c, unicode.ToUpper) }

func lower16(c uint16) uint16 { return mapBMP(c, unicode.ToLower) }

// mapBMP applies a case mapping to one UTF-16 unit as Java's
// Character.toUpperCase(char) does: surrogates and mappings leaving the
// basic plane keep the unit.
func mapBMP(c uint16, f func(rune) rune) uint16 {
	if utf16.IsSurrogate(rune(c)) {
		return c
	}
	if r := f(rune(c)); r <= 0xFFFF {
		return uint16(r)
	}
	return c
}

// regionMatches is String.regionMatches(ignoreCase, off, other, 0, len(other)).
func regionMatches(s jstr, off int, other jstr, ci bool) bool {
	n := other.len()
	if off < 0 || off+n > s.len() {
		return false
	}
	for i := 0; i < n; i++ {
		a, b := s.at(off+i), other.at(i)
		if a == b {
			continue
		}
		if !ci || !foldEq(a, b) {
			return false
		}
	}
	return true
}

func jEquals(a, b jstr, ci bool) bool {
	return a.len() == b.len() && regionMatches(a, 0, b, ci)
}

func jStartsWith(s, prefix jstr, ci bool) bool { return regionMatches(s, 0, prefix, ci) }

func jEndsWith(s, suffix jstr, ci bool) bool {
	return regionMatches(s, s.len()-suffix.len(), suffix, ci)
}

// indexFrom is IOCase.checkIndexOf: the first i >= from where search
// matches s, or -1.
func indexFrom(s jstr, from int, search jstr, ci bool) int {
	end := s.len() - search.len()
	for i := from; i <= end; i++ {
		if regionMatches(s, i, search, ci) {
			return i
		}
	}
	return -1
}

// wcToken is one token of a wildcard pattern: "*", "?" or text.
type wcToken struct {
	kind byte // '*', '?' or 't'
	text jstr
}

// splitWildcard splits a pattern as commons-io's FilenameUtils does: runs
// of '*' collapse into one token, each '?' is a token.
func splitWildcard(p jstr) []wcToken {
	var out []wcToken
	var buf []uint16
	flush := func() {
		if len(buf) > 0 {
			out = append(out, wcToken{kind: 't', text: unitsJstr(buf)})
			buf = nil
		}
	}
	var prev uint16
	for i := 0; i < p.len(); i++ {
		c := p.at(i)
		switch {
		case c == '?':
			flush()
			out = append(out, wcToken{kind: '?'})
		case c == '*':
			flush()
			if prev != '*' {
				out = append(out, wcToken{kind: '*'})
			}
		default:
			buf = append(buf, c)
		}
		prev = c
	}
	flush()
	return out
}

func unitsJstr(u []uint16) jstr {
	for _, c := range u {
		if c >= utf8.RuneSelf {
			return jstr{u: append([]uint16(nil), u...)}
		}
	}
	b := make([]byte, len(u))
	for i, c := range u {
		b[i] = byte(c)
	}
	return jstr{s: string(b)}
}

// wildcardMatch is FilenameUtils.wildcardMatch(text, pattern, case): the
// same token walk with its backtracking, including its quirks (a '?' right
// after a '*' ends the '*', so "*?" only matches one character).
func wildcardMatch(text jstr, toks []wcToken, ci bool) bool {
	type mark struct{ tok, pos int }
	var stackBuf [8]mark
	backtrack := stackBuf[:0]
	anyChars := false
	textIdx, tokIdx := 0, 0
	for {
		if len(backtrack) > 0 {
			m := backtrack[len(backtrack)-1]
			backtrack = backtrack[:len(backtrack)-1]
			tokIdx, textIdx, anyChars = m.tok, m.pos, true
		}
		for tokIdx < len(toks) {
			t := toks[tokIdx]
			if t.kind == '?' {
				textIdx++
				if textIdx > text.len() {
					break
				}
				anyChars = false
			} else if t.kind == '*' {
				anyChars = true
				if tokIdx == len(toks)-1 {
					textIdx = text.len()
				}
			} else {
				if anyChars {
					textIdx = indexFrom(text, textIdx, t.text, ci)
					if textIdx == -1 {
						break
					}
					if repeat := indexFrom(text, textIdx+1, t.text, ci); repeat >= 0 {
						backtrack = append(backtrack, mark{tokIdx, repeat})
					}
				} else if !regionMatches(text, textIdx, t.text, ci) {
					break
				}
				textIdx += t.text.len()
				anyChars = false
			}
			tokIdx++
		}
		if tokIdx == len(toks) && textIdx == text.len() {
			return true
		}
		if len(backtrack) == 0 {
			return false
		}
	}
}

// javaStringHash is String.hashCode.
func javaStringHash(s string) int32 {
	var h int32
	j := newJstr(s)
	for i := 0; i < j.len(); i++ {
		h = 31*h + int32(j.at(i))
	}
	return h
}

// javaHashSetOrder returns the order in which a java.util.HashSet built by
// adding names one by one (default capacity) iterates them. Ranger iterates
// the "any access" types in that order and stops at the first allowed one,
// which can decide an answer; the evaluator walks them the same way.
func javaHashSetOrder(names []string) []int {
	var uniq []int
	seen := map[string]bool{}
	for i, n := range names {
		if !seen[n] {
			seen[n] = true
			uniq = append(uniq, i)
		}
	}
	capacity := 16
	for float64(len(uniq)) > float64(capacity)*0.75 {
		capacity *= 2
	}
	bucket := func(i int) int {
		h := javaStringHash(names[i])
		h ^= int32(uint32(h) >> 16)
		return int(h) & (capacity - 1)
	}
	out := append([]int(nil), uniq...)
	// stable by bucket: within a bucket the insertion order stays
	for i := 1; i < len(out); i++ {
		for k := i; k > 0 && bucket(out[k-1]) > bucket(out[k]); k-- {
			out[k-1], out[k] = out[k], out[k-1]
		}
	}
	return out
}

// compareJava is String.compareTo (UTF-16 order).
func compareJava(a, b string) int {
	ja, jb := newJstr(a), newJstr(b)
	n := min(ja.len(), jb.len())
	for i := 0; i < n; i++ {
		if x, y := ja.at(i), jb.at(i); x != y {
			return int(x) - int(y)
		}
	}
	return ja.len() - jb.len()
}
