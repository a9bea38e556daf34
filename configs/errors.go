package configs

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// Error is one problem in a configuration. It always names the key; Value is
// the value as written (after trimming) unless Missing is set.
type Error struct {
	Key     string
	Value   string
	Missing bool // the key is absent (Value is then meaningless)
	// NotBuilt: the value is valid but asks for a feature this build does
	// not have yet (a refusal rather than a mistake in the file).
	NotBuilt bool
	Msg      string
}

func (e *Error) Error() string {
	if e.Missing {
		return e.Key + ": " + e.Msg
	}
	return e.Key + "=" + quoteValue(e.Value) + ": " + e.Msg
}

// quoteValue shows a value as written, quoting it only when it is empty or
// contains blanks or control characters, so the operator can see them.
func quoteValue(v string) string {
	if v == "" {
		return `""`
	}
	for _, r := range v {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == '"' {
			return strconv.Quote(v)
		}
	}
	return v
}

// ValidationError is what Parse, ParseReader and Load return when a
// configuration is not usable: every problem found, one per line of Error(),
// so an operator can fix a file in one pass. Warnings holds what would have
// been Config.Warnings, so a checker can show them too.
type ValidationError struct {
	Errors   []*Error
	Warnings []string
}

func (v *ValidationError) Error() string {
	lines := make([]string, len(v.Errors))
	for i, e := range v.Errors {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// sortErrors orders problems by key so the output is stable and a file's
// problems about one area stay together; the detection order is kept for
// problems of the same key.
func sortErrors(errs []*Error) {
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Key < errs[j].Key })
}

func errorf(key, value, format string, args ...any) *Error {
	return &Error{Key: key, Value: value, Msg: fmt.Sprintf(format, args...)}
}

func missingf(key, format string, args ...any) *Error {
	return &Error{Key: key, Missing: true, Msg: fmt.Sprintf(format, args...)}
}
