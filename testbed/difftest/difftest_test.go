package difftest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/wire"
)

// One pair of Hive readers (3.1.3 and 4.1.0) per test process, shared by every test and by the fuzz target.
var shared struct {
	once    sync.Once
	checker *Checker
	readers []*testbed.HiveReader
	err     error
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, r := range shared.readers {
		r.Close()
	}
	os.Exit(code)
}

func checker(t testing.TB) *Checker {
	t.Helper()
	if os.Getenv("HMS_PROXY_SKIP_REAL_HIVE") == "1" {
		t.Skip(testbed.ErrSkip.Error())
	}
	shared.once.Do(func() {
		strict, err := wire.NewStrictSchema(0)
		if err != nil {
			shared.err = err
			return
		}
		for _, v := range []testbed.Version{testbed.Hive313, testbed.Hive410} {
			r, err := testbed.StartHiveReader(v)
			if err != nil {
				shared.err = err
				return
			}
			shared.readers = append(shared.readers, r)
		}
		shared.checker, shared.err = New(Options{Strict: strict, Readers: shared.readers})
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.checker
}

func realClientFrames(t testing.TB) []Frame {
	t.Helper()
	frames, err := ReadFrames(filepath.Join("testdata", "realclients.frames"))
	if err != nil {
		t.Fatalf("%v (capture it with HMS_PROXY_DIFF_CAPTURE=$PWD/testbed/difftest/testdata/realclients.frames go test ./e2e -run TestStrictAgreesWithHiveOnRealClients)", err)
	}
	return frames
}

// tally counts what Hive did with the calls the proxy refused, by the proxy's reason and Hive's outcome.
type tally map[string]int

func (tl tally) add(v *Verdict) {
	reason := "malformed"
	var se *wire.StrictError
	switch {
	case errors.As(v.Refused, &se):
		reason = se.Reason
	case errors.Is(v.Refused, wire.ErrTruncated):
		reason = "truncated"
	case errors.Is(v.Refused, wire.ErrTooLarge):
		reason = "too_large"
	}
	for ver, hr := range v.Hive {
		what := hr.Stop
		if len(hr.Messages) > 0 {
			m := hr.Messages[0]
			what = m.Outcome
			if m.Outcome == "ok" && len(hr.Messages) > 1 {
				what = "ok, then a further message"
			}
		}
		if i := strings.IndexAny(what, ":("); i > 0 {
			what = what[:i]
		}
		tl[fmt.Sprintf("proxy %-13s Hive %s %s", reason, ver, what)]++
	}
}

func (tl tally) log(t *testing.T) {
	keys := make([]string, 0, len(tl))
	for k := range tl {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%7d  %s", tl[k], k)
	}
}

// knownDefects are kinds of disagreement this harness found that the strict reader does not prevent yet; each
// would have its own test, skipped with the reason. The corpus tests count them; the fuzz target skips an input
// that shows only these. Anything else fails. There are none: the last one (required fields Hive checks at the
// end of each struct) is refused now (TestMissingRequiredFieldIsRefusedWhereHiveStopsEarly).
var knownDefects []struct{ name, marker string }

func knownDefect(d Disagreement) string {
	for _, k := range knownDefects {
		if strings.Contains(d.Detail, k.marker) {
			return k.name
		}
	}
	return ""
}

// judge fails t for every disagreement that is not a known defect and counts the known ones.
func judge(t *testing.T, f Frame, v *Verdict, known map[string]int) {
	t.Helper()
	for _, d := range v.Disagreements {
		if k := knownDefect(d); k != "" {
			known[k]++
			continue
		}
		t.Errorf("%s: %s", f.Name, d)
	}
}

func logKnown(t *testing.T, known map[string]int) {
	for k, n := range known {
		t.Logf("%d disagreements of the known defect %q (TestKnownDefect*, skipped)", n, k)
	}
}

// checkAll checks frames that the proxy must accept whole, and that Hive must read as it does.
func checkAll(t *testing.T, frames []Frame) {
	c := checker(t)
	start := time.Now()
	notes := map[string]bool{}
	known := map[string]int{}
	unread := 0
	for _, f := range frames {
		v, err := c.Check(f.Raw, true)
		if err != nil {
			t.Fatal(err)
		}
		if v.Refused != nil || len(v.Accepted) != 1 {
			t.Errorf("%s: the strict reader refuses a well-formed call: %v\n%x", f.Name, v.Refused, f.Raw)
		}
		judge(t, f, v, known)
		for _, n := range v.Notes {
			notes[n] = true
		}
		for _, u := range v.OwnUnread() {
			t.Errorf("%s: %s", f.Name, u)
		}
		unread += len(v.Unread)
	}
	logKnown(t, known)
	t.Logf("%d calls in %v (%d readings skipped: methods a version does not have); %d distinct fields one of the Hive versions does not know and skips",
		len(frames), time.Since(start), unread, len(notes))
}

// Every method of the canonical API, with every argument field set (and every member of the unions): the proxy
// accepts each call, and both Hive versions read it as the proxy does.
func TestGeneratedCallsAgree(t *testing.T) {
	frames := Generated()
	if len(frames) < 298 {
		t.Fatalf("only %d generated calls for 298 methods", len(frames))
	}
	checkAll(t, frames)
}

// What the real HiveMetaStoreClient 3.1.3 and 4.1.0 sent in the test bed's scenarios (captured by the e2e test
// TestStrictAgreesWithHiveOnRealClients, which also checks them live).
func TestRealClientFramesAgree(t *testing.T) {
	frames := realClientFrames(t)
	if len(frames) < 50 {
		t.Fatalf("only %d real-client calls in testdata", len(frames))
	}
	checkAll(t, frames)
}

// mutationCorpus is the mutation corpus of make test: every generated and real-client call mutated, at most
// perSeed variants each, the 0..255 type sweeps on two seeds.
func mutationCorpus(t testing.TB, perSeed int) []Frame {
	seeds := append(Generated(), realClientFrames(t)...)
	return Mutations(seeds, rand.New(rand.NewPCG(9, 9)), perSeed, 2)
}

// Thousands of hostile variants of the calls above: wherever the proxy accepts one, Hive reads it as the proxy
// does; where the proxy refuses one, what Hive would have made of it is tallied (the reason the door is shut).
func TestMutationsAgree(t *testing.T) {
	c := checker(t)
	muts := mutationCorpus(t, 20)
	if len(muts) < 5000 {
		t.Fatalf("only %d mutations", len(muts))
	}
	start := time.Now()
	tl := tally{}
	known := map[string]int{}
	accepted := 0
	for _, f := range muts {
		v, err := c.Check(f.Raw, true)
		if err != nil {
			t.Fatal(err)
		}
		if v.Refused == nil {
			accepted++
		} else {
			tl.add(v)
		}
		judge(t, f, v, known)
	}
	t.Logf("%d mutations in %v: %d accepted whole; what Hive does with the refused ones:", len(muts), time.Since(start), accepted)
	tl.log(t)
	logKnown(t, known)
}

// The frame of issue 9 (defect 1): the strict reader refuses it, and the harness shows what the lax walk missed:
// read as the lax walk read it, Hive ends the call 44 bytes early and reads a second call. (A harness that cannot
// see this defect would prove nothing.)
func TestHarnessSeesTheSmuggledFrameOfIssue9(t *testing.T) {
	c := checker(t)
	raw := smuggledFrame()
	v, err := c.Check(raw, true)
	if err != nil {
		t.Fatal(err)
	}
	var se *wire.StrictError
	if !errors.As(v.Refused, &se) || se.Reason != wire.ReasonElementType {
		t.Fatalf("want an element_type refusal, got %v", v.Refused)
	}
	lax, err := wire.ParseMessage(raw, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range c.readers {
		lv := &Verdict{}
		if err := c.compare(lv, 0, lax, Forwarded(lax), r); err != nil {
			t.Fatal(err)
		}
		if len(lv.Disagreements) != 1 || !strings.Contains(lv.Disagreements[0].Detail, `a second message "get_table"`) {
			t.Fatalf("Hive %s on the lax walk's call: want a call ending early and a second get_table, got %v", r.Version, lv.Disagreements)
		}
		t.Logf("lax walk vs Hive %s: %s", r.Version, lv.Disagreements[0].Detail)
	}
}

func smuggledFrame() []byte {
	var b []byte
	b = wire.AppendHeader(b, wire.Header{Name: "get_partitions_by_names", Type: wire.Call, SeqID: 11})
	b = append(wire.AppendFieldHeader(b, wire.TString, 1), wire.AppendString(nil, "catalog2__hl_c2")...)
	b = append(wire.AppendFieldHeader(b, wire.TString, 2), wire.AppendString(nil, "t2")...)
	b = append(wire.AppendFieldHeader(b, wire.TList, 3), wire.TI64, 0, 0, 0, 11)
	b = append(b, make([]byte, 44)...)
	b = append(b, wire.TStop)
	b = wire.AppendHeader(b, wire.Header{Name: "get_table", Type: wire.Call, SeqID: 0x386})
	b = append(wire.AppendFieldHeader(b, wire.TString, 1), wire.AppendString(nil, "hl_c2")...)
	b = append(wire.AppendFieldHeader(b, wire.TString, 2), wire.AppendString(nil, "t2")...)
	return append(b, wire.TStop, wire.TStop)
}

// The comparison of arguments can fail: the proxy's view of one call against Hive's reading of another that
// differs in one string is a disagreement.
func TestHarnessSeesDifferentArguments(t *testing.T) {
	c := checker(t)
	mk := func(db string) *wire.Message {
		args := wire.Struct(wire.Field{ID: 1, V: wire.Str(db)}, wire.Field{ID: 2, V: wire.Str("t")})
		m, err := wire.ParseMessage(wire.AppendMessage(nil, wire.Header{Name: "get_table", Type: wire.Call, SeqID: 1}, &args), 0)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	v := &Verdict{}
	if err := c.compare(v, 0, mk("sales"), Forwarded(mk("sales_")), c.readers[0]); err != nil {
		t.Fatal(err)
	}
	if err := c.compare(v, 0, mk("sales"), Forwarded(mk("other")), c.readers[0]); err != nil {
		t.Fatal(err)
	}
	if len(v.Disagreements) != 2 {
		t.Fatalf("two calls that differ from the proxy's view: want 2 disagreements, got %v", v.Disagreements)
	}
	if !strings.Contains(v.Disagreements[1].Detail, "decoded other arguments") {
		t.Fatalf("same length, other bytes: %s", v.Disagreements[1].Detail)
	}
}

// A union holding two fields (or none): Hive's union reader (TUnion, libthrift 0.9.3 and 0.16 alike) reads the
// first field and then one field header more, which it takes for the STOP without looking. Everything after is
// read out of step; with a string as the second member, its length's zero bytes end the union's enclosing
// structs and the call, and its content is, to Hive, a second request (here create_database) that the proxy
// never saw. Found by this harness; the strict reader now refuses such unions (reason "union").
func TestUnionsHiveReadsDifferentlyAreRefused(t *testing.T) {
	c := checker(t)
	smuggle := unionSmuggling(t)
	empty := unionCall(wire.Struct())
	for _, tc := range []struct {
		name string
		raw  []byte
		hive func(hr []HiveView) string
	}{
		{"a second member smuggles a call", smuggle, func(hv []HiveView) string {
			for _, h := range hv {
				if len(h.Read.Messages) < 2 || h.Read.Messages[1].Name != "create_database" || h.Read.Messages[1].Outcome != "ok" {
					return fmt.Sprintf("Hive %s should read a second call create_database: %+v", h.Version, h.Read)
				}
			}
			return ""
		}},
		{"an empty union", empty, func(hv []HiveView) string {
			for _, h := range hv {
				if m := h.Read.Messages[0]; m.Outcome == "ok" && m.End == len(empty) && len(h.Read.Messages) == 1 {
					return fmt.Sprintf("Hive %s reads the empty union as the proxy would: %+v", h.Version, h.Read)
				}
			}
			return ""
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hv []HiveView
			for _, r := range c.readers {
				hr, err := r.Read(tc.raw)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("Hive %s: %+v", r.Version, hr)
				hv = append(hv, HiveView{r.Version, hr})
			}
			if why := tc.hive(hv); why != "" {
				t.Fatal(why)
			}
			v, err := c.Check(tc.raw, false)
			if err != nil {
				t.Fatal(err)
			}
			var se *wire.StrictError
			if !errors.As(v.Refused, &se) || se.Reason != wire.ReasonUnion {
				t.Fatalf("the strict reader must refuse the call with reason union, got %v", v.Refused)
			}
			if !strings.Contains(se.Detail, "ColumnStatisticsData") {
				t.Fatalf("the refusal names the union: %s", se.Detail)
			}
		})
	}
}

// HiveView is one Hive version's reading of a stream.
type HiveView struct {
	Version testbed.Version
	Read    *testbed.HiveRead
}

// unionCall is update_table_column_statistics with one column whose ColumnStatisticsData is data.
func unionCall(data wire.Value) []byte {
	obj := wire.Struct(wire.Field{ID: 1, V: wire.Str("c")}, wire.Field{ID: 2, V: wire.Str("bigint")}, wire.Field{ID: 3, V: data})
	stats := wire.Struct(
		wire.Field{ID: 1, V: wire.Struct(wire.Field{ID: 1, V: wire.Bool(true)}, wire.Field{ID: 2, V: wire.Str("db")}, wire.Field{ID: 3, V: wire.Str("t")})},
		wire.Field{ID: 2, V: wire.List(wire.TStruct, obj)})
	args := wire.Struct(wire.Field{ID: 1, V: stats})
	return wire.AppendMessage(nil, wire.Header{Name: "update_table_column_statistics", Type: wire.Call, SeqID: 1}, &args)
}

// unionSmuggling builds the call of TestUnionsHiveReadsDifferentlyAreRefused: the union holds longStats and an
// unknown string member (id 99) of 128 bytes. Hive takes the string's field header for the union's STOP; the
// length 00 00 00 80 gives it three STOPs (the column, the statistics, the arguments: its call ends), and 0x80
// with the string's first three bytes 01 00 01 is the version word of a second message.
func unionSmuggling(t *testing.T) []byte {
	for n := 1; n < 200; n++ {
		db := wire.Struct(wire.Field{ID: 1, V: wire.Str(strings.Repeat("s", n))})
		args := wire.Struct(wire.Field{ID: 1, V: db})
		second := wire.AppendMessage(nil, wire.Header{Name: "create_database", Type: wire.Call, SeqID: 7}, &args)
		if len(second) != 129 {
			continue
		}
		if !bytes.HasPrefix(second, []byte{0x80, 0x01, 0x00, 0x01}) {
			t.Fatal("not a strict CALL header")
		}
		long := wire.Struct(wire.Field{ID: 3, V: wire.I64(0)}, wire.Field{ID: 4, V: wire.I64(1)})
		data := wire.Struct(wire.Field{ID: 2, V: long}, wire.Field{ID: 99, V: wire.Value{Type: wire.TString, Str: second[1:]}})
		return unionCall(data)
	}
	t.Fatal("no database name makes a 129-byte create_database")
	return nil
}

// Hive's generated reader checks required fields at the end of every struct (and reads an enum value it does not
// know as null, so a required enum field with such a value is unset too). It throws in the middle of the call;
// the server answers PROTOCOL_ERROR and reads the rest of the call (at least the arguments' STOP) as the next
// message on the connection. The strict reader refuses such a call (required_field), by the requiredness of the
// frontend's profile; Hive's readers confirm that they would have stopped one byte before the call's end.
func TestMissingRequiredFieldIsRefusedWhereHiveStopsEarly(t *testing.T) {
	c := checker(t)
	// lock(LockRequest{component: [LockComponent{type: EXCLUSIVE, level: TABLE, dbname: "db"}], hostname: "h"}):
	// LockRequest's required user is missing.
	comp := wire.Struct(wire.Field{ID: 1, V: wire.I32(3)}, wire.Field{ID: 2, V: wire.I32(2)}, wire.Field{ID: 3, V: wire.Str("db")})
	rq := wire.Struct(wire.Field{ID: 1, V: wire.List(wire.TStruct, comp)}, wire.Field{ID: 4, V: wire.Str("h")})
	args := wire.Struct(wire.Field{ID: 1, V: rq})
	raw := wire.AppendMessage(nil, wire.Header{Name: "lock", Type: wire.Call, SeqID: 1}, &args)
	v, err := c.Check(raw, true)
	if err != nil {
		t.Fatal(err)
	}
	var se *wire.StrictError
	if !errors.As(v.Refused, &se) || se.Reason != wire.ReasonRequired || !strings.Contains(se.Error(), "LockRequest.user") {
		t.Fatalf("the strict reader must refuse a LockRequest without its required user, naming it: %v", v.Refused)
	}
	for ver, hr := range v.Hive {
		if len(hr.Messages) == 0 || hr.Messages[0].End == len(raw) || !strings.Contains(hr.Messages[0].Error+hr.Stop, "Required field 'user'") {
			t.Errorf("Hive %s was expected to stop early on the missing user: %+v", ver, hr)
		}
	}
}

// seedCorpus is the fuzz target's seed corpus: the generated calls, the real clients' calls, the frames of the
// defects found, and a sample of the mutations.
func seedCorpus(t testing.TB) [][]byte {
	var out [][]byte
	for _, f := range append(Generated(), realClientFrames(t)...) {
		out = append(out, f.Raw)
	}
	out = append(out, smuggledFrame(), unionCall(wire.Struct()))
	muts := mutationCorpus(t, 20)
	rng := rand.New(rand.NewPCG(4, 4))
	for i := 0; i < 400; i++ {
		out = append(out, muts[rng.IntN(len(muts))].Raw)
	}
	return out
}

// FuzzStrictAgreesWithHive: for any byte stream a client could send, every call the strict reader accepts is read
// by Hive 3.1.3's and 4.1.0's own readers as the proxy read it. Run it for long with
//
//	go test ./testbed/difftest -run '^$' -fuzz FuzzStrictAgreesWithHive -fuzztime 10m -parallel 1
//
// (each fuzz worker starts its own two reader JVMs; -parallel 1 keeps it to one worker). An input that shows only
// known defects (knownDefects) is skipped; any other disagreement fails and is written to testdata/fuzz.
func FuzzStrictAgreesWithHive(f *testing.F) {
	if os.Getenv("HMS_PROXY_SKIP_REAL_HIVE") == "1" {
		f.Skip(testbed.ErrSkip.Error())
	}
	for _, raw := range seedCorpus(f) {
		f.Add(raw)
	}
	// The readers start here, in each process, not in the first input: the fuzzing engine gives one input 10 s
	// before it kills the worker ("deadlocked"), and compiling and starting two JVMs on a loaded machine takes longer.
	c := checker(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := c.Check(data, false)
		if err != nil {
			t.Fatal(err)
		}
		known := ""
		for _, d := range v.Disagreements {
			if k := knownDefect(d); k != "" {
				known = k
				continue
			}
			t.Errorf("%s", d)
		}
		if known != "" && !t.Failed() {
			t.Skip("known defect " + known)
		}
	})
}

// A reader that skips a method of its own version's API compares nothing: OwnUnread names such skips, and only them.
func TestOwnUnreadNamesSkipsOfTheVersionsOwnMethods(t *testing.T) {
	v := &Verdict{Unread: []Unread{
		{Version: testbed.Hive313, Method: "get_table"},                    // 3.1.3 has it: the reader must know it
		{Version: testbed.Hive313, Method: "get_latest_txnid_in_conflict"}, // Hive 4 only
		{Version: testbed.Hive410, Method: "no_such_method"},
	}}
	got := v.OwnUnread()
	if len(got) != 1 || got[0].Method != "get_table" || got[0].Version != testbed.Hive313 {
		t.Fatalf("own unread: %+v", got)
	}
}
