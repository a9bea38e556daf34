package compat

import (
	"bytes"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Skewed-location maps (a map keyed by lists), constraints, column
// statistics and partition parameters written through the proxy into a
// non-default catalog read back identical through the proxy and directly.
func TestNothingLostThroughTheProxy(t *testing.T) {
	e2eutil.NeedHive(t)
	p := proxytest.Start(t, e2eutil.TwoCatalogs())
	db := e2eutil.Uniq("lossless")
	testbed.RunScenarioT(t, testbed.Hive313, p.URI("primary"), "lossless",
		"--db", "catalog2__"+db, "--table", "t", "--direct-uri", e2eutil.HMS2.URI, "--direct-db", db)
}

// The same through the default catalog, whose names are not prefixed.
func TestNothingLostInTheDefaultCatalog(t *testing.T) {
	e2eutil.NeedHive(t)
	p := proxytest.Start(t, e2eutil.TwoCatalogs())
	db := e2eutil.Uniq("lossless_d")
	testbed.RunScenarioT(t, testbed.Hive313, p.URI("primary"), "lossless",
		"--db", db, "--table", "t", "--direct-uri", e2eutil.HMS1.URI, "--direct-db", db)
}

// Fields a newer client sends that neither the proxy's schema nor the
// metastore knows (ids 77, 99, 100 here) reach the metastore byte for byte:
// the proxy rewrites the name it routes by and nothing else. The Tap records
// what the metastore received, and the database it created answers through
// the proxy under its federated name.
func TestUnknownFieldIdsReachTheMetastoreByteForByte(t *testing.T) {
	e2eutil.NeedHive(t)
	tap := proxytest.NewTap(t, e2eutil.HMS2.URI)
	p := proxytest.Start(t, e2eutil.TwoCatalogs("catalog.catalog2.conf.hive.metastore.uris="+tap.URI()))
	db := e2eutil.Uniq("unk")
	future := wire.Struct(
		wire.Field{ID: 1, V: wire.I64(7)},
		wire.Field{ID: 2, V: wire.List(wire.TString, wire.Str("a"), wire.Str("b"))},
		wire.Field{ID: 3, V: wire.Value{Type: wire.TDouble, Dbl: 2.5}},
	)
	database := func(name string) wire.Value {
		return wire.Struct(
			wire.Field{ID: 1, V: wire.Str(name)},
			wire.Field{ID: 99, V: wire.Str("from-a-newer-hive")},
			wire.Field{ID: 3, V: wire.Str("file:///tmp/" + db)},
			wire.Field{ID: 100, V: future},
		)
	}
	args := func(name string) wire.Value {
		return wire.Struct(wire.Field{ID: 77, V: wire.I32(5)}, wire.Field{ID: 1, V: database(name)})
	}
	c := e2eutil.DialRaw(t, p.URI("primary"))
	c.Send(e2eutil.CallBytes("create_database", 21, args("catalog2__"+db)))
	m, err := c.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if m.Type != wire.Reply {
		_, msg, _ := wire.ParseAppException(m.Body())
		t.Fatalf("create_database with unknown fields: want a reply, got message type %d %q", m.Type, msg)
	}
	res, err := wire.DecodeStruct(m.Body())
	if err != nil || len(res.Fields) != 0 {
		t.Fatalf("create_database with unknown fields: want an empty (void) result, got %+v %v", res.Fields, err)
	}
	want := args(db)
	var got *proxytest.TapCall
	for _, call := range tap.Calls() {
		if call.Method == "create_database" {
			got = &call
		}
	}
	if got == nil {
		t.Fatalf("the metastore never received create_database; it saw %v", tap.Methods())
	}
	if g, w := got.Args.Encode(), want.Encode(); !bytes.Equal(g, w) {
		t.Fatalf("the metastore received other bytes than the client sent (name rewritten aside):\n got % x\nwant % x", g, w)
	}
	cl := proxytest.Client(t, p.URI("primary"))
	d, err := cl.GetDatabase(e2eutil.Ctx(t), "catalog2__"+db)
	if err != nil || d.Name != "catalog2__"+db {
		t.Fatalf("the database created with unknown fields: %+v %v", d, err)
	}
	if err := cl.DropDatabase(e2eutil.Ctx(t), "catalog2__"+db, true, true); err != nil {
		t.Fatal(err)
	}
}
