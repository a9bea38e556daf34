package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// testIndex finds Go test functions by parsing _test.go files (no build):
// func TestName(t *testing.T) at the top level of a package directory.
type testIndex struct {
	root  string
	cache map[string]map[string]bool // package dir -> test names
}

func newTestIndex(root string) *testIndex {
	return &testIndex{root: root, cache: map[string]map[string]bool{}}
}

// Has reports whether the test exists; an error means the package directory
// cannot be read or a test file does not parse.
func (x *testIndex) Has(ref TestRef) (bool, error) {
	names, err := x.tests(ref.Pkg)
	if err != nil {
		return false, err
	}
	return names[ref.Name], nil
}

func (x *testIndex) tests(pkg string) (map[string]bool, error) {
	if got, ok := x.cache[pkg]; ok {
		return got, nil
	}
	dir := filepath.Join(x.root, filepath.FromSlash(pkg))
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("package %s: no directory %s", pkg, dir)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("package %s: %v", pkg, err)
		}
		testing := testingName(f)
		if testing == "" {
			continue
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !isTestName(fd.Name.Name) || !isTestSignature(fd.Type, testing) {
				continue
			}
			names[fd.Name.Name] = true
		}
	}
	x.cache[pkg] = names
	return names, nil
}

// isTestName follows go test: Test, then nothing or a rune that is not a
// lower-case letter; TestMain is not a test.
func isTestName(name string) bool {
	if !strings.HasPrefix(name, "Test") || name == "TestMain" {
		return false
	}
	rest := name[len("Test"):]
	if rest == "" {
		return true
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return !unicode.IsLower(r)
}

// testingName is the name the file imports "testing" under, "" if it does not.
func testingName(f *ast.File) string {
	for _, imp := range f.Imports {
		if p, err := strconv.Unquote(imp.Path.Value); err == nil && p == "testing" {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return "testing"
		}
	}
	return ""
}

// isTestSignature: exactly one parameter of type *testing.T, no results.
func isTestSignature(ft *ast.FuncType, testing string) bool {
	if ft.TypeParams != nil || ft.Results != nil && len(ft.Results.List) > 0 {
		return false
	}
	if ft.Params == nil || len(ft.Params.List) != 1 || len(ft.Params.List[0].Names) > 1 {
		return false
	}
	star, ok := ft.Params.List[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "T" {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == testing
}

// missingTests lists the named tests of the file that do not exist (and
// unreadable packages), in file order. Planned tests are not checked here.
func missingTests(f *File, x *testIndex) []error {
	var errs []error
	for _, c := range f.Capabilities {
		for _, t := range c.Tests {
			ref, err := ParseTestRef(t)
			if err != nil {
				continue // reported by Validate
			}
			ok, err := x.Has(ref)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("capability %q: test %s: %v", c.ID, t, err))
			case !ok:
				errs = append(errs, fmt.Errorf("capability %q: test %s does not exist (no func %s(t *testing.T) in %s/*_test.go); write it, or mark the capability planned and move the name to plannedTests",
					c.ID, t, ref.Name, ref.Pkg))
			}
		}
	}
	return errs
}

// provenPlans lists planned capabilities whose planned tests all exist now:
// the data is behind the code and the capability should be promoted.
func provenPlans(f *File, x *testIndex) []error {
	var errs []error
	for _, c := range f.Capabilities {
		if c.Status != "planned" || len(c.PlannedTests) == 0 {
			continue
		}
		all := true
		for _, t := range c.PlannedTests {
			ref, err := ParseTestRef(t)
			if err != nil {
				all = false
				break
			}
			if ok, err := x.Has(ref); err != nil || !ok {
				all = false
				break
			}
		}
		if all {
			errs = append(errs, fmt.Errorf("capability %q is planned, but every planned test exists now (%v): move them to tests and set the status they prove",
				c.ID, c.PlannedTests))
		}
	}
	return errs
}
