package naming

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
)

// Alternatives splits a metastore name pattern on '|' (HMS matches each
// alternative on its own).
func Alternatives(p string) []string {
	parts := strings.Split(p, "|")
	out := parts[:0]
	for _, s := range parts {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Pattern compiles a metastore name pattern as HMS does: alternatives
// split on '|', '*' matches anything, the rest is a regex, case-insensitive,
// whole name. Compiled patterns are kept (patterns below).
func Pattern(p string) (*regexp.Regexp, error) {
	if re := patterns.get(p); re != nil {
		return re, nil
	}
	parts := strings.Split(strings.TrimSpace(p), "|")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(s, "*", ".*")
	}
	re, err := regexp.Compile("(?i)^(?:" + strings.Join(parts, "|") + ")$")
	if err != nil {
		return nil, fmt.Errorf("database pattern %q is not valid: %v", p, err)
	}
	patterns.put(p, re)
	return re, nil
}

// Compile is regexp.Compile with the compiled expressions kept (exprs
// below): the planner's matchers of a catalog's external names.
func Compile(expr string) (*regexp.Regexp, error) {
	if re := exprs.get(expr); re != nil {
		return re, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, err
	}
	exprs.put(expr, re)
	return re, nil
}

// MaxCompiled bounds each store of compiled patterns.
const MaxCompiled = 512

// patterns (by the client's pattern) and exprs (by the expression) keep
// what was compiled: clients send a few spellings over and over ("*",
// "hmsbench*", "@hive#*", Spark's SHOW DATABASES LIKE), and compiling one
// cost a get_databases about 32,000 instructions and 74 allocations, more
// than the rest of the call. A compiled *regexp.Regexp is safe for
// concurrent use. Each store holds at most MaxCompiled entries and starts
// afresh when it would hold more, so a client inventing patterns costs
// compiles, never memory.
var patterns, exprs compiledStore

type compiledStore struct {
	m sync.Map // string → *regexp.Regexp
	n atomic.Int32
}

func (c *compiledStore) get(k string) *regexp.Regexp {
	if v, ok := c.m.Load(k); ok {
		return v.(*regexp.Regexp)
	}
	return nil
}

func (c *compiledStore) put(k string, re *regexp.Regexp) {
	if c.n.Add(1) > MaxCompiled {
		c.m.Clear()
		c.n.Store(1)
	}
	c.m.Store(k, re)
}
