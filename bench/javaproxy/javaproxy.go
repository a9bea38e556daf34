// Package javaproxy runs the Java HMS Proxy (the public project whose
// behaviour hms-proxy's spec describes: github.com/balookrd/hms-proxy) as a
// peer in the benchmark, over the same metastores and catalogs hms-proxy
// federates, measured in the same interleaved rounds.
//
// The benchmark never builds it: the operator builds its runnable jar
// (`mvn package` in a checkout of that project makes
// target/hms-proxy-<version>-fat.jar) and names the file in
// BENCH_JAVA_PROXY_JAR. Without it the run goes on without this peer and
// says why in its notes. Its properties file uses the spec's keys
// (server.*, management.*, routing.default-catalog, catalogs,
// catalog.<name>.conf.hive.metastore.uris); its Thrift and management
// listeners bind server.bind-host and management.bind-host, set to
// 127.0.0.1 here, and the process's listening sockets are checked before any
// traffic.
package javaproxy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hms-proxy/hms-proxy/bench/peer"
	"github.com/hms-proxy/hms-proxy/bench/proc"
	"github.com/hms-proxy/hms-proxy/bench/proxybench"
)

// JarEnv names the environment variable that holds the prebuilt jar.
const JarEnv = "BENCH_JAVA_PROXY_JAR"

// Name is how the results call this peer.
const Name = "Java HMS Proxy"

// JVMOptions of the peer: the JIT and collector the other JVMs of the
// benchmark get (Waggle Dance, the metastores' serial collector).
var JVMOptions = []string{"-Xms256m", "-Xmx1g", "-XX:+UseSerialGC", "-XX:-UsePerfData"}

// Jar checks the jar named by path (usually $BENCH_JAVA_PROXY_JAR). The
// error says what is missing and how the operator gets it.
func Jar(path string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("%s is not set (build the Java HMS Proxy's fat jar outside this repository and name it there)", JarEnv)
	}
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("%s=%s: %v", JarEnv, path, err)
	}
	if st.IsDir() || !strings.HasSuffix(path, ".jar") {
		return "", fmt.Errorf("%s=%s is not a .jar file", JarEnv, path)
	}
	return filepath.Abs(path)
}

// Version reads the version out of the jar's file name
// (hms-proxy-<version>-fat.jar), "" when it does not follow that form.
func Version(jar string) string {
	b := filepath.Base(jar)
	if v, ok := strings.CutPrefix(b, "hms-proxy-"); ok {
		return strings.TrimSuffix(strings.TrimSuffix(v, ".jar"), "-fat")
	}
	return ""
}

// Config is one peer process.
type Config struct {
	Java     string // java binary; "" = java from PATH
	Jar      string
	Dir      string   // properties, log4j configuration and log
	Backends []string // one metastore URI per catalog: catalog1 (the default), catalog2, ...
}

// Props returns the peer's properties: loopback listeners, the catalogs,
// no front-door security, and everything else at its defaults (serial
// fan-out: routing.hedged-read.enabled is off by default).
func Props(port, mgmtPort int, backends []string) map[string]string {
	p := map[string]string{
		"server.bind-host":        "127.0.0.1",
		"server.port":             strconv.Itoa(port),
		"management.enabled":      "true",
		"management.bind-host":    "127.0.0.1",
		"management.port":         strconv.Itoa(mgmtPort),
		"security.mode":           "NONE",
		"routing.default-catalog": "catalog1",
	}
	var names []string
	for i, uri := range backends {
		name := "catalog" + strconv.Itoa(i+1)
		names = append(names, name)
		p["catalog."+name+".conf.hive.metastore.uris"] = uri
	}
	p["catalogs"] = strings.Join(names, ",")
	return p
}

// log4jWarn puts the peer's logging at WARN, the level the benchmark gives
// hms-proxy (logging.level=WARN): its bundled configuration enables DEBUG
// for its own packages, which formats debug records on every call even
// though no appender writes them.
const log4jWarn = `# written by hms-bench (make bench)
log4j.rootLogger=WARN, console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.Target=System.err
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %5p [%t] %c{2}: %m%n
log4j.logger.io.github.mmalykhin.hmsproxy=WARN
`

// Start runs the peer, waits until it answers get_all_databases on its
// Thrift port and checks that it listens on loopback only. Addr of the
// returned child is its Thrift address.
func Start(name string, c Config, timeout time.Duration) (*proc.Child, error) {
	if c.Jar == "" || len(c.Backends) == 0 {
		return nil, errors.New("javaproxy: Jar and Backends are required")
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, err
	}
	ports, err := peer.FreePorts(2) // Thrift, management
	if err != nil {
		return nil, err
	}
	props, l4j := filepath.Join(c.Dir, "hms-proxy.properties"), filepath.Join(c.Dir, "log4j.properties")
	if err := os.WriteFile(props, []byte(proxybench.PropsText(Props(ports[0], ports[1], c.Backends))), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(l4j, []byte(log4jWarn), 0o644); err != nil {
		return nil, err
	}
	args := append(append([]string{}, JVMOptions...), "-Dlog4j.configuration=file:"+l4j, "-jar", c.Jar, props)
	return peer.JVM{Name: name, Java: c.Java, Dir: c.Dir, Args: args, Port: ports[0]}.Start(timeout)
}
