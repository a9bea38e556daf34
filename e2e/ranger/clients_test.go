package ranger

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// Engines that send their session user to the metastore themselves:
// HiveServer2 with doAs (its metastore client opens inside the JDBC user's
// UGI and calls set_ugi with it) and Trino's Hive connector with Thrift
// impersonation (set_ugi with the Trino user and no groups). Neither sends
// groups the policies name, so the proxy maps bob to group finance from a
// groups file (security.groups.mapping=file), as an operator without an
// identity provider would.

// clientWorld is the world with bob's groups from a file.
func clientWorld(t *testing.T) *world {
	t.Helper()
	groups := filepath.Join(t.TempDir(), "groups")
	if err := os.WriteFile(groups, []byte("bob: finance\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return newWorld(t, "security.groups.mapping=file", "security.groups.mapping.file="+groups)
}

// hs2As runs statements through HiveServer2 as user over Hive JDBC 4.1.0
// (testdata/Hs2As.java: the connection's user property, as beeline -n
// passes it; e2eutil's Hs2Steps.java connects as "hive", and a user=
// session variable in its URL does not override that: measured, the
// session was "hive") and returns one answer per statement: "ok <first
// column of the rows>" or "error <message>".
func hs2As(t *testing.T, hs2 *testbed.HiveServer2, user string, stmts ...string) []string {
	t.Helper()
	return e2eutil.RunJDBC(t, filepath.Join("testdata", "Hs2As.java"), user, []string{hs2.JDBC, user}, stmts...)
}

// listed is the names of an "ok a; b" answer, sorted.
func listed(answer string) []string {
	rest, ok := strings.CutPrefix(answer, "ok")
	if !ok {
		return nil
	}
	var out []string
	for _, n := range strings.Split(rest, ";") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// HiveServer2 4 with doAs, through the proxy's Hive 4 front door to the
// 3.1.3 catalogs (the operator who upgrades HiveServer2 first; HiveServer2 4
// on 3.1.3 is the tested combination of e2e/clients): JDBC users alice and
// bob see only their own databases and tables in SHOW DATABASES, SHOW
// TABLES and DESCRIBE, and alice's DROP TABLE of vis_a (denied by policy 12)
// fails and changes nothing on either metastore. HiveServer2's own
// authorization stays off: what is enforced here is the proxy's.
func TestRangerHiveServer2UsersSeeTheirOwn(t *testing.T) {
	w := clientWorld(t)
	before := w.snapshot(t)
	hs2 := testbed.StartHiveServer2T(t, testbed.HiveServer2Options{MetastoreURI: w.p.URI("hive4"), DoAs: true})
	pub, hxPub, fin := w.pub, "hx__"+w.pub, w.fin

	a := hs2As(t, hs2, "alice", "SHOW DATABASES", "SHOW TABLES IN "+hxPub, "DESCRIBE "+hxPub+".vis_a",
		"DESCRIBE "+hxPub+".hid_x", "SHOW TABLES IN "+fin, "DROP TABLE "+hxPub+".vis_a", "SHOW TABLES IN "+hxPub)
	if got := w.ours(listed(a[0])); strings.Join(got, ",") != hxPub+","+pub {
		t.Errorf("alice's SHOW DATABASES: %v; want pub of both catalogs only (%s)", got, a[0])
	}
	for _, i := range []int{1, 6} {
		if a[i] != "ok vis_a" {
			t.Errorf("alice's SHOW TABLES IN %s: %q; want vis_a only", hxPub, a[i])
		}
	}
	if !strings.HasPrefix(a[2], "ok ") || !slicesHas(listed(a[2]), "p") {
		t.Errorf("alice's DESCRIBE of vis_a: %q; want its columns with partition column p", a[2])
	}
	for _, i := range []int{3, 4} {
		if !strings.HasPrefix(a[i], "error ") {
			t.Errorf("alice reads what policy hides: %q", a[i])
		}
	}
	if !strings.HasPrefix(a[5], "error ") || !strings.Contains(a[5], "denied by the Ranger policies") {
		t.Errorf("alice's DROP TABLE through HiveServer2: %q; want the Ranger denial", a[5])
	}

	b := hs2As(t, hs2, "bob", "SHOW DATABASES", "SHOW TABLES IN hx__"+fin, "DESCRIBE hx__"+fin+".ledger", "SHOW TABLES IN "+hxPub)
	if got := w.ours(listed(b[0])); strings.Join(got, ",") != "hx__"+fin+","+fin {
		t.Errorf("bob's SHOW DATABASES: %v; want fin of both catalogs only (%s)", got, b[0])
	}
	if b[1] != "ok ledger" {
		t.Errorf("bob's SHOW TABLES IN hx__%s: %q; want ledger", fin, b[1])
	}
	if !strings.HasPrefix(b[2], "ok ") {
		t.Errorf("bob's DESCRIBE of ledger: %q", b[2])
	}
	if !strings.HasPrefix(b[3], "error ") {
		t.Errorf("bob lists pub's tables: %q; want an error (the database is hidden from him)", b[3])
	}
	if w.auditRecord(t, `"authenticatedUser":"alice"`, `"rangerDecision":"denied"`, `"rangerPolicyId":12`) == "" {
		t.Errorf("no audit record of alice's denied drop naming policy 12: HiveServer2 did not send her as the caller")
	}
	if now := w.snapshot(t); now != before {
		t.Fatalf("HiveServer2's denied DROP TABLE changed the metastores:\nbefore:\n%s\nafter:\n%s", before, now)
	}
}

func slicesHas(s []string, x string) bool {
	for _, v := range s {
		if strings.HasPrefix(v, x) {
			return true
		}
	}
	return false
}

// Trino 476's Hive connector with Thrift impersonation, pointed at the
// proxy: Trino users alice and bob (X-Trino-User) see different SHOW SCHEMAS
// and SHOW TABLES, and alice's DROP TABLE of vis_a fails with the proxy's
// denial and changes nothing on either metastore.
func TestRangerTrinoUsersSeeTheirOwn(t *testing.T) {
	w := clientWorld(t)
	before := w.snapshot(t)
	tr, err := testbed.StartTrino(testbed.TrinoOptions{HivePlugin: true, Catalogs: map[string]map[string]string{"hive": {
		"connector.name":     "hive",
		"hive.metastore.uri": w.p.URI("primary"),
		// Trino's Thrift client then calls set_ugi with the session user
		"hive.metastore.thrift.impersonation.enabled": "true",
	}}})
	if errors.Is(err, testbed.ErrSkip) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	names := func(user, sql string) ([]string, error) {
		rows, err := tr.Query(ctx, user, sql)
		var out []string
		for _, r := range rows {
			out = append(out, r[0].(string))
		}
		sort.Strings(out)
		t.Logf("[%s] %s\n    -> %v %v", user, sql, out, err)
		return out, err
	}
	hxPub := "hx__" + w.pub

	if got, err := names("alice", "SHOW SCHEMAS FROM hive"); err != nil || strings.Join(w.ours(got), ",") != hxPub+","+w.pub {
		t.Errorf("alice's SHOW SCHEMAS: %v %v; want pub of both catalogs only", w.ours(got), err)
	}
	if got, err := names("alice", "SHOW TABLES FROM hive."+hxPub); err != nil || strings.Join(got, ",") != "vis_a" {
		t.Errorf("alice's SHOW TABLES: %v %v; want vis_a only", got, err)
	}
	if got, err := names("bob", "SHOW SCHEMAS FROM hive"); err != nil || strings.Join(w.ours(got), ",") != "hx__"+w.fin+","+w.fin {
		t.Errorf("bob's SHOW SCHEMAS: %v %v; want fin of both catalogs only", w.ours(got), err)
	}
	if got, err := names("bob", "SHOW TABLES FROM hive.hx__"+w.fin); err != nil || strings.Join(got, ",") != "ledger" {
		t.Errorf("bob's SHOW TABLES: %v %v; want ledger", got, err)
	}
	if got, err := names("bob", "SHOW TABLES FROM hive."+hxPub); err == nil && len(got) > 0 {
		t.Errorf("bob lists pub's tables: %v", got)
	}
	// Trino retries a drop_table that failed with a MetaException (the
	// proxy's Ranger denial is one, as Hive's metastore-side authorizer's
	// is) and then reports the failed drop without the metastore's message:
	// the denial itself is in the proxy's log and audit record.
	_, err = names("alice", "DROP TABLE hive."+hxPub+".vis_a")
	if err == nil || !strings.Contains(err.Error(), "drop table "+hxPub+".vis_a") {
		t.Errorf("alice's DROP TABLE through Trino: %v; want the failed drop", err)
	}
	if len(w.p.LogLines("request refused", "drop_table", "denied by the Ranger policies for user alice", "policy 12")) == 0 {
		t.Errorf("the proxy logged no Ranger denial of alice's drop_table")
	}
	if w.auditRecord(t, `"method":"drop_table"`, `"authenticatedUser":"alice"`, `"rangerDecision":"denied"`, `"rangerPolicyId":12`) == "" {
		t.Errorf("no audit record of alice's denied drop naming policy 12: Trino did not send her as the caller")
	}
	if got, err := names("alice", "SHOW TABLES FROM hive."+hxPub); err != nil || strings.Join(got, ",") != "vis_a" {
		t.Errorf("alice's SHOW TABLES after the denied drop: %v %v; want vis_a", got, err)
	}
	if now := w.snapshot(t); now != before {
		t.Fatalf("Trino's denied DROP TABLE changed the metastores:\nbefore:\n%s\nafter:\n%s", before, now)
	}
}
