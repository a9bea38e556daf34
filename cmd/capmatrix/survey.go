package main

import (
	"fmt"
	"strings"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Survey is a method-level account of what one client population calls and
// what it gets on one backend runtime: the calls found by reading the
// client's sources, each with the outcome the code gives it. The generator
// holds every entry's expect to the code (checkSurvey), so the survey
// cannot claim an adaptation the router does not make.
type Survey struct {
	ID             string        `json:"id"`
	Client         string        `json:"client"`
	FrontProfile   string        `json:"frontProfile"`
	BackendProfile string        `json:"backendProfile"`
	Source         string        `json:"source"` // what was read
	Calls          []*SurveyCall `json:"calls"`
}

// SurveyCall is one RPC of a survey.
type SurveyCall struct {
	Flow   string `json:"flow"`   // e.g. CREATE TABLE, INSERT, SELECT, statistics
	Method string `json:"method"` // the RPC
	// Expect: native (forwarded; fields the runtime implies dropped),
	// adapted (served by an adapter), refused (no safe mapping: the client
	// gets an error naming why).
	Expect string `json:"expect"`
	Why    string `json:"why"` // what happens, in words
}

var surveyExpect = []string{"native", "adapted", "refused"}

// checkSurvey validates one survey against itself and the code.
func checkSurvey(s *Survey, mx *Matrix) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("survey %q: %s", s.ID, fmt.Sprintf(format, args...)))
	}
	if !idPattern.MatchString(s.ID) {
		bad("id must be lower-case words joined by '-'")
	}
	front, ok := thriftgen.ProfileByName(s.FrontProfile)
	if !ok {
		bad("frontProfile %q is not a profile", s.FrontProfile)
	}
	col, _ := mx.Backend(s.BackendProfile)
	if col < 0 {
		bad("backendProfile %q is not a profile", s.BackendProfile)
	}
	if strings.TrimSpace(s.Client) == "" || strings.TrimSpace(s.Source) == "" || len(s.Calls) == 0 {
		bad("client, source and calls are required")
	}
	for i, c := range s.Calls {
		row := mx.Row(c.Method)
		switch {
		case row == nil:
			bad("calls[%d]: %q is not an RPC of the canonical API", i, c.Method)
			continue
		case !contains(surveyExpect, c.Expect):
			bad("calls[%d] %s: expect %q is not one of %s", i, c.Method, c.Expect, strings.Join(surveyExpect, ", "))
			continue
		case strings.TrimSpace(c.Flow) == "" || strings.TrimSpace(c.Why) == "":
			bad("calls[%d] %s: flow and why are required", i, c.Method)
		}
		if ok && !row.Method.Profiles.Has(front) {
			bad("calls[%d]: %s is not exposed by a %s front door", i, c.Method, s.FrontProfile)
		}
		if col < 0 {
			continue
		}
		o := row.Cells[col]
		got := "native"
		switch {
		case o.Kind.refusal() || row.AlwaysRefused:
			got = "refused"
		case o.Kind == Adapted:
			got = "adapted"
		}
		if got != c.Expect {
			bad("calls[%d]: %s on %s is %s (%s), the survey says %s", i, c.Method, s.BackendProfile, got, describe(o), c.Expect)
		}
	}
	return errs
}

// renderSurveys writes the surveys section of COMPATIBILITY.md.
func renderSurveys(w func(format string, args ...any), f *File, mx *Matrix) {
	for _, s := range f.Surveys {
		w("\n## Survey: %s\n\n", cell(s.Client))
		w("Front door `%s`, backend `%s`. Read: %s.\n\n", s.FrontProfile, s.BackendProfile, cell(s.Source))
		w("| Flow | RPC | On %s | What happens |\n|---|---|---|---|\n", shortLabel(s.BackendProfile))
		col, _ := mx.Backend(s.BackendProfile)
		for _, c := range s.Calls {
			outcome := c.Expect
			if row := mx.Row(c.Method); row != nil && col >= 0 {
				outcome = describe(row.Cells[col])
			}
			w("| %s | %s | %s | %s |\n", cell(c.Flow), code(c.Method), cell(outcome), cell(c.Why))
		}
	}
}
