package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// hostile holds client-controlled values designed to break a naive encoder.
var hostile = []string{
	`alice"},"authenticatedUser":"root`,
	"bob\nINJECTED {\"event\":\"hms_proxy_audit\"}",
	"carol\r\n\x00\x01\x1f\x7f",
	`back\slash\\"quote`,
	"Ünïcødé 日本 🚀",
	"bad\xff\xfeutf8\xc3",
	"\u2028\u2029",
	"",
}

// jsonRoundTrip is what a standard JSON decoder makes of s: invalid UTF-8
// bytes each become U+FFFD, everything else is unchanged.
func jsonRoundTrip(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out string
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestHostileValuesParseAndRoundTrip(t *testing.T) {
	for _, user := range hostile {
		for _, addr := range hostile {
			var buf bytes.Buffer
			l := NewLogger(&buf)
			l.Log(&Record{
				RequestID: 42, Method: "get_table\n", OperationClass: "metadata_read",
				Catalog: "catalog1", Backend: "catalog1", Status: "ok", DurationMs: 8,
				RemoteAddress: addr, AuthenticatedUser: user,
				Routed: true,
			})
			line := buf.String()
			if !strings.HasSuffix(line, "\n") || strings.Count(line, "\n") != 1 {
				t.Fatalf("record is not exactly one line: %q", line)
			}
			for i := 0; i < len(line)-1; i++ {
				if line[i] < 0x20 || line[i] == 0x7f {
					t.Fatalf("raw control byte 0x%02x at %d in %q", line[i], i, line)
				}
			}
			if !utf8.ValidString(line) {
				t.Fatalf("record is not valid UTF-8: %q", line)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(line), &got); err != nil {
				t.Fatalf("record does not parse as JSON: %v\n%q", err, line)
			}
			if len(got) != 14 {
				t.Fatalf("want 14 fields, got %d: %v", len(got), got)
			}
			if got["authenticatedUser"] != jsonRoundTrip(t, user) {
				t.Fatalf("authenticatedUser: got %q want %q", got["authenticatedUser"], jsonRoundTrip(t, user))
			}
			if got["remoteAddress"] != jsonRoundTrip(t, addr) {
				t.Fatalf("remoteAddress: got %q want %q", got["remoteAddress"], jsonRoundTrip(t, addr))
			}
			if got["method"] != "get_table\n" || got["event"] != EventName {
				t.Fatalf("fields changed: %v", got)
			}
		}
	}
}

func TestEscapeForms(t *testing.T) {
	cases := map[string]string{
		"a\x00b":        `"a\u0000b"`,
		"\x1f":          `"\u001f"`,
		"\n\r\t":        `"\u000a\u000d\u0009"`,
		`"\`:            `"\"\\"`,
		"\x7f":          `"\u007f"`,
		"Ünïcødé 日本":    `"Ünïcødé 日本"`,
		"x\xffy":        `"x` + "\uFFFD" + `y"`,
		"\xe6\x97":      `"` + "\uFFFD\uFFFD" + `"`, // truncated 3-byte sequence
		"alice@EXAMPLE": `"alice@EXAMPLE"`,
	}
	for in, want := range cases {
		if got := string(AppendString(nil, in)); got != want {
			t.Errorf("AppendString(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestExactFormat(t *testing.T) {
	var buf bytes.Buffer
	NewLogger(&buf).Log(&Record{
		RequestID: 42, Method: "get_table", OperationClass: "metadata_read",
		Catalog: "catalog1", Backend: "catalog1", Status: "ok", DurationMs: 8,
		Routed: true, RemoteAddress: "10.20.30.40", AuthenticatedUser: "alice@EXAMPLE.COM",
	})
	want := `{"event":"hms_proxy_audit","requestId":42,"method":"get_table","operationClass":"metadata_read","catalog":"catalog1","backend":"catalog1","status":"ok","durationMs":8,"routed":true,"fanout":false,"fallback":false,"defaultCatalogRouted":false,"remoteAddress":"10.20.30.40","authenticatedUser":"alice@EXAMPLE.COM"}` + "\n"
	if buf.String() != want {
		t.Fatalf("got  %s\nwant %s", buf.String(), want)
	}
}

func TestNilLoggerIsOff(t *testing.T) {
	var l *Logger
	if l.Enabled() {
		t.Fatal("nil logger must report disabled")
	}
	l.Log(&Record{Method: "x"}) // must not panic
	if NewLogger(nil) != nil {
		t.Fatal("NewLogger(nil) must return the disabled (nil) logger")
	}
	if !NewLogger(io.Discard).Enabled() {
		t.Fatal("logger with a writer must be enabled")
	}
}

// chunkWriter passes each Write to the underlying buffer in two halves with a
// yield in between, so that unsynchronised concurrent writers would interleave.
type chunkWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *chunkWriter) Write(p []byte) (int, error) {
	half := len(p) / 2
	c.mu.Lock()
	c.buf.Write(p[:half])
	c.mu.Unlock()
	runtime.Gosched()
	c.mu.Lock()
	c.buf.Write(p[half:])
	c.mu.Unlock()
	return len(p), nil
}

func TestConcurrentLogNeverInterleaves(t *testing.T) {
	w := &chunkWriter{}
	l := NewLogger(w)
	const goroutines, per = 8, 500
	logConcurrently(l, goroutines, per)
	sc := bufio.NewScanner(&w.buf)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	seen := map[uint64]bool{}
	for sc.Scan() {
		var r struct {
			RequestID uint64 `json:"requestId"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("interleaved or broken line %q: %v", sc.Text(), err)
		}
		seen[r.RequestID] = true
	}
	if len(seen) != goroutines*per {
		t.Fatalf("want %d distinct records, got %d", goroutines*per, len(seen))
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrShortWrite }

func TestWriteErrorsAreReported(t *testing.T) {
	l := NewLogger(failWriter{})
	var got []error
	l.SetErrorHandler(func(err error) { got = append(got, err) })
	l.Log(&Record{})
	l.Log(&Record{})
	if l.WriteErrors() != 2 || len(got) != 2 || got[0] != io.ErrShortWrite {
		t.Fatalf("want 2 reported errors, got count=%d handler=%v", l.WriteErrors(), got)
	}
}

func sampleRecord() *Record {
	return &Record{
		RequestID: 123456, Method: "get_table_req", OperationClass: "metadata_read",
		Catalog: "catalog2", Backend: "catalog2", Status: "ok", DurationMs: 17,
		RemoteAddress: "10.20.30.40:51234", AuthenticatedUser: "hive/host.example.com@EXAMPLE.COM",
		Routed: true, DefaultCatalogRouted: true,
	}
}

func TestLogAllocations(t *testing.T) {
	l := NewLogger(io.Discard)
	r := sampleRecord()
	l.Log(r) // warm the buffer pool
	allocs := testing.AllocsPerRun(1000, func() { l.Log(r) })
	if allocs > 1 {
		t.Fatalf("Log allocates %.1f times per record, budget is 1", allocs)
	}
}

func BenchmarkLog(b *testing.B) {
	l := NewLogger(io.Discard)
	r := sampleRecord()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Log(r)
		}
	})
}

func BenchmarkLogHostile(b *testing.B) {
	l := NewLogger(io.Discard)
	r := sampleRecord()
	r.AuthenticatedUser = "Ünïcødé 日本\n\"evil\"\x00\xff"
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		l.Log(r)
	}
}

func TestClientControlledValuesAreClipped(t *testing.T) {
	long := strings.Repeat("m", 64<<10)
	line := string(AppendRecord(nil, &Record{Method: long, RemoteAddress: long, AuthenticatedUser: "é" + long}))
	if len(line) > 4<<10 {
		t.Fatalf("a 64 KiB method name made a %d-byte record", len(line))
	}
	for _, want := range []string{"…(+65280 bytes)", "…(+64512 bytes)"} {
		if !strings.Contains(line, want) {
			t.Fatalf("record %q does not say how much was left out (%s)", line[:200], want)
		}
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(line), &rec); err != nil {
		t.Fatalf("a clipped record is not JSON: %v", err)
	}
	if Clip("short", 10) != "short" {
		t.Fatal("short values pass unchanged")
	}
}

// omittedCatalogs is written only when a fan-out left catalogs out, as a
// JSON array of escaped names.
func TestOmittedCatalogs(t *testing.T) {
	r := Record{RequestID: 1, Method: "get_all_databases", Catalog: "all", Backend: "fanout", Status: "ok",
		Fanout: true, OmittedCatalogs: []string{"catalog2", "c\"3"}}
	line := string(AppendRecord(nil, &r))
	if !strings.Contains(line, `,"omittedCatalogs":["catalog2","c\"3"]}`) {
		t.Fatalf("record: %s", line)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(line), &v); err != nil {
		t.Fatal(err)
	}
	r.OmittedCatalogs = nil
	if line := string(AppendRecord(nil, &r)); strings.Contains(line, "omittedCatalogs") {
		t.Fatalf("a record without omissions: %s", line)
	}
}

// The Ranger link's decision, the deciding policy and the objects an answer
// lost are in the record only when Ranger judged the call.
func TestRangerDecisionInRecord(t *testing.T) {
	id := int64(7)
	r := Record{Method: "drop_table", RangerDecision: "denied", RangerPolicyID: &id}
	if line := string(AppendRecord(nil, &r)); !strings.HasSuffix(line, `,"rangerDecision":"denied","rangerPolicyId":7,"rangerFiltered":0}`) {
		t.Fatalf("record %s", line)
	}
	r = Record{Method: "get_all_databases", RangerDecision: "allowed", RangerFiltered: 3}
	if line := string(AppendRecord(nil, &r)); !strings.HasSuffix(line, `,"rangerDecision":"allowed","rangerFiltered":3}`) {
		t.Fatalf("record %s", line)
	}
	r = Record{Method: "get_table"}
	if line := string(AppendRecord(nil, &r)); strings.Contains(line, "ranger") {
		t.Fatalf("record without Ranger names it: %s", line)
	}
}
