package kerberos

import (
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/security"
	"github.com/hms-proxy/hms-proxy/security/sasl"
)

// The rules and names of Hadoop's own KerberosName tests and documentation, and what Hadoop maps them to.
const hadoopRules = `RULE:[1:$1@$0](.*@YAHOO\.COM)s/@.*//
RULE:[2:$1](johndoe)s/^.*$/guest/
RULE:[2:$1;$2](^.*;admin$)s/;admin$//
RULE:[2:$2;$1](^.*;admin$)s/;admin$//
RULE:[1:$1@$0](.*@UPPER\.COM)s/@.*///L
RULE:[1:x$1x@$0](.*@SED\.COM)s/x/y/g
RULE:[1:x$1x@$0](.*@SED1\.COM)s/x([a-z]+)x@.*/$1-first/
DEFAULT`

func TestShortName(t *testing.T) {
	m, err := NewMapper(MapperOptions{Rules: hadoopRules, DefaultRealm: "APACHE.ORG"})
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"omalley@APACHE.ORG":        "omalley",
		"hdfs/127.0.0.1@APACHE.ORG": "hdfs",
		"johndoe/zoo@FOO.COM":       "guest",
		"joe/admin@FOO.COM":         "joe",
		"admin/joe@FOO.COM":         "joe",
		"bob@YAHOO.COM":             "bob",
		"Alice@UPPER.COM":           "alice",
		"plain":                     "plain",
		"carol@SED1.COM":            "carol-first",
	} {
		if got, err := m.ShortName(in); err != nil || got != want {
			t.Errorf("%s -> %q, %v; want %q", in, got, err, want)
		}
	}
	// s///g replaces every match; its result here still has '@', which Hadoop refuses
	if got, err := m.ShortName("carol@SED.COM"); err == nil || !strings.Contains(err.Error(), "not a simple user name") {
		t.Errorf("carol@SED.COM -> %q, %v; want a non-simple-name error", got, err)
	}
}

func TestShortNameRefusals(t *testing.T) {
	m, err := NewMapper(MapperOptions{Rules: "RULE:[1:$1@$0](.*@A\\.COM)\nDEFAULT", DefaultRealm: "EXAMPLE.COM"})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{"alice@FOREIGN.COM", "svc/host@FOREIGN.COM", "x@A.COM", "a@b@c"} {
		if got, err := m.ShortName(in); err == nil {
			t.Errorf("%s mapped to %q, want an error", in, got)
		}
	}
	mit, _ := NewMapper(MapperOptions{Rules: "DEFAULT", DefaultRealm: "EXAMPLE.COM", Mechanism: "MIT"})
	if got, err := mit.ShortName("alice@FOREIGN.COM"); err != nil || got != "alice@FOREIGN.COM" {
		t.Errorf("mit mechanism: %q %v", got, err)
	}
	for rules, want := range map[string]string{
		"RULE:[3:$1]":       "component count",
		"RULE:[1:$1](a(b)":  "bad regular expression",
		"RULE:[1:$1]s/(/x/": "bad regular expression",
		"DEFAULT nonsense":  "invalid rule",
		"RULE:[1:$5]":       "", // parses; fails on use
		"":                  "",
	} {
		_, err := NewMapper(MapperOptions{Rules: rules, DefaultRealm: "R"})
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", rules, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "hadoop.security.auth_to_local") {
			t.Errorf("%q: %v, want %q", rules, err, want)
		}
	}
	bad, _ := NewMapper(MapperOptions{Rules: "RULE:[1:$5]", DefaultRealm: "R"})
	if _, err := bad.ShortName("a@R"); err == nil || !strings.Contains(err.Error(), "outside the valid range") {
		t.Errorf("$5: %v", err)
	}
	if _, err := NewMapper(MapperOptions{Mechanism: "ldap", DefaultRealm: "R"}); err == nil {
		t.Error("unknown mechanism accepted")
	}
	if _, err := NewMapper(MapperOptions{}); err == nil {
		t.Error("DEFAULT without a default realm accepted")
	}
}

func TestIdentity(t *testing.T) {
	m, _ := NewMapper(MapperOptions{DefaultRealm: "EXAMPLE.COM"})
	id, err := m.Identity(sasl.Result{Mechanism: "GSSAPI", Principal: "alice@EXAMPLE.COM"})
	if err != nil || id.User != "alice" || id.Mechanism != security.Kerberos || !id.Authenticated() {
		t.Fatalf("%+v %v", id, err)
	}
	if _, err := m.Identity(sasl.Result{Mechanism: "GSSAPI", Principal: "mallory@EVIL.COM"}); err == nil {
		t.Fatal("a principal of an unmapped realm got an identity")
	}
}

func TestExpandHost(t *testing.T) {
	got, err := ExpandHost("hive/_HOST@EXAMPLE.COM", "127.0.0.1")
	if err != nil || got != "hive/localhost@EXAMPLE.COM" {
		t.Fatalf("127.0.0.1: %q %v (the test machine maps 127.0.0.1 to localhost in /etc/hosts)", got, err)
	}
	if got, _ := ExpandHost("hive/LOCALHOST@EXAMPLE.COM", "x"); got != "hive/LOCALHOST@EXAMPLE.COM" {
		t.Fatalf("explicit host changed: %q", got)
	}
	if got, err := ExpandHost("hive/_HOST@EXAMPLE.COM", "0.0.0.0"); err != nil || strings.Contains(got, "_HOST") {
		t.Fatalf("wildcard bind: %q %v", got, err)
	}
	if _, err := ExpandHost("hive/_HOST@EXAMPLE.COM", "no-such-host.invalid"); err == nil {
		t.Fatal("an unresolvable host expanded")
	}
}
