package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The test index finds top-level func TestX(t *testing.T) only.
func TestTestIndexFindsOnlyRealTests(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a/b/x_test.go"), `package b

import tt "testing"

func TestReal(t *tt.T)            {}
func TestBench(b *tt.B)           {}
func TestTwo(t *tt.T, n int)      {}
func TestMain(m *tt.M)            {}
func helperTest(t *tt.T)          {}
func Testlower(t *tt.T)           {}
type s struct{}
func (s) TestMethod(t *tt.T)      {}
`)
	writeFile(t, filepath.Join(root, "a/b/y_test.go"), `package b

import "testing"

func TestOther(t *testing.T) {}
`)
	writeFile(t, filepath.Join(root, "a/b/z.go"), `package b

import "testing"

func TestNotInATestFile(t *testing.T) {}
`)
	x := newTestIndex(root)
	for name, want := range map[string]bool{"TestReal": true, "TestOther": true, "TestBench": false, "TestTwo": false,
		"TestMain": false, "helperTest": false, "Testlower": false, "TestMethod": false, "TestNotInATestFile": false, "TestAbsent": false} {
		got, err := x.Has(TestRef{Pkg: "a/b", Name: name})
		if err != nil || got != want {
			t.Errorf("Has(a/b:%s) = %v, %v; want %v", name, got, err, want)
		}
	}
	if _, err := x.Has(TestRef{Pkg: "no/such", Name: "TestX"}); err == nil || !strings.Contains(err.Error(), "no/such") {
		t.Errorf("a missing package must be an error naming it, got %v", err)
	}
	writeFile(t, filepath.Join(root, "broken/b_test.go"), "package broken\nfunc TestX(t *testing.T {\n")
	if _, err := newTestIndex(root).Has(TestRef{Pkg: "broken", Name: "TestX"}); err == nil {
		t.Error("an unparsable test file must be an error")
	}
}

func TestParseTestRef(t *testing.T) {
	for _, ok := range []string{"e2e:TestHive4ClientAgainstHive313Backends", "router:TestX", "cmd/capmatrix:Test"} {
		if _, err := ParseTestRef(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"TestX", "e2e.TestX", "e2e:Helper", "/router:TestX", "router:TestX(t)", ""} {
		if _, err := ParseTestRef(bad); err == nil {
			t.Errorf("%q must be refused", bad)
		}
	}
}

func TestSpliceGuideReplacesOnlyBetweenMarkers(t *testing.T) {
	readme := "# x\n\nintro\n" + BeginMarker + "\nold table\nmore\n" + EndMarker + "\ntail\n"
	got, err := spliceGuide("R", readme, "NEW\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "# x\n\nintro\n" + BeginMarker + "\nNEW\n" + EndMarker + "\ntail\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if again, _ := spliceGuide("R", got, "NEW\n"); again != got {
		t.Fatal("splicing the same section twice changes the file")
	}
	if _, err := spliceGuide("R", "# x\n", "NEW\n"); !errors.Is(err, errNoMarkers) || !strings.Contains(err.Error(), BeginMarker) {
		t.Fatalf("no markers: %v", err)
	}
	for name, text := range map[string]string{
		"begin only": BeginMarker + "\n",
		"end only":   EndMarker + "\n",
		"two begins": BeginMarker + "\n" + BeginMarker + "\n" + EndMarker + "\n",
		"reversed":   EndMarker + "\n" + BeginMarker + "\n",
		"same line":  BeginMarker + " x " + EndMarker + "\n",
	} {
		if _, err := spliceGuide("R", text, "NEW\n"); err == nil || errors.Is(err, errNoMarkers) {
			t.Errorf("%s: want an error about the markers, got %v", name, err)
		}
	}
}

func validCapability() *Capability {
	return &Capability{ID: "x", Client: "c", FrontProfiles: []string{"APACHE_3_1_3"}, BackendProfiles: []string{"APACHE_3_1_3"},
		Auth: "NONE", Families: []string{"metadata_read"}, Scope: "s", Expected: "e", Status: "supported",
		Tests: []string{"router:TestX"}}
}

func TestValidateNamesEachProblem(t *testing.T) {
	mx, err := BuildMatrix()
	if err != nil {
		t.Fatal(err)
	}
	yes, no := true, false
	cases := []struct {
		name   string
		mutate func(c *Capability)
		want   []string
	}{
		{"valid", func(c *Capability) {}, nil},
		{"bad id", func(c *Capability) { c.ID = "Bad ID" }, []string{`id "Bad ID"`}},
		{"unknown profile", func(c *Capability) { c.BackendProfiles = []string{"APACHE_9"} }, []string{"backendProfiles", `"APACHE_9"`}},
		{"star with names", func(c *Capability) { c.FrontProfiles = []string{"*", "APACHE_3_1_3"} }, []string{"frontProfiles", `"*"`}},
		{"unknown family", func(c *Capability) { c.Families = []string{"reads"} }, []string{"families", `"reads"`}},
		{"unknown method", func(c *Capability) { c.Methods = []string{"get_tabel"} }, []string{"methods", `"get_tabel"`}},
		{"unknown status", func(c *Capability) { c.Status = "ok" }, []string{`status "ok"`}},
		{"unknown auth", func(c *Capability) { c.Auth = "LDAP" }, []string{`auth "LDAP"`}},
		{"no tests", func(c *Capability) { c.Tests = nil }, []string{"needs at least one test", "planned"}},
		{"bad test ref", func(c *Capability) { c.Tests = []string{"TestX"} }, []string{`"TestX"`, "package/path:TestName"}},
		{"planned without implemented", func(c *Capability) { c.Status, c.Tests = "planned", nil }, []string{"implemented"}},
		{"implemented on supported", func(c *Capability) { c.Implemented = &yes }, []string{"implemented is only for planned"}},
		{"planned tests on supported", func(c *Capability) { c.PlannedTests = []string{"router:TestY"} }, []string{"plannedTests", "router:TestY"}},
		{"kerberos supported", func(c *Capability) { c.Auth = "KERBEROS" }, nil}, // built: the general rules apply
		{"kerberos planned", func(c *Capability) { c.Auth, c.Status, c.Implemented, c.Tests = "KERBEROS", "planned", &no, nil }, nil},
		{"empty expected", func(c *Capability) { c.Expected = " " }, []string{"expected is empty"}},
		// Against the code.
		{"front door lacks method", func(c *Capability) { c.Methods = []string{"get_database_req"} },
			[]string{"get_database_req is not exposed by a APACHE_3_1_3 front door"}},
		{"rejected but served", func(c *Capability) { c.Status, c.Methods = "rejected", []string{"get_database"} },
			[]string{"status rejected", "get_database", "native"}},
		{"supported but refused", func(c *Capability) { c.Methods = []string{"create_catalog"} },
			[]string{"status supported", "create_catalog", "refused"}},
		{"supported but namespace-less write", func(c *Capability) { c.Methods = []string{"setMetaConf"} },
			[]string{"setMetaConf", "name no namespace"}},
		{"passthrough but HDP refusal", func(c *Capability) {
			c.Status, c.FrontProfiles, c.Methods = "passthrough", []string{"*"}, []string{"get_tables_ext"}
		}, []string{"status passthrough", "get_tables_ext", "HDP-only refusal"}},
		{"passthrough but adapted", func(c *Capability) {
			c.Status, c.FrontProfiles, c.BackendProfiles, c.Methods = "passthrough", []string{"*"}, []string{"APACHE_4_1_0"}, []string{"get_table"}
		}, []string{"get_table", "adapted → get_table_req"}},
		{"rejected and refused", func(c *Capability) {
			c.Status, c.FrontProfiles, c.Methods = "rejected", []string{"APACHE_4_1_0"}, []string{"get_dataconnectors", "create_catalog", "grant_role"}
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := validCapability()
			tc.mutate(c)
			errs := (&File{Capabilities: []*Capability{c}}).Validate(mx)
			if len(tc.want) == 0 {
				if len(errs) > 0 {
					t.Fatalf("unexpected problems:%s", errorLines(errs))
				}
				return
			}
			all := errorLines(errs)
			if !strings.Contains(all, `capability "`+c.ID+`"`) && !strings.Contains(all, "capabilities[0]") {
				t.Errorf("problems do not name the capability:%s", all)
			}
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("want a problem mentioning %q, got:%s", w, all)
				}
			}
		})
	}
	dup := &File{Capabilities: []*Capability{validCapability(), validCapability()}}
	if all := errorLines(dup.Validate(mx)); !strings.Contains(all, "used twice") {
		t.Errorf("duplicate id not reported:%s", all)
	}
	if _, err := Parse("f.json", []byte(`{"capabilities": [], "extra": 1}`)); err == nil || !strings.Contains(err.Error(), "extra") {
		t.Errorf("unknown keys must be refused: %v", err)
	}
	if _, err := Parse("f.json", []byte(`{"capabilities": []} {}`)); err == nil {
		t.Error("trailing data must be refused")
	}
}

// The matrix says what the code does for RPCs whose behaviour is known.
func TestMatrixFacts(t *testing.T) {
	mx, err := BuildMatrix()
	if err != nil {
		t.Fatal(err)
	}
	cellOf := func(method, profile string) string {
		i, _ := mx.Backend(profile)
		return describe(mx.Row(method).Cells[i])
	}
	for _, c := range []struct{ method, profile, want string }{
		{"get_table", "APACHE_4_1_0", "adapted → get_table_req"},
		{"get_table", "APACHE_3_1_3", "native"},
		{"get_table", "HORTONWORKS_3_1_0_3_1_5_6150_1", "native, ids remapped (Table)"},
		{"get_database_req", "APACHE_3_1_3", "adapted → get_database"},
		{"get_database_req", "HORTONWORKS_3_1_0_3_1_5_6150_1", "native"},
		{"lock", "APACHE_3_1_3", "adapted (lock, arguments rewritten)"},
		{"lock", "APACHE_4_1_0", "native"},
		{"get_tables_ext", "APACHE_3_1_3", "HDP-only refusal"},
		{"get_tables_ext", "HORTONWORKS_3_1_0_3_1_0_78", "HDP-only refusal"},
		{"get_tables_ext", "HORTONWORKS_3_1_0_3_1_5_6150_1", "native"},
		{"get_dataconnectors", "APACHE_3_1_3", "UNKNOWN_METHOD"},
		{"create_ischema", "APACHE_3_1_3", "native, ids remapped (create_ischema_result)"},
		{"create_catalog", "APACHE_4_1_0", "refused"},
		{"getVersion", "APACHE_3_1_3", "proxy answers"},
		{"shutdown", "APACHE_3_1_3", "not forwarded"},
	} {
		if got := cellOf(c.method, c.profile); got != c.want {
			t.Errorf("%s on %s: %q, want %q", c.method, c.profile, got, c.want)
		}
	}
	for _, c := range []struct{ method, routing, fallback string }{
		{"get_all_databases", "fan-out: every catalog, merged, external names", ""},
		{"setMetaConf", "refused: a global write whose arguments name no namespace", ""},
		{"create_table", "by namespace; refused without one", ""},
		{"get_table", "by namespace; default catalog without one", ""},
		{"open_txns", "default catalog (no namespace in the arguments)", ""},
		{"get_open_txns", "default catalog (no namespace in the arguments)", fallbackUnknownMethod},
		{"get_runtime_stats", "default catalog (no namespace in the arguments)", fallbackAnyFailure},
	} {
		row := mx.Row(c.method)
		if row.Routing != c.routing || row.Fallback != c.fallback {
			t.Errorf("%s: routing %q fallback %q; want %q %q", c.method, row.Routing, row.Fallback, c.routing, c.fallback)
		}
	}
}

// The command checks and writes both documents; the guide's markers are
// required (a guide without them is an error naming them, never skipped).
func TestRunChecksAndWrites(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "go.mod"), "module "+modulePath+"\n")
	writeFile(t, filepath.Join(root, "p/p_test.go"), "package p\n\nimport \"testing\"\n\nfunc TestProof(t *testing.T) {}\n")
	data := `{"capabilities": [{"id": "one", "client": "c", "frontProfiles": ["*"], "backendProfiles": ["*"], "auth": "NONE",
		"families": ["metadata_read"], "scope": "s", "expected": "e", "status": "supported", "tests": ["p:TestProof"]}]}`
	writeFile(t, filepath.Join(root, CapabilitiesFile), data)
	guide := filepath.Join(root, filepath.FromSlash(GuideFile))

	if err := run(io.Discard, root, true); err == nil || !strings.Contains(err.Error(), GuideFile) {
		t.Fatalf("-write without the guide must fail naming it: %v", err)
	}
	writeFile(t, guide, "# G\n")
	if err := run(io.Discard, root, true); err == nil || !errors.Is(err, errNoMarkers) {
		t.Fatalf("-write without markers must fail naming them: %v", err)
	}
	if b, _ := os.ReadFile(guide); string(b) != "# G\n" {
		t.Fatal("a guide without markers was changed")
	}
	if _, err := os.Stat(filepath.Join(root, CompatibilityFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed -write wrote %s: %v", CompatibilityFile, err)
	}

	writeFile(t, guide, "# G\n"+BeginMarker+"\n"+EndMarker+"\nend\n")
	if err := run(io.Discard, root, false); err == nil || !strings.Contains(err.Error(), CompatibilityFile) ||
		!strings.Contains(err.Error(), GuideFile) || !strings.Contains(err.Error(), Command) {
		t.Fatalf("check before any write must name both documents and the command: %v", err)
	}
	if err := run(io.Discard, root, true); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(guide)
	if !strings.HasPrefix(string(b), "# G\n"+BeginMarker+"\n") || !strings.HasSuffix(string(b), EndMarker+"\nend\n") ||
		!strings.Contains(string(b), "| c | any | any | NONE | s | e | **supported** |") ||
		!strings.Contains(string(b), "](../COMPATIBILITY.md)") {
		t.Fatalf("guide after -write:\n%s", b)
	}
	if err := run(io.Discard, root, false); err != nil {
		t.Fatalf("check after -write: %v", err)
	}
	writeFile(t, guide, strings.Replace(string(b), "**supported**", "**planned**", 1))
	if err := run(io.Discard, root, false); err == nil || !strings.Contains(err.Error(), GuideFile) {
		t.Fatalf("check of an edited table: %v", err)
	}

	// A named test that does not exist stops the generator and names it.
	writeFile(t, filepath.Join(root, CapabilitiesFile), strings.Replace(data, "p:TestProof", "p:TestGone", 1))
	if err := run(io.Discard, root, true); err == nil || !strings.Contains(err.Error(), "p:TestGone does not exist") {
		t.Fatalf("missing test: %v", err)
	}
	// So does a planned capability whose planned tests exist.
	writeFile(t, filepath.Join(root, CapabilitiesFile), strings.Replace(strings.Replace(data,
		`"status": "supported", "tests": ["p:TestProof"]`, `"status": "planned", "implemented": true, "tests": [], "plannedTests": ["p:TestProof"]`, 1),
		"x", "x", 1))
	if err := run(io.Discard, root, true); err == nil || !strings.Contains(err.Error(), "every planned test exists") {
		t.Fatalf("proven plan: %v", err)
	}
}
