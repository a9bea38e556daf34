package app

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/configs"
)

// A TLS listener or backend whose files do not load refuses start, naming
// the key and the file.
func TestTLSFilesThatDoNotLoadRefuseStart(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := map[string]string{
		"catalogs": "catalog1", "server.port": "0", "management.enabled": "false", "audit.enabled": "false",
		"catalog.catalog1.conf.hive.metastore.uris": "thrift://127.0.0.1:1",
	}
	for _, c := range []struct {
		name  string
		props map[string]string
		want  []string
	}{
		{"listener certificate missing", map[string]string{"server.tls.enabled": "true",
			"server.tls.certificate-file": filepath.Join(dir, "nope.pem"), "server.tls.key-file": junk},
			[]string{"listener primary", "server.tls.certificate-file=" + filepath.Join(dir, "nope.pem"), "no such file"}},
		{"listener certificate not PEM", map[string]string{"server.tls.enabled": "true",
			"server.tls.certificate-file": junk, "server.tls.key-file": junk},
			[]string{"server.tls.certificate-file=" + junk, "no PEM certificate"}},
		{"backend trust store not a store", map[string]string{"catalog.catalog1.conf.hive.metastore.use.SSL": "true",
			"catalog.catalog1.conf.metastore.truststore.path": junk},
			[]string{"catalog.catalog1.conf.hive.metastore.truststore.path=" + junk, "not a trust store"}},
	} {
		props := map[string]string{}
		for k, v := range base {
			props[k] = v
		}
		for k, v := range c.props {
			props[k] = v
		}
		cfg, err := configs.Parse(props)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		a, err := BuildWith(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), TestHooks{})
		if err == nil {
			a.closeFiles()
			t.Fatalf("%s: started", c.name)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v lacks %q", c.name, err, w)
			}
		}
	}
}
