package dbcache_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/thrift/lib/go/thrift"
	"github.com/hms-proxy/hms-proxy/router/dbcache"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// backend loads reply bodies from a real metastore the way the router's
// backend pool does: one call per load over TCP, the reply body kept as
// bytes, cacheable unless it carries an exception. calls counts what the
// metastore received.
type backend struct {
	addr  string
	calls atomic.Int32
}

func (b *backend) loader(method string, args wire.Value) dbcache.Loader {
	req := wire.AppendMessage(nil, wire.Header{Name: method, Type: wire.Call, SeqID: 7}, &args)
	return func(ctx context.Context) ([]byte, bool, error) {
		b.calls.Add(1)
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", b.addr)
		if err != nil {
			return nil, false, err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := c.Write(req); err != nil {
			return nil, false, err
		}
		var m wire.Message
		if err := wire.NewReader(c, 64<<20).Next(&m); err != nil {
			return nil, false, err
		}
		if m.Type != wire.Reply {
			return nil, false, fmt.Errorf("%s: message type %d", method, m.Type)
		}
		body := m.Body()
		v, err := wire.DecodeStruct(body)
		if err != nil {
			return nil, false, err
		}
		return body, v.Field(0) != nil, nil // a result, not an exception
	}
}

func decode(t *testing.T, body []byte) wire.Value {
	t.Helper()
	v, err := wire.DecodeStruct(body)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestCacheOverARealMetastore: the caches hold a real Hive 3.1.3
// metastore's get_database and get_all_databases replies; a change made on
// the metastore stays invisible through the cache until the router's
// invalidation, and is visible to the very next read after it; 1,000
// concurrent identical reads reach the metastore once.
func TestCacheOverARealMetastore(t *testing.T) {
	m := testbed.StartMetastoreT(t, testbed.Hive313)
	addr := strings.TrimPrefix(m.URI, "thrift://")
	cfg := &thrift.TConfiguration{ConnectTimeout: 10 * time.Second, SocketTimeout: 60 * time.Second}
	sock := thrift.NewTSocketConf(addr, cfg)
	if err := sock.Open(); err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	tr := thrift.NewTBufferedTransport(sock, 8192)
	p := thrift.NewTBinaryProtocolConf(tr, cfg)
	direct := thriftgen.NewClient(thrift.NewTStandardClient(p, p))
	ctx := context.Background()
	db := fmt.Sprintf("cache_%x", time.Now().UnixNano()&0xffffff)
	if err := direct.CreateDatabase(ctx, &thriftgen.Database{Name: db, Description: "first", Parameters: map[string]string{}}); err != nil {
		t.Fatal(err)
	}
	defer direct.DropDatabase(ctx, db, true, true)

	c, err := dbcache.New(dbcache.Options{
		List:     dbcache.CacheOptions{TTL: time.Hour, SharedAcrossUsers: true},
		Metadata: dbcache.CacheOptions{TTL: time.Hour, SharedAcrossUsers: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	be := &backend{addr: addr}
	getDB := be.loader("get_database", wire.Struct(wire.Field{ID: 1, V: wire.Str(db)}))
	key := dbcache.Key{Catalog: "catalog1", Name: db}
	description := func() string {
		t.Helper()
		body, _, err := c.Get(ctx, dbcache.DatabaseMetadata, key, nil, getDB)
		if err != nil {
			t.Fatal(err)
		}
		v := decode(t, body)
		return v.Field(0).Field(2).String()
	}

	// 1,000 concurrent identical reads: one call reaches the metastore.
	var wg sync.WaitGroup
	descs := make([]string, 1000)
	for i := range descs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, _, err := c.Get(ctx, dbcache.DatabaseMetadata, key, nil, getDB)
			if err != nil {
				t.Error(err)
				return
			}
			v, _ := wire.DecodeStruct(body)
			descs[i] = v.Field(0).Field(2).String()
		}()
	}
	wg.Wait()
	if n := be.calls.Load(); n != 1 {
		t.Errorf("1,000 concurrent get_database reads reached the metastore %d times, want 1", n)
	}
	for i, d := range descs {
		if d != "first" {
			t.Fatalf("reader %d got description %q", i, d)
		}
	}

	// A change on the metastore: the cache answers the old value until the
	// invalidation the router makes after alter_database, then the new one.
	if err := direct.AlterDatabase(ctx, db, &thriftgen.Database{Name: db, Description: "second", Parameters: map[string]string{}}); err != nil {
		t.Fatal(err)
	}
	if d := description(); d != "first" {
		t.Fatalf("before the invalidation the cache answers %q, want the cached \"first\"", d)
	}
	c.InvalidateDatabase("catalog1", strings.ToUpper(db))
	if d := description(); d != "second" {
		t.Fatalf("the read after the invalidation answered %q, want \"second\"", d)
	}

	// The database list: a database created on the metastore appears after
	// the invalidation of its catalog's lists.
	list := be.loader("get_all_databases", wire.Struct())
	lkey := dbcache.Key{Catalog: "catalog1", Name: dbcache.ListName("get_all_databases", "")}
	names := func() []string {
		t.Helper()
		body, _, err := c.Get(ctx, dbcache.DatabaseList, lkey, nil, list)
		if err != nil {
			t.Fatal(err)
		}
		v := decode(t, body)
		var out []string
		for _, e := range v.Field(0).Elems {
			out = append(out, string(e.Str))
		}
		return out
	}
	before := names()
	db2 := db + "_b"
	if err := direct.CreateDatabase(ctx, &thriftgen.Database{Name: db2, Parameters: map[string]string{}}); err != nil {
		t.Fatal(err)
	}
	defer direct.DropDatabase(ctx, db2, true, true)
	if got := names(); slices.Contains(got, db2) || !slices.Equal(got, before) {
		t.Fatalf("the cached list changed before the invalidation: %v", got)
	}
	c.InvalidateDatabase("catalog1", db2)
	if got := names(); !slices.Contains(got, db2) || !slices.Contains(got, db) {
		t.Fatalf("the list after create_database and its invalidation: %v", got)
	}

	// A database that does not exist: the NoSuchObjectException reply is
	// answered and not cached.
	missing := be.loader("get_database", wire.Struct(wire.Field{ID: 1, V: wire.Str(db + "_none")}))
	n0 := be.calls.Load()
	for i := 0; i < 2; i++ {
		body, _, err := c.Get(ctx, dbcache.DatabaseMetadata, dbcache.Key{Catalog: "catalog1", Name: db + "_none"}, nil, missing)
		if err != nil {
			t.Fatal(err)
		}
		v := decode(t, body)
		if v.Field(0) != nil || v.Field(1) == nil || !strings.Contains(v.Field(1).Field(1).String(), "_none") {
			t.Fatalf("reply for a missing database: %+v", v)
		}
	}
	if be.calls.Load()-n0 != 2 {
		t.Fatalf("the NoSuchObjectException reply was cached (%d calls for 2 reads)", be.calls.Load()-n0)
	}
}
