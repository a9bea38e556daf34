package deploy

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/configs"
	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
)

const unitPath = "systemd/hms-proxy.service"

// unitFile is a systemd unit: section -> key -> values in order (a key may
// repeat, as SystemCallFilter does).
type unitFile map[string]map[string][]string

func parseUnit(text string) (unitFile, error) {
	u := unitFile{}
	section := ""
	for i, raw := range strings.Split(text, "\n") {
		l := strings.TrimSpace(raw)
		switch {
		case l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, ";"):
		case strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]"):
			section = l[1 : len(l)-1]
			if u[section] != nil {
				return nil, fmt.Errorf("line %d: section [%s] twice", i+1, section)
			}
			u[section] = map[string][]string{}
		case section == "":
			return nil, fmt.Errorf("line %d: %q outside a section", i+1, l)
		case strings.HasSuffix(l, "\\"):
			return nil, fmt.Errorf("line %d: continuation lines are not used in this unit", i+1)
		default:
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				return nil, fmt.Errorf("line %d: %q is not key=value", i+1, l)
			}
			u[section][strings.TrimSpace(k)] = append(u[section][strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	return u, nil
}

// one returns the single value of a key ("" and false when unset).
func (u unitFile) one(t *testing.T, section, key string) (string, bool) {
	t.Helper()
	vs := u[section][key]
	if len(vs) > 1 {
		t.Errorf("[%s] %s is set %d times", section, key, len(vs))
	}
	if len(vs) == 0 {
		return "", false
	}
	return vs[len(vs)-1], true
}

func readUnit(t *testing.T) (unitFile, string) {
	t.Helper()
	b, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	u, err := parseUnit(string(b))
	if err != nil {
		t.Fatalf("%s: %v", unitPath, err)
	}
	return u, string(b)
}

// The unit runs the documented command with the hardening of the
// packaging brief, and its limits fit the proxy's defaults.
func TestSystemdUnitSettings(t *testing.T) {
	u, _ := readUnit(t)
	for key, want := range map[string]string{
		"ExecStart":                imageBinary + " serve " + imageConfigFile,
		"Type":                     "exec",
		"DynamicUser":              "yes",
		"ProtectSystem":            "strict",
		"ProtectHome":              "yes",
		"PrivateTmp":               "yes",
		"NoNewPrivileges":          "yes",
		"CapabilityBoundingSet":    "", // ports above 1024: no capability at all
		"AmbientCapabilities":      "",
		"StateDirectory":           "hms-proxy",
		"LogsDirectory":            "hms-proxy",
		"WorkingDirectory":         "/var/lib/hms-proxy",
		"RestrictAddressFamilies":  "AF_INET AF_INET6 AF_UNIX",
		"RestartPreventExitStatus": "2",
	} {
		if got, ok := u.one(t, "Service", key); !ok || got != want {
			t.Errorf("[Service] %s=%q (set: %v), want %q", key, got, ok, want)
		}
	}
	if f := u["Service"]["SystemCallFilter"]; len(f) == 0 || f[0] != "@system-service" {
		t.Errorf("SystemCallFilter %q: want @system-service first", f)
	}
	thrift, mgmt := defaultPorts(t)
	if thrift < 1024 || mgmt < 1024 {
		t.Errorf("default ports %d/%d below 1024 would need CAP_NET_BIND_SERVICE", thrift, mgmt)
	}
	nofile, _ := u.one(t, "Service", "LimitNOFILE")
	if n, err := strconv.Atoi(nofile); err != nil || n < 65536 {
		t.Errorf("LimitNOFILE=%q: want at least 65536 (1000 connections per listener by default, plus backend sessions)", nofile)
	}
	cfg, err := configs.Parse(map[string]string{"catalogs": "c", "catalog.c.conf.hive.metastore.uris": "thrift://h:1"})
	if err != nil {
		t.Fatal(err)
	}
	stop, _ := u.one(t, "Service", "TimeoutStopSec")
	d, err := time.ParseDuration(stop)
	if err != nil || d <= cfg.Server.ShutdownTimeout {
		t.Errorf("TimeoutStopSec=%q must exceed the default server.shutdown-timeout-seconds (%s)", stop, cfg.Server.ShutdownTimeout)
	}
	if _, ok := u.one(t, "Install", "WantedBy"); !ok {
		t.Error("no [Install] WantedBy: systemctl enable would do nothing")
	}
}

// systemctl reload sends SIGHUP (ExecReload): the real binary must survive
// it and apply the file's new content (a catalog's access mode, seen in the
// effective configuration the reload logs), and refuse an invalid file while
// it keeps running.
func TestSystemdReloadIsSIGHUPAndTheProxyReloads(t *testing.T) {
	u, _ := readUnit(t)
	if r, _ := u.one(t, "Service", "ExecReload"); r != "/bin/kill -HUP $MAINPID" {
		t.Errorf("ExecReload=%q, want /bin/kill -HUP $MAINPID", r)
	}
	bin := buildProxy(t)
	port, mport := proxytest.FreePort(t), proxytest.FreePort(t)
	conf := filepath.Join(t.TempDir(), "hms-proxy.properties")
	write := func(extra string) {
		t.Helper()
		if err := os.WriteFile(conf, []byte(fmt.Sprintf("server.bind-host=127.0.0.1\nserver.port=%d\nmanagement.port=%d\n"+
			"catalogs=c\ncatalog.c.conf.hive.metastore.uris=thrift://127.0.0.1:1\naudit.enabled=false\n%s", port, mport, extra)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("")
	var logs syncBuffer
	cmd := exec.Command(bin, "serve", conf)
	cmd.Stderr = &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxy did not listen:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	hup := func(want string) {
		t.Helper()
		if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(logs.String(), want) {
			select {
			case err := <-done:
				t.Fatalf("the proxy exited on SIGHUP: %v\n%s", err, logs.String())
			case <-time.After(50 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the log 20 s after SIGHUP:\n%s", want, logs.String())
			}
		}
	}
	write("catalog.c.access-mode=READ_ONLY\n")
	hup("applied=catalog.c.access-mode")
	write("catalog.c.access-mode=READ_SOMETIMES\n")
	hup("configuration reload refused")
	if !strings.Contains(logs.String(), "catalog.c.access-mode") || !strings.Contains(logs.String(), "READ_SOMETIMES") {
		t.Errorf("the refusal does not name the key and the value:\n%s", logs.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after SIGTERM: %v\n%s", err, logs.String())
		}
	case <-time.After(40 * time.Second):
		t.Fatal("the proxy did not stop on SIGTERM")
	}
}

// syncBuffer is a bytes.Buffer the process writes while the test reads.
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

// systemd's own checks: systemd-analyze verify (syntax, directives, the
// command) and the offline security review, which must rate the unit "OK"
// or better (exposure at most 2.0 of 10). systemd itself does not run on
// the test machines (no systemd as PID 1), so the unit is not started.
func TestSystemdAnalyze(t *testing.T) {
	sa := needTool(t, "systemd-analyze", "systemd")
	u, text := readUnit(t)
	bin := buildProxy(t)
	// verify checks that ExecStart's program exists: a copy of the unit
	// names the freshly built binary; the rest is the unit as shipped.
	exec0, _ := u.one(t, "Service", "ExecStart")
	dir := t.TempDir()
	copyPath := filepath.Join(dir, "hms-proxy.service")
	replaced := strings.Replace(text, "ExecStart="+exec0, "ExecStart="+bin+strings.TrimPrefix(exec0, imageBinary), 1)
	if replaced == text {
		t.Fatal("ExecStart not found in the unit text")
	}
	if err := os.WriteFile(copyPath, []byte(replaced), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", copyPath).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err = exec.Command(sa, "security", "--offline=true", "--threshold=20", copyPath).CombinedOutput()
	level := regexp.MustCompile(`Overall exposure level for hms-proxy.service: ([0-9.]+) (\S+)`).FindStringSubmatch(string(out))
	if err != nil || level == nil {
		t.Errorf("systemd-analyze security: %v (want exposure at most 2.0)\n%s", err, out)
	} else {
		t.Logf("systemd-analyze security --offline: exposure %s %s", level[1], level[2])
	}
}

// buildProxy builds the proxy binary from this tree (the build cache makes
// repeated builds cheap).
func buildProxy(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hms-proxy")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/hms-proxy")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
