package testbed

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// HiveServer2 is a real HiveServer2 4.x in a JVM of its own: HiveServer2's service layer from hive-service 4.0.1 (the
// newest published) on the Hive 4.1.0 engine and metastore client (hive-exec 4.1.0, the test bed's 4.1.0 jars),
// local MapReduce, the binary Thrift transport on 127.0.0.1:Port. Clients reach it over Hive JDBC 4.1.0 (JDBC); the
// hs2sql driver scenario does (RunScenario). Its log is Dir/hiveserver2.log.
type HiveServer2 struct {
	Port int
	JDBC string // jdbc:hive2://127.0.0.1:PORT/default
	Dir  string
	// MetastoreURI is the metastore it was started with (hive.metastore.uris).
	MetastoreURI string

	mu   sync.Mutex
	proc *jvm
}

// HiveServer2Options say which metastore HiveServer2 uses and the warehouse it shares with it.
type HiveServer2Options struct {
	MetastoreURI string // thrift://host:port: a metastore or an hms-proxy front door
	// Warehouse and ExternalWarehouse are HiveServer2's warehouse roots (hive.metastore.warehouse.dir and
	// .external.dir). HiveServer2 writes the data of a CTAS target where it computes the table's default location:
	// from a Hive 4 database's managed location, or, for a database without one (created by Hive 3.1.3), from its own
	// warehouse root: create such a database at Dir/warehouse/<name>.db. Empty Warehouse: Dir/warehouse. (An earlier
	// measurement read transactional inserts back empty with HiveServer2's warehouse root equal to a 4.1.0
	// metastore's; a later run of that setting read them. HiveServer2 keeps a root of its own either way.)
	Warehouse, ExternalWarehouse string
	// DoAs runs each session's work as its JDBC user (hive.server2.enable.doAs=true): HiveServer2 opens the session's
	// metastore client inside that user's (proxy) UGI, so the metastore sees the JDBC user by set_ugi rather than
	// HiveServer2's own. False (the default): every session is HiveServer2's process user.
	DoAs bool
	// Conf are more hive-site.xml settings, key=value.
	Conf []string
}

// hiveServer2JVM keeps HiveServer2 small: 1 GiB heap (local MapReduce jobs run inside it), the serial collector, C1.
var hiveServer2JVM = []string{"-Xms128m", "-Xmx1g", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData"}

// hs2Dir holds HiveServer2's jars beyond the 4.1.0 metastore's (testbed/java/hive4/pom.xml, execution hs2-jars).
func hs2Dir() string {
	return filepath.Join(buildOf("build", Hive410), "hs2")
}

// HiveServer2ClientClassPath is the class path of a JDBC client of HiveServer2 (Hive JDBC 4.1.0 and what it uses), for
// a Java source file run against a HiveServer2 of the test bed.
func HiveServer2ClientClassPath() string {
	return filepath.Join(hs2Dir(), "*") + string(filepath.ListSeparator) + filepath.Join(libDir(Hive410), "*")
}

// conf is HiveServer2's hive-site.xml: the metastore, the warehouse, local MapReduce inside the JVM, no web UI, and
// none of the background services a test does not use.
func (o HiveServer2Options) conf(dir string, port int) []string {
	wh := o.Warehouse
	if wh == "" {
		wh = filepath.Join(dir, "warehouse")
	}
	c := []string{
		"hive.metastore.uris=" + o.MetastoreURI,
		"hive.metastore.warehouse.dir=" + wh,
		// HiveServer2 4.0.1 asks for this 3.x key at start; the 4.1.0 engine has no compactor worker of its own
		"hive.metastore.runworker.in=metastore",
		"hive.server2.thrift.bind.host=127.0.0.1",
		"hive.server2.thrift.port=" + strconv.Itoa(port),
		"hive.server2.webui.port=0",
		"hive.server2.enable.doAs=" + strconv.FormatBool(o.DoAs),
		"hive.server2.max.start.attempts=1",
		"hive.async.log.enabled=false",
		// the metastore refuses notification reads to users that are not its proxy users; nothing here caches events
		"hive.notification.event.poll.interval=0s",
		"hive.server2.materializedviews.registry.impl=DUMMY",
		"hive.execution.engine=mr",
		"mapreduce.framework.name=local",
		"fs.defaultFS=file:///",
		// MapReduce jobs and map-join hash tables in this JVM, not in children started with a hadoop launcher
		"hive.exec.submitviachild=false",
		"hive.exec.submit.local.task.via.child=false",
		"hive.exec.scratchdir=" + filepath.Join(dir, "scratch"),
		"hive.exec.local.scratchdir=" + filepath.Join(dir, "scratch", "local"),
		"hive.downloaded.resources.dir=" + filepath.Join(dir, "scratch", "resources"),
		"hive.querylog.location=" + filepath.Join(dir, "scratch", "querylog"),
		"hive.server2.logging.operation.log.location=" + filepath.Join(dir, "scratch", "operation_logs"),
	}
	if o.ExternalWarehouse != "" {
		c = append(c, "hive.metastore.warehouse.external.dir="+o.ExternalWarehouse)
	}
	return append(c, o.Conf...)
}

// hiveServer2Log4j sends HiveServer2's log (INFO; DataNucleus, Hadoop and Calcite at WARN) to stdout, which goes to
// Dir/hiveserver2.log. HiveServer2 looks for hive-log4j2.properties on its class path (its conf folder comes first).
const hiveServer2Log4j = `status = error
name = hmsbed-hs2
appender.out.type = Console
appender.out.name = out
appender.out.target = SYSTEM_OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = %d{ISO8601} %-5p [%t] %c{2}: %m%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = WARN
logger.hive.name = org.apache.hadoop.hive
logger.hive.level = INFO
logger.calcite.name = org.apache.calcite
logger.calcite.level = WARN
logger.dn.name = DataNucleus
logger.dn.level = WARN
`

// StartHiveServer2 starts HiveServer2 with o and waits until its Thrift port answers. Stop it with Stop.
func StartHiveServer2(o HiveServer2Options) (*HiveServer2, error) {
	if o.MetastoreURI == "" {
		return nil, fmt.Errorf("testbed: HiveServer2 needs a metastore URI (got %+v)", o)
	}
	if err := Prepare(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(hs2Dir()); err != nil {
		return nil, fmt.Errorf("testbed: HiveServer2's jars are missing (%v): run testbed/bin/prepare.sh", err)
	}
	if err := os.MkdirAll(runRoot(), 0o755); err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	dir, err := os.MkdirTemp(runRoot(), "hiveserver2-")
	if err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	for _, d := range []string{"conf", "tmp", "scratch"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("testbed: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "conf", "hive-log4j2.properties"), []byte(hiveServer2Log4j), 0o644); err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	if err := writeOwner(dir); err != nil {
		return nil, err
	}
	h := &HiveServer2{Dir: dir, MetastoreURI: o.MetastoreURI}
	var lastErr error
	for attempt := 0; attempt < 4; attempt++ {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		h.Port, h.JDBC = port, fmt.Sprintf("jdbc:hive2://127.0.0.1:%d/default", port)
		if err := os.WriteFile(filepath.Join(dir, "conf", "hive-site.xml"), siteXML(o.conf(dir, port)), 0o644); err != nil {
			return nil, fmt.Errorf("testbed: %w", err)
		}
		if lastErr = h.start(); lastErr == nil {
			return h, nil
		}
		if !errors.Is(lastErr, errPortTaken) {
			break
		}
	}
	return nil, lastErr
}

// StartHiveServer2T starts HiveServer2 for a test; t.Cleanup stops it (and removes its Dir if the test passed).
func StartHiveServer2T(t testing.TB, o HiveServer2Options) *HiveServer2 {
	t.Helper()
	skipIfRequested(t)
	h, err := StartHiveServer2(o)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		if err := h.Stop(); err != nil {
			t.Errorf("%v", err)
		}
		if t.Failed() || os.Getenv("HMS_PROXY_KEEP_HS2") != "" {
			t.Logf("HiveServer2 files kept for inspection: %s", h.Dir)
		} else {
			os.RemoveAll(h.Dir)
		}
	})
	return h
}

func (h *HiveServer2) logPath() string { return filepath.Join(h.Dir, "hiveserver2.log") }

func (h *HiveServer2) start() error {
	java, err := javaBin()
	if err != nil {
		return err
	}
	flags, err := jvmFlags(Hive410)
	if err != nil {
		return err
	}
	args := append(append([]string{}, hiveServer2JVM...), flags...)
	sep := string(filepath.ListSeparator)
	args = append(args,
		"-D"+RunProperty+"="+runID,
		"-Dhmsproxy.testbed.dir="+h.Dir,
		"-Djava.io.tmpdir="+filepath.Join(h.Dir, "tmp"),
		"-cp", filepath.Join(h.Dir, "conf")+sep+filepath.Join(hs2Dir(), "*")+sep+filepath.Join(libDir(Hive410), "*"),
		"org.apache.hive.service.server.HiveServer2")
	logf, err := os.OpenFile(h.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("testbed: %w", err)
	}
	offset, _ := logf.Seek(0, 2)
	fmt.Fprintf(logf, "==== hmsbed: starting HiveServer2 on port %d (metastore %s) at %s\n", h.Port, h.MetastoreURI, time.Now().Format(time.RFC3339))
	cmd := exec.Command(java, args...)
	cmd.Dir = h.Dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	p, err := startJVM(cmd)
	logf.Close()
	if err != nil {
		return fmt.Errorf("testbed: starting HiveServer2: %w", err)
	}
	if err := h.waitReady(p, offset); err != nil {
		p.stop(5 * time.Second)
		return err
	}
	h.mu.Lock()
	h.proc = p
	h.mu.Unlock()
	return nil
}

// waitReady waits until this JVM listens on the port (HiveServer2 opens it last, after its services started).
func (h *HiveServer2) waitReady(p *jvm, offset int64) error {
	timeout := startTimeout()
	deadline := time.Now().Add(timeout)
	fail := func(why string, cause error) error {
		since := logSince(h.logPath(), offset)
		if cause == nil && strings.Contains(since, "Address already in use") {
			cause = errPortTaken
		}
		msg := fmt.Sprintf("testbed: HiveServer2 on 127.0.0.1:%d %s; first errors in %s:\n%s\nlast lines:\n%s",
			h.Port, why, h.logPath(), firstErrors(since, 8), tailFile(h.logPath(), 30))
		if cause != nil {
			return fmt.Errorf("%s: %w", msg, cause)
		}
		return errors.New(msg)
	}
	for {
		if p.exited() {
			return fail(fmt.Sprintf("exited during start-up (%v)", p.err), nil)
		}
		if strings.Contains(logSince(h.logPath(), offset), "Error starting HiveServer2") {
			return fail("failed to start", nil)
		}
		if owner, err := listeningOwner(h.Port, p.cmd.Process.Pid); err == nil && owner {
			return nil
		}
		if time.Now().After(deadline) {
			return fail(fmt.Sprintf("did not listen within %v", timeout), nil)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Stop stops HiveServer2 (SIGTERM, SIGKILL after 15 s). Idempotent; reports an error if it had died on its own.
func (h *HiveServer2) Stop() error {
	return stopOwned(&h.mu, &h.proc, fmt.Sprintf("HiveServer2 on port %d", h.Port), h.logPath())
}

// transcriptMarks are the lines of HiveServer2's log that say what a statement did to the metastore's transactions
// and which files it read: the statement itself, the transaction it opened and the write id it was given, the
// snapshot of write ids a read used, the files and splits it read and the rows its table scan gave, the lock
// answers, the first line of each error. The first mark starts a statement (StatementTranscripts).
var transcriptMarks = []string{"HiveSessionImpl: executing ", "Opened txnid", "Allocated write ID", "writeIdList: ",
	"Read ValidWriteIdList", "getSplits finished", "Reading ORC rows from", "RECORDS_OUT_OPERATOR_TS_", "LockResponse(", " ERROR "}

// Transcript is HiveServer2's log cut to transcriptMarks, the statements' SQL and the other lines shortened, for a
// test that must say why a statement answered differently from a reference run (the directory itself is kept, but a
// CI log is often all that reaches the reader). At most maxLines lines, the last ones.
func (h *HiveServer2) Transcript(maxLines int) string {
	out, err := h.transcriptLines()
	if err != nil {
		return err.Error()
	}
	if len(out) > maxLines {
		out = append([]string{fmt.Sprintf("(%d earlier lines left out)", len(out)-maxLines)}, out[len(out)-maxLines:]...)
	}
	return strings.Join(out, "\n")
}

// StatementTranscripts is the transcript cut into one part per statement HiveServer2 ran, in order: each starts with
// the statement's "executing" line and holds what the log says of it until the next statement. (Work of a statement
// that runs on after the next one started, such as an asynchronous clean-up, falls into the later part.) Lines
// before the first statement are left out.
func (h *HiveServer2) StatementTranscripts() ([]string, error) {
	lines, err := h.transcriptLines()
	if err != nil {
		return nil, err
	}
	var parts []string
	for _, l := range lines {
		switch {
		case strings.Contains(l, transcriptMarks[0]):
			parts = append(parts, l)
		case len(parts) > 0:
			parts[len(parts)-1] += "\n" + l
		}
	}
	return parts, nil
}

// transcriptLines are the lines of the log that carry a transcript mark, each shortened to its time of day and the
// text from the mark on.
func (h *HiveServer2) transcriptLines() ([]string, error) {
	data, err := os.ReadFile(h.logPath())
	if err != nil {
		return nil, fmt.Errorf("(cannot read %s: %v)", h.logPath(), err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		for _, m := range transcriptMarks {
			i := strings.Index(line, m)
			if i < 0 {
				continue
			}
			at := ""
			if len(line) >= 23 && line[4] == '-' && line[10] == 'T' {
				at = line[11:23] + " " // the time of day of an ISO8601 stamp
			}
			text := strings.TrimSpace(line[i:])
			if m == "writeIdList: " { // OrcInputFormat's context line: keep the snapshot only
				text, _, _ = strings.Cut(text, " isTransactionalTable")
			}
			if len(text) > 300 {
				text = text[:300] + "…"
			}
			out = append(out, at+text)
			break
		}
	}
	return out, nil
}
