package configs

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// property is one key/value pair of a .properties file with the line its
// logical line started on (1-based).
type property struct {
	Key, Value string
	Line       int
	Notes      []string // surprises that are not errors (dropped backslashes)
}

// SyntaxError reports lines of a .properties file that cannot be read, one
// problem per line of the message.
type SyntaxError struct {
	File     string // set by Load
	Problems []LineProblem
}

// LineProblem is one unreadable line of a .properties file.
type LineProblem struct {
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		if e.File != "" {
			fmt.Fprintf(&b, "%s:%d: %s", e.File, p.Line, p.Msg)
		} else {
			fmt.Fprintf(&b, "line %d: %s", p.Line, p.Msg)
		}
	}
	return b.String()
}

// ReadProperties reads Java .properties syntax the way java.util.Properties.load
// does: '#' and '!' comment lines, "key=value", "key:value" and "key value"
// separators, backslash line continuations (leading blanks of the continued
// line dropped), the escapes \t \n \r \f \uXXXX, and a backslash before any
// other character standing for that character. Leading blanks of a line and
// the blanks around the separator are dropped; trailing blanks of a value are
// kept, as Java keeps them. When a key occurs more than once the last value
// wins, as in Java. The input must be UTF-8 (Java's Reader-based load).
func ReadProperties(r io.Reader) (map[string]string, error) {
	entries, err := readProperties(r)
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, len(entries))
	for _, e := range entries {
		m[e.Key] = e.Value
	}
	return m, nil
}

// readProperties returns every key/value pair in file order, duplicates
// included, and all syntax problems together.
func readProperties(r io.Reader) ([]property, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark is not part of the first key
	var (
		out      []property
		problems []LineProblem
	)
	for _, ll := range logicalLines(data) {
		if !utf8.ValidString(ll.text) {
			problems = append(problems, LineProblem{ll.line, "not valid UTF-8 (save the file as UTF-8)"})
			continue
		}
		rawKey, rawValue := splitKeyValue(ll.text)
		var notes []string
		key, kerr := unescape(rawKey, &notes)
		value, verr := unescape(rawValue, &notes)
		if kerr != nil || verr != nil {
			msg := ""
			if kerr != nil {
				msg = kerr.Error()
			} else {
				msg = verr.Error()
			}
			problems = append(problems, LineProblem{ll.line, msg})
			continue
		}
		out = append(out, property{Key: key, Value: value, Line: ll.line, Notes: notes})
	}
	if len(problems) > 0 {
		return nil, &SyntaxError{Problems: problems}
	}
	return out, nil
}

type logicalLine struct {
	text string // escapes still in place, continuation backslashes removed
	line int
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

// logicalLines splits the input into logical lines: comments and blank lines
// dropped, continuations joined.
func logicalLines(data []byte) []logicalLine {
	var (
		out       []logicalLine
		cur       []byte
		startLine int
		inLine    bool // a logical line is being collected
		continued bool // the previous natural line ended with a continuation backslash
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), len(data)+1)
	sc.Split(scanNaturalLines)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		nl := sc.Bytes()
		i := 0
		for i < len(nl) && isBlank(nl[i]) {
			i++
		}
		nl = nl[i:]
		if !continued {
			if len(nl) == 0 {
				continue // blank line
			}
			if nl[0] == '#' || nl[0] == '!' {
				continue // comment line; a trailing backslash does not continue it
			}
			cur = cur[:0]
			startLine = lineNo
			inLine = true
		}
		// An odd number of trailing backslashes continues the line.
		n := 0
		for j := len(nl) - 1; j >= 0 && nl[j] == '\\'; j-- {
			n++
		}
		if n%2 == 1 {
			cur = append(cur, nl[:len(nl)-1]...)
			continued = true
			continue
		}
		cur = append(cur, nl...)
		continued = false
		out = append(out, logicalLine{text: string(cur), line: startLine})
		inLine = false
	}
	if inLine {
		// The file ended right after a continuation backslash: Java drops it.
		out = append(out, logicalLine{text: string(cur), line: startLine})
	}
	return out
}

// scanNaturalLines splits on \n, \r or \r\n.
func scanNaturalLines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	for i, c := range data {
		switch c {
		case '\n':
			return i + 1, data[:i], nil
		case '\r':
			if i+1 < len(data) {
				if data[i+1] == '\n' {
					return i + 2, data[:i], nil
				}
				return i + 1, data[:i], nil
			}
			if atEOF {
				return i + 1, data[:i], nil
			}
			return 0, nil, nil // need one more byte to tell \r from \r\n
		}
	}
	if atEOF {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// splitKeyValue separates the raw (still escaped) key and value of a logical
// line exactly as java.util.Properties does.
func splitKeyValue(s string) (key, value string) {
	keyLen := 0
	valueStart := len(s)
	hasSep := false
	backslash := false
	for keyLen < len(s) {
		c := s[keyLen]
		if (c == '=' || c == ':') && !backslash {
			valueStart = keyLen + 1
			hasSep = true
			break
		}
		if isBlank(c) && !backslash {
			valueStart = keyLen + 1
			break
		}
		if c == '\\' {
			backslash = !backslash
		} else {
			backslash = false
		}
		keyLen++
	}
	for valueStart < len(s) {
		c := s[valueStart]
		if !isBlank(c) {
			if !hasSep && (c == '=' || c == ':') {
				hasSep = true
			} else {
				break
			}
		}
		valueStart++
	}
	return s[:keyLen], s[valueStart:]
}

// unescape applies the .properties escapes. \uXXXX escapes are UTF-16 code
// units, so a surrogate pair written as two escapes becomes one character.
// A backslash before a letter or digit is dropped, as Java drops it; since
// that usually means a regex like \d lost its backslash, it is noted.
func unescape(s string, notes *[]string) (string, error) {
	if strings.IndexByte(s, '\\') < 0 {
		return s, nil
	}
	var b strings.Builder
	var pendingHigh rune = -1 // a high surrogate waiting for its low half
	flush := func() {
		if pendingHigh >= 0 {
			b.WriteRune(utf8.RuneError)
			pendingHigh = -1
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			flush()
			r, size := utf8.DecodeRuneInString(s[i:])
			b.WriteRune(r)
			i += size
			continue
		}
		i++
		if i >= len(s) {
			break // a lone trailing backslash is dropped, as in Java
		}
		c = s[i]
		switch c {
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf("malformed \\uXXXX escape %q (needs four hex digits)", s[i-1:])
			}
			hex := s[i+1 : i+5]
			v, err := strconv.ParseUint(hex, 16, 16)
			if err != nil {
				return "", fmt.Errorf("malformed \\uXXXX escape %q (needs four hex digits)", s[i-1:i+5])
			}
			i += 5
			r := rune(v)
			switch {
			case utf16.IsSurrogate(r) && r < 0xDC00: // high half
				flush()
				pendingHigh = r
			case utf16.IsSurrogate(r): // low half
				if pendingHigh >= 0 {
					b.WriteRune(utf16.DecodeRune(pendingHigh, r))
					pendingHigh = -1
				} else {
					b.WriteRune(utf8.RuneError)
				}
			default:
				flush()
				b.WriteRune(r)
			}
			continue
		case 't':
			flush()
			b.WriteByte('\t')
		case 'n':
			flush()
			b.WriteByte('\n')
		case 'r':
			flush()
			b.WriteByte('\r')
		case 'f':
			flush()
			b.WriteByte('\f')
		default:
			flush()
			r, size := utf8.DecodeRuneInString(s[i:])
			if notes != nil && r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				*notes = append(*notes, fmt.Sprintf(`\%c is read as %c (a .properties file drops a backslash before an ordinary character); write \\%c to keep the backslash, e.g. in a regex`, r, r, r))
			}
			b.WriteRune(r)
			i += size
			continue
		}
		i++
	}
	flush()
	return b.String(), nil
}

// escapeKey and escapeValue render text so that ReadProperties reads it back
// unchanged.
func escapeKey(s string) string { return escapeProp(s, true) }

func escapeValue(s string) string { return escapeProp(s, false) }

func escapeProp(s string, isKey bool) string {
	var b strings.Builder
	for i, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\f':
			b.WriteString(`\f`)
		case '=', ':':
			if isKey {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		case ' ':
			if isKey || i == 0 {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		case '#', '!':
			if isKey && i == 0 {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}
