package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/hms-proxy/hms-proxy/router/methods"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// CapabilitiesFile is the data file, relative to the repository root.
const CapabilitiesFile = "compat/capabilities.json"

// File is compat/capabilities.json.
type File struct {
	Comment      string        `json:"$comment,omitempty"`
	Capabilities []*Capability `json:"capabilities"`
	// Surveys: method-level accounts of what a client population calls
	// (read from its sources) and what each call gets.
	Surveys []*Survey `json:"surveys,omitempty"`
}

// Capability is one row of the public compatibility matrix: a client
// population through a front door to backends, and what it gets.
type Capability struct {
	ID     string `json:"id"`
	Client string `json:"client"`
	// Profile names (compatibility.frontend-profile / runtime-profile
	// values), or "*" for any.
	FrontProfiles   []string `json:"frontProfiles"`
	BackendProfiles []string `json:"backendProfiles"`
	Auth            string   `json:"auth"`     // NONE, KERBEROS
	Families        []string `json:"families"` // router method families (may be empty: e.g. configuration)
	Scope           string   `json:"scope"`    // the method families in words
	// Methods are the RPCs whose outcome the capability states; the
	// generator checks them against the code (see checkAgainstCode).
	Methods  []string `json:"methods,omitempty"`
	Expected string   `json:"expected"`
	Status   string   `json:"status"`
	// Implemented is required for planned capabilities: false = not built,
	// true = built but not yet proven by a test.
	Implemented *bool `json:"implemented,omitempty"`
	// Tests prove the capability: "package/path:TestName"; each must exist.
	Tests []string `json:"tests"`
	// PlannedTests: tests a planned capability waits for (may not exist).
	PlannedTests []string `json:"plannedTests,omitempty"`
	Note         string   `json:"note,omitempty"`
}

// Statuses in the order the docs explain them.
var Statuses = []string{"supported", "degraded", "passthrough", "rejected", "planned"}

var statusWords = map[string]string{
	"supported":   "works as with a direct metastore",
	"degraded":    "works, through an adaptation or a documented restriction",
	"passthrough": "forwarded unchanged, only where the backend runtime has the method",
	"rejected":    "refused on purpose with a clear error, never a misleading success",
	"planned":     "not (yet) proven by a test, or not implemented: see the status cell",
}

// AuthModes accepted in the file.
var AuthModes = []string{"NONE", "KERBEROS"}

var (
	idPattern   = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	testPattern = regexp.MustCompile(`^([A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*):(Test[A-Za-z0-9_]*)$`)
)

// Load reads and decodes the capabilities file strictly (unknown keys are
// errors).
func Load(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, b)
}

// Parse decodes the capabilities file; name is used in errors.
func Parse(name string, b []byte) (*File, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: data after the top-level object", name)
	}
	return &f, nil
}

// TestRef is a parsed "package/path:TestName".
type TestRef struct {
	Pkg, Name string
}

func (r TestRef) String() string { return r.Pkg + ":" + r.Name }

// ParseTestRef parses a test reference.
func ParseTestRef(s string) (TestRef, error) {
	m := testPattern.FindStringSubmatch(s)
	if m == nil {
		return TestRef{}, fmt.Errorf("test %q is not of the form package/path:TestName (e.g. e2e:TestHive4ClientAgainstHive313Backends)", s)
	}
	return TestRef{Pkg: m[1], Name: m[3]}, nil
}

// Validate checks the file against itself and against the code (profile
// names, families, RPC names, what the listed RPCs do); every problem is
// reported, each naming the capability, the key and the value.
func (f *File) Validate(mx *Matrix) []error {
	var errs []error
	bad := func(c *Capability, format string, args ...any) {
		errs = append(errs, fmt.Errorf("capability %q: %s", c.ID, fmt.Sprintf(format, args...)))
	}
	if len(f.Capabilities) == 0 {
		return []error{fmt.Errorf("%s lists no capabilities", CapabilitiesFile)}
	}
	profiles := thriftgen.ProfileNames()
	families := map[string]bool{}
	for _, fam := range mx.Families {
		families[string(fam)] = true
	}
	seen := map[string]bool{}
	for i, c := range f.Capabilities {
		if c == nil {
			errs = append(errs, fmt.Errorf("capabilities[%d] is null", i))
			continue
		}
		if !idPattern.MatchString(c.ID) {
			errs = append(errs, fmt.Errorf("capabilities[%d]: id %q must be lower-case words joined by '-'", i, c.ID))
		}
		if seen[c.ID] {
			bad(c, "id is used twice")
		}
		seen[c.ID] = true
		for key, v := range map[string]string{"client": c.Client, "scope": c.Scope, "expected": c.Expected} {
			if strings.TrimSpace(v) == "" {
				bad(c, "%s is empty", key)
			}
		}
		for key, list := range map[string][]string{"frontProfiles": c.FrontProfiles, "backendProfiles": c.BackendProfiles} {
			if len(list) == 0 {
				bad(c, "%s is empty (use [\"*\"] for any profile)", key)
			}
			for _, p := range list {
				if p == "*" {
					if len(list) > 1 {
						bad(c, "%s: \"*\" means any profile and cannot be combined with names", key)
					}
					continue
				}
				if !contains(profiles, p) {
					bad(c, "%s: unknown profile %q (one of %s, or \"*\")", key, p, strings.Join(profiles, ", "))
				}
			}
		}
		if !contains(AuthModes, c.Auth) {
			bad(c, "auth %q is not one of %s", c.Auth, strings.Join(AuthModes, ", "))
		}
		for _, fam := range c.Families {
			if !families[fam] {
				bad(c, "families: %q is not a family of the router's method table (%s)", fam, joinFamilies(mx.Families))
			}
		}
		for _, m := range c.Methods {
			if mx.Row(m) == nil {
				bad(c, "methods: %q is not an RPC of the canonical API", m)
			}
		}
		if !contains(Statuses, c.Status) {
			bad(c, "status %q is not one of %s", c.Status, strings.Join(Statuses, ", "))
		}
		switch {
		case c.Status == "planned" && c.Implemented == nil:
			bad(c, "a planned capability must say implemented: true (built, not yet proven) or false (not built)")
		case c.Status != "planned" && c.Implemented != nil:
			bad(c, "implemented is only for planned capabilities (status is %q)", c.Status)
		case c.Status != "planned" && len(c.Tests) == 0:
			bad(c, "status %q needs at least one test that proves it; with none yet, the status is planned", c.Status)
		case c.Status != "planned" && len(c.PlannedTests) > 0:
			bad(c, "plannedTests are only for planned capabilities; move %s to tests once they exist", strings.Join(c.PlannedTests, ", "))
		}
		for _, list := range [][]string{c.Tests, c.PlannedTests} {
			for _, t := range list {
				if _, err := ParseTestRef(t); err != nil {
					bad(c, "%v", err)
				}
			}
		}
		errs = append(errs, checkAgainstCode(c, mx)...)
	}
	for _, sv := range f.Surveys {
		errs = append(errs, checkSurvey(sv, mx)...)
	}
	return errs
}

// checkAgainstCode holds a capability's listed RPCs to what the code does on
// its front doors and backends, so the matrix cannot promise what the router
// does not do:
//   - every listed RPC is exposed by every listed front door;
//   - rejected: every listed RPC is refused on every listed backend;
//   - passthrough: every listed RPC is forwarded unchanged (native);
//   - supported/degraded: no listed RPC is refused.
func checkAgainstCode(c *Capability, mx *Matrix) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("capability %q: %s", c.ID, fmt.Sprintf(format, args...)))
	}
	for _, name := range c.Methods {
		row := mx.Row(name)
		if row == nil {
			continue
		}
		for _, fp := range c.FrontProfiles {
			if p, ok := thriftgen.ProfileByName(fp); ok && !row.Method.Profiles.Has(p) {
				bad("method %s is not exposed by a %s front door (it has %s)", name, fp, row.Method.Profiles)
			}
		}
		for _, bp := range backendsOf(c, mx) {
			i, b := mx.Backend(bp)
			if b == nil {
				continue
			}
			o := row.Cells[i]
			refused := o.Kind.refusal() || row.AlwaysRefused
			switch c.Status {
			case "rejected":
				if !refused {
					bad("status rejected, but %s on a %s backend is %s", name, bp, describe(o))
				}
			case "passthrough":
				if o.Kind != Native || row.AlwaysRefused {
					bad("status passthrough, but %s on a %s backend is %s", name, bp, describe(o))
				}
			case "supported", "degraded":
				if refused {
					bad("status %s, but %s on a %s backend is refused (%s; %s)", c.Status, name, bp, describe(o), row.Routing)
				}
			}
		}
	}
	return errs
}

// backendsOf expands "*" to every profile.
func backendsOf(c *Capability, mx *Matrix) []string {
	if len(c.BackendProfiles) == 1 && c.BackendProfiles[0] == "*" {
		var out []string
		for _, b := range mx.Backends {
			out = append(out, b.Runtime.Name)
		}
		return out
	}
	return c.BackendProfiles
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func joinFamilies(fs []methods.Family) string {
	var out []string
	for _, f := range fs {
		out = append(out, string(f))
	}
	return strings.Join(out, ", ")
}
