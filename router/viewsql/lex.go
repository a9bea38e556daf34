package viewsql

// The lexer splits view SQL into tokens that keep their byte spans, so a
// rewrite replaces only the identifier tokens it means to and copies every
// other byte (literals, comments, numbers, substitutions, whitespace) as it
// was. It knows just enough of HiveQL and Spark SQL to tell those apart.

type tokKind uint8

const (
	tWord    tokKind = iota + 1 // unquoted identifier or keyword
	tQuoted                     // `backquoted identifier`
	tString                     // 'single' or "double" quoted literal
	tComment                    // -- line or /* block */ comment
	tNumber                     // 12, 1.5, 1e3, 10L, 2.0BD
	tSubst                      // ${...} substitution, or a word glued to one
	tSpace                      // whitespace
	tPunct                      // any other byte (or UTF-8 sequence)
)

type token struct {
	kind       tokKind
	start, end int // byte span in the text
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isWordByte(c byte) bool {
	return c == '_' || c == '$' || isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'z')
}

// lex tokenizes s. An unterminated literal, comment or identifier runs to the
// end of the text (so its bytes are never touched).
func lex(s string) []token {
	var out []token
	i := 0
	for i < len(s) {
		start := i
		c := s[i]
		var k tokKind
		switch {
		case isSpace(c):
			for i < len(s) && isSpace(s[i]) {
				i++
			}
			k = tSpace
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' {
				i++
			}
			k = tComment
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			i += 2
			for i < len(s) && !(s[i] == '*' && i+1 < len(s) && s[i+1] == '/') {
				i++
			}
			i = min(i+2, len(s))
			k = tComment
		case c == '\'' || c == '"':
			i = skipString(s, i)
			k = tString
		case c == '`':
			i = skipQuoted(s, i)
			k = tQuoted
		case c == '$' && i+1 < len(s) && s[i+1] == '{':
			i = skipSubst(s, i)
			k = tSubst
		case isDigit(c):
			if j, ok := number(s, i); ok {
				i, k = j, tNumber
			} else {
				i, k = wordEnd(s, i), tWord
			}
		case isWordByte(c):
			i, k = wordEnd(s, i), tWord
		default:
			i++
			if c >= 0x80 { // keep a UTF-8 sequence whole
				for i < len(s) && s[i]&0xC0 == 0x80 {
					i++
				}
			}
			k = tPunct
		}
		// A word, backquoted name or substitution glued to a substitution
		// ("db_${env}", "${db}_x") is one name the rewriter cannot know.
		if k == tWord || k == tQuoted || k == tSubst {
			for i+1 < len(s) && (s[i] == '$' && s[i+1] == '{' || k == tSubst && isWordByte(s[i])) {
				if s[i] == '$' && s[i+1] == '{' {
					i = skipSubst(s, i)
				} else {
					i = wordEnd(s, i)
				}
				k = tSubst
			}
		}
		out = append(out, token{kind: k, start: start, end: i})
	}
	return out
}

// skipString skips a quoted literal with backslash escapes (Hive and Spark).
func skipString(s string, i int) int {
	q := s[i]
	i++
	for i < len(s) {
		switch s[i] {
		case '\\':
			i += 2
			continue
		case q:
			return i + 1
		}
		i++
	}
	return len(s)
}

// skipQuoted skips a backquoted identifier; two backquotes inside it stand
// for one.
func skipQuoted(s string, i int) int {
	i++
	for i < len(s) {
		if s[i] == '`' {
			if i+1 < len(s) && s[i+1] == '`' {
				i += 2
				continue
			}
			return i + 1
		}
		i++
	}
	return len(s)
}

// skipSubst skips ${...}, nested ${...} included.
func skipSubst(s string, i int) int {
	depth := 0
	for i < len(s) {
		switch {
		case s[i] == '$' && i+1 < len(s) && s[i+1] == '{':
			depth++
			i += 2
			continue
		case s[i] == '}':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
		i++
	}
	return len(s)
}

func wordEnd(s string, i int) int {
	for i < len(s) && isWordByte(s[i]) && !(s[i] == '$' && i+1 < len(s) && s[i+1] == '{') {
		i++
	}
	return i
}

// number matches digits [. digits] [e[+-]digits] [type suffix] when no
// identifier byte follows; otherwise the run is an identifier (Hive allows
// identifiers that start with a digit).
func number(s string, i int) (int, bool) {
	j := i
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	intEnd := j
	if j < len(s) && s[j] == '.' && j+1 < len(s) && isDigit(s[j+1]) {
		j++
		for j < len(s) && isDigit(s[j]) {
			j++
		}
	}
	if j < len(s) && s[j]|0x20 == 'e' {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			for k < len(s) && isDigit(s[k]) {
				k++
			}
			j = k
		}
	}
	for _, suf := range [...]string{"BD", "bd", "L", "l", "S", "s", "Y", "y", "D", "d", "F", "f"} {
		if len(s)-j >= len(suf) && s[j:j+len(suf)] == suf && (j+len(suf) == len(s) || !isWordByte(s[j+len(suf)])) {
			return j + len(suf), true
		}
	}
	if j < len(s) && isWordByte(s[j]) {
		if j > intEnd { // "0.00A": the integer, then ".", then a word
			return intEnd, true
		}
		return i, false
	}
	return j, true
}
