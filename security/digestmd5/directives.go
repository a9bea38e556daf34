package digestmd5

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// A DIGEST-MD5 challenge or response is a comma-separated list of
// key=value directives (RFC 2831 §7.1): values are tokens or quoted strings
// in which a backslash escapes the next character; linear white space may
// surround keys, values and commas; empty list elements are allowed.

// directives holds the parsed directives, keys in lower case. A key that may
// repeat (realm in a challenge) keeps every value; the others refuse a second
// occurrence.
type directives map[string][]string

func (d directives) get(key string) (string, bool) {
	v, ok := d[key]
	if !ok {
		return "", false
	}
	return v[0], true
}

func isLWS(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func skipLWS(b []byte, i int) int {
	for i < len(b) && isLWS(b[i]) {
		i++
	}
	return i
}

// maxDirectives bounds the directive count of one message.
const maxDirectives = 64

// parseDirectives parses b. repeatable names the keys that may occur more
// than once. Values are returned as they are on the wire (bytes, as a
// string); invalid UTF-8 is refused, since both peers send UTF-8 (charset)
// or ASCII.
func parseDirectives(b []byte, repeatable ...string) (directives, error) {
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("not valid UTF-8")
	}
	d := directives{}
	count := 0
	i := skipLWS(b, 0)
	for i < len(b) {
		if b[i] == ',' {
			i = skipLWS(b, i+1)
			continue
		}
		// key
		start := i
		for i < len(b) && b[i] != '=' && b[i] != ',' && !isLWS(b[i]) && b[i] != '"' {
			i++
		}
		key := strings.ToLower(string(b[start:i]))
		if key == "" {
			return nil, fmt.Errorf("empty directive key at byte %d", start)
		}
		i = skipLWS(b, i)
		if i >= len(b) || b[i] != '=' {
			return nil, fmt.Errorf("'=' expected after directive key %q", key)
		}
		i = skipLWS(b, i+1)
		if i >= len(b) {
			return nil, fmt.Errorf("directive %q has no value", key)
		}
		var val strings.Builder
		if b[i] == '"' {
			i++
			closed := false
			for i < len(b) {
				c := b[i]
				if c == '\\' {
					if i+1 >= len(b) {
						return nil, fmt.Errorf("unterminated quoted value of directive %q", key)
					}
					val.WriteByte(b[i+1])
					i += 2
					continue
				}
				if c == '"' {
					closed = true
					i++
					break
				}
				val.WriteByte(c)
				i++
			}
			if !closed {
				return nil, fmt.Errorf("unterminated quoted value of directive %q", key)
			}
			i = skipLWS(b, i)
			if i < len(b) && b[i] != ',' {
				return nil, fmt.Errorf("',' expected after the quoted value of directive %q", key)
			}
		} else {
			start := i
			for i < len(b) && b[i] != ',' && !isLWS(b[i]) {
				if b[i] == '"' {
					return nil, fmt.Errorf("stray quote in the value of directive %q", key)
				}
				i++
			}
			val.Write(b[start:i])
			i = skipLWS(b, i)
			if i < len(b) && b[i] != ',' {
				return nil, fmt.Errorf("',' expected after the value of directive %q", key)
			}
		}
		count++
		if count > maxDirectives {
			return nil, fmt.Errorf("more than %d directives", maxDirectives)
		}
		if _, dup := d[key]; dup && !contains(repeatable, key) {
			return nil, fmt.Errorf("directive %q occurs more than once", key)
		}
		d[key] = append(d[key], val.String())
	}
	return d, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// directiveWriter builds a message.
type directiveWriter struct{ b []byte }

func quote(s string) string {
	if !strings.ContainsAny(s, "\"\\") {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			sb.WriteByte('\\')
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}

func (w *directiveWriter) quoted(key, value string) {
	if len(w.b) > 0 {
		w.b = append(w.b, ',')
	}
	w.b = append(w.b, key...)
	w.b = append(w.b, '=', '"')
	w.b = append(w.b, quote(value)...)
	w.b = append(w.b, '"')
}

func (w *directiveWriter) token(key, value string) {
	if len(w.b) > 0 {
		w.b = append(w.b, ',')
	}
	w.b = append(w.b, key...)
	w.b = append(w.b, '=')
	w.b = append(w.b, value...)
}
