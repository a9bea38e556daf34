package compat

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/testbed/difftest"
	"github.com/hms-proxy/hms-proxy/wire"
)

// What the real HiveMetaStoreClient of 3.1.3 and of 4.1.0 sends (the test bed's version, ddl and lossless
// scenarios, recorded by a tap between the client and a metastore of its own version) is accepted by the strict
// reader call for call, and Hive's own reader of both versions ends each call at the same byte and decodes the
// same arguments as the proxy sees. HMS_PROXY_DIFF_CAPTURE=<file> writes the distinct calls there (the seed
// corpus of testbed/difftest: testbed/difftest/testdata/realclients.frames).
func TestStrictAgreesWithHiveOnRealClients(t *testing.T) {
	e2eutil.NeedHive(t)
	strict, err := wire.NewStrictSchema(0)
	if err != nil {
		t.Fatal(err)
	}
	readers := []*testbed.HiveReader{testbed.StartHiveReaderT(t, testbed.Hive313), testbed.StartHiveReaderT(t, testbed.Hive410)}
	c, err := difftest.New(difftest.Options{Strict: strict, Readers: readers})
	if err != nil {
		t.Fatal(err)
	}
	var frames []difftest.Frame
	seen := map[string]bool{}
	for _, run := range []struct {
		client testbed.Version
		ms     *testbed.Metastore
	}{{testbed.Hive313, e2eutil.HMS1}, {testbed.Hive410, e2eutil.HMS4}} {
		tap := proxytest.NewTap(t, run.ms.URI)
		db, ldb := e2eutil.Uniq("sdiff"), e2eutil.Uniq("sdiff_l")
		testbed.RunScenarioT(t, run.client, tap.URI(), "version")
		testbed.RunScenarioT(t, run.client, tap.URI(), "ddl", "--db", db)
		testbed.RunScenarioT(t, run.client, tap.URI(), "lossless",
			"--db", ldb, "--table", "t", "--direct-uri", run.ms.URI, "--direct-db", ldb)
		calls := tap.Calls()
		if len(calls) < 30 {
			t.Fatalf("the Hive %s client made only %d calls", run.client, len(calls))
		}
		for _, call := range calls {
			raw := wire.AppendMessage(nil, wire.Header{Name: call.Method, Type: call.Type, SeqID: call.SeqID}, &call.Args)
			key := string(withoutSeqID(raw))
			if seen[key] {
				continue
			}
			seen[key] = true
			frames = append(frames, difftest.Frame{Name: fmt.Sprintf("client-%s/%s", run.client, call.Method), Raw: raw})
		}
	}
	methods := map[string]bool{}
	for _, f := range frames {
		v, err := c.Check(f.Raw, true)
		if err != nil {
			t.Fatal(err)
		}
		if v.Refused != nil || len(v.Accepted) != 1 {
			t.Errorf("%s: the strict reader refuses what a real client sent: %v\n%x", f.Name, v.Refused, f.Raw)
		}
		for _, d := range v.Disagreements {
			t.Errorf("%s: %s", f.Name, d)
		}
		for _, u := range v.OwnUnread() {
			t.Errorf("%s: %s", f.Name, u)
		}
		methods[f.Name] = true
	}
	t.Logf("%d distinct calls of %d methods from the real clients agree", len(frames), len(methods))
	if out := os.Getenv("HMS_PROXY_DIFF_CAPTURE"); out != "" && !t.Failed() {
		if err := difftest.WriteFrames(out, frames); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", out)
	}
}

// withoutSeqID is a call with its sequence id zeroed (the same call made twice is kept once).
func withoutSeqID(raw []byte) []byte {
	b := wire.Buf{B: raw}
	if _, err := b.ParseHeader(); err != nil {
		return raw
	}
	c := bytes.Clone(raw)
	binary.BigEndian.PutUint32(c[b.Pos-4:], 0)
	return c
}
