package ranger

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Groups: the identity's groups first, then the mapping file's and the OS's
// (the real id command), without duplicates; the shell source is cached
// per user for the TTL, on an injected clock.
func TestGroups(t *testing.T) {
	file := filepath.Join(t.TempDir(), "groups")
	if err := os.WriteFile(file, []byte("# callers\nalice: analysts, etl\nbob=etl\n\ncarol:\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g, err := NewGroups(GroupsOptions{Sources: []string{"file"}, File: file})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, err := g.Resolve(ctx, "alice", []string{"oauth-team", "etl"})
	if err != nil || strings.Join(got, ",") != "oauth-team,etl,analysts" {
		t.Fatalf("alice: %v %v", got, err)
	}
	if got, _ := g.Resolve(ctx, "zed", nil); len(got) != 0 {
		t.Fatalf("an unmapped user: %v", got)
	}

	if _, err := exec.LookPath("id"); err != nil {
		t.Skip("no id command")
	}
	now := time.Unix(1000, 0)
	g, err = NewGroups(GroupsOptions{Sources: []string{"shell", "file"}, File: file, CacheTTL: time.Minute, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	want, err := exec.Command("id", "-gn", "root").Output()
	if err != nil {
		t.Fatal(err)
	}
	got, err = g.Resolve(ctx, "root", nil)
	if err != nil || len(got) == 0 || got[0] != strings.TrimSpace(string(want)) {
		t.Fatalf("root's OS groups (primary first, want %q): %v %v", strings.TrimSpace(string(want)), got, err)
	}
	if got, err := g.Resolve(ctx, "no-such-user-hmsproxy", []string{"x"}); err != nil || strings.Join(got, ",") != "x" {
		t.Fatalf("a user the OS does not know: %v %v", got, err)
	}
	calls := 0
	g.id = func(context.Context, string) ([]string, error) { calls++; return nil, fmt.Errorf("sssd down") }
	g.cache = map[string]groupEntry{}
	for i := 0; i < 3; i++ {
		if _, err := g.Resolve(ctx, "alice", nil); err == nil || !strings.Contains(err.Error(), "sssd down") {
			t.Fatalf("a failing lookup must be returned: %v", err)
		}
	}
	if calls != 1 {
		t.Fatalf("failures are cached for the TTL: %d lookups", calls)
	}
	now = now.Add(2 * time.Minute)
	_, _ = g.Resolve(ctx, "alice", nil)
	if calls != 2 {
		t.Fatalf("after the TTL: %d lookups", calls)
	}
	if _, err := NewGroups(GroupsOptions{Sources: []string{"ldap"}}); err == nil || !strings.Contains(err.Error(), `unknown source "ldap"`) {
		t.Fatalf("unknown source: %v", err)
	}
	if _, err := NewGroups(GroupsOptions{Sources: []string{"file"}, File: file + ".missing"}); err == nil || !strings.Contains(err.Error(), "security.groups.mapping.file=") {
		t.Fatalf("missing file: %v", err)
	}
}
