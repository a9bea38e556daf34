package testbed

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Trino, a real engine whose Iceberg connector is a client of the REST catalog (and, with TrinoOptions.HivePlugin,
// whose Hive connector is a Thrift client of a metastore): io.trino:trino-server from Maven Central (a tarball),
// unpacked once into the cache with only the Iceberg plugin kept (or Iceberg and Hive), run with the launcher on a
// JDK it accepts (Trino 476 needs Java 24 or later: the machine's Temurin 25). Each instance has its own etc/ and
// data/ and one catalog file per Iceberg catalog it is given.

// TrinoVersion is the Trino release of the test bed.
const TrinoVersion = "476"

// Trino is a running Trino coordinator (also its only worker).
type Trino struct {
	URL string // http://127.0.0.1:PORT
	Dir string // etc/, data/, logs
	p   *jvm
}

// TrinoOptions say what a Trino runs with.
type TrinoOptions struct {
	// Catalogs are catalog name -> properties (etc/catalog/<name>.properties).
	Catalogs map[string]map[string]string
	// JVM are more JVM options (a trust store, for one).
	JVM []string
	// HivePlugin keeps Trino's Hive connector next to the Iceberg one (a catalog with connector.name=hive, a Thrift
	// client of a metastore). Its unpacked server is a cache entry of its own.
	HivePlugin bool
}

// TrinoJava finds a JDK Trino TrinoVersion runs on (24 or later), or says what is missing.
func TrinoJava() (string, error) {
	var found []string
	for _, pat := range []string{"/usr/lib/jvm/temurin-2[4-9]*", "/usr/lib/jvm/java-2[4-9]-*", "/usr/lib/jvm/temurin-[3-9][0-9]*"} {
		m, _ := filepath.Glob(pat)
		found = append(found, m...)
	}
	sort.Strings(found)
	for i := len(found) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(found[i], "bin", "java")); err == nil {
			return found[i], nil
		}
	}
	return "", fmt.Errorf("testbed: Trino %s needs Java 24 or later and no such JDK is under /usr/lib/jvm "+
		"(Debian's openjdk is 17; install a Temurin 25, e.g. /usr/lib/jvm/temurin-25-jdk-amd64)", TrinoVersion)
}

// trinoDist returns the unpacked server with only the Iceberg plugin (and the Hive one with hive), preparing it on
// first use.
func trinoDist(hive bool) (string, error) {
	keep := map[string]bool{"iceberg": true, "hive": hive}
	name := TrinoVersion + "-iceberg"
	if hive {
		name += "-hive"
	}
	return cached(filepath.Join(Cache(), "trino", name), func(dir string) error {
		tgz, err := MavenArtifact("io.trino:trino-server:" + TrinoVersion + ":tar.gz")
		if err != nil {
			return err
		}
		// System tar: the tarball's plugins share jars through hard links.
		if out, err := exec.Command("tar", "-xzf", tgz, "-C", dir, "--strip-components=1").CombinedOutput(); err != nil {
			return fmt.Errorf("testbed: unpacking %s: %v\n%s", tgz, err, tail(string(out), 20))
		}
		plugins, err := os.ReadDir(filepath.Join(dir, "plugin"))
		if err != nil {
			return err
		}
		for _, p := range plugins {
			if !keep[p.Name()] {
				if err := os.RemoveAll(filepath.Join(dir, "plugin", p.Name())); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// StartTrino starts a Trino on a free loopback port with the given catalogs and waits until it serves queries.
func StartTrino(o TrinoOptions) (*Trino, error) {
	if skipped() {
		return nil, ErrSkip
	}
	jdk, err := TrinoJava()
	if err != nil {
		return nil, err
	}
	dist, err := trinoDist(o.HivePlugin)
	if err != nil {
		return nil, err
	}
	dir, err := newRunDir("trino-")
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		if err := writeTrinoEtc(dir, port, o); err != nil {
			return nil, err
		}
		cmd := exec.Command(filepath.Join(dist, "bin", "launcher"), "run", "--etc-dir="+filepath.Join(dir, "etc"),
			"--data-dir="+filepath.Join(dir, "data"), "-D"+RunProperty+"="+runID)
		cmd.Env = append(os.Environ(), "JAVA_HOME="+jdk, "PATH="+filepath.Join(jdk, "bin")+":"+os.Getenv("PATH"))
		logf, err := os.OpenFile(filepath.Join(dir, "trino.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, logf, logf
		p, err := startJVM(cmd)
		logf.Close()
		if err != nil {
			return nil, fmt.Errorf("testbed: starting Trino: %w", err)
		}
		t := &Trino{URL: "http://127.0.0.1:" + strconv.Itoa(port), Dir: dir, p: p}
		err = t.waitReady(port, 2*startTimeout())
		if err == errPortTaken && attempt < 3 {
			p.stop(10 * time.Second)
			continue
		}
		if err != nil {
			p.stop(10 * time.Second)
			return nil, err
		}
		return t, nil
	}
}

func writeTrinoEtc(dir string, port int, o TrinoOptions) error {
	etc := filepath.Join(dir, "etc")
	if err := os.MkdirAll(filepath.Join(etc, "catalog"), 0o755); err != nil {
		return err
	}
	files := map[string]string{
		"node.properties": "node.environment=hmsproxytest\nnode.id=hms-proxy-test\nnode.data-dir=" + filepath.Join(dir, "data") +
			"\nnode.internal-address=127.0.0.1\n",
		"config.properties": fmt.Sprintf("coordinator=true\nnode-scheduler.include-coordinator=true\nhttp-server.http.port=%d\n"+
			"discovery.uri=http://127.0.0.1:%d\nquery.max-memory=256MB\nquery.max-memory-per-node=256MB\n"+
			"memory.heap-headroom-per-node=96MB\ntask.concurrency=1\ntask.max-worker-threads=4\n", port, port),
		"jvm.config": strings.Join(append([]string{"-server", "-Xms256m", "-Xmx768m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
			"-XX:+ExitOnOutOfMemoryError", "-XX:-OmitStackTraceInFastThrow", "-XX:ReservedCodeCacheSize=256M",
			"-Djdk.attach.allowAttachSelf=true", "-Dfile.encoding=UTF-8", "-XX:+EnableDynamicAgentLoading"}, o.JVM...), "\n") + "\n",
		"log.properties": "io.trino=INFO\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(etc, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	for name, props := range o.Catalogs {
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, "%s=%s\n", k, props[k])
		}
		if err := os.WriteFile(filepath.Join(etc, "catalog", name+".properties"), []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// waitReady waits until /v1/info says the server has started.
func (t *Trino) waitReady(port int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	client := &http.Client{Timeout: 5 * time.Second}
	for time.Now().Before(deadline) {
		if t.p.exited() {
			out := tailFile(filepath.Join(t.Dir, "trino.out"), 30)
			if strings.Contains(out, "Address already in use") {
				return errPortTaken
			}
			return fmt.Errorf("testbed: Trino exited during start-up (%v):\n%s", t.p.err, out)
		}
		resp, err := client.Get(t.URL + "/v1/info")
		if err == nil {
			var info struct {
				Starting bool `json:"starting"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&info)
			resp.Body.Close()
			if resp.StatusCode == 200 && !info.Starting {
				if owner, err := listeningOwner(port, t.p.cmd.Process.Pid); err == nil && !owner {
					return errPortTaken
				}
				return nil
			}
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("testbed: Trino on %s did not start within %v; output tail:\n%s", t.URL, limit, tailFile(filepath.Join(t.Dir, "trino.out"), 30))
}

// Stop stops Trino (SIGTERM, then SIGKILL after 20 s).
func (t *Trino) Stop() error {
	if t.p != nil {
		t.p.stop(20 * time.Second)
	}
	return nil
}

// Query runs one statement through Trino's client protocol (POST /v1/statement, then nextUri until done) as user
// and returns its rows (numbers as json.Number); a failed query is an error with Trino's message.
func (t *Trino) Query(ctx context.Context, user, sql string) ([][]any, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", t.URL+"/v1/statement", strings.NewReader(sql))
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Trino-User", user)
	var rows [][]any
	client := &http.Client{Timeout: 2 * time.Minute}
	for {
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests {
			time.Sleep(200 * time.Millisecond)
			req, _ = http.NewRequestWithContext(ctx, req.Method, req.URL.String(), bytes.NewReader(nil))
			req.Header.Set("X-Trino-User", user)
			continue
		}
		if resp.StatusCode != 200 {
			return nil, fmt.Errorf("trino %s: HTTP %d: %s", sql, resp.StatusCode, b)
		}
		var r struct {
			NextURI string  `json:"nextUri"`
			Data    [][]any `json:"data"`
			Error   *struct {
				Message   string `json:"message"`
				ErrorName string `json:"errorName"`
			} `json:"error"`
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber() // bigint values (snapshot ids) exactly
		if err := dec.Decode(&r); err != nil {
			return nil, fmt.Errorf("trino %s: %v: %s", sql, err, b)
		}
		if r.Error != nil {
			return nil, fmt.Errorf("trino %s: %s: %s", sql, r.Error.ErrorName, r.Error.Message)
		}
		rows = append(rows, r.Data...)
		if r.NextURI == "" {
			return rows, nil
		}
		req, err = http.NewRequestWithContext(ctx, "GET", r.NextURI, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("X-Trino-User", user)
	}
}
