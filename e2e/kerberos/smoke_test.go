package kerberos

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/tools/smoke"
)

// The manual smoke client with --auth kerberos: as alice, over SASL/GSSAPI
// with each QOP, a lock round (open_txns, lock, check_lock, heartbeat,
// commit) through the Kerberized proxy, on the default catalog's metastore
// and on catalog2 (the lock shim), and straight against a Kerberized
// metastore. The proxy's audit names alice, who never sent set_ugi.
func TestSmokeClientOverKerberos(t *testing.T) {
	p := proxytest.Start(t, federation(t))
	kerberos := func(spn, protection string) []string {
		return []string{"--auth", "kerberos", "--server-principal", spn, "--client-principal", kdc.Principal("alice"),
			"--keytab", aliceKT, "--krb5-conf", kdc.Krb5Conf, "--conf", "hadoop.rpc.protection=" + protection}
	}
	cases := []struct {
		name, uri, spn, db, protection string
	}{
		{"proxy default catalog privacy", p.URI("primary"), "hmsproxy/_HOST@" + kdc.Realm, uniq("smk"), "privacy"},
		{"proxy catalog2 integrity", p.URI("primary"), "hmsproxy/_HOST@" + kdc.Realm, "catalog2__" + uniq("smk"), "integrity"},
		{"proxy authentication", p.URI("primary"), proxyP, uniq("smk"), "authentication"},
		{"metastore directly", krb1.URI, "hive/_HOST@" + kdc.Realm, uniq("smk"), "privacy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"lock", "--uri", c.uri, "--db", c.db, "--heartbeat", "--lock-in-txn=false", "--unlock", "--close-txn", "commit"},
				kerberos(c.spn, c.protection)...)
			var out, errOut bytes.Buffer
			code := smoke.Run(args, &out, &errOut)
			t.Logf("smoke %s:\n%s%s", strings.Join(args, " "), out.String(), errOut.String())
			if code != smoke.ExitOK {
				t.Fatalf("smoke lock over Kerberos exited %d", code)
			}
			for _, step := range []string{"open_txns", "lock", "check_lock", "heartbeat", "unlock", "commit_txn"} {
				if !strings.Contains(out.String(), step) {
					t.Fatalf("no %s step in the output", step)
				}
			}
			if strings.Contains(out.String(), "set_ugi") {
				t.Fatal("a Kerberized client must not send set_ugi")
			}
		})
	}
	b, err := os.ReadFile(p.AuditFile)
	if err != nil {
		t.Fatal(err)
	}
	var lockedBy []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, `"method":"lock"`) {
			lockedBy = append(lockedBy, l)
		}
	}
	if len(lockedBy) < 3 || !strings.Contains(strings.Join(lockedBy, "\n"), `"authenticatedUser":"alice"`) {
		t.Fatalf("the proxy's audit of the smoke locks does not name alice:\n%s", strings.Join(lockedBy, "\n"))
	}
}
