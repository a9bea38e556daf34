package docs

import (
	"bufio"
	"fmt"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"unicode"
)

// root is the repository root, seen from this package's folder.
const root = ".."

// skipDir: folders that are not the repository's own text (downloads, build
// output, run logs) or hold no documents.
func skipDir(rel string, name string) bool {
	if strings.HasPrefix(name, ".") && rel != "." {
		return true // .git, .cache, .ci's work folders
	}
	switch rel {
	case "bin", "logs", "bench/work":
		return true
	}
	return strings.HasPrefix(rel, "testbed/java/") && name == "target"
}

// walk calls fn for every regular file of the repository, with its path
// relative to the root (slash-separated).
func walk(t *testing.T, fn func(rel string)) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if skipDir(rel, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			fn(rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func markdownFiles(t *testing.T) []string {
	var out []string
	walk(t, func(rel string) {
		if strings.HasSuffix(rel, ".md") {
			out = append(out, rel)
		}
	})
	if len(out) < 10 {
		t.Fatalf("found only %d Markdown files under %s: %v", len(out), root, out)
	}
	return out
}

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// doc is one Markdown file split into what links and anchors are made of.
type doc struct {
	prose   string          // the text without fenced code blocks and code spans
	anchors map[string]bool // heading slugs and <a id/name> anchors
}

var (
	fence    = regexp.MustCompile("^\\s*(```|~~~)")
	heading  = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	codeSpan = regexp.MustCompile("`[^`\n]*`")
	htmlID   = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	mdLink   = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	mdEmph   = regexp.MustCompile(`\*+`)
	inlineLk = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

func parse(text string) *doc {
	d := &doc{anchors: map[string]bool{}}
	seen := map[string]int{}
	var prose strings.Builder
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			prose.WriteString("\n")
			continue
		}
		if inFence {
			prose.WriteString("\n")
			continue
		}
		for _, m := range htmlID.FindAllStringSubmatch(line, -1) {
			d.anchors[m[1]] = true
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			s := slug(m[2])
			if n := seen[s]; n > 0 {
				d.anchors[fmt.Sprintf("%s-%d", s, n)] = true
			} else {
				d.anchors[s] = true
			}
			seen[s]++
		}
		prose.WriteString(line)
		prose.WriteString("\n")
	}
	d.prose = codeSpan.ReplaceAllString(prose.String(), "``")
	return d
}

// slug is GitHub's anchor for a heading: the rendered text (code spans,
// emphasis and link targets gone) in lower case, every character that is not
// a letter, digit, '_', '-' or space dropped, spaces turned into '-'.
func slug(h string) string {
	h = inlineLk.ReplaceAllString(h, "$1")
	h = strings.ReplaceAll(h, "`", "")
	h = mdEmph.ReplaceAllString(h, "")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// docs parses Markdown files once per test binary.
type docCache struct {
	mu sync.Mutex
	m  map[string]*doc
}

func (c *docCache) get(t *testing.T, rel string) *doc {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*doc{}
	}
	if d, ok := c.m[rel]; ok {
		return d
	}
	d := parse(read(t, rel))
	c.m[rel] = d
	return d
}

var parsed docCache

// checkTarget reports what is wrong with a link to target (path#anchor, the
// path relative to dir), or "".
func checkTarget(t *testing.T, dir, from, target string) string {
	path, anchor, _ := strings.Cut(target, "#")
	rel := from
	if path != "" {
		rel = filepath.ToSlash(filepath.Clean(filepath.Join(dir, path)))
		if strings.HasPrefix(rel, "../") || rel == ".." {
			return "points outside the repository"
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
			return "no such file or folder " + rel
		}
	}
	if anchor == "" {
		return ""
	}
	if !strings.HasSuffix(rel, ".md") {
		return "an anchor into " + rel + ", which is not Markdown"
	}
	if !parsed.get(t, rel).anchors[anchor] {
		return fmt.Sprintf("%s has no heading or anchor #%s", rel, anchor)
	}
	return ""
}

// TestMarkdownLinksResolve: every relative link of every Markdown file, and
// every #anchor of it, leads somewhere (a file or folder of the repository,
// a heading or <a id> of the target document).
func TestMarkdownLinksResolve(t *testing.T) {
	links := 0
	for _, f := range markdownFiles(t) {
		d := parsed.get(t, f)
		for _, m := range mdLink.FindAllStringSubmatch(d.prose, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			if why := checkTarget(t, filepath.Dir(f), f, target); why != "" {
				t.Errorf("%s: link (%s): %s", f, target, why)
			}
		}
	}
	if links < 50 {
		t.Fatalf("only %d relative links found: is the parser broken?", links)
	}
}

// docRef is a mention of a document in code, configuration or scripts (the
// root's README and COMPATIBILITY documents, the benchmark's findings, a
// topic of docs/), optionally with an anchor, written relative to the
// repository root.
var docRef = regexp.MustCompile(`(?:^|[^\w./-])((?:[\w.-]+/)*(?:README[\w-]*|COMPATIBILITY|FINDINGS)\.md(?:#[\w-]+)?|docs/[\w-]+\.md(?:#[\w-]+)?)`)

// TestCodeNamesExistingDocuments: every document a source file, script or
// configuration file names (and every anchor it names in it) exists, so a
// comment that sends its reader to a section cannot go stale when the
// section moves.
func TestCodeNamesExistingDocuments(t *testing.T) {
	exts := map[string]bool{".go": true, ".sh": true, ".yml": true, ".yaml": true, ".properties": true, ".json": true,
		".xml": true, ".service": true, ".java": true, ".py": true, ".txt": true, ".c": true}
	refs := 0
	walk(t, func(rel string) {
		base := filepath.Base(rel)
		if !exts[filepath.Ext(rel)] && base != "Makefile" && base != "Dockerfile" || strings.HasSuffix(rel, "_gen.go") {
			return
		}
		text := read(t, rel)
		sc := bufio.NewScanner(strings.NewReader(text))
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for n := 1; sc.Scan(); n++ {
			for _, m := range docRef.FindAllStringSubmatch(sc.Text(), -1) {
				if strings.HasPrefix(m[1], "../") {
					continue // relative to a document somewhere else (a link a generator writes)
				}
				refs++
				if why := checkTarget(t, ".", "", m[1]); why != "" {
					t.Errorf("%s:%d names %s: %s", rel, n, m[1], why)
				}
			}
		}
	})
	if refs < 10 {
		t.Fatalf("only %d document references found in the code: is the pattern broken?", refs)
	}
}

var (
	metricName = regexp.MustCompile(`hms_proxy_[a-z0-9_]*`)
	// Names the documents mention as absent on purpose: the Java proxy's JVM
	// gauges, which a Go program does not have.
	absentMetrics = map[string]bool{"hms_proxy_jvm_": true}
)

// goStrings returns the string literals of the repository's non-test Go
// files (generated files left out).
func goStrings(t *testing.T) []string {
	var out []string
	walk(t, func(rel string) {
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || strings.HasSuffix(rel, "_gen.go") {
			return
		}
		src := []byte(read(t, rel))
		var s scanner.Scanner
		fset := token.NewFileSet()
		s.Init(fset.AddFile(rel, -1, len(src)), src, nil, 0)
		for {
			_, tok, lit := s.Scan()
			if tok == token.EOF {
				break
			}
			if tok == token.STRING {
				out = append(out, lit)
			}
		}
	})
	return out
}

// TestDocumentedMetricsExist: every hms_proxy_* metric a document names is
// a name the code registers (histograms' _bucket, _sum and _count series
// included; a name followed by * is a prefix some metric must have).
func TestDocumentedMetricsExist(t *testing.T) {
	have := map[string]bool{}
	for _, s := range goStrings(t) {
		for _, m := range metricName.FindAllString(s, -1) {
			have[m] = true
		}
	}
	if len(have) < 50 {
		t.Fatalf("only %d metric names in the code: is the scan broken?", len(have))
	}
	names := make([]string, 0, len(have))
	for n := range have {
		names = append(names, n)
	}
	sort.Strings(names)
	hasPrefix := func(p string) bool {
		i := sort.SearchStrings(names, p)
		return i < len(names) && strings.HasPrefix(names[i], p)
	}
	for _, f := range markdownFiles(t) {
		text := read(t, f)
		for _, loc := range metricName.FindAllStringIndex(text, -1) {
			name := text[loc[0]:loc[1]]
			prefix := loc[1] < len(text) && text[loc[1]] == '*'
			switch {
			case absentMetrics[name]:
			case prefix && hasPrefix(name):
			case !prefix && have[name]:
			case !prefix && have[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")]:
			default:
				t.Errorf("%s names %s, which no Go code of the repository registers", f, text[loc[0]:loc[1]+map[bool]int{true: 1}[prefix]])
			}
		}
	}
}

var (
	testName = regexp.MustCompile(`(?:^|[^\w.])((?:Test|Fuzz|Benchmark)[A-Z0-9]\w*)`)
	testFunc = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Benchmark)\w+)\(`)
)

// TestDocumentedTestsExist: every Go test, fuzz target or benchmark a
// document names exists (a name may be a -run prefix of one, as in
// `go test -run TestHDP`).
func TestDocumentedTestsExist(t *testing.T) {
	var funcs []string
	walk(t, func(rel string) {
		if strings.HasSuffix(rel, "_test.go") {
			for _, m := range testFunc.FindAllStringSubmatch(read(t, rel), -1) {
				funcs = append(funcs, m[1])
			}
		}
	})
	sort.Strings(funcs)
	if len(funcs) < 500 {
		t.Fatalf("only %d tests found: is the scan broken?", len(funcs))
	}
	for _, f := range markdownFiles(t) {
		for _, m := range testName.FindAllStringSubmatch(read(t, f), -1) {
			i := sort.SearchStrings(funcs, m[1])
			if i == len(funcs) || !strings.HasPrefix(funcs[i], m[1]) {
				t.Errorf("%s names %s: no test, fuzz target or benchmark of that name (or with that prefix)", f, m[1])
			}
		}
	}
}

// goIdent is a Go identifier qualified by the package path before it.
var goIdent = regexp.MustCompile(`\.[A-Z]\w*(\.\w+)*$`)

// TestDocumentedPathsExist: every repository path a document names (a
// package, a file, a folder: e2e/routing/storm_test.go, ./locks/,
// e2e/routing:TestX) exists. Such paths are written from the repository
// root in every document, wherever it lives. Paths with placeholders
// (<version>) or globs are left alone.
func TestDocumentedPathsExist(t *testing.T) {
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && !skipDir(e.Name(), e.Name()) {
			dirs = append(dirs, regexp.QuoteMeta(e.Name()))
		}
	}
	path := regexp.MustCompile(`(?:^|[^\w./$<>{}-])\.?/?((?:` + strings.Join(dirs, "|") + `)/[\w./-]*)`)
	checked := 0
	for _, f := range markdownFiles(t) {
		text := read(t, f)
		for _, loc := range path.FindAllStringSubmatchIndex(text, -1) {
			p := strings.TrimRight(text[loc[2]:loc[3]], ".,;:")
			if next := text[loc[3]:]; strings.HasPrefix(next, "<") || strings.HasPrefix(next, "*") ||
				strings.HasPrefix(next, "{") || strings.HasPrefix(next, "…") {
				continue
			}
			checked++
			if m := goIdent.FindStringIndex(p); m != nil {
				p = p[:m[0]] // security/gssapi.Login.NegotiateHeader: the package
			}
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil {
				t.Errorf("%s names %s, which does not exist", f, p)
			}
		}
	}
	if checked < 200 {
		t.Fatalf("only %d paths checked: is the pattern broken?", checked)
	}
}
