package configs

import (
	"strings"
	"testing"
)

// Storage credentials never show in the effective configuration: the fs.s3a
// keys (also per bucket) are masked, and so is the user information of an
// endpoint URL that carries some.
func TestStorageCredentialsMasked(t *testing.T) {
	cfg, err := Parse(map[string]string{
		"catalogs": "c", "catalog.c.conf.hive.metastore.uris": "thrift://127.0.0.1:9083",
		"catalog.c.conf.fs.s3a.access.key":             "AKIA-ACCESS-1",
		"catalog.c.conf.fs.s3a.secret.key":             "SECRET-1",
		"catalog.c.conf.fs.s3a.session.token":          "TOKEN-1",
		"catalog.c.conf.fs.s3a.bucket.b1.access.key":   "AKIA-ACCESS-2",
		"catalog.c.conf.fs.s3a.bucket.b1.secret.key":   "SECRET-2",
		"catalog.c.conf.fs.s3a.endpoint":               "http://AKIA-ACCESS-3:SECRET-3@s3.example.com:9000",
		"catalog.c.conf.fs.s3a.bucket.b1.endpoint":     "http://s3.example.com",
		"catalog.c.conf.dfs.namenode.rpc-address.ns.a": "nn1:8020",
	})
	if err != nil {
		t.Fatal(err)
	}
	out := cfg.Effective()
	for _, s := range []string{"ACCESS-1", "SECRET-1", "TOKEN-1", "ACCESS-2", "SECRET-2", "ACCESS-3", "SECRET-3"} {
		if strings.Contains(out, s) {
			t.Errorf("%s shows in the effective configuration", s)
		}
	}
	for _, want := range []string{"catalog.c.conf.fs.s3a.endpoint=http://********@s3.example.com:9000", "catalog.c.conf.fs.s3a.bucket.b1.endpoint=http://s3.example.com",
		"catalog.c.conf.dfs.namenode.rpc-address.ns.a=nn1:8020"} {
		if !strings.Contains(out, want) {
			t.Errorf("the effective configuration lacks %q", want)
		}
	}
}
