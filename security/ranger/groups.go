package ranger

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"
)

// Groups resolves a caller's groups for Ranger: the groups the identity
// brings (the REST door's OAuth2 groups claim, a token's), plus those of the
// configured sources (security.groups.mapping): a mapping file of user to
// groups, and/or the operating system's groups of the user as Hadoop's
// ShellBasedUnixGroupsMapping reads them ("id -gn user" and "id -Gn user",
// which follow NSS: local files, SSSD, LDAP). Results of the shell are cached
// per user for security.groups.cache-ttl-ms, failures included, as Hadoop's
// Groups cache does. Safe for concurrent use.
type Groups struct {
	file  map[string][]string
	shell bool
	ttl   time.Duration
	now   func() time.Time
	id    func(ctx context.Context, user string) ([]string, error)

	mu    sync.Mutex
	cache map[string]groupEntry
}

type groupEntry struct {
	groups []string
	err    error
	at     time.Time
}

// GroupsOptions configure a Groups.
type GroupsOptions struct {
	// Sources is security.groups.mapping: "file", "shell" (any order, both
	// allowed); empty means the identity's groups only.
	Sources []string
	// File is security.groups.mapping.file: lines "user: group1, group2"
	// (or "user=group1,group2"); '#' starts a comment.
	File string
	// CacheTTL is security.groups.cache-ttl-ms (0: 5 minutes, Hadoop's).
	CacheTTL time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// NewGroups reads the mapping file (if any) and checks the sources.
func NewGroups(o GroupsOptions) (*Groups, error) {
	g := &Groups{ttl: o.CacheTTL, now: o.Now, cache: map[string]groupEntry{}, id: shellGroups}
	if g.ttl <= 0 {
		g.ttl = 5 * time.Minute
	}
	if g.now == nil {
		g.now = time.Now
	}
	for _, s := range o.Sources {
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "file":
			if o.File == "" {
				return nil, errors.New("security.groups.mapping names file but security.groups.mapping.file is not set")
			}
			m, err := readGroupFile(o.File)
			if err != nil {
				return nil, err
			}
			g.file = m
		case "shell":
			if _, err := exec.LookPath("id"); err != nil {
				return nil, fmt.Errorf("security.groups.mapping=shell needs the id command: %w", err)
			}
			g.shell = true
		case "":
		default:
			return nil, fmt.Errorf("security.groups.mapping: unknown source %q (known: file, shell)", s)
		}
	}
	return g, nil
}

func readGroupFile(path string) (map[string][]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("security.groups.mapping.file=%s: %w", path, err)
	}
	m := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		sep := strings.IndexAny(line, ":=")
		if sep <= 0 {
			return nil, fmt.Errorf("security.groups.mapping.file=%s line %d: %q is not \"user: group, group\"", path, n, line)
		}
		user := strings.TrimSpace(line[:sep])
		for _, g := range strings.Split(line[sep+1:], ",") {
			if g = strings.TrimSpace(g); g != "" {
				m[user] = append(m[user], g)
			}
		}
		if _, ok := m[user]; !ok {
			m[user] = nil
		}
	}
	return m, sc.Err()
}

// Resolve returns the identity's groups followed by the sources' groups,
// without duplicates. A failing shell lookup is returned with the groups
// found so far: the caller decides (the router refuses rather than
// evaluating without groups that could carry a denial... or a grant).
func (g *Groups) Resolve(ctx context.Context, user string, fromIdentity []string) ([]string, error) {
	if g == nil || (g.file == nil && !g.shell) || user == "" {
		return fromIdentity, nil
	}
	out := append([]string(nil), fromIdentity...)
	seen := map[string]bool{}
	for _, x := range out {
		seen[x] = true
	}
	add := func(xs []string) {
		for _, x := range xs {
			if !seen[x] {
				seen[x] = true
				out = append(out, x)
			}
		}
	}
	add(g.file[user])
	if g.shell {
		gs, err := g.fromShell(ctx, user)
		if err != nil {
			return out, err
		}
		add(gs)
	}
	return out, nil
}

func (g *Groups) fromShell(ctx context.Context, user string) ([]string, error) {
	now := g.now()
	g.mu.Lock()
	e, ok := g.cache[user]
	g.mu.Unlock()
	if ok && now.Sub(e.at) < g.ttl {
		return e.groups, e.err
	}
	gs, err := g.id(ctx, user)
	g.mu.Lock()
	g.cache[user] = groupEntry{groups: gs, err: err, at: now}
	g.mu.Unlock()
	return gs, err
}

// errNoSuchUser: the OS does not know the user; Hadoop answers no groups.
var errNoSuchUser = errors.New("no such user")

// shellGroups runs id as Hadoop's ShellBasedUnixGroupsMapping: the primary
// group first, then the others. An unknown user has no groups.
func shellGroups(ctx context.Context, user string) ([]string, error) {
	if strings.HasPrefix(user, "-") {
		return nil, fmt.Errorf("groups of %q: not a user name", user)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	run := func(flag string) ([]string, error) {
		var out, errb bytes.Buffer
		cmd := exec.CommandContext(ctx, "id", flag, "--", user)
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			if strings.Contains(strings.ToLower(errb.String()), "no such user") {
				return nil, errNoSuchUser
			}
			return nil, fmt.Errorf("groups of %s: id %s: %v: %s", user, flag, err, strings.TrimSpace(errb.String()))
		}
		return strings.Fields(out.String()), nil
	}
	primary, err := run("-gn")
	if errors.Is(err, errNoSuchUser) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	all, err := run("-Gn")
	if err != nil {
		return nil, err
	}
	out := append([]string(nil), primary...)
	for _, x := range all {
		if len(primary) == 0 || x != primary[0] {
			out = append(out, x)
		}
	}
	return out, nil
}

// Users lists the users the mapping file names (for check-config).
func (g *Groups) Users() []string {
	out := make([]string, 0, len(g.file))
	for u := range g.file {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}
