package viewsql

import (
	"math/rand"
	"strings"
	"testing"
)

// The properties, for any text x:
//   - no byte of a literal, comment, number or substitution changes, either way;
//   - when Outward changes x without findings and without an irreversible
//     rewrite, Inward(Outward(x)) == x;
//   - with qualification, the text is stable after one round trip:
//     Outward(Inward(Outward(x))) == Outward(x);
//   - when Inward changes y without findings or irreversible rewrites,
//     Outward(Inward(y)) == y (up to the case of a catalog prefix).
func checkProperties(t *testing.T, x string) {
	for _, qualify := range []bool{false, true} {
		r := testRewriter(t, qualify)
		v := View{Catalog: "catalog2", DB: "sales"}
		out, err := r.Rewrite(Outward, v, x)
		if err != nil {
			t.Fatal(err)
		}
		checkPreserved(t, x, out.Text)
		if out.Changed == 0 {
			if out.Text != x {
				t.Fatalf("no change reported but text changed: %q -> %q", x, out.Text)
			}
			continue
		}
		back, err := r.Rewrite(Inward, v, out.Text)
		if err != nil {
			t.Fatal(err)
		}
		checkPreserved(t, out.Text, back.Text)
		if len(out.Findings) == 0 && out.Irreversible == 0 && back.Text != x {
			t.Fatalf("qualify=%v: Inward(Outward(x)) != x\n   x %q\n out %q\nback %q", qualify, x, out.Text, back.Text)
		}
		if len(out.Findings) == 0 {
			again, _ := r.Rewrite(Outward, v, back.Text)
			if again.Text != out.Text {
				t.Fatalf("qualify=%v: not stable\n   x %q\n out %q\nback %q\nagain %q", qualify, x, out.Text, back.Text, again.Text)
			}
		}
	}
	r := testRewriter(t, false)
	in, _ := r.Rewrite(Inward, View{Catalog: "catalog2"}, x)
	checkPreserved(t, x, in.Text)
	if in.Changed > 0 && len(in.Findings) == 0 && in.Irreversible == 0 {
		o, _ := r.Rewrite(Outward, View{Catalog: "catalog2", DB: "sales"}, in.Text)
		// Only the case of a prefix may differ (CATALOG2__s comes back as catalog2__s).
		if !strings.EqualFold(o.Text, x) {
			t.Fatalf("Outward(Inward(y)) != y\n y %q\nin %q\n o %q", x, in.Text, o.Text)
		}
	}
}

func FuzzRoundTrip(f *testing.F) {
	for _, s := range hiveCorpus(f) {
		f.Add(s)
	}
	for _, v := range sparkCorpus(f) {
		f.Add(v.ViewExpandedText)
	}
	for _, s := range []string{
		"SELECT * FROM catalog2__s.t JOIN `catalog2__d`.`u` ON 1=1",
		"select 'a''b', \"x\\\"y\" from s.t -- c\n, s.u /* d */",
		"WITH x AS (SELECT 1 FROM s.t) SELECT * FROM x, s.x",
		"SELECT * FROM ${db}.t, s.${t}",
		"FROM s.t INSERT OVERWRITE TABLE s.u SELECT *",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, x string) {
		checkProperties(t, x)
	})
}

// A bounded random walk over SQL fragments (runs in every go test).
func TestRandomTexts(t *testing.T) {
	frags := []string{"SELECT", "*", "a", "t.c", ",", "FROM", "JOIN", "LEFT OUTER JOIN", "ON", "=", "1", "1.5",
		"(", ")", "s.t", "`s`.`t`", "hive.s.t", "spark_catalog.s.t", "x.y.z.w", "catalog2__s.t", "catalog1__s.t",
		"'from s.t'", "\"join s.u\"", "-- from s.v\n", "/* from s.w */", "${v}", "WITH", "q", "AS", "WHERE",
		"GROUP BY", "LATERAL VIEW explode(m) e AS k, v", "INTO", "TABLE", "UPDATE", "extract(year FROM d)",
		"range(3)", "`a``b`", "UNION ALL", "EXISTS", "IN", ";", "db_${e}", "`s.t`", "\n", "CROSS JOIN", "orders"}
	rnd := rand.New(rand.NewSource(1))
	for i := 0; i < 3000; i++ {
		n := 1 + rnd.Intn(25)
		var b strings.Builder
		for j := 0; j < n; j++ {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(frags[rnd.Intn(len(frags))])
		}
		checkProperties(t, b.String())
	}
}
