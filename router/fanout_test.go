package router

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/wire"
)

// dbsPeer is a scripted metastore answering get_all_databases with one
// database named after it, after wait returns (nil: at once); arrived
// counts the calls it received.
func dbsPeer(t *testing.T, name string, wait func()) (uri string, arrived *atomic.Int32) {
	arrived = new(atomic.Int32)
	addr, _ := peer(t, func(m *wire.Message) []byte {
		arrived.Add(1)
		if wait != nil {
			wait()
		}
		body := wire.Struct(wire.Field{ID: 0, V: wire.List(wire.TString, wire.Str(name))})
		return wire.AppendMessage(nil, wire.Header{Name: m.Name, Type: wire.Reply, SeqID: m.SeqID}, &body)
	})
	return "thrift://" + addr, arrived
}

// fanOutDBs runs get_all_databases through r and returns the answer's
// names, or the exception's text.
func fanOutDBs(t *testing.T, r *Router) string {
	t.Helper()
	m := serveCall(t, r, "get_all_databases", wire.Struct())
	if id, msg := replyError(t, m); id != 0 {
		return "error: " + msg
	}
	v, err := wire.DecodeStruct(m.Body())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range v.Field(0).Elems {
		names = append(names, e.String())
	}
	return strings.Join(names, ",")
}

// A fan-out sends every catalog its call before it reads the first answer
// (from one goroutine, the Chained schedule): the first catalog answers only
// once the last one has its call, which a fan-out reading each answer before
// sending the next call would never let happen.
func TestFanOutSendsEveryLegBeforeReadingAnAnswer(t *testing.T) {
	var third *atomic.Int32
	overlapped := make(chan bool, 1)
	first, _ := dbsPeer(t, "a", func() {
		deadline := time.Now().Add(30 * time.Second)
		for third.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		overlapped <- third.Load() > 0
	})
	second, _ := dbsPeer(t, "b", nil)
	var uri3 string
	uri3, third = dbsPeer(t, "c", nil)
	r := testRouterWith(t, testOptions{Options: Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}},
		"catalog.catalog1.conf.hive.metastore.uris="+first,
		"catalog.catalog2.conf.hive.metastore.uris="+second,
		"catalog.catalog3.conf.hive.metastore.uris="+uri3)
	if got := fanOutDBs(t, r); got != "a,catalog2__b,catalog3__c" {
		t.Fatalf("get_all_databases answered %q", got)
	}
	if !<-overlapped {
		t.Fatal("the first catalog's answer was awaited before the last catalog was asked")
	}
}

// Under SAFE_FANOUT_READS a catalog that hangs past its budget is left out
// and the catalogs that answered in time are kept, even though their
// answers are read after the hung one's deadline (and so after their own):
// an answer that arrived in time is not lost to the order the legs are read
// in. The catalogs' budgets are all one second; the hung catalog is the
// last leg, whose answer a chained fan-out reads first.
func TestFanOutKeepsAnswersThatArrivedWhileAnotherLegHung(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	first, _ := dbsPeer(t, "a", nil)
	second, _ := dbsPeer(t, "b", nil)
	hung, _ := dbsPeer(t, "c", func() { <-release })
	props := []string{
		"catalog.catalog1.conf.hive.metastore.uris=" + first,
		"catalog.catalog2.conf.hive.metastore.uris=" + second,
		"catalog.catalog3.conf.hive.metastore.uris=" + hung,
	}
	for _, c := range []string{"catalog1", "catalog2", "catalog3"} {
		props = append(props, fmt.Sprintf("catalog.%s.latency-budget-ms=1000", c))
	}
	opt := Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	opt.Resilience.SafeFanoutReads = true // routing.degraded-routing-policy=SAFE_FANOUT_READS
	r := testRouterWith(t, testOptions{Options: opt}, props...)
	if got := fanOutDBs(t, r); got != "a,catalog2__b" {
		t.Fatalf("get_all_databases answered %q, want the two catalogs that answered", got)
	}
	// STRICT: the hung catalog fails the call, naming it.
	opt.Resilience.SafeFanoutReads = false
	r = testRouterWith(t, testOptions{Options: opt}, props...)
	if got := fanOutDBs(t, r); !strings.Contains(got, "catalog catalog3 failed") {
		t.Fatalf("get_all_databases answered %q, want the hung catalog's failure", got)
	}
}
