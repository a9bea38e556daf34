package viewsql

import "strings"

// tableRef is a name found in a table position: the token indices of its
// identifier parts (dots between them), and whether it is a one-part name
// equal to a CTE of the statement.
type tableRef struct {
	parts []int
	cte   bool
}

// frame is one level of parentheses.
type frame struct {
	fn        bool // opened by a function call: FROM here is not a table position without a SELECT
	sawSelect bool
	from      bool // inside a FROM clause
	comma     bool // a comma at this level starts another table (off after LATERAL VIEW)
}

func isKw(s string, kws ...string) bool {
	for _, k := range kws {
		if strings.EqualFold(s, k) {
			return true
		}
	}
	return false
}

// groupOpeners: a "(" after one of these words is not a function call.
var groupOpeners = [...]string{"FROM", "JOIN", "IN", "EXISTS", "AS", "ON", "AND", "OR", "NOT", "WHERE", "HAVING",
	"SELECT", "UNION", "ALL", "DISTINCT", "WITH", "VIEW", "TABLE", "INTO", "BY", "WHEN", "THEN", "ELSE", "CASE",
	"USING", "LATERAL", "ANY", "SOME", "INTERSECT", "EXCEPT", "MINUS", "VALUES", "RETURN", "IS", "LIKE", "RLIKE",
	"REGEXP", "BETWEEN", "OVERWRITE", "UPDATE", "SET"}

// clauseEnds end a FROM clause at their level.
var clauseEnds = [...]string{"WHERE", "GROUP", "ORDER", "HAVING", "LIMIT", "UNION", "INTERSECT", "EXCEPT",
	"MINUS", "WINDOW", "SORT", "CLUSTER", "DISTRIBUTE", "SELECT", "INSERT", "QUALIFY", "OFFSET", "SET", "VALUES"}

// notNames: words in a table position that are not a table name.
var notNames = [...]string{"TABLE", "LATERAL", "VALUES", "SELECT", "WITH", "UNNEST", "ONLY", "FROM"}

func oneOf(s string, list []string) bool { return isKw(s, list...) }

// scan finds the table references of a tokenized text.
func scan(text string, toks []token) []tableRef {
	// sig: indices of significant tokens (no space, no comment).
	sig := make([]int, 0, len(toks))
	for i, t := range toks {
		if t.kind != tSpace && t.kind != tComment {
			sig = append(sig, i)
		}
	}
	word := func(j int) string { // the word at sig position j, "" if not a word
		if j < 0 || j >= len(sig) || toks[sig[j]].kind != tWord {
			return ""
		}
		t := toks[sig[j]]
		return text[t.start:t.end]
	}
	punct := func(j int, c byte) bool {
		if j < 0 || j >= len(sig) {
			return false
		}
		t := toks[sig[j]]
		return t.kind == tPunct && t.end-t.start == 1 && text[t.start] == c
	}
	ctes := collectCTEs(text, toks, sig, word, punct)

	var refs []tableRef
	stack := []frame{{}}
	pending := false // the next significant token is in a table position
	for j := 0; j < len(sig); j++ {
		t := toks[sig[j]]
		top := &stack[len(stack)-1]
		w := word(j)
		if pending {
			pending = false
			switch {
			case w != "" && oneOf(w, notNames[:]):
				if isKw(w, "TABLE") {
					pending = true
					continue
				}
				// fall through to ordinary handling of the keyword
			case t.kind == tWord || t.kind == tQuoted || t.kind == tSubst:
				ref, next := readName(toks, sig, j, punct)
				if punct(next, '(') { // a table-valued function: range(10), TABLE(...)
					j = next - 1
					continue
				}
				if len(ref.parts) == 1 && t.kind != tSubst && ctes[strings.ToLower(unquote(text, t))] {
					ref.cte = true
				}
				refs = append(refs, ref)
				j = next - 1
				continue
			case punct(j, '('):
				// A subquery, or a parenthesized join whose first token is
				// again a table position.
				n := word(j + 1)
				if punct(j+1, '(') || isKw(n, "SELECT", "WITH", "FROM", "VALUES", "TABLE") {
					stack = append(stack, frame{})
				} else {
					stack = append(stack, frame{from: true, comma: true})
					pending = true
				}
				continue
			}
		}
		switch {
		case t.kind == tPunct && t.end-t.start == 1:
			switch text[t.start] {
			case '(':
				prev := word(j - 1)
				fn := j > 0 && (prev != "" && !oneOf(prev, groupOpeners[:]) || toks[sig[j-1]].kind == tQuoted)
				stack = append(stack, frame{fn: fn})
			case ')':
				if len(stack) > 1 {
					stack = stack[:len(stack)-1]
				}
			case ',':
				if top.from && top.comma {
					pending = true
				}
			case ';':
				stack = []frame{{}}
			}
		case w != "":
			switch {
			case isKw(w, "FROM"):
				if top.fn && !top.sawSelect {
					break // extract(year FROM d), trim(BOTH ' ' FROM s)
				}
				top.from, top.comma, pending = true, true, true
			case isKw(w, "JOIN"):
				top.from, top.comma, pending = true, true, true
			case isKw(w, "INTO", "UPDATE", "TABLE"):
				pending = true
			case isKw(w, "LATERAL"):
				top.comma = false
			case oneOf(w, clauseEnds[:]):
				top.from = false
				if isKw(w, "SELECT") {
					top.sawSelect = true
				}
			}
		}
	}
	return refs
}

// readName reads ident (. ident)* starting at sig position j; it returns the
// reference and the sig position after it.
func readName(toks []token, sig []int, j int, punct func(int, byte) bool) (tableRef, int) {
	ref := tableRef{parts: []int{sig[j]}}
	j++
	for punct(j, '.') && j+1 < len(sig) {
		k := toks[sig[j+1]].kind
		if k != tWord && k != tQuoted && k != tSubst {
			break
		}
		ref.parts = append(ref.parts, sig[j+1])
		j += 2
	}
	return ref, j
}

func unquote(text string, t token) string {
	s := text[t.start:t.end]
	if t.kind == tQuoted && len(s) >= 2 {
		return strings.ReplaceAll(s[1:len(s)-1], "``", "`")
	}
	return s
}

// collectCTEs finds the names defined by WITH name [(cols)] AS ( ... ) [,
// name AS ( ... )]* anywhere in the text. The scope is the whole text: a
// one-part name equal to a CTE name anywhere is left alone (safe side).
func collectCTEs(text string, toks []token, sig []int, word func(int) string, punct func(int, byte) bool) map[string]bool {
	ctes := map[string]bool{}
	for j := 0; j < len(sig); j++ {
		if !isKw(word(j), "WITH") {
			continue
		}
		k := j + 1
		for {
			if k >= len(sig) || (toks[sig[k]].kind != tWord && toks[sig[k]].kind != tQuoted) {
				break
			}
			n := unquote(text, toks[sig[k]])
			k++
			if punct(k, '(') { // column list (Spark)
				k = matchParen(sig, k, punct)
			}
			if !isKw(word(k), "AS") || !punct(k+1, '(') {
				break
			}
			ctes[strings.ToLower(n)] = true
			k = matchParen(sig, k+1, punct)
			if !punct(k, ',') {
				break
			}
			k++
		}
	}
	return ctes
}

// matchParen returns the sig position after the ")" matching the "(" at j.
func matchParen(sig []int, j int, punct func(int, byte) bool) int {
	depth := 0
	for ; j < len(sig); j++ {
		switch {
		case punct(j, '('):
			depth++
		case punct(j, ')'):
			depth--
			if depth == 0 {
				return j + 1
			}
		}
	}
	return j
}
