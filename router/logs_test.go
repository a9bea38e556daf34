package router

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/wire"
)

// A storm of identical refusals writes one WARN line per interval, and the
// next line says how many were left out; another kind of refusal is not held
// back by the first.
func TestRefusalLogsAreRateLimitedPerKind(t *testing.T) {
	var buf bytes.Buffer
	l := newLogLimiter(slog.New(slog.NewTextHandler(&buf, nil)), 50*time.Millisecond)
	ref := &planner.Refusal{Reason: "ambiguous", Message: "lock is ambiguous"}
	for i := 0; i < 1000; i++ {
		l.refusal("lock", "catalog2", ref)
	}
	l.refusal("setMetaConf", "", &planner.Refusal{Reason: "namespace_less", Message: "no namespace"})
	if n := strings.Count(buf.String(), "level=WARN"); n != 2 {
		t.Fatalf("1000 identical refusals and one other: want 2 lines, got %d:\n%s", n, buf.String())
	}
	time.Sleep(60 * time.Millisecond)
	l.refusal("lock", "catalog2", ref)
	if !strings.Contains(buf.String(), "suppressedSinceLast=999") {
		t.Fatalf("the line after the storm must count what was left out:\n%s", buf.String())
	}
}

// Refusals reach the proxy's log; HiveServer2's fb303 shutdown, sent every
// time it closes a client, does not warn.
func TestRefusalWarnsAndShutdownIsDebug(t *testing.T) {
	r := testRouter(t)
	var buf bytes.Buffer
	r.log = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r.logs = newLogLimiter(r.log, time.Second)
	call := func(name string, typ byte, args wire.Value) {
		raw := wire.AppendMessage(nil, wire.Header{Name: name, Type: typ, SeqID: 1}, &args)
		m, err := wire.ParseMessage(raw, 0)
		if err != nil {
			t.Fatal(err)
		}
		r.Handle(context.Background(), &ConnInfo{Remote: "127.0.0.1:1"}, m, nil)
	}
	call("shutdown", wire.Oneway, wire.Struct())
	call("setMetaConf", wire.Call, wire.Struct(wire.Field{ID: 1, V: wire.Str("k")}, wire.Field{ID: 2, V: wire.Str("v")}))
	out := buf.String()
	if !strings.Contains(out, "level=DEBUG") || strings.Contains(out, `level=WARN msg="answered an fb303`) {
		t.Fatalf("fb303 shutdown must be logged at DEBUG only:\n%s", out)
	}
	if !strings.Contains(out, "level=WARN msg=\"request refused\" method=setMetaConf reason=namespace_less") {
		t.Fatalf("a refusal must be a WARN line naming method and reason:\n%s", out)
	}
}
