package ranger

import (
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"
)

// Spark talks to the metastore directly, bypassing HiveServer2's own Ranger
// check: as alice (HADOOP_USER_NAME, which Spark's Hive client asserts with
// set_ugi), SHOW DATABASES lists pub of both catalogs and neither sec nor
// fin, SHOW TABLES lists vis_a only, and DROP TABLE of vis_a (denied by
// policy 12) fails and changes nothing on either metastore.
func TestRangerSparkDropTableDenied(t *testing.T) {
	w := newWorld(t)
	before := w.snapshot(t)
	res := e2eutil.RunSparkEnv(t, []string{"HADOOP_USER_NAME=alice"}, e2eutil.SparkPhase{URI: w.p.URI("primary"), Steps: []e2eutil.SparkStep{
		{SQL: "SHOW DATABASES", Fetch: true},
		{SQL: "SHOW TABLES IN hx__" + w.pub, Fetch: true},
		{SQL: "DROP TABLE hx__" + w.pub + ".vis_a"},
		{SQL: "SHOW TABLES IN hx__" + w.pub, Fetch: true},
	}})[0]
	var dbs []string
	for _, row := range e2eutil.SparkOK(t, res, 0) {
		dbs = append(dbs, row[0])
	}
	if got := w.ours(dbs); strings.Join(got, ",") != "hx__"+w.pub+","+w.pub {
		t.Errorf("alice's SHOW DATABASES: %v; want pub of both catalogs only", got)
	}
	for _, i := range []int{1, 3} {
		rows := e2eutil.SparkOK(t, res, i)
		if len(rows) != 1 || !strings.Contains(strings.Join(rows[0], ","), "vis_a") {
			t.Errorf("alice's SHOW TABLES IN hx__%s: %v; want vis_a only", w.pub, rows)
		}
	}
	if res[2].Error == "" || !strings.Contains(res[2].Error, "denied by the Ranger policies") {
		t.Errorf("alice's DROP TABLE: %q; want the Ranger denial", res[2].Error)
	}
	if now := w.snapshot(t); now != before {
		t.Fatalf("Spark's denied DROP TABLE changed the metastores:\nbefore:\n%s\nafter:\n%s", before, now)
	}
}
