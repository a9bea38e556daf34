package configs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// documents are the Markdown files that name configuration keys: the
// README and every topic of docs/.
func documents(t *testing.T) []string {
	files, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join("..", "README.md"))
	if len(files) < 10 {
		t.Fatalf("documents: %v", files)
	}
	return files
}

var (
	docFence       = regexp.MustCompile("^\\s*```")
	docCodeSpan    = regexp.MustCompile("`([^`\n]+)`")
	docPropLine    = regexp.MustCompile(`^\s*#?\s*([A-Za-z][A-Za-z0-9_.<>*-]*)\s*[=:]`)
	keyPlaceholder = regexp.MustCompile(`<[^>.]+>`)
)

// notRegistryKeys are names the documents give that look like the proxy's
// keys and are not: the Java Ranger plugin's own settings (read from its XML
// files by ranger.config-dir), and the misspelt key of the "did you mean"
// example.
var notRegistryKeys = []string{"ranger.plugin.", "catalog.c1.acess-mode"}

// documentedKeys returns every configuration key a document names: in code
// spans, and as the key of a line of a properties block. Keys whose first
// segment is not one the registry has (Hive's, Spark's, Trino's settings)
// are left out.
func documentedKeys(t *testing.T, file string) map[string]int {
	heads := map[string]bool{}
	for _, k := range reg.keys {
		heads[strings.SplitN(k.pattern, ".", 2)[0]] = true
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	add := func(tok string, line int) {
		tok, _, _ = strings.Cut(tok, "=")
		tok = strings.TrimSpace(tok)
		if tok == "" || !strings.Contains(tok, ".") || strings.ContainsAny(tok, " /|…{}()\"'") || strings.HasSuffix(tok, ".") ||
			strings.Contains(strings.TrimSuffix(tok, "*"), "*") {
			return // a word, a fragment, or a glob inside a key
		}
		if !heads[strings.SplitN(tok, ".", 2)[0]] {
			return
		}
		for _, n := range notRegistryKeys {
			if strings.HasPrefix(tok, n) {
				return
			}
		}
		if _, ok := out[tok]; !ok {
			out[tok] = line
		}
	}
	inFence, props := false, false
	for i, line := range strings.Split(string(b), "\n") {
		if m := docFence.FindString(line); m != "" {
			if !inFence {
				lang := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "```"))
				props = lang == "properties"
			}
			inFence = !inFence
			continue
		}
		if inFence {
			if props {
				if m := docPropLine.FindStringSubmatch(line); m != nil {
					add(m[1], i+1)
				}
			}
			continue
		}
		for _, m := range docCodeSpan.FindAllStringSubmatch(line, -1) {
			add(m[1], i+1)
		}
	}
	return out
}

// known reports whether key (placeholders such as <name> allowed) is a key of
// the registry; "prefix.*" or a bare prefix of segments ("routing.
// backend-state-polling") asks whether some key starts with it.
func known(key string) bool {
	concrete := keyPlaceholder.ReplaceAllString(key, "x")
	if _, ok := reg.lookup(concrete); ok {
		return true
	}
	prefix, ok := strings.CutSuffix(concrete, "*")
	if !ok {
		prefix = concrete + "."
	}
	{
		for _, k := range reg.keys {
			pats := []string{k.pattern}
			for _, a := range k.aliases {
				pats = append(pats, a.pattern)
			}
			for _, p := range pats {
				if strings.HasPrefix(keyPlaceholder.ReplaceAllString(p, "x"), prefix) {
					return true
				}
			}
		}
	}
	return false
}

// TestDocumentedKeysExist: every configuration key the README and docs/ name
// is a key of the registry (a renamed or removed key cannot stay in the
// documents), and no properties block writes a comment after a value, which
// java.util.Properties would read as part of the value.
func TestDocumentedKeysExist(t *testing.T) {
	total := 0
	for _, f := range documents(t) {
		keys := documentedKeys(t, f)
		total += len(keys)
		for k, line := range keys {
			if !known(k) {
				t.Errorf("%s:%d names %s, which is not a configuration key", filepath.Base(f), line, k)
			}
		}
		b, _ := os.ReadFile(f)
		inFence, props := false, false
		for i, line := range strings.Split(string(b), "\n") {
			if docFence.MatchString(line) {
				if !inFence {
					props = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "```")) == "properties"
				}
				inFence = !inFence
				continue
			}
			if inFence && props && !strings.HasPrefix(strings.TrimSpace(line), "#") && strings.Contains(line, " #") {
				t.Errorf("%s:%d: a # after a value is part of the value in a .properties file: %s", filepath.Base(f), i+1, line)
			}
		}
	}
	if total < 300 {
		t.Fatalf("only %d keys found in the documents: is the scan broken?", total)
	}
}

// TestREADMEMinimalConfigurationLoads: the README's minimal configuration
// (its first properties block) is a valid configuration as written.
func TestREADMEMinimalConfigurationLoads(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```properties\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("README.md has no properties block")
	}
	cfg, err := ParseReader(strings.NewReader(block))
	if err != nil {
		t.Fatalf("README.md's minimal configuration does not load:\n%v", err)
	}
	if len(cfg.Catalogs) < 2 {
		t.Fatalf("the minimal configuration has %d catalogs; the README explains two", len(cfg.Catalogs))
	}
	for _, w := range cfg.Warnings {
		t.Logf("warning: %s", w)
	}
}

// TestDocumentedDefaultsAreTheRegistrys: a hand-written table of keys and
// their defaults in a document (a "key | default | …" table) says what the
// registry says, so a changed default cannot leave the documents behind.
func TestDocumentedDefaultsAreTheRegistrys(t *testing.T) {
	cellKey := regexp.MustCompile("^`([^`]+)`(?: \\*\\*\\(hms-proxy\\)\\*\\*)?$")
	cellValue := regexp.MustCompile("^`([^`]+)`$")
	checked := 0
	for _, f := range documents(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inTable := false
		for i, line := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(line, "|") {
				inTable = false
				continue
			}
			cells := strings.Split(strings.Trim(line, "|"), "|")
			for j := range cells {
				cells[j] = strings.TrimSpace(cells[j])
			}
			if len(cells) >= 2 && strings.HasPrefix(cells[0], "key") && cells[1] == "default" {
				inTable = true
				continue
			}
			if !inTable || len(cells) < 2 {
				continue
			}
			km, vm := cellKey.FindStringSubmatch(cells[0]), cellValue.FindStringSubmatch(cells[1])
			if km == nil || vm == nil {
				continue
			}
			c, ok := reg.lookup(keyPlaceholder.ReplaceAllString(km[1], "x"))
			if !ok || c.key.def == "" {
				continue
			}
			checked++
			if !sameValue(vm[1], c.key.def) {
				t.Errorf("%s:%d: %s defaults to %s, the document says %s", filepath.Base(f), i+1, km[1], c.key.def, vm[1])
			}
		}
	}
	if checked < 15 {
		t.Fatalf("only %d documented defaults checked: is the scan broken?", checked)
	}
}

func sameValue(a, b string) bool {
	if strings.EqualFold(a, b) {
		return true
	}
	x, errA := strconv.ParseFloat(a, 64)
	y, errB := strconv.ParseFloat(b, 64)
	return errA == nil && errB == nil && x == y
}
