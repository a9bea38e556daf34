// Command capmatrix generates hms-proxy's compatibility docs from the
// capability matrix (compat/capabilities.json) and from the code: the
// canonical schema (thriftgen), the router's method table and compat's
// runtime plans.
//
//	go run ./cmd/capmatrix           check: exit 1 if a generated doc is stale or the data is wrong
//	go run ./cmd/capmatrix -write    write COMPATIBILITY.md and the capability table of docs/compatibility.md
//
// The table of docs/compatibility.md goes between the lines
// <!-- capabilities:begin --> and <!-- capabilities:end -->, which the
// document must have; nothing else in it is touched.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Output files, relative to the repository root.
const (
	CompatibilityFile = "COMPATIBILITY.md"
	GuideFile         = "docs/compatibility.md"
	modulePath        = "github.com/hms-proxy/hms-proxy"
)

func main() {
	write := flag.Bool("write", false, "write "+CompatibilityFile+" and the capability table of "+GuideFile)
	root := flag.String("root", "", "repository root (default: the directory holding the module's go.mod, found from the working directory up)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./cmd/capmatrix [-write] [-root DIR]\n"+
			"Without -write it checks that %s is valid and that %s and the table of %s are current.\n",
			CapabilitiesFile, CompatibilityFile, GuideFile)
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "capmatrix: unexpected argument %q\n", flag.Arg(0))
		flag.Usage()
		os.Exit(2)
	}
	dir := *root
	if dir == "" {
		var err error
		if dir, err = findRoot(); err != nil {
			fmt.Fprintln(os.Stderr, "capmatrix:", err)
			os.Exit(2)
		}
	}
	if err := run(os.Stdout, dir, *write); err != nil {
		fmt.Fprintln(os.Stderr, "capmatrix:", err)
		os.Exit(1)
	}
}

// Docs are the generated texts of one run.
type Docs struct {
	File          *File
	Matrix        *Matrix
	Compatibility string
	GuideSection  string
}

// Generate loads and checks the data, then renders the docs. Every problem
// with the data is reported at once.
func Generate(root string) (*Docs, error) {
	mx, err := BuildMatrix()
	if err != nil {
		return nil, err
	}
	f, err := Load(filepath.Join(root, CapabilitiesFile))
	if err != nil {
		return nil, err
	}
	errs := f.Validate(mx)
	x := newTestIndex(root)
	errs = append(errs, missingTests(f, x)...)
	errs = append(errs, provenPlans(f, x)...)
	if len(errs) > 0 {
		return nil, joinErrors(CapabilitiesFile, errs)
	}
	return &Docs{File: f, Matrix: mx, Compatibility: RenderCompatibility(f, mx), GuideSection: RenderGuideSection(f)}, nil
}

func joinErrors(what string, errs []error) error {
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = "  - " + e.Error()
	}
	return fmt.Errorf("%s: %d problem(s):\n%s", what, len(errs), strings.Join(lines, "\n"))
}

// run checks (write=false) or writes the generated files, telling out what
// it did.
func run(out io.Writer, root string, write bool) error {
	d, err := Generate(root)
	if err != nil {
		return err
	}
	var stale []string
	update := func(name, cur, want string) error {
		if cur == want {
			return nil
		}
		if !write {
			stale = append(stale, name)
			return nil
		}
		if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(name)), []byte(want), 0o644); err != nil {
			return err
		}
		fmt.Fprintln(out, "wrote", name)
		return nil
	}
	// Both documents are read and generated before either is written, so a
	// guide without its markers leaves COMPATIBILITY.md untouched too.
	guide, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(GuideFile)))
	if err != nil {
		return fmt.Errorf("the capability table's document: %v", err)
	}
	spliced, err := spliceGuide(GuideFile, string(guide), d.GuideSection)
	if err != nil {
		return err
	}
	cur, err := os.ReadFile(filepath.Join(root, CompatibilityFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := update(CompatibilityFile, string(cur), d.Compatibility); err != nil {
		return err
	}
	if err := update(GuideFile, string(guide), spliced); err != nil {
		return err
	}
	if len(stale) > 0 {
		return fmt.Errorf("out of date: %s; run `%s`", strings.Join(stale, ", "), Command)
	}
	if !write {
		fmt.Fprintln(out, "capmatrix: generated docs are current")
	}
	return nil
}

// findRoot walks up from the working directory to the go.mod of the module.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			if isModule(string(b)) {
				return d, nil
			}
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod of module %s in %s or above; pass -root", modulePath, dir)
		}
		d = parent
	}
}

func isModule(gomod string) bool {
	for _, line := range strings.Split(gomod, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" && strings.Trim(f[1], `"`) == modulePath {
			return true
		}
	}
	return false
}
