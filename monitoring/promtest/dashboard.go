package promtest

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// Expr is one PromQL expression found in a Grafana dashboard.
type Expr struct {
	Source string // e.g. `panel "Request rate" target A` or `variable "catalog"`
	Raw    string // as written in the dashboard
	Query  string // runnable PromQL: template variables substituted
	// Variable is true for a templating query; label_values(metric, label)
	// is translated to `count by (label) (metric)`.
	Variable bool
}

// builtins are Grafana's own variables with values that suit a test
// Prometheus scraping every second.
var builtins = map[string]string{
	"__rate_interval": "1m",
	"__interval":      "1m",
	"__interval_ms":   "60000",
	"__range":         "1h",
	"__range_s":       "3600",
	"__range_ms":      "3600000",
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)(?::[^}]*)?\}|\[\[([A-Za-z0-9_]+)(?::[^\]]*)?\]\]|\$([A-Za-z0-9_]+)`)

type dashboardJSON struct {
	Panels     []panelJSON `json:"panels"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panelJSON struct {
	Title   string      `json:"title"`
	Type    string      `json:"type"`
	Panels  []panelJSON `json:"panels"` // collapsed rows hold their panels here
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
		Hide  bool   `json:"hide"`
	} `json:"targets"`
}

// DashboardExprs reads a Grafana dashboard JSON model and returns every
// PromQL expression of every panel target (rows included, hidden targets
// skipped) and every query-type template variable, in document order.
// Dashboard variables are substituted by the regex-all value `.*` (so they
// must be used with =~), and Grafana built-ins such as $__rate_interval by
// fixed durations (1m; $__range 1h). An unknown variable is an error.
func DashboardExprs(path string) ([]Expr, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read dashboard: %w", err)
	}
	var d dashboardJSON
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("dashboard %s is not valid JSON: %w", path, err)
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	subst := func(source, raw string) (string, error) {
		var unknown []string
		out := varRef.ReplaceAllStringFunc(raw, func(m string) string {
			sm := varRef.FindStringSubmatch(m)
			name := sm[1] + sm[2] + sm[3]
			if v, ok := builtins[name]; ok {
				return v
			}
			if vars[name] {
				return ".*"
			}
			unknown = append(unknown, m)
			return m
		})
		if len(unknown) > 0 {
			return "", fmt.Errorf("dashboard %s: %s uses undefined variable(s) %s", path, source, strings.Join(unknown, ", "))
		}
		return out, nil
	}

	var out []Expr
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q string
		if err := json.Unmarshal(v.Query, &q); err != nil {
			var obj struct {
				Query string `json:"query"`
			}
			if err2 := json.Unmarshal(v.Query, &obj); err2 != nil {
				return nil, fmt.Errorf("dashboard %s: variable %q: query is neither a string nor an object: %s", path, v.Name, v.Query)
			}
			q = obj.Query
		}
		source := fmt.Sprintf("variable %q", v.Name)
		promql, err := variableQuery(q)
		if err != nil {
			return nil, fmt.Errorf("dashboard %s: %s: %w", path, source, err)
		}
		s, err := subst(source, promql)
		if err != nil {
			return nil, err
		}
		out = append(out, Expr{Source: source, Raw: q, Query: s, Variable: true})
	}

	var walk func(ps []panelJSON, row string) error
	walk = func(ps []panelJSON, row string) error {
		for _, p := range ps {
			if p.Type == "row" {
				if err := walk(p.Panels, p.Title); err != nil {
					return err
				}
				continue
			}
			for _, t := range p.Targets {
				if t.Hide || strings.TrimSpace(t.Expr) == "" {
					continue
				}
				source := fmt.Sprintf("panel %q target %s", p.Title, t.RefID)
				if row != "" {
					source = fmt.Sprintf("row %q %s", row, source)
				}
				s, err := subst(source, t.Expr)
				if err != nil {
					return err
				}
				out = append(out, Expr{Source: source, Raw: t.Expr, Query: s})
			}
			if err := walk(p.Panels, row); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(d.Panels, ""); err != nil {
		return nil, err
	}
	return out, nil
}

var labelValuesRE = regexp.MustCompile(`^\s*label_values\(\s*(.+)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$`)
var queryResultRE = regexp.MustCompile(`^\s*query_result\((.*)\)\s*$`)

// variableQuery turns a Grafana Prometheus variable query into PromQL.
func variableQuery(q string) (string, error) {
	if m := labelValuesRE.FindStringSubmatch(q); m != nil {
		return fmt.Sprintf("count by (%s) (%s)", m[2], strings.TrimSpace(m[1])), nil
	}
	if m := queryResultRE.FindStringSubmatch(q); m != nil {
		return m[1], nil
	}
	return "", fmt.Errorf("unsupported variable query %q (want label_values(metric, label) or query_result(expr))", q)
}

var promqlKeywords = map[string]bool{
	"and": true, "or": true, "unless": true, "bool": true, "offset": true,
	"by": true, "without": true, "on": true, "ignoring": true,
	"group_left": true, "group_right": true, "inf": true, "nan": true,
	"start": true, "end": true,
}

// groupingKeywords are followed by a parenthesised label list.
var groupingKeywords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

// MetricNames returns the sorted, distinct metric names an expression
// selects. It is a small PromQL lexer, not a full parser: it skips string
// literals, label matchers in {...}, ranges in [...], label lists after
// by/without/on/ignoring/group_*, keywords, numbers and function names.
// Selectors by {__name__=...} are not recognised (and not used by the
// dashboard).
func MetricNames(expr string) ([]string, error) {
	set := map[string]bool{}
	braces := 0
	skipList := false
	i := 0
	for i < len(expr) {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(expr) && expr[j] != c {
				if expr[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			if j >= len(expr) {
				return nil, fmt.Errorf("unterminated string in %q", expr)
			}
			i = j + 1
		case c == '#': // comment to end of line
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case c == '{':
			braces++
			i++
		case c == '}':
			braces--
			if braces < 0 {
				return nil, fmt.Errorf("unbalanced } in %q", expr)
			}
			i++
		case c == '[':
			j := strings.IndexByte(expr[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("unterminated [ in %q", expr)
			}
			i += j + 1
		case c == '(' && skipList:
			j := strings.IndexByte(expr[i:], ')')
			if j < 0 {
				return nil, fmt.Errorf("unterminated label list in %q", expr)
			}
			i += j + 1
			skipList = false
		case isDigit(c) || (c == '.' && i+1 < len(expr) && isDigit(expr[i+1])):
			for i < len(expr) && (isIdentChar(expr[i]) || expr[i] == '.') {
				i++
			}
		case isIdentStart(c):
			j := i
			for j < len(expr) && isIdentChar(expr[j]) {
				j++
			}
			word := expr[i:j]
			i = j
			if braces > 0 {
				continue // label name inside a matcher
			}
			lw := strings.ToLower(word)
			if !groupingKeywords[lw] {
				skipList = false
			}
			if promqlKeywords[lw] {
				if groupingKeywords[lw] {
					skipList = true
				}
				continue
			}
			k := j
			for k < len(expr) && (expr[k] == ' ' || expr[k] == '\t' || expr[k] == '\n') {
				k++
			}
			if k < len(expr) && expr[k] == '(' {
				continue // function or aggregation
			}
			if next := leadingWord(expr[k:]); next == "by" || next == "without" {
				continue // aggregation with its grouping before the operand: sum by (x) (...)
			}
			set[word] = true
		default:
			skipList = skipList && (c == ' ')
			i++
		}
	}
	if braces != 0 {
		return nil, fmt.Errorf("unbalanced { in %q", expr)
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

func leadingWord(s string) string {
	j := 0
	for j < len(s) && isIdentChar(s[j]) {
		j++
	}
	return strings.ToLower(s[:j])
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool { return c == '_' || c == ':' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
func isIdentChar(c byte) bool  { return isIdentStart(c) || isDigit(c) }
