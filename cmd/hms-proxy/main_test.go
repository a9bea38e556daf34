package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hms-proxy.properties")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func goodConfig(t *testing.T) string {
	port := freePort(t)
	return fmt.Sprintf(`server.bind-host=127.0.0.1
server.port=%d
management.port=%d
catalogs=catalog1,catalog2
routing.default-catalog=catalog1
synthetic-read-lock.store.mode=IN_MEMORY
catalog.catalog1.conf.hive.metastore.uris=thrift://127.0.0.1:1
catalog.catalog2.conf.hive.metastore.uris=thrift://127.0.0.1:2
catalog.catalog2.access-mode=read_only
audit.file=%s
`, port, freePort(t), filepath.Join(t.TempDir(), "audit.log"))
}

func TestCheckConfigOnAGoodFile(t *testing.T) {
	var out, errb bytes.Buffer
	path := writeFile(t, goodConfig(t))
	if code := run([]string{"check-config", path}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	got := out.String()
	for _, want := range []string{": OK",
		"\ncatalog.catalog2.access-mode=READ_ONLY\n",                                    // set in the file
		"\n#routing.catalog-db-separator=__\n",                                          // a default in force
		"\n#catalog.catalog1.shared-session-pool-size=8\n",                              // a per-catalog default
		"\n#security.server-principal=\n",                                               // no value
		"\n# == Rate limiting [rate-limit]: implemented; off: rate-limit.enabled=false", // a feature header with its status
		"\n#rate-limit.enabled=false\n",
		"\n# == Thrift compact protocol to backends [compact-protocol]: refused-until-built",
		"\n# == View SQL rewrite [view-rewrite]: implemented",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("check-config output lacks %q:\n%s", want, got)
		}
	}
}

func TestCheckConfigOnABadFileNamesEveryProblem(t *testing.T) {
	var out, errb bytes.Buffer
	path := writeFile(t, `catalogs=a,b
catalog.a.conf.hive.metastore.uris=thrift://127.0.0.1:1
catalog.b.conf.hive.metastore.uris=thrift://127.0.0.1:2
routing.default-catalog=a
catalog.b.access-mode=READ_WRITE_DB_WHITELIST
management.enabled=yes
`)
	code := run([]string{"check-config", path}, &out, &errb)
	if code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	msg := errb.String()
	for _, want := range []string{"INVALID", "catalog.b.access-mode", "write-db-whitelist", "management.enabled", "yes"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error output lacks %q:\n%s", want, msg)
		}
	}
}

// TestCheckConfigRefusals: a value asking for a feature not built yet is a
// "refused:" line naming key and value, apart from plain errors.
func TestCheckConfigRefusals(t *testing.T) {
	var out, errb bytes.Buffer
	path := writeFile(t, goodConfig(t)+"catalog.catalog2.conf.hive.metastore.client.socket.lifetime=1h\ncatalog.catalog1.conf.hive.metastore.thrift.compact.protocol.enabled=true\nserver.tcp-keepalive=yes\n")
	if code := run([]string{"check-config", path}, &out, &errb); code != 2 {
		t.Fatalf("exit %d, want 2\n%s", code, out.String())
	}
	msg := errb.String()
	for _, want := range []string{": INVALID\n",
		"refused: catalog.catalog2.conf.hive.metastore.client.socket.lifetime=1h: Backend session recycling by age is not built yet",
		"refused: catalog.catalog1.conf.hive.metastore.thrift.compact.protocol.enabled=true: Thrift compact protocol to backends is not built yet",
		"error: server.tcp-keepalive=yes: not a boolean",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("check-config lacks %q:\n%s", want, msg)
		}
	}
}

// TestCheckConfigShowsKeytabsMasksPasswords: paths of secrets are shown,
// passwords are not.
func TestCheckConfigShowsKeytabsMasksPasswords(t *testing.T) {
	var out, errb bytes.Buffer
	path := writeFile(t, goodConfig(t)+"security.keytab=/etc/security/keytabs/proxy.keytab\n"+
		"ranger.ssl.truststore.password=hunter2\ncatalog.catalog1.conf.javax.jdo.option.ConnectionPassword=s3cret\n")
	if code := run([]string{"check-config", path}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	got := out.String()
	if !strings.Contains(got, "\nsecurity.keytab=/etc/security/keytabs/proxy.keytab\n") ||
		!strings.Contains(got, "\nranger.ssl.truststore.password=********\n") ||
		strings.Contains(got, "hunter2") || strings.Contains(got, "s3cret") {
		t.Errorf("check-config output:\n%s", got)
	}
}

// The real binary: refuses to start on a bad file, serves on a good one and
// stops cleanly on SIGTERM within its shutdown limit.
func TestBinaryStartsServesAndStopsOnSIGTERM(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "hms-proxy")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	bad := exec.Command(bin, writeFile(t, "catalogs=\n"))
	if out, err := bad.CombinedOutput(); err == nil || !strings.Contains(string(out), "catalogs") {
		t.Fatalf("a bad config must stop the start-up naming the key: %v\n%s", err, out)
	}
	// A proxy asked to protect does not start without the protection: with
	// Ranger on, Ranger-format audit events (not built) refuse the start. The
	// run is bounded, so a start that wrongly succeeds fails the test instead
	// of serving until the package times out.
	bounded, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	refused := exec.CommandContext(bounded, bin, writeFile(t, goodConfig(t)+
		"ranger.enabled=true\nranger.policy.rest.url=http://r:6080\nranger.service-name=s\nranger.audit.enabled=true\n"))
	if out, err := refused.CombinedOutput(); err == nil || bounded.Err() != nil ||
		!strings.Contains(string(out), "ranger.audit.enabled=true: Sending Ranger-format audit events is not built yet") {
		t.Fatalf("ranger.audit.enabled=true must refuse the start: %v\n%s", err, out)
	}

	cfg := goodConfig(t)
	path := writeFile(t, cfg)
	var logs bytes.Buffer
	cmd := exec.Command(bin, path)
	cmd.Stderr = &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var port string
	for _, line := range strings.Split(cfg, "\n") {
		if strings.HasPrefix(line, "server.port=") {
			port = strings.TrimPrefix(line, "server.port=")
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("proxy did not listen: %s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, logs.String())
		}
	case <-time.After(35 * time.Second):
		t.Fatalf("no exit within the shutdown limit\n%s", logs.String())
	}
	// Well inside the 30 s shutdown limit it would otherwise wait out.
	if d := time.Since(start); d > 25*time.Second {
		t.Fatalf("an idle proxy took %v to stop", d)
	}
	if !strings.Contains(logs.String(), "stopped") {
		t.Fatalf("no stop message:\n%s", logs.String())
	}
}
