package configs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var placeholder = regexp.MustCompile(`@([A-Z0-9_]+)@`)

// TestExamplesParse: every file in examples/ is a valid configuration once
// its @NAME_URI@ placeholders are filled in (as the demo script does).
func TestExamplesParse(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("examples", "*.properties"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("examples missing: %v", files)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			port := 19083
			text := placeholder.ReplaceAllStringFunc(string(data), func(m string) string {
				name := placeholder.FindStringSubmatch(m)[1]
				if !strings.HasSuffix(name, "_URI") {
					t.Errorf("placeholder %s has no test value", m)
					return m
				}
				port++
				return "thrift://127.0.0.1:" + itoa(port)
			})
			cfg, err := ParseReader(strings.NewReader(text))
			if err != nil {
				t.Fatalf("%s does not parse:\n%v", f, err)
			}
			for _, w := range cfg.Warnings {
				t.Logf("warning: %s", w)
			}
		})
	}
}

// TestDemoTemplate pins what the demo script relies on.
func TestDemoTemplate(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("examples", "demo.properties"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer(
		"@CATALOG1_URI@", "thrift://127.0.0.1:19083",
		"@CATALOG2_URI@", "thrift://127.0.0.1:19084",
		"@CATALOG3_URI@", "thrift://127.0.0.1:19085").Replace(string(data))
	cfg, err := ParseReader(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cfg.Catalogs {
		names = append(names, c.Name+"="+c.URIs[0]+"/"+string(c.RuntimeProfile))
	}
	want := "catalog1=thrift://127.0.0.1:19083/APACHE_3_1_3 catalog2=thrift://127.0.0.1:19084/APACHE_3_1_3 catalog3=thrift://127.0.0.1:19085/APACHE_4_1_0"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("catalogs %s, want %s", got, want)
	}
	if cfg.Routing.DefaultCatalog != "catalog1" || cfg.Server.BindHost != "127.0.0.1" || cfg.Server.Port != 9083 ||
		!cfg.Management.Enabled || cfg.Management.Port != 10083 || cfg.Management.BindHost != "127.0.0.1" {
		t.Errorf("listeners/routing: %+v %+v %+v", cfg.Routing, cfg.Server, cfg.Management)
	}
	if filepath.IsAbs(cfg.Audit.File) || !strings.HasPrefix(cfg.Audit.File, "logs/") ||
		filepath.IsAbs(cfg.Logging.File) || !strings.HasPrefix(cfg.Logging.File, "logs/") {
		t.Errorf("audit %q and log %q must be relative, under logs/", cfg.Audit.File, cfg.Logging.File)
	}
}

// TestAnnotatedExampleCoversEveryKey keeps examples/hms-proxy.properties
// complete: every key of the registry appears in it, set or commented out.
func TestAnnotatedExampleCoversEveryKey(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("examples", "hms-proxy.properties"))
	if err != nil {
		t.Fatal(err)
	}
	keyLine := regexp.MustCompile(`^#?([a-z][A-Za-z0-9_.*-]*)=`)
	present := map[*keyDef]bool{}
	for _, l := range strings.Split(string(data), "\n") {
		if m := keyLine.FindStringSubmatch(l); m != nil {
			if c, ok := reg.lookup(m[1]); ok {
				present[c.key] = true
			} else {
				t.Errorf("examples/hms-proxy.properties shows %s, which is not a key", m[1])
			}
		}
	}
	for _, k := range reg.keys {
		if !present[k] {
			t.Errorf("examples/hms-proxy.properties does not show %s", k.pattern)
		}
	}
}
