package kerberos

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/app"
	"github.com/hms-proxy/hms-proxy/configs"
	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/security/sasl"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// An authenticator accepted on the primary listener is a replay on the hive4 listener, which answers for the same
// service principal: the listeners share one replay cache per principal (as Java keeps one per principal per JVM).
func TestReplayAcrossListeners(t *testing.T) {
	p := proxytest.Start(t, federation(t))
	tap := startRecorder(t, strings.TrimPrefix(p.URI("primary"), "thrift://"))
	testbed.RunScenarioT(t, testbed.Hive313, "thrift://"+tap.addr(), "version", javaClient(testbed.Hive313, "alice", aliceKT, "").Args()...)
	start, apreq := tap.firstFrames(t)
	replays := func() float64 {
		return p.Metric(t, sasl.MetricAuthFailuresTotal, "listener", "hive4", "reason", "replay")
	}
	n := replays()
	c, err := net.Dial("tcp", strings.TrimPrefix(p.URI("hive4"), "thrift://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(append(start, apreq...)); err != nil {
		t.Fatal(err)
	}
	if st, text := readFrame(t, c); st != 3 {
		t.Fatalf("the primary listener's authenticator replayed on hive4 was answered %d %.40q, want BAD", st, text)
	}
	expectClosed(t, c, 10*time.Second)
	waitMetric(t, replays, n+1)
}

// set_ugi on a Kerberos-authenticated connection is answered as HMS answers it but does not change the identity:
// the proxy's audit and the backend (impersonating) still see alice, not the user set_ugi named.
func TestSetUGIOnKerberosConnectionKeepsTheIdentity(t *testing.T) {
	p := proxytest.Start(t, federation(t, "security.impersonation-enabled=true"))
	alice := kerberosClient(t, login(t, kdc.Principal("alice"), aliceKT, kdc.Krb5Conf), "hmsproxy/_HOST@"+kdc.Realm, p.URI("primary"))
	groups, err := alice.SetUgi(ctx(t), "mallory", []string{"admins"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"admins", "mallory"}; !slices.Equal(groups, want) {
		t.Fatalf("set_ugi answered %v, want %v", groups, want)
	}
	db := uniq("ugisasl")
	if err := alice.CreateDatabase(ctx(t), &thriftgen.Database{Name: db}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = backendAdmin(t, krb1).DropDatabase(ctx(t), db, true, true) })
	got := auditUsers(t, krb1, db)
	if len(got) == 0 || slices.ContainsFunc(got, func(u string) bool { return u != "alice" }) {
		t.Fatalf("after set_ugi(mallory) alice's create_database reached the backend as %v, want alice", got)
	}
	if users, _ := p.Router.ImpersonationUsers("catalog1"); slices.Contains(users, "mallory") {
		t.Fatalf("set_ugi on a Kerberos connection made a pool for mallory: %v", users)
	}
	if !auditHas(t, p.AuditFile, `"method":"create_database"`) || auditHas(t, p.AuditFile, `"authenticatedUser":"mallory"`) {
		t.Fatal("the proxy's audit names mallory (or misses the call): set_ugi changed the identity")
	}
}

// syncBuffer is a log destination for one test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startLogged starts the proxy as proxytest does but keeps its log.
func startLogged(t *testing.T, props map[string]string) (*app.App, *syncBuffer) {
	t.Helper()
	props["server.bind-host"] = "127.0.0.1"
	props["server.port"] = strconv.Itoa(proxytest.FreePort(t))
	props["management.port"] = strconv.Itoa(proxytest.FreePort(t))
	props["audit.file"] = t.TempDir() + "/audit.log"
	props["synthetic-read-lock.store.mode"] = "IN_MEMORY"
	cfg, err := configs.Parse(props)
	if err != nil {
		t.Fatal(err)
	}
	buf := &syncBuffer{}
	a, err := app.BuildWith(cfg, slog.New(slog.NewTextHandler(buf, nil)), app.TestHooks{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Shutdown(c)
		if t.Failed() {
			t.Logf("proxy log:\n%s", buf.String())
		}
	})
	return a, buf
}

// Bad SASL input is logged once per connection: each of several broken negotiations leaves exactly one log line
// naming its client address, and nothing else is logged about it.
func TestBadSASLInputLoggedOnce(t *testing.T) {
	a, log := startLogged(t, federation(t, "server.client-socket-timeout-ms=2000"))
	addr := a.Listener("primary").Addr().String()
	inputs := map[string][]byte{
		"garbage":           []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		"unknown mechanism": saslFrame(1, []byte("PLAIN")),
		"bad token":         append(saslFrame(1, []byte("GSSAPI")), saslFrame(2, []byte("not an AP-REQ"))...),
		"truncated frame":   saslFrame(1, []byte("GSSAPI"))[:7],
	}
	remotes := map[string]string{}
	for name, in := range inputs {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		remotes[name] = c.LocalAddr().String()
		if _, err := c.Write(in); err != nil {
			t.Fatal(err)
		}
		expectClosed(t, c, 10*time.Second) // the truncated frame waits for the 2 s socket timeout
		c.Close()
	}
	// the last connection's line may follow its close by a moment
	deadline := time.Now().Add(10 * time.Second)
	for {
		all := true
		for _, r := range remotes {
			all = all && strings.Contains(log.String(), r)
		}
		if all || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	text := log.String()
	for name, r := range remotes {
		// the remote as a whole token (127.0.0.1:4000 must not match 127.0.0.1:40001)
		re := regexp.MustCompile(regexp.QuoteMeta(r) + `\b`)
		lines := 0
		for _, line := range strings.Split(text, "\n") {
			if re.MatchString(line) {
				lines++
				if !strings.Contains(line, "level=WARN") {
					t.Errorf("%s: the line is not a WARN: %s", name, line)
				}
			}
		}
		if lines != 1 {
			t.Errorf("%s (from %s): %d log lines, want exactly 1:\n%s", name, r, lines, text)
		}
	}
}
