package e2eutil

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
)

// AuditOf returns the audit records of method, waiting (bounded) for the
// writer to have written one.
func AuditOf(t *testing.T, p *proxytest.Proxy, method string) []map[string]any {
	t.Helper()
	var out []map[string]any
	deadline := time.Now().Add(time.Minute)
	for {
		out = out[:0]
		b, err := os.ReadFile(p.AuditFile)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["method"] == method {
				out = append(out, rec)
			}
		}
		if len(out) > 0 || time.Now().After(deadline) {
			return out
		}
		time.Sleep(50 * time.Millisecond)
	}
}
