package testbed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Step is one step of a driver scenario, as printed by the Java driver (one JSON object per line).
type Step struct {
	Step   string `json:"step"`
	OK     bool   `json:"ok"`
	Error  string `json:"error,omitempty"`
	Ms     int64  `json:"ms"`
	Detail string `json:"detail,omitempty"`
}

func (s Step) String() string {
	status := "ok  "
	if !s.OK {
		status = "FAIL"
	}
	out := fmt.Sprintf("%s %6dms %s", status, s.Ms, s.Step)
	if s.Error != "" {
		out += " — error: " + s.Error
	}
	if s.Detail != "" {
		out += " — " + s.Detail
	}
	return out
}

// Memory flags of a driver JVM (a short-lived client).
var driverJVM = []string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData"}

// scenarioTimeout bounds one driver run.
const scenarioTimeout = 10 * time.Minute

// RunScenario runs a scenario of the Java driver built against the real HiveMetaStoreClient of version client,
// against uri (thrift://host:port), with scenario arguments such as "--db", "x". It returns the steps the driver
// reported; the error is non-nil if any step failed or the driver itself failed (then it carries stderr's tail).
func RunScenario(client Version, uri string, scenario string, args ...string) ([]Step, error) {
	if err := client.valid(); err != nil {
		return nil, err
	}
	if err := Prepare(); err != nil {
		return nil, err
	}
	java, err := javaBin()
	if err != nil {
		return nil, err
	}
	flags, err := jvmFlags(client)
	if err != nil {
		return nil, err
	}
	jargs := append([]string{}, driverJVM...)
	jargs = append(jargs, flags...)
	cp := driverJar(client) + string(filepath.ListSeparator) + filepath.Join(libDir(client), "*")
	if scenario == "hs2sql" {
		// Hive JDBC 4.1.0 and the HiveServer2 classes it uses (testbed/hiveserver2.go)
		cp = filepath.Join(hs2Dir(), "*") + string(filepath.ListSeparator) + cp
	}
	if scenario == "iceberg" {
		// Iceberg first: Hive 4.1's hive-exec bundles older copies of some of its libraries (Parquet).
		cp = filepath.Join(icebergDir(client), "*") + string(filepath.ListSeparator) + cp
	}
	jargs = append(jargs,
		"-D"+RunProperty+"="+runID,
		"-cp", cp,
		"hmsbed.Driver", "--uri", uri, "--scenario", scenario)
	jargs = append(jargs, args...)

	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	cmd, archived := JavaCommand(ctx, java, jargs...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	CountLaunch("driver JVMs (RunScenario)")
	runErr := cmd.Run()
	archived()

	var steps []Step
	var junk []string
	for _, line := range strings.Split(stdout.String(), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var s Step
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &s) == nil && s.Step != "" {
			steps = append(steps, s)
		} else {
			junk = append(junk, line)
		}
	}
	what := fmt.Sprintf("Hive %s driver scenario %q against %s", client, scenario, uri)
	var failed []string
	for _, s := range steps {
		if !s.OK {
			failed = append(failed, s.String())
		}
	}
	exitCode := -1
	var exitErr *exec.ExitError
	if runErr == nil {
		exitCode = 0
	} else if errors.As(runErr, &exitErr) {
		exitCode = exitErr.ExitCode()
	}
	switch {
	case ctx.Err() != nil:
		return steps, fmt.Errorf("testbed: %s timed out after %v; stderr:\n%s", what, scenarioTimeout,
			tail(stderr.String(), 40))
	case exitCode != 0 && exitCode != 1:
		return steps, fmt.Errorf("testbed: %s: driver failed (%v); failed steps: %s; other stdout: %q; stderr:\n%s",
			what, runErr, strings.Join(failed, "\n"), junk, tail(stderr.String(), 40))
	case len(steps) == 0:
		return steps, fmt.Errorf("testbed: %s reported no steps (exit %d); stderr:\n%s", what, exitCode,
			tail(stderr.String(), 40))
	case len(failed) > 0:
		return steps, fmt.Errorf("testbed: %s: %d of %d steps failed:\n%s", what, len(failed), len(steps),
			strings.Join(failed, "\n"))
	case exitCode != 0:
		return steps, fmt.Errorf("testbed: %s exited %d with no failed step; stderr:\n%s", what, exitCode,
			tail(stderr.String(), 40))
	}
	return steps, nil
}

// RunScenarioT runs a driver scenario for a test: logs every step, fails t if any step (or the driver) failed.
func RunScenarioT(t testing.TB, client Version, uri, scenario string, args ...string) []Step {
	t.Helper()
	skipIfRequested(t)
	steps, err := RunScenario(client, uri, scenario, args...)
	for _, s := range steps {
		t.Logf("[hive %s %s] %s", client, scenario, s)
	}
	if err != nil {
		t.Fatalf("%v", err)
	}
	return steps
}

// KerberosClient makes the driver log in from a keytab and talk SASL/GSSAPI: pass Args() after the scenario
// arguments of RunScenario.
type KerberosClient struct {
	KDC *KDC
	// Principal and Keytab: the client's login (e.g. "alice@REALM").
	Principal, Keytab string
	// ServerPrincipal is hive.metastore.kerberos.principal ("hive/_HOST@REALM" or an explicit host).
	ServerPrincipal string
	// Protection is the client's hadoop.rpc.protection ("" = authentication).
	Protection string
	// Conf are more client settings, key=value.
	Conf []string
	// NoLogin configures Kerberos but skips the login: a client without credentials.
	NoLogin bool
}

// Args renders the driver's security arguments.
func (k KerberosClient) Args() []string {
	a := []string{"--principal", k.Principal, "--krb5-conf", k.KDC.Krb5Conf, "--server-principal", k.ServerPrincipal}
	if k.NoLogin {
		a = append(a, "--no-login")
	} else {
		a = append(a, "--keytab", k.Keytab)
	}
	if k.Protection != "" {
		a = append(a, "--conf", "hadoop.rpc.protection="+k.Protection)
	}
	for _, kv := range k.Conf {
		a = append(a, "--conf", kv)
	}
	return a
}
