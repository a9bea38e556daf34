package storage

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/hms-proxy/hms-proxy/app"
	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// waitMetric waits (bounded) until a counter of the proxy reaches want.
func waitMetric(t *testing.T, p *proxytest.Proxy, want float64, name string, labels ...string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for p.Metric(t, name, labels...) < want {
		if time.Now().After(deadline) {
			t.Fatalf("%s%v stayed at %v, want %v", name, labels, p.Metric(t, name, labels...), want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The external-table drop purge on HDFS (plain and Kerberized) and S3: Spark with Hive support (its Hive 2.3.9
// client) creates an external table with external.table.purge=true through the proxy's Thrift port, fills it,
// and drops it; the proxy deletes the table's folder in the background (Hive 3.1.3 itself keeps the files of an
// external table, see shared/research/storage-facts.md), and only that folder: a neighbour under the same
// allow-listed prefix, whose name shares the dropped one's bytes, stays.
func TestExternalTableDropPurge(t *testing.T) {
	need(t)
	for _, c := range []struct {
		name string
		ms   *testbed.Metastore
		conf map[string]string
		root string // the allow-listed prefix
		h    *testbed.HDFS
	}{
		{"hdfs-plain", hms, plainHDFS.ClientConf(), plainHDFS.URI + "/external", plainHDFS},
		{"hdfs-kerberos", krbHMS, krbHDFS.ClientConf(), krbHDFS.URI + "/external", krbHDFS},
		{"s3", hms, merged(s3srv.Conf(), plainHDFS.ClientConf()), "s3a://" + bucket + "/external", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			props := map[string]string{
				"federation.external-table-drop-purge.mode":                             "BEST_EFFORT",
				"catalog.cat.conf.hms.proxy.external-table-drop-purge.allowed-prefixes": c.root + "/",
			}
			spark := map[string]any{"warehouse": "cat", "hadoop": c.conf}
			if c.h != nil && c.h.Kerberos != nil {
				props["security.client-principal"] = kdc.Principal(proxyUser)
				props["security.client-keytab"] = proxyKT
				spark["kerberos"] = map[string]string{"principal": kdc.Principal("alice"), "keytab": proxyKT}
				t.Setenv("KRB5_CONFIG", kdc.Krb5Conf)
			}
			p := startProxy(t, c.ms, c.conf, props, app.TestHooks{})
			spark["uri"] = p.base
			spark["hive_uri"] = p.URI("primary")
			db := uniq("ext")
			loc, keep := c.root+"/"+db+"/t1", c.root+"/"+db+"/t10"
			steps := []sparkStep{
				{SQL: "CREATE DATABASE " + db + " LOCATION '" + c.root + "/" + db + "'"},
				{SQL: "CREATE EXTERNAL TABLE " + db + ".t1 (id int) STORED AS PARQUET LOCATION '" + loc + "' TBLPROPERTIES ('external.table.purge'='true')"},
				{SQL: "CREATE EXTERNAL TABLE " + db + ".t10 (id int) STORED AS PARQUET LOCATION '" + keep + "' TBLPROPERTIES ('external.table.purge'='true')"},
			}
			drop := sparkStep{SQL: "DROP TABLE " + db + ".t1"}
			if c.h != nil {
				// One session: the rows read back before the drop show the files were there.
				steps = append(steps,
					sparkStep{SQL: "INSERT INTO " + db + ".t1 VALUES (1), (2)"},
					sparkStep{SQL: "INSERT INTO " + db + ".t10 VALUES (3)"},
					sparkStep{SQL: "SELECT count(*) FROM " + db + ".t1", Fetch: true},
					drop)
				if res := runSpark(t, spark, steps...); res[len(res)-2].Rows[0][0] != "2" {
					t.Fatalf("the external table held %v rows before the drop, want 2", res[len(res)-2].Rows)
				}
			} else {
				// Spark's own Hadoop has no S3A here: the data files of both tables are put on S3 directly, before
				// the tables are created over them (an external table's location may hold data already), so that
				// one Spark session creates and drops (each session costs a JVM and a SparkContext).
				seedS3(t, loc+"/part-00000.parquet", loc+"/part-00001.parquet", keep+"/part-00000.parquet")
				if len(files(t, c.h, loc)) != 2 {
					t.Fatalf("no data files under %s before the drop", loc)
				}
				runSpark(t, spark, append(steps, drop)...)
			}
			waitMetric(t, p.Proxy, 1, "hms_proxy_external_table_purge_total", "catalog", "cat", "result", "deleted")
			if left := files(t, c.h, loc); len(left) != 0 {
				t.Fatalf("after the drop and its purge %s still holds %v", loc, left)
			}
			if len(files(t, c.h, keep)) == 0 {
				t.Fatalf("the neighbour %s was deleted too", keep)
			}
			if n := p.Metric(t, "hms_proxy_external_table_purge_total", "catalog", "cat", "result", "failed"); n != 0 {
				t.Fatalf("failed purges: %v", n)
			}
		})
	}
}

// files lists the files under a location: HDFS through the proxy's file layer, S3 on the server's disk.
func files(t *testing.T, h *testbed.HDFS, loc string) []string {
	t.Helper()
	if h != nil {
		return hdfsFiles(t, h, loc)
	}
	out, err := s3srv.Files(bucket, s3Key(t, loc)+"/")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// seedS3 puts small objects on the test bed's S3.
func seedS3(t *testing.T, locs ...string) {
	t.Helper()
	c, err := minio.New(strings.TrimPrefix(s3srv.Endpoint, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(s3srv.AccessKey, s3srv.SecretKey, ""), BucketLookup: minio.BucketLookupPath, Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range locs {
		if _, err := c.PutObject(context.Background(), bucket, s3Key(t, l), bytes.NewReader([]byte("PAR1")), 4, minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
