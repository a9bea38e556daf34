package fileio_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/colinmarc/hdfs/v2"
	krbclient "github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/hms-proxy/hms-proxy/fileio"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// Real servers, started once for the package: s3proxy, a plain HDFS mini cluster and a Kerberized one (with the
// test bed's MIT KDC). The proxy's own principal hmsproxy is an HDFS proxy user on both clusters.
var (
	s3srv      *testbed.S3
	plainHDFS  *testbed.HDFS
	kdc        *testbed.KDC
	krbHDFS    *testbed.HDFS
	proxyKT    string // keytab of hmsproxy@REALM
	startupErr error
)

const proxyUser = "hmsproxy"

func TestMain(m *testing.M) {
	if os.Getenv("HMS_PROXY_SKIP_REAL_HIVE") == "1" {
		fmt.Println("fileio: HMS_PROXY_SKIP_REAL_HIVE=1, real storage tests skipped")
		os.Exit(m.Run())
	}
	bed, err := testbed.StartStorage(testbed.StorageOptions{ProxyUser: proxyUser, Users: []string{"alice"}})
	if err == nil {
		s3srv, plainHDFS, krbHDFS, kdc, proxyKT = bed.S3, bed.HDFS, bed.KerberizedHDFS, bed.KDC, bed.ProxyKeytab
	}
	startupErr = err
	code := m.Run()
	bed.Stop()
	os.Exit(code)
}

func need(t *testing.T) {
	t.Helper()
	if os.Getenv("HMS_PROXY_SKIP_REAL_HIVE") == "1" {
		t.Skip("HMS_PROXY_SKIP_REAL_HIVE=1")
	}
	if startupErr != nil {
		t.Fatalf("starting the storage servers: %v", startupErr)
	}
}

// backend is one storage the tests run on.
type backend struct {
	name string
	root string // a location folder unique to the test
	r    *fileio.Resolver
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return c
}

func newResolver(t *testing.T, conf map[string]string, impersonate bool, mid func(string)) *fileio.Resolver {
	t.Helper()
	o := fileio.Options{Catalogs: []fileio.Catalog{{Name: "c", Conf: conf, Impersonate: impersonate}}, MidWrite: mid}
	if conf["hadoop.security.authentication"] == "kerberos" {
		o.ClientPrincipal, o.ClientKeytab, o.Krb5Conf = kdc.Principal(proxyUser), proxyKT, kdc.Krb5Conf
	}
	r, err := fileio.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

var bucketOnce sync.Once

func s3Bucket(t *testing.T) {
	t.Helper()
	bucketOnce.Do(func() {
		c := s3Admin(t)
		if err := c.MakeBucket(ctx(t), "warehouse", minio.MakeBucketOptions{}); err != nil {
			t.Fatalf("make bucket: %v", err)
		}
	})
}

func s3Admin(t *testing.T) *minio.Client {
	c, err := minio.New(strings.TrimPrefix(s3srv.Endpoint, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(s3srv.AccessKey, s3srv.SecretKey, ""), BucketLookup: minio.BucketLookupPath, Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func backends(t *testing.T) []backend {
	need(t)
	s3Bucket(t)
	id := strings.ReplaceAll(strings.ToLower(t.Name()), "/", "-") + fmt.Sprint(time.Now().UnixNano())
	return []backend{
		{"local", "file:" + t.TempDir() + "/" + id, newResolver(t, nil, false, nil)},
		{"s3", "s3://warehouse/" + id, newResolver(t, s3srv.Conf(), false, nil)},
		{"s3a", "s3a://warehouse/a-" + id, newResolver(t, s3srv.Conf(), false, nil)},
		{"hdfs", plainHDFS.URI + "/" + id, newResolver(t, plainHDFS.ClientConf(), false, nil)},
		{"hdfs-kerberos", "hdfs:///" + id, newResolver(t, krbHDFS.ClientConf(), false, nil)},
	}
}

func readAll(t *testing.T, io_ fileio.IO, loc string) []byte {
	t.Helper()
	r, err := io_.Open(ctx(t), loc)
	if err != nil {
		t.Fatalf("open %s: %v", loc, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read %s: %v", loc, err)
	}
	return b
}

func list(t *testing.T, io_ fileio.IO, dir string) []string {
	t.Helper()
	var out []string
	if err := io_.List(ctx(t), dir, func(f fileio.File) error { out = append(out, f.Location); return nil }); err != nil &&
		!fileio.IsNotExist(err) {
		t.Fatalf("list %s: %v", dir, err)
	}
	sort.Strings(out)
	return out
}

// Create, read back, refuse to replace, list, delete: the same contract on every file system.
func TestFileContract(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			loc := b.root + "/metadata/00001-a.metadata.json"
			fs, err := b.r.For("c", loc)
			if err != nil {
				t.Fatal(err)
			}
			data := bytes.Repeat([]byte(`{"format-version":2}`), 4000) // 80 kB: more than one HDFS packet
			if err := fs.Create(ctx(t), loc, data); err != nil {
				t.Fatalf("create: %v", err)
			}
			if got := readAll(t, fs, loc); !bytes.Equal(got, data) {
				t.Fatalf("read back %d bytes, wrote %d", len(got), len(data))
			}
			if err := fs.Create(ctx(t), loc, []byte("other")); !errors.Is(err, fileio.ErrExist) {
				t.Fatalf("a second create of the same name: want ErrExist, got %v", err)
			}
			if got := readAll(t, fs, loc); !bytes.Equal(got, data) {
				t.Fatal("the refused create changed the file")
			}
			other := b.root + "/data/part-0.parquet"
			if err := fs.Create(ctx(t), other, []byte("x")); err != nil {
				t.Fatal(err)
			}
			got := list(t, fs, b.root)
			if len(got) != 2 || !strings.HasSuffix(got[0], "/data/part-0.parquet") || !strings.HasSuffix(got[1], "/metadata/00001-a.metadata.json") {
				t.Fatalf("list %s: %v (no temporary files, no folders)", b.root, got)
			}
			if _, err := fs.Open(ctx(t), b.root+"/metadata/missing.json"); !errors.Is(err, fileio.ErrNotExist) {
				t.Fatalf("open of a missing file: want ErrNotExist, got %v", err)
			}
			if err := fs.Delete(ctx(t), loc); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if _, err := fs.Open(ctx(t), loc); !errors.Is(err, fileio.ErrNotExist) {
				t.Fatalf("open after delete: want ErrNotExist, got %v", err)
			}
		})
	}
}

// RemoveTree deletes a table folder below an allowed root, refuses one outside it, and reports a missing one.
func TestRemoveTree(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			fs, err := b.r.For("c", b.root)
			if err != nil {
				t.Fatal(err)
			}
			root, dir, keep := b.root+"/ext", b.root+"/ext/t1", b.root+"/ext/t10/keep"
			for i := 0; i < 5; i++ {
				if err := fs.Create(ctx(t), fmt.Sprintf("%s/p=%d/f%d", dir, i%2, i), []byte("data")); err != nil {
					t.Fatal(err)
				}
			}
			if err := fs.Create(ctx(t), keep, []byte("neighbour")); err != nil {
				t.Fatal(err)
			}
			if _, err := fs.RemoveTree(ctx(t), b.root+"/other", dir); err == nil {
				t.Fatal("RemoveTree below another root: want an error")
			}
			n, err := fs.RemoveTree(ctx(t), root, dir)
			if err != nil {
				t.Fatalf("RemoveTree: %v", err)
			}
			if n != 5 && n != -1 {
				t.Fatalf("RemoveTree deleted %d files, want 5", n)
			}
			if got := list(t, fs, root); len(got) != 1 || !strings.HasSuffix(got[0], "/ext/t10/keep") {
				t.Fatalf("after RemoveTree %s: %v (the neighbour t10 must stay)", dir, got)
			}
			if _, err := fs.RemoveTree(ctx(t), root, dir); !errors.Is(err, fileio.ErrNotExist) {
				t.Fatalf("RemoveTree of a missing folder: want ErrNotExist, got %v", err)
			}
		})
	}
}

// hdfsAdmin is a client of the cluster as its superuser (hdfs), for checks.
func hdfsAdmin(t *testing.T, h *testbed.HDFS) *hdfs.Client {
	t.Helper()
	o := hdfs.ClientOptions{Addresses: []string{strings.TrimPrefix(h.URI, "hdfs://")}, User: "hdfs"}
	if h.Kerberos != nil {
		kt, err := keytab.Load(filepath.Join(h.Dir, "hdfs.keytab"))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := krbconfig.Load(kdc.Krb5Conf)
		if err != nil {
			t.Fatal(err)
		}
		cl := krbclient.NewWithKeytab("hdfs/localhost", kdc.Realm, kt, cfg, krbclient.DisablePAFXFAST(true))
		if err := cl.Login(); err != nil {
			t.Fatal(err)
		}
		o.KerberosClient, o.KerberosServicePrincipleName, o.DataTransferProtection = cl, "hdfs/localhost", "authentication"
	}
	c, err := hdfs.NewClient(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// With impersonation on, files are created as the request's user (the proxy's principal is an HDFS proxy user);
// without it, or without a user, as the proxy.
func TestHDFSImpersonation(t *testing.T) {
	need(t)
	t.Setenv("HADOOP_USER_NAME", proxyUser)
	for _, h := range []*testbed.HDFS{plainHDFS, krbHDFS} {
		name := "plain"
		if h.Kerberos != nil {
			name = "kerberos"
		}
		t.Run(name, func(t *testing.T) {
			admin := hdfsAdmin(t, h)
			dir := fmt.Sprintf("/imp-%d", time.Now().UnixNano())
			imp := newResolver(t, h.ClientConf(), true, nil)
			fs, _ := imp.For("c", h.URI)
			if err := fs.Create(fileio.WithUser(ctx(t), "alice"), h.URI+dir+"/a.json", []byte("a")); err != nil {
				t.Fatalf("create as alice: %v", err)
			}
			if err := fs.Create(ctx(t), h.URI+dir+"/proxy.json", []byte("p")); err != nil {
				t.Fatalf("create without a user: %v", err)
			}
			off := newResolver(t, h.ClientConf(), false, nil)
			fs2, _ := off.For("c", h.URI)
			if err := fs2.Create(fileio.WithUser(ctx(t), "alice"), h.URI+dir+"/off.json", []byte("o")); err != nil {
				t.Fatalf("create with impersonation off: %v", err)
			}
			for file, want := range map[string]string{"a.json": "alice", "proxy.json": proxyUser, "off.json": proxyUser} {
				fi, err := admin.Stat(dir + "/" + file)
				if err != nil {
					t.Fatal(err)
				}
				if got := fi.(*hdfs.FileInfo).Owner(); got != want {
					t.Errorf("owner of %s = %q, want %q", file, got, want)
				}
			}
		})
	}
}

// A proxy principal that is not an HDFS proxy user is refused by the NameNode, with its reason.
func TestHDFSImpersonationRefused(t *testing.T) {
	need(t)
	t.Setenv("HADOOP_USER_NAME", "nobody-proxy")
	r := newResolver(t, plainHDFS.ClientConf(), true, nil)
	fs, _ := r.For("c", plainHDFS.URI)
	err := fs.Create(fileio.WithUser(ctx(t), "alice"), plainHDFS.URI+fmt.Sprintf("/refused-%d/a.json", time.Now().UnixNano()), []byte("a"))
	if err == nil || !strings.Contains(err.Error(), "mpersonat") && !strings.Contains(err.Error(), "AuthorizationException") {
		t.Fatalf("impersonation by a principal that is no proxy user: want the NameNode's refusal, got %v", err)
	}
}

// RPC protection beyond authentication (GSSAPI integrity and privacy on the NameNode's connections), each on a
// cluster of its own: the same contract holds, as the proxy user and as an impersonated one. DataNode connections
// beyond authentication are refused at start (the library cannot read blocks over them: with
// dfs.data.transfer.protection=integrity or privacy on the cluster, writes succeeded and every read failed with
// "proto: cannot parse invalid wire-format data"); TestStorageKeysRefused shows the refusal.
func TestHDFSRPCProtection(t *testing.T) {
	need(t)
	for _, rpc := range []string{"integrity", "privacy"} {
		t.Run("rpc="+rpc, func(t *testing.T) {
			h := testbed.StartHDFST(t, testbed.HDFSOptions{
				Kerberos: &testbed.HDFSKerberos{KDC: kdc, RPCProtection: rpc},
				Conf:     []string{"hadoop.proxyuser." + proxyUser + ".hosts=*", "hadoop.proxyuser." + proxyUser + ".groups=*"},
			})
			r := newResolver(t, h.ClientConf(), true, nil)
			fs, _ := r.For("c", h.URI)
			data := bytes.Repeat([]byte("private "), 20000) // 160 kB: several packets
			for _, user := range []string{"", "alice"} {
				loc := fmt.Sprintf("%s/protected-%d/u%s.json", h.URI, time.Now().UnixNano(), user)
				if err := fs.Create(fileio.WithUser(ctx(t), user), loc, data); err != nil {
					t.Fatalf("create as %q: %v", user, err)
				}
				if got := readAll(t, fs, loc); !bytes.Equal(got, data) {
					t.Fatalf("read back %d bytes, wrote %d", len(got), len(data))
				}
			}
		})
	}
}

// Bad storage keys refuse the start with the key named; a credential's value is never in the message.
func TestStorageKeysRefused(t *testing.T) {
	need(t)
	krb := map[string]string{"hadoop.security.authentication": "kerberos", "dfs.namenode.kerberos.principal": "hdfs/_HOST@" + kdc.Realm}
	with := func(base map[string]string, kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	const access, secret = "AKIA-VISIBLE-NOT", "SECRET-VISIBLE-NOT"
	for _, c := range []struct {
		conf     map[string]string
		noLogin  bool
		want     string
		wantNone []string
	}{
		{conf: with(nil, "hadoop.security.authentication", "ldap"), want: "catalog.c.conf.hadoop.security.authentication=\"ldap\": must be simple or kerberos"},
		{conf: with(nil, "hadoop.security.authentication", "kerberos"), want: "catalog.c.conf.dfs.namenode.kerberos.principal: required"},
		{conf: krb, noLogin: true, want: "security.client-principal and security.client-keytab"},
		{conf: with(krb, "dfs.data.transfer.protection", "privacy"), want: "catalog.c.conf.dfs.data.transfer.protection=\"privacy\": only authentication is supported"},
		{conf: with(krb, "dfs.data.transfer.protection", "authentication,integrity"), want: "only authentication is supported"},
		{conf: with(krb, "dfs.encrypt.data.transfer", "true"), want: "catalog.c.conf.dfs.encrypt.data.transfer=\"true\": only authentication"},
		{conf: with(nil, "dfs.data.transfer.protection", "authentication"), want: "needs catalog.c.conf.hadoop.security.authentication=kerberos"},
		{conf: with(nil, "dfs.data.transfer.protection", "sometimes"), want: "want authentication, integrity or privacy"},
		{conf: with(nil, "dfs.nameservices", "ns1"), want: "catalog.c.conf.dfs.namenode.rpc-address.ns1: required"},
		{conf: with(nil, "dfs.nameservices", "ns1", "dfs.ha.namenodes.ns1", "nn1,nn2", "dfs.namenode.rpc-address.ns1.nn1", "a:8020"),
			want: "catalog.c.conf.dfs.namenode.rpc-address.ns1.nn2: required (NameNode nn2 of catalog.c.conf.dfs.ha.namenodes.ns1)"},
		{conf: with(nil, "dfs.nameservices", "ns1", "dfs.namenode.rpc-address.ns1", "no-port"), want: "want host:port"},
		{conf: with(nil, "fs.defaultFS", "hdfs:///"), want: "catalog.c.conf.fs.defaultFS=\"hdfs:///\": an hdfs:// URI needs a NameNode"},
		{conf: with(nil, "dfs.client.use.datanode.hostname", "yes"), want: "must be true or false"},
		{conf: with(nil, "fs.s3a.access.key", access), want: "catalog.c.conf.fs.s3a.access.key is set but catalog.c.conf.fs.s3a.secret.key is not", wantNone: []string{access}},
		{conf: with(nil, "fs.s3a.secret.key", secret), want: "catalog.c.conf.fs.s3a.secret.key is set but catalog.c.conf.fs.s3a.access.key is not", wantNone: []string{secret}},
		{conf: with(nil, "fs.s3a.endpoint", "http://"+access+":"+secret+"@s3.example.com"), want: "must not carry credentials", wantNone: []string{access, secret}},
		{conf: with(nil, "fs.s3a.path.style.access", "maybe"), want: "catalog.c.conf.fs.s3a.path.style.access=\"maybe\": must be true or false"},
		{conf: with(nil, "fs.s3a.access.key", access, "fs.s3a.secret.key", secret, "fs.s3a.bucket.b1.access.key", "OTHER-ACCESS"),
			want: "catalog.c.conf.fs.s3a.bucket.b1.access.key is set but catalog.c.conf.fs.s3a.bucket.b1.secret.key is not", wantNone: []string{access, secret, "OTHER-ACCESS"}},
		{conf: with(nil, "fs.s3a.endpoint", "ftp://s3.example.com"), want: `scheme "ftp": want http or https`},
	} {
		o := fileio.Options{Catalogs: []fileio.Catalog{{Name: "c", Conf: c.conf}}, Krb5Conf: kdc.Krb5Conf}
		if !c.noLogin {
			o.ClientPrincipal, o.ClientKeytab = kdc.Principal(proxyUser), proxyKT
		}
		_, err := fileio.New(o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want an error containing %q", c.conf, err, c.want)
			continue
		}
		for _, s := range c.wantNone {
			if strings.Contains(err.Error(), s) {
				t.Errorf("%v: the error shows a credential: %v", c.conf, err)
			}
		}
	}
}

// Local locations in every form Iceberg writes them; other hosts and schemes are named in the error.
func TestLocalAndSchemes(t *testing.T) {
	dir := t.TempDir()
	r, err := fileio.New(fileio.Options{Catalogs: []fileio.Catalog{{Name: "c"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, loc := range []string{dir + "/a/b.json", "file:" + dir + "/c/d.json", "file://" + dir + "/e.json", "file://localhost" + dir + "/f.json"} {
		fs, err := r.For("c", loc)
		if err != nil {
			t.Fatalf("%s: %v", loc, err)
		}
		if err := fs.Create(context.Background(), loc, []byte("{}")); err != nil {
			t.Fatalf("%s: %v", loc, err)
		}
		if got := readAll(t, fs, loc); string(got) != "{}" {
			t.Fatalf("%s: read %q", loc, got)
		}
		if err := fs.Delete(context.Background(), loc); err != nil {
			t.Fatalf("%s: %v", loc, err)
		}
	}
	for loc, want := range map[string]string{"viewfs://ns/t": `scheme "viewfs"`, "gs://b/t": `scheme "gs"`, "relative/p": "relative"} {
		if _, err := r.For("c", loc); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("For(%s) = %v, want an error containing %q", loc, err, want)
		}
	}
	if _, err := fileio.LocalPath("file://otherhost/p"); err == nil || !strings.Contains(err.Error(), "otherhost") {
		t.Errorf("LocalPath(file://otherhost/p) = %v", err)
	}
	if _, err := r.For("unknown", "s3://b/k"); err == nil || !strings.Contains(err.Error(), `catalog "unknown"`) {
		t.Errorf("For(unknown catalog) = %v", err)
	}
}
