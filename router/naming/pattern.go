package naming

import (
	"fmt"
	"regexp"
	"strings"
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
// whole name.
func Pattern(p string) (*regexp.Regexp, error) {
	parts := strings.Split(strings.TrimSpace(p), "|")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(s, "*", ".*")
	}
	re, err := regexp.Compile("(?i)^(?:" + strings.Join(parts, "|") + ")$")
	if err != nil {
		return nil, fmt.Errorf("database pattern %q is not valid: %v", p, err)
	}
	return re, nil
}
