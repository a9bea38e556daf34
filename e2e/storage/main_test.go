// Package storage tests the proxy's file layer end to end (issue 24): the
// Iceberg REST frontend's tables on real S3 (s3proxy) and real HDFS (Hadoop's
// mini cluster, plain and Kerberized with the test bed's MIT KDC), written and
// read by real Iceberg clients (PyIceberg's RestCatalog with PyArrowFileIO,
// Spark with Iceberg's runtime and HadoopFileIO), and the external-table drop
// purge of a real Hive client's DROP TABLE on a Hive 3.1.3 metastore whose
// warehouse is on HDFS. Every server is started once for the package.
package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/testbed"
)

// The proxy's own user: HADOOP_USER_NAME on the plain cluster, hmsproxy@REALM on the Kerberized one. Both
// clusters let it impersonate anyone (hadoop.proxyuser.hmsproxy.*).
const proxyUser = "hmsproxy"

var (
	kdc       *testbed.KDC
	s3srv     *testbed.S3
	plainHDFS *testbed.HDFS
	krbHDFS   *testbed.HDFS
	proxyKT   string // hmsproxy@REALM's keytab
	// hms is a Hive 3.1.3 metastore whose warehouse is on the plain HDFS and which reaches S3 (s3a://, s3://) and
	// the plain HDFS: the REST tables of both and the external tables of the drop purge live in it.
	hms *testbed.Metastore
	// krbHMS is a Hive 3.1.3 metastore (plain Thrift) that reaches the Kerberized HDFS as hive@REALM (a ticket
	// cache): the REST tables on the Kerberized HDFS live in it.
	krbHMS     *testbed.Metastore
	storageBed *testbed.Storage
	startupErr error
)

const bucket = "warehouse"

func TestMain(m *testing.M) {
	if os.Getenv("HMS_PROXY_SKIP_REAL_HIVE") == "1" {
		fmt.Println("storage e2e: HMS_PROXY_SKIP_REAL_HIVE=1, skipped")
		os.Exit(0)
	}
	// The plain cluster's proxy user (fileio reads it when a proxy starts).
	os.Setenv("HADOOP_USER_NAME", proxyUser)
	startupErr = start()
	code := m.Run()
	if s := testbed.LaunchSummary(); s != "" {
		fmt.Println("storage e2e: launched", s)
	}
	for _, ms := range []*testbed.Metastore{hms, krbHMS} {
		if ms != nil {
			_ = ms.Stop()
		}
	}
	storageBed.Stop()
	os.Exit(code)
}

func start() error {
	if err := testbed.Prepare(); err != nil {
		return err
	}
	hivefs, err := testbed.HiveS3ALib()
	if err != nil {
		return err
	}
	bed, err := testbed.StartStorage(testbed.StorageOptions{ProxyUser: proxyUser, Users: []string{"alice"}})
	if err != nil {
		return err
	}
	s3srv, plainHDFS, krbHDFS, kdc, proxyKT = bed.S3, bed.HDFS, bed.KerberizedHDFS, bed.KDC, bed.ProxyKeytab
	storageBed = bed
	if err := makeBucket(); err != nil {
		return err
	}

	// The metastores: hadoop-hdfs-2.2.0 of the cached lib shadows hadoop-hdfs-client 3.1.0 (storage-facts.md).
	exclude := []string{"hadoop-hdfs-2.2.0.jar"}
	s3conf := []string{
		"fs.s3a.endpoint=" + s3srv.Endpoint, "fs.s3a.path.style.access=true", "fs.s3a.connection.ssl.enabled=false",
		"fs.s3a.access.key=" + s3srv.AccessKey, "fs.s3a.secret.key=" + s3srv.SecretKey,
		"fs.s3.impl=org.apache.hadoop.fs.s3a.S3AFileSystem",
	}
	hiveKT, err := kdc.PrincipalKeytab("hive.keytab", "hive")
	if err != nil {
		return err
	}
	ccache := filepath.Join(kdc.Dir, "hive.ccache")
	if err := kdc.Kinit("hive", hiveKT, ccache); err != nil {
		return err
	}
	var wg sync.WaitGroup
	var errA, errB error
	wg.Add(2)
	go func() {
		defer wg.Done()
		hms, errA = testbed.StartMetastoreWith(testbed.Hive313, testbed.MetastoreOptions{Storage: &testbed.MetastoreStorage{
			Conf:   append([]string{"fs.defaultFS=" + plainHDFS.URI, "metastore.warehouse.dir=" + plainHDFS.URI + "/warehouse"}, s3conf...),
			LibDir: hivefs, Exclude: exclude, Env: []string{"HADOOP_USER_NAME=hive"}}})
	}()
	go func() {
		defer wg.Done()
		var conf []string
		for k, v := range krbHDFS.ClientConf() {
			conf = append(conf, k+"="+v)
		}
		conf = append(conf, "metastore.warehouse.dir="+krbHDFS.URI+"/warehouse")
		krbHMS, errB = testbed.StartMetastoreWith(testbed.Hive313, testbed.MetastoreOptions{Storage: &testbed.MetastoreStorage{
			Conf: conf, LibDir: hivefs, Exclude: exclude, Env: []string{"KRB5CCNAME=FILE:" + ccache},
			JVMFlags: []string{"-Djava.security.krb5.conf=" + kdc.Krb5Conf}}})
	}()
	wg.Wait()
	return errors.Join(errA, errB)
}

func need(t *testing.T) {
	t.Helper()
	if startupErr != nil {
		t.Fatalf("starting the storage test bed: %v", startupErr)
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return c
}

// uniq returns a name unique to this run.
func uniq(prefix string) string {
	return fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano()%1_000_000_000)
}

func lines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
