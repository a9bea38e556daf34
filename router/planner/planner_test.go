package planner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/router/methods"
	"github.com/hms-proxy/hms-proxy/router/naming"
	"github.com/hms-proxy/hms-proxy/wire"
)

// The planner needs nothing but facts: no router, no pool, no backend.
func testPlanner(t *testing.T, lockShim bool) *Planner {
	t.Helper()
	ns := naming.NewNamespace("__", "catalog1", false, []*naming.Catalog{
		{Name: "catalog1", BackendName: "hive"}, {Name: "catalog2", BackendName: "hive"}, {Name: "catalog3", BackendName: "hive"}})
	table, err := methods.BuildTable()
	if err != nil {
		t.Fatal(err)
	}
	adapters, err := compat.NewAdapters()
	if err != nil {
		t.Fatal(err)
	}
	f := Facts{Namespace: ns, Table: table, Adapters: adapters, LockShim: lockShim}
	for _, c := range ns.Catalogs() {
		profile := "APACHE_3_1_3"
		if c.Name == "catalog3" {
			profile = "APACHE_4_1_0"
		}
		rt, err := compat.Lookup(profile)
		if err != nil {
			t.Fatal(err)
		}
		f.Lanes = append(f.Lanes, LaneFacts{Catalog: c, Runtime: rt})
	}
	return New(f)
}

func plan(t *testing.T, pl *Planner, method string, args wire.Value) *Plan {
	t.Helper()
	raw := wire.AppendMessage(nil, wire.Header{Name: method, Type: wire.Call, SeqID: 1}, &args)
	m, err := wire.ParseMessage(raw, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := &Plan{}
	pl.Plan(p, m, nil)
	return p
}

func TestPlansFromFactsAlone(t *testing.T) {
	pl := testPlanner(t, true)
	// A prefixed database names its lane; the name is rewritten inward.
	p := plan(t, pl, "get_table", wire.Struct(wire.Field{ID: 1, V: wire.Str("catalog2__sales")}, wire.Field{ID: 2, V: wire.Str("t")}))
	if p.Kind != PlanSingle || p.Target.Name != "catalog2" || len(p.Patches) != 1 || len(p.DBs) != 1 || p.DBs[0] != "sales" {
		t.Fatalf("get_table of catalog2__sales: %s", p)
	}
	if _, ok := p.Primitive().(*Single); !ok {
		t.Errorf("a single plan's primitive is %T", p.Primitive())
	}
	// Two catalogs in one request: refused, never guessed.
	p = plan(t, pl, "get_table_req", wire.Struct(wire.Field{ID: 1, V: wire.Struct(wire.Field{ID: 1, V: wire.Str("catalog2__sales")},
		wire.Field{ID: 2, V: wire.Str("t")}, wire.Field{ID: 4, V: wire.Str("catalog3")})}))
	if p.Kind != PlanRefuse || p.Refusal.Reason != "ambiguous" {
		t.Fatalf("two catalogs: %s", p)
	}
	// A lock over two catalogs is split by the lock shim, planned on the
	// default lane; without a shim it is refused.
	lock := wire.Struct(wire.Field{ID: 1, V: wire.Struct(wire.Field{ID: 1, V: wire.List(wire.TStruct,
		wire.Struct(wire.Field{ID: 1, V: wire.I32(3)}, wire.Field{ID: 2, V: wire.I32(2)}, wire.Field{ID: 3, V: wire.Str("sales")}),
		wire.Struct(wire.Field{ID: 1, V: wire.I32(3)}, wire.Field{ID: 2, V: wire.I32(2)}, wire.Field{ID: 3, V: wire.Str("catalog2__sales")}))})})
	p = plan(t, pl, "lock", lock)
	if _, ok := p.Primitive().(SplitLock); !ok || p.Target.Name != "catalog1" {
		t.Fatalf("a lock over two catalogs with a shim: %s (%T)", p, p.Primitive())
	}
	if p = plan(t, testPlanner(t, false), "lock", lock); p.Kind != PlanRefuse {
		t.Fatalf("a lock over two catalogs without a shim: %s", p)
	}
	// A fan-out's legs carry their calls encoded.
	p = plan(t, pl, "get_databases", wire.Struct(wire.Field{ID: 1, V: wire.Str("catalog2__s*|catalog3__x")}))
	if p.Kind != PlanFanOut || len(p.Legs) != 2 {
		t.Fatalf("get_databases over two prefixes: %s", p)
	}
	for i, want := range []string{"s*", "x"} {
		l := p.Legs[i]
		v, err := wire.DecodeStruct(l.Args)
		if l.Method != "get_databases" || err != nil || v.Field(1).String() != want {
			t.Errorf("leg %d: %s %v %v", i, l.Method, v.Field(1), err)
		}
	}
	p = plan(t, pl, "get_all_databases", wire.Struct())
	if p.Kind != PlanFanOut || len(p.Legs) != 3 || p.Legs[2].Method != "get_all_databases" || string(p.Legs[2].Args) != string(EmptyArgs) {
		t.Fatalf("get_all_databases: %s", p)
	}
}

// fakeCursor runs fan-out legs with canned failures.
type fakeCursor struct {
	mu       sync.Mutex
	skip     map[int]bool
	fail     map[int]error
	tolerate error
	ran      []int
	merged   error
	mergedOK bool
	schedule Schedule
	f        *FanOut
	chained  bool     // Run acts as the router's executor of a Chained run
	events   []string // chained: sends, reads and drops in order
}

func (c *fakeCursor) Run(ctx context.Context, leg int) error {
	c.mu.Lock()
	c.ran = append(c.ran, leg)
	c.mu.Unlock()
	if !c.chained {
		return c.fail[leg]
	}
	// as the router's executor: a refused leg never sends; a sent one
	// continues the run, then reads its answer or drops it
	if err := c.fail[leg]; err != nil {
		return err
	}
	c.events = append(c.events, fmt.Sprint("send ", leg))
	c.f.Continue()
	if c.f.Failed() != nil {
		c.events = append(c.events, fmt.Sprint("drop ", leg))
		return nil
	}
	c.events = append(c.events, fmt.Sprint("read ", leg))
	return nil
}
func (c *fakeCursor) Fail(error)                    {}
func (c *fakeCursor) Refuse(*Refusal)               {}
func (c *fakeCursor) Answer(context.Context, Local) {}
func (c *fakeCursor) Asked(i int) bool              { return !c.skip[i] }
func (c *fakeCursor) Tolerates(err error) bool      { return errors.Is(err, c.tolerate) }
func (c *fakeCursor) Merge(_ *FanOut, err error)    { c.merged, c.mergedOK = err, true }
func (c *fakeCursor) Begin(f *FanOut) (int, Schedule) {
	return len(f.Legs) - len(c.skip), c.schedule
}

// A fan-out runs every asked leg once, skips the left-out ones, lets a
// tolerated failure pass and ends with the first one it does not tolerate,
// whichever way its legs are scheduled.
func TestFanOutRunsItsLegsAgainstTheCursor(t *testing.T) {
	for _, s := range []Schedule{Serial, Chained, Parallel} {
		f := &FanOut{Legs: make([]Leg, 4)}
		omit := errors.New("omitted")
		c := &fakeCursor{skip: map[int]bool{1: true}, fail: map[int]error{2: fmt.Errorf("leg 2: %w", omit)}, tolerate: omit, schedule: s}
		c.f = f
		f.Execute(context.Background(), c)
		if !c.mergedOK || c.merged != nil || len(c.ran) != 3 {
			t.Fatalf("schedule %d: ran %v, merged %v", s, c.ran, c.merged)
		}
		for _, i := range c.ran {
			if i == 1 {
				t.Fatalf("schedule %d: a left-out leg ran: %v", s, c.ran)
			}
		}
		bad := errors.New("refused")
		c = &fakeCursor{fail: map[int]error{0: bad}, tolerate: omit, schedule: s}
		c.f = f
		f.Execute(context.Background(), c)
		if !errors.Is(c.merged, bad) {
			t.Fatalf("schedule %d: a failure the cursor does not tolerate ended in %v", s, c.merged)
		}
	}
}

// A Chained fan-out sends every leg's call before it reads the first
// answer: each leg's executor continues the run between its send and its
// read, so the legs start in lane order and are read in the reverse order;
// a failure of a later leg ends the run (the legs after it are not sent)
// and is known before an earlier leg reads, which then drops its answer
// unread. A leg that never reaches the executor (refused
// by a policy) does not stop the legs after it.
func TestChainedFanOutSendsEveryLegBeforeReadingOne(t *testing.T) {
	f := &FanOut{Legs: make([]Leg, 4)}
	c := &fakeCursor{schedule: Chained, f: f, chained: true, skip: map[int]bool{2: true}}
	f.Execute(context.Background(), c)
	if got := fmt.Sprint(c.events); got != "[send 0 send 1 send 3 read 3 read 1 read 0]" || c.merged != nil {
		t.Fatalf("events %s, merged %v", got, c.merged)
	}
	bad := errors.New("refused")
	c = &fakeCursor{schedule: Chained, f: f, chained: true, fail: map[int]error{2: bad}}
	f.Execute(context.Background(), c)
	if got := fmt.Sprint(c.events); got != "[send 0 send 1 drop 1 drop 0]" || !errors.Is(c.merged, bad) {
		t.Fatalf("events %s, merged %v", got, c.merged)
	}
	if f.Failed() != nil {
		t.Fatalf("a finished run left its failure behind: %v", f.Failed())
	}
}
