package house

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// registry are the rooms allowed to name runtime profiles: compat (the
// registry of runtimes and their capabilities), configs (the configuration
// values), thriftgen (the schema's profile bits). The end-to-end harness is
// exempt too: its configurations name runtimes as an operator's file does,
// and so do test files.
var registry = []string{"compat/", "configs/", "thriftgen/", "e2e/"}

var (
	profileName  = regexp.MustCompile(`^(APACHE|HORTONWORKS)_[0-9]`)
	profileConst = regexp.MustCompile(`^Profile(Apache|HDP)[0-9]`)
)

// What differs between Hive versions is a capability of compat.Runtime:
// no production file outside the registry names a runtime profile, as a
// string or as a constant of thriftgen or configs.
func TestNoRuntimeProfileNamedOutsideTheRegistry(t *testing.T) {
	r := root(t)
	n := 0
	err := filepath.WalkDir(r, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != r && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(r, path)
		rel = filepath.ToSlash(rel)
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		for _, room := range registry {
			if strings.HasPrefix(rel, room) {
				return nil
			}
		}
		n++
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		imports := map[string]bool{} // local names of thriftgen and configs
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == module+"/thriftgen" || p == module+"/configs" {
				name := p[strings.LastIndex(p, "/")+1:]
				if imp.Name != nil {
					name = imp.Name.Name
				}
				imports[name] = true
			}
		}
		ast.Inspect(f, func(node ast.Node) bool {
			switch x := node.(type) {
			case *ast.BasicLit:
				if x.Kind == token.STRING {
					if s, err := strconv.Unquote(x.Value); err == nil && profileName.MatchString(s) {
						t.Errorf("%s: names the runtime profile %q; ask a capability of compat.Runtime instead", fset.Position(x.Pos()), s)
					}
				}
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && imports[id.Name] && profileConst.MatchString(x.Sel.Name) {
					t.Errorf("%s: names %s.%s; ask a capability of compat.Runtime instead", fset.Position(x.Pos()), id.Name, x.Sel.Name)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 200 {
		t.Fatalf("only %d files checked", n)
	}
}
