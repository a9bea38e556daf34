// Package waggle runs Waggle Dance 3.13.3 (Expedia's Hive metastore
// federation proxy, com.hotels:waggle-dance-boot:3.13.3:jar:exec from Maven
// Central) as a peer in the benchmark: PREFIXED federation over the same
// metastores hms-proxy federates, measured in the same interleaved rounds.
//
// Waggle Dance's Thrift listener has no bind-address setting and binds every
// interface. The benchmark keeps it on loopback with an LD_PRELOAD shim
// (shim/bind_loopback.c, compiled with the machine's gcc) that turns wildcard
// binds into loopback binds, and checks /proc/<pid>/net/tcp{,6} before any
// traffic: a listening socket of the process outside loopback stops the run
// of the peer.
package waggle

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hms-proxy/hms-proxy/bench/peer"
	"github.com/hms-proxy/hms-proxy/bench/proc"
)

// Version and Maven coordinates of the peer.
const (
	Version  = "3.13.3"
	Artifact = "com.hotels:waggle-dance-boot:" + Version + ":jar:exec"
)

// JVMOptions of the peer: a production-like JIT and the serial collector, as
// the benchmark's metastores get.
var JVMOptions = []string{"-Xms256m", "-Xmx1g", "-XX:+UseSerialGC", "-XX:-UsePerfData"}

// Java17Args are what Waggle Dance 3.13.3 needs on Java 17: its Spring Boot
// auto-configures Groovy templates, whose Groovy 2.4 cannot reflect into
// java.base any more, so that auto-configuration is excluded (Waggle Dance
// renders no templates).
var Java17Args = []string{
	"--spring.autoconfigure.exclude=org.springframework.boot.autoconfigure.groovy.template.GroovyTemplateAutoConfiguration",
}

//go:embed shim/bind_loopback.c
var shimSource []byte

// JarPath is where the jar lives in the Maven repository of the cache.
func JarPath(cache string) string {
	return filepath.Join(cache, "m2", "com", "hotels", "waggle-dance-boot", Version, "waggle-dance-boot-"+Version+"-exec.jar")
}

// Obtain returns the jar, downloading it into cache/m2 with Maven when it is
// not there yet (about 200 MB, once). The error says what is missing.
func Obtain(ctx context.Context, cache string) (string, error) {
	jar := JarPath(cache)
	if _, err := os.Stat(jar); err == nil {
		return jar, nil
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return "", fmt.Errorf("the Waggle Dance %s jar is not in %s and there is no mvn to fetch it (apt-get install maven)", Version, jar)
	}
	cmd := exec.CommandContext(ctx, mvn, "-q", "-B", "-Dmaven.repo.local="+filepath.Join(cache, "m2"),
		"dependency:get", "-Dartifact="+Artifact, "-Dtransitive=false")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("fetching %s from Maven Central: %v: %s", Artifact, err, peer.Tail(string(out), 8))
	}
	if _, err := os.Stat(jar); err != nil {
		return "", fmt.Errorf("mvn dependency:get %s succeeded but %s is missing", Artifact, jar)
	}
	return jar, nil
}

// BuildShim compiles bind_loopback.c into dir/bind_loopback.so with gcc.
func BuildShim(ctx context.Context, dir string) (string, error) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return "", errors.New("no gcc to build the loopback bind shim (apt-get install gcc)")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	src := filepath.Join(dir, "bind_loopback.c")
	if err := os.WriteFile(src, shimSource, 0o644); err != nil {
		return "", err
	}
	so := filepath.Join(dir, "bind_loopback.so")
	out, err := exec.CommandContext(ctx, gcc, "-shared", "-fPIC", "-O2", "-Wall", "-o", so, src, "-ldl").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("gcc bind_loopback.c: %v: %s", err, peer.Tail(string(out), 8))
	}
	return so, nil
}

// Federated is one federated metastore of the peer.
type Federated struct {
	Name   string // federated-meta-stores[n].name
	URI    string // remote-meta-store-uris
	Prefix string // database-prefix (PREFIXED resolution)
}

// Config is one peer process.
type Config struct {
	Java      string // java binary; "" = java from PATH
	Jar, Shim string
	Dir       string // config files and log
	Primary   string // primary metastore URI (databases unprefixed, read-write-create)
	Federated []Federated
}

// serverYAML and federationYAML are the peer's two configuration files.
func (c *Config) serverYAML(port int) string {
	return fmt.Sprintf(`# written by hms-bench (make bench)
port: %d
verbose: false
database-resolution: PREFIXED
queryFunctionsAcrossAllMetastores: false
`, port)
}

func (c *Config) federationYAML() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# written by hms-bench (make bench)\nprimary-meta-store:\n  name: primary\n  database-prefix: ''\n  remote-meta-store-uris: %s\n  access-control-type: READ_AND_WRITE_AND_CREATE\n", c.Primary)
	if len(c.Federated) > 0 {
		b.WriteString("federated-meta-stores:\n")
	}
	for _, f := range c.Federated {
		fmt.Fprintf(&b, "- name: %s\n  remote-meta-store-uris: %s\n  database-prefix: %s\n", f.Name, f.URI, f.Prefix)
	}
	return b.String()
}

// Start runs the peer, waits until it answers get_all_databases on its
// Thrift port (127.0.0.1) and checks that it listens on loopback only. Addr
// of the returned child is its Thrift address.
func Start(c Config, timeout time.Duration) (*proc.Child, error) {
	if c.Jar == "" || c.Shim == "" || c.Primary == "" {
		return nil, errors.New("waggle: Jar, Shim and Primary are required")
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, err
	}
	ports, err := peer.FreePorts(2) // Thrift, and its Spring web endpoint (actuator; default 18000)
	if err != nil {
		return nil, err
	}
	server, fed := filepath.Join(c.Dir, "waggle-dance-server.yml"), filepath.Join(c.Dir, "waggle-dance-federation.yml")
	if err := os.WriteFile(server, []byte(c.serverYAML(ports[0])), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(fed, []byte(c.federationYAML()), 0o644); err != nil {
		return nil, err
	}
	args := append(append([]string{}, JVMOptions...), "-jar", c.Jar,
		"--server-config="+server, "--federation-config="+fed, "--endpoint.port="+strconv.Itoa(ports[1]))
	args = append(args, Java17Args...)
	return peer.JVM{Name: "waggle-dance", Java: c.Java, Dir: c.Dir, Args: args, Env: []string{"LD_PRELOAD=" + c.Shim},
		Port: ports[0]}.Start(timeout)
}
