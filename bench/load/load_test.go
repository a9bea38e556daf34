package load

import (
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/bench/msg"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

func TestCounterIsFixedWidthAndUnique(t *testing.T) {
	k := &Counter{Width: 5}
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		v := string(k.Next(nil))
		if len(v) != 5 || seen[v] {
			t.Fatalf("value %q: want 5 digits, never repeated", v)
		}
		seen[v] = true
	}
	if got := string(k.Next([]byte("bc"))); got != "bc01001" {
		t.Fatalf("Next appends: got %q, want bc01001", got)
	}
}

// A filled template is the encoding of the same request with the value in
// place of every marker.
func TestTemplateFillMatchesDirectEncoding(t *testing.T) {
	tmpl, err := msg.Encode("drop_table", &thriftgen.DropTableArgs{Dbname: "db", Name: "bcxxxxxxxxxxxxxx"})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := msg.NewTemplate(tmpl, "bcxxxxxxxxxxxxxx")
	if err != nil {
		t.Fatal(err)
	}
	want, err := msg.Encode("drop_table", &thriftgen.DropTableArgs{Dbname: "db", Name: "bc00000000000042"})
	if err != nil {
		t.Fatal(err)
	}
	if got := tp.Fill(nil, []byte("bc00000000000042")); string(got) != string(want) {
		t.Fatalf("filled template differs from the direct encoding")
	}
	if _, err := msg.NewTemplate(tmpl, "absent"); err == nil || !strings.Contains(err.Error(), "absent") {
		t.Fatalf("a missing marker must be an error naming it, got %v", err)
	}
}
