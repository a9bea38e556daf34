package testbed

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Metastore is one real Hive metastore JVM on 127.0.0.1:Port with its own Derby database and warehouse under Dir.
// Its log is Dir/metastore.log.
type Metastore struct {
	Version Version
	Port    int
	URI     string // thrift://127.0.0.1:PORT
	Dir     string

	// Kerberos is set when the metastore was started Kerberized (StartMetastoreWith).
	Kerberos *MetastoreKerberos
	// TLS is set when the metastore serves TLS (StartMetastoreWith).
	TLS *MetastoreTLS

	storage *MetastoreStorage
	// notificationJar is NotificationListenerJar's, when the metastore records notifications.
	notificationJar string

	mu   sync.Mutex
	proc *jvm
}

// MetastoreOptions are the settings of StartMetastoreWith beyond the Hive version.
type MetastoreOptions struct {
	// Kerberos, when set, starts the metastore with SASL/GSSAPI (hive.metastore.sasl.enabled=true).
	Kerberos *MetastoreKerberos
	// TLS, when set, starts it with hive.metastore.use.SSL=true and the keystore (NewMetastoreKeyStore).
	TLS *MetastoreTLS
	// Storage puts the metastore's warehouse on another file system (HDFS, S3; testbed/storage.go).
	Storage *MetastoreStorage
	// Notifications records the metastore's events in its NOTIFICATION_LOG, as installations that replicate or
	// sync with Hive do: hive.metastore.transactional.event.listeners=DbNotificationListener, so
	// get_next_notification, get_current_notificationEventId and get_notification_events_count answer events.
	// Hive 3.1.3 only: the listener lives in hive-hcatalog-server-extensions (NotificationListenerJar), which
	// Maven Central has for 3.1.3 and 4.2.0 but not 4.1.0 (nor does hive-exec 4.1.0 carry it).
	Notifications bool
}

// NotificationListener is the class Hive's own documentation names for hive.metastore.transactional.event.listeners.
const NotificationListener = "org.apache.hive.hcatalog.listener.DbNotificationListener"

// notificationJars are the Maven coordinates of the jar holding NotificationListener, by Hive version.
var notificationJars = map[Version]string{Hive313: "org.apache.hive.hcatalog:hive-hcatalog-server-extensions:3.1.3"}

// NotificationListenerJar returns the jar of NotificationListener for v, copied from Maven Central into the cache.
func NotificationListenerJar(v Version) (string, error) {
	coords, ok := notificationJars[v]
	if !ok {
		return "", fmt.Errorf("testbed: MetastoreOptions.Notifications: no jar with %s for Hive %s is published on Maven Central "+
			"(hive-hcatalog-server-extensions has 3.1.3 and 4.2.0); use Hive %s", NotificationListener, v, Hive313)
	}
	return MavenArtifact(coords)
}

// MetastoreStorage are a metastore's file-system settings: Hadoop keys for metastore-site.xml and core-site.xml,
// more jars (a folder's), jars of the Hive lib folder to leave out, more environment and JVM options.
type MetastoreStorage struct {
	Conf     []string // key=value, e.g. fs.defaultFS, fs.s3a.*; metastore.warehouse.dir replaces the local one
	LibDir   string   // every jar in it goes on the class path after Hive's
	Exclude  []string // jar file names of Hive's lib folder to leave off the class path
	Env      []string // KEY=VALUE, e.g. KRB5CCNAME for a Kerberos ticket cache
	JVMFlags []string
}

// MetastoreKerberos makes a Kerberized metastore: hive.metastore.sasl.enabled=true, its service principal and
// keytab, hadoop.rpc.protection, hadoop.security.authentication=kerberos in a core-site.xml on its classpath and the
// realm's krb5.conf (-Djava.security.krb5.conf).
type MetastoreKerberos struct {
	KDC *KDC
	// Principal is the metastore's principal (hive.metastore.kerberos.principal), e.g. "hive/localhost@REALM";
	// "_HOST" is allowed (Hive replaces it with the canonical name of this host).
	Principal string
	// Keytab holds the principal's key (hive.metastore.kerberos.keytab.file).
	Keytab string
	// Protection is hadoop.rpc.protection: authentication (default), integrity, privacy or a comma list.
	Protection string
	// Conf are more settings (key=value) for both metastore-site.xml and core-site.xml, e.g. a proxy user's
	// hadoop.proxyuser.<name>.hosts/groups (Hadoop's ProxyUsers reads core-site.xml).
	Conf []string
}

// RunProperty is the system property put on every JVM the test bed starts; its value is the run marker
// (env HMS_PROXY_TESTBED_RUN, else random per process), so leftovers can be found in /proc/*/cmdline.
const RunProperty = "hmsproxy.testbed.run"

// runIDEnv lets a parent process choose the run marker of a child test process.
const runIDEnv = "HMS_PROXY_TESTBED_RUN"

var runID = func() string {
	if v := os.Getenv(runIDEnv); v != "" {
		return v
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return strconv.Itoa(os.Getpid())
	}
	return hex.EncodeToString(b[:])
}()

// RunID returns the marker value of RunProperty on the JVMs started by this process.
func RunID() string { return runID }

// Memory and start-up flags of a metastore JVM: 512 MiB heap (a metastore with Derby settles around 250-300 MiB
// resident), the serial collector (no GC threads fighting over 2 cores) and C1 only (faster start, plenty for tests).
var metastoreJVM = []string{"-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData"}

// startTimeout bounds the wait for a metastore to answer get_all_databases (env HMS_PROXY_START_TIMEOUT overrides).
func startTimeout() time.Duration {
	if s := os.Getenv("HMS_PROXY_START_TIMEOUT"); s != "" {
		if d, err := time.ParseDuration(s); err == nil && d > 0 {
			return d
		}
	}
	return 180 * time.Second
}

// Lines in a metastore log that mean start-up failed even if the JVM stays alive (Hive leaves non-daemon threads).
var fatalMarkers = []string{
	"Address already in use",
	"HMSHandler Fatal error",
	"Metastore Thrift Server threw an exception",
	"Error starting Hive Metastore",
}

// errPortTaken marks a start that lost its port to another process; StartMetastore retries with another port.
var errPortTaken = errors.New("port already in use")

// StartMetastore starts a real Hive metastore of version v and waits until it answers a Thrift call.
// Stop it with Stop (TestMain users: also on every exit path). Errors carry the tail of the metastore log.
func StartMetastore(v Version) (*Metastore, error) { return StartMetastoreWith(v, MetastoreOptions{}) }

// StartMetastoreWith is StartMetastore with options (a Kerberized metastore).
func StartMetastoreWith(v Version, o MetastoreOptions) (*Metastore, error) {
	if err := v.valid(); err != nil {
		return nil, err
	}
	if err := Prepare(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(runRoot(), 0o755); err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	sweepRunDirs()
	dir, err := os.MkdirTemp(runRoot(), "hive-"+string(v)+"-")
	if err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	m := &Metastore{Version: v, Dir: dir, Kerberos: o.Kerberos, TLS: o.TLS, storage: o.Storage}
	if o.Notifications {
		if m.notificationJar, err = NotificationListenerJar(v); err != nil {
			return nil, err
		}
	}
	if k := o.Kerberos; k != nil && (k.KDC == nil || k.Principal == "" || k.Keytab == "") {
		return nil, fmt.Errorf("testbed: a Kerberized metastore needs a KDC, a principal and a keytab (got %+v)", *k)
	}
	if err := m.initDir(); err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 4; attempt++ {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		m.Port = port
		m.URI = fmt.Sprintf("thrift://127.0.0.1:%d", port)
		if lastErr = m.start(); lastErr == nil {
			return m, nil
		}
		if !errors.Is(lastErr, errPortTaken) {
			break
		}
	}
	return nil, lastErr
}

// StartMetastores starts one metastore per version given, concurrently (JVM start-up is mostly waiting on class
// loading and Derby, so overlapping them shortens the total). On error the ones already started are stopped.
func StartMetastores(vs ...Version) ([]*Metastore, error) {
	if err := Prepare(); err != nil {
		return nil, err
	}
	ms := make([]*Metastore, len(vs))
	errs := make([]error, len(vs))
	var wg sync.WaitGroup
	for i, v := range vs {
		wg.Add(1)
		go func(i int, v Version) {
			defer wg.Done()
			ms[i], errs[i] = StartMetastore(v)
		}(i, v)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, m := range ms {
			if m != nil {
				m.Stop()
			}
		}
		return nil, err
	}
	return ms, nil
}

// StartMetastoresT is StartMetastores for a test; t.Cleanup stops them all.
func StartMetastoresT(t testing.TB, vs ...Version) []*Metastore {
	t.Helper()
	skipIfRequested(t)
	ms, err := StartMetastores(vs...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	for _, m := range ms {
		registerCleanup(t, m)
	}
	return ms
}

// StartMetastoreT starts a metastore for a test; t.Cleanup stops it (and removes its Dir if the test passed).
// Fails t when the metastore cannot start; skips t only when HMS_PROXY_SKIP_REAL_HIVE=1.
func StartMetastoreT(t testing.TB, v Version) *Metastore {
	t.Helper()
	return StartMetastoreWithT(t, v, MetastoreOptions{})
}

// StartMetastoreWithT is StartMetastoreT with options.
func StartMetastoreWithT(t testing.TB, v Version, o MetastoreOptions) *Metastore {
	t.Helper()
	skipIfRequested(t)
	m, err := StartMetastoreWith(v, o)
	if err != nil {
		t.Fatalf("%v", err)
	}
	registerCleanup(t, m)
	return m
}

func registerCleanup(t testing.TB, m *Metastore) {
	t.Cleanup(func() {
		if err := m.Stop(); err != nil {
			t.Errorf("%v", err)
		}
		if t.Failed() {
			t.Logf("Hive %s metastore files kept for inspection: %s", m.Version, m.Dir)
		} else {
			os.RemoveAll(m.Dir)
		}
	})
}

// Stop stops the metastore: SIGTERM to its process group, SIGKILL after 15 s. Idempotent. Reports an error if the
// metastore had already died on its own.
func (m *Metastore) Stop() error {
	return stopOwned(&m.mu, &m.proc, fmt.Sprintf("Hive %s metastore %s", m.Version, m.URI), m.logPath())
}

// stopOwned stops the JVM *proc (guarded by mu) of a test-bed server: SIGTERM, SIGKILL after 15 s. Idempotent;
// reports an error naming what (with its log's tail) if the JVM had died on its own.
func stopOwned(mu *sync.Mutex, proc **jvm, what, log string) error {
	mu.Lock()
	p := *proc
	*proc = nil
	mu.Unlock()
	if p == nil {
		return nil
	}
	diedBefore := p.exited()
	p.stop(15 * time.Second)
	if diedBefore {
		return fmt.Errorf("testbed: %s had exited on its own (%v); log %s:\n%s", what, p.err, log, tailFile(log, 40))
	}
	return nil
}

// Restart stops the metastore and starts it again on the same port with the same Derby database (data kept).
func (m *Metastore) Restart() error {
	if err := m.Stop(); err != nil {
		return err
	}
	var err error
	for attempt := 0; attempt < 10; attempt++ {
		if err = m.start(); !errors.Is(err, errPortTaken) {
			return err
		}
		time.Sleep(time.Second)
	}
	return err
}

func (m *Metastore) logPath() string { return filepath.Join(m.Dir, "metastore.log") }

// initDir fills Dir: a copy of the Derby schema template, warehouse folders, the log configuration, the owner file.
func (m *Metastore) initDir() error {
	if err := copyTree(derbyTemplate(m.Version), filepath.Join(m.Dir, "metastore_db")); err != nil {
		return fmt.Errorf("testbed: copying the Derby schema template of Hive %s (run testbed/bin/prepare.sh): %w",
			m.Version, err)
	}
	for _, d := range []string{"warehouse", "external", "tmp"} {
		if err := os.MkdirAll(filepath.Join(m.Dir, d), 0o755); err != nil {
			return fmt.Errorf("testbed: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(m.Dir, "log4j2.properties"), []byte(log4j2Config), 0o644); err != nil {
		return fmt.Errorf("testbed: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(m.Dir, "conf"), 0o755); err != nil {
		return fmt.Errorf("testbed: %w", err)
	}
	if err := os.WriteFile(filepath.Join(m.Dir, "conf", "metastore-site.xml"), siteXML(m.conf()), 0o644); err != nil {
		return fmt.Errorf("testbed: %w", err)
	}
	var core []string
	if k := m.Kerberos; k != nil {
		// UserGroupInformation reads core-site.xml: without kerberos here Hive refuses to start a secure server
		core = []string{"hadoop.security.authentication=kerberos", "hadoop.rpc.protection=" + protection(k)}
		core = append(core, k.Conf...)
	}
	if st := m.storage; st != nil {
		core = append(core, st.Conf...) // FileSystem.get reads core-site.xml
	}
	if len(core) > 0 {
		if err := os.WriteFile(filepath.Join(m.Dir, "conf", "core-site.xml"), siteXML(core), 0o644); err != nil {
			return fmt.Errorf("testbed: %w", err)
		}
	}
	return writeOwner(m.Dir)
}

// log4j2Config sends the metastore's log (INFO, DataNucleus at WARN) to stdout, which goes to Dir/metastore.log.
const log4j2Config = `status = error
name = hmsbed
appender.out.type = Console
appender.out.name = out
appender.out.target = SYSTEM_OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = %d{ISO8601} %-5p [%t] %c{2}: %m%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
logger.dn.name = DataNucleus
logger.dn.level = WARN
logger.dn2.name = org.datanucleus
logger.dn2.level = WARN
`

// siteXML renders key=value settings as a Hadoop configuration file.
func siteXML(kvs []string) []byte {
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\"?>\n<!-- written by the hms-proxy test bed (testbed/metastore.go) -->\n<configuration>\n")
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		b.WriteString("  <property><name>")
		xml.EscapeText(&b, []byte(k))
		b.WriteString("</name><value>")
		xml.EscapeText(&b, []byte(v))
		b.WriteString("</value></property>\n")
	}
	b.WriteString("</configuration>\n")
	return []byte(b.String())
}

// conf returns the metastore settings, written to Dir/conf/metastore-site.xml (last on the classpath). A file and
// not --hiveconf: the CLI also turns --hiveconf into system properties, and DataNucleus 6 then fails on numeric
// datanucleus.* keys ("NumberFormatException: Cannot parse null string").
func (m *Metastore) conf() []string {
	c := []string{
		"javax.jdo.option.ConnectionURL=jdbc:derby:;databaseName=" + filepath.Join(m.Dir, "metastore_db"),
		"javax.jdo.option.ConnectionDriverName=org.apache.derby.jdbc.EmbeddedDriver",
		"metastore.warehouse.dir=" + filepath.Join(m.Dir, "warehouse"),
		// the schema (ACID tables included) comes from Hive's schema tool via the template; no version check
		"metastore.schema.verification=false",
		"datanucleus.schema.autoCreateAll=false",
		// Embedded Derby deadlocks on concurrent metadata writes (row locks taken by the partition scans of two
		// drop_table calls, 20 s until Derby picks a victim, sometimes a failed call). One connection for the
		// object store serializes its transactions, as Hive's TxnHandler already does on Derby.
		"datanucleus.connectionPool.maxPoolSize=1",
	}
	if k := m.Kerberos; k != nil {
		c = append(c,
			"metastore.sasl.enabled=true",
			"metastore.kerberos.principal="+k.Principal,
			"metastore.kerberos.keytab.file="+k.Keytab,
			"hadoop.security.authentication=kerberos",
			"hadoop.rpc.protection="+protection(k),
		)
		c = append(c, k.Conf...)
	}
	if t := m.TLS; t != nil {
		c = append(c, "metastore.use.SSL=true", "metastore.keystore.path="+t.KeyStore, "metastore.keystore.password="+t.Password)
	}
	if st := m.storage; st != nil {
		c = append(c, st.Conf...) // later entries win: metastore.warehouse.dir may move to HDFS
	}
	if m.notificationJar != "" {
		c = append(c, "metastore.transactional.event.listeners="+NotificationListener,
			// the notification RPCs otherwise demand a proxy-user grant of the caller (a Kerberos deployment's rule)
			"metastore.metastore.event.db.notification.api.auth=false")
	}
	switch m.Version {
	case Hive313:
		// the default proxy class lives in hive-exec, which the standalone 3.1.3 metastore does not have (and its
		// hive-exec could not read Hive 4's serialized expressions anyway: Kryo classes changed)
		c = append(c, "metastore.expression.proxy=org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy")
		// the default list names repl.DumpDirCleanerTask, which lives in hive-exec
		c = append(c, "metastore.task.threads.always=org.apache.hadoop.hive.metastore.events.EventCleanerTask,"+
			"org.apache.hadoop.hive.metastore.RuntimeStatsCleanerTask")
	case Hive410:
		c = append(c,
			// hive-exec 4.1.0 is on this metastore's class path: partition filters by expression work, as in a
			// Hive 4 installation (HiveServer2's partition pruning and DROP PARTITION use them)
			"metastore.expression.proxy=org.apache.hadoop.hive.ql.optimizer.ppr.PartitionExpressionForMetastore",
			"metastore.thrift.bind.host=127.0.0.1",
			"metastore.warehouse.external.dir="+filepath.Join(m.Dir, "external"),
			// a blank transformer keeps MANAGED tables managed (as Hive's own client tests do)
			"metastore.metadata.transformer.class= ",
			// 4.x turns the compactor's initiator and cleaner on by default: background polling nobody needs here
			"metastore.compactor.initiator.on=false",
			"metastore.compactor.cleaner.on=false",
			// the default list ends with the Iceberg housekeeper, which lives in hive-iceberg-handler
			"metastore.task.threads.remote=org.apache.hadoop.hive.metastore.txn.service.AcidHouseKeeperService,"+
				"org.apache.hadoop.hive.metastore.txn.service.CompactionHouseKeeperService,"+
				"org.apache.hadoop.hive.metastore.txn.service.AcidTxnCleanerService,"+
				"org.apache.hadoop.hive.metastore.txn.service.AcidOpenTxnsCounterService,"+
				"org.apache.hadoop.hive.metastore.MaterializationsRebuildLockCleanerTask,"+
				"org.apache.hadoop.hive.metastore.PartitionManagementTask",
		)
	}
	return c
}

// start launches the JVM on m.Port and waits until it answers get_all_databases.
func (m *Metastore) start() error {
	java, err := javaBin()
	if err != nil {
		return err
	}
	flags, err := jvmFlags(m.Version)
	if err != nil {
		return err
	}
	args := append([]string{}, metastoreJVM...)
	if o := os.Getenv("HMS_PROXY_METASTORE_JVM_OPTS"); o != "" {
		args = strings.Fields(o) // replaces the memory/start-up flags (for measurements)
	}
	args = append(args, flags...)
	args = append(args,
		"-D"+RunProperty+"="+runID,
		"-Dhmsproxy.testbed.dir="+m.Dir,
		"-Dlog4j.configurationFile="+filepath.Join(m.Dir, "log4j2.properties"),
		"-Dlog4j2.configurationFile="+filepath.Join(m.Dir, "log4j2.properties"),
		"-Dderby.stream.error.file="+filepath.Join(m.Dir, "derby.log"),
		"-Djava.io.tmpdir="+filepath.Join(m.Dir, "tmp"))
	if k := m.Kerberos; k != nil {
		args = append(args, "-Djava.security.krb5.conf="+k.KDC.Krb5Conf)
	}
	cp, err := m.classpath()
	if err != nil {
		return err
	}
	if st := m.storage; st != nil {
		args = append(args, st.JVMFlags...)
	}
	args = append(args, "-cp", cp, "org.apache.hadoop.hive.metastore.HiveMetaStore", "-p", strconv.Itoa(m.Port))
	logf, err := os.OpenFile(m.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("testbed: %w", err)
	}
	offset, _ := logf.Seek(0, io.SeekEnd)
	fmt.Fprintf(logf, "==== hmsbed: starting Hive %s metastore on port %d at %s\n", m.Version, m.Port,
		time.Now().Format(time.RFC3339))
	cmd := exec.Command(java, args...)
	cmd.Dir = m.Dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	if st := m.storage; st != nil && len(st.Env) > 0 {
		cmd.Env = append(os.Environ(), st.Env...)
	}
	p, err := startJVM(cmd)
	logf.Close()
	if err != nil {
		return fmt.Errorf("testbed: starting Hive %s metastore: %w", m.Version, err)
	}
	if err := m.waitReady(p, offset); err != nil {
		p.stop(5 * time.Second)
		return err
	}
	m.mu.Lock()
	m.proc = p
	m.mu.Unlock()
	return nil
}

// classpath is Hive's lib folder (all of it, or every jar but the excluded ones), a storage lib folder, hive-exec
// for 3.1.3 and conf.
func (m *Metastore) classpath() (string, error) {
	sep := string(filepath.ListSeparator)
	st := m.storage
	extra := m.hiveExec()
	if m.notificationJar != "" {
		extra += sep + m.notificationJar
	}
	// conf goes last: no jar holds a *-site.xml, and a directory after the jars keeps the class-data archive
	// (cds.go) usable by every metastore of the version.
	conf := sep + filepath.Join(m.Dir, "conf")
	if st == nil {
		return filepath.Join(libDir(m.Version), "*") + extra + conf, nil
	}
	var parts []string
	if len(st.Exclude) == 0 {
		parts = append(parts, filepath.Join(libDir(m.Version), "*"))
	} else {
		entries, err := os.ReadDir(libDir(m.Version))
		if err != nil {
			return "", fmt.Errorf("testbed: %w", err)
		}
		skip := map[string]bool{}
		for _, e := range st.Exclude {
			skip[e] = true
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".jar") && !skip[e.Name()] {
				parts = append(parts, filepath.Join(libDir(m.Version), e.Name()))
			}
		}
	}
	if st.LibDir != "" {
		parts = append(parts, filepath.Join(st.LibDir, "*"))
	}
	return strings.Join(parts, sep) + extra + conf, nil
}

// hiveExec is, for 3.1.3, hive-exec last on the class path (as a Hive 3.1.3 installation has it: full ACID tables
// need its input formats); "" for other versions.
func (m *Metastore) hiveExec() string {
	if m.Version != Hive313 {
		return ""
	}
	return string(filepath.ListSeparator) + filepath.Join(buildOf("build", Hive313), "hiveexec", "*")
}

func protection(k *MetastoreKerberos) string {
	if k.Protection == "" {
		return "authentication"
	}
	return k.Protection
}

// saslAnswers checks that a Kerberized metastore's SASL server runs: it sends START for a mechanism Hive does not
// offer and expects Hive's BAD frame ("Unsupported mechanism type"), which only the serving TSaslServerTransport
// sends.
func saslAnswers(addr string, timeout time.Duration, useTLS bool) error {
	var c net.Conn
	var err error
	if useTLS { // SASL inside TLS, as Hive serves both; the certificate is taken as it is (a liveness probe)
		c, err = tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec
	} else {
		c, err = net.DialTimeout("tcp", addr, timeout)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	mech := "HMSBED-PROBE"
	frame := append([]byte{1, 0, 0, 0, byte(len(mech))}, mech...)
	if _, err := c.Write(frame); err != nil {
		return err
	}
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(c, hdr); err != nil {
		return fmt.Errorf("no SASL answer: %w", err)
	}
	n := int(hdr[1])<<24 | int(hdr[2])<<16 | int(hdr[3])<<8 | int(hdr[4])
	if hdr[0] != 3 || n > 4096 {
		return fmt.Errorf("unexpected SASL answer status %d length %d", hdr[0], n)
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(c, msg); err != nil {
		return err
	}
	if !strings.Contains(string(msg), "Unsupported mechanism type") {
		return fmt.Errorf("unexpected SASL BAD text %q", msg)
	}
	return nil
}

func (m *Metastore) waitReady(p *jvm, logOffset int64) error {
	timeout := startTimeout()
	deadline := time.Now().Add(timeout)
	addr := fmt.Sprintf("127.0.0.1:%d", m.Port)
	fail := func(why string, cause error) error {
		log := tailFile(m.logPath(), 40)
		if cause == nil && strings.Contains(logSince(m.logPath(), logOffset), "Address already in use") {
			cause = errPortTaken
		}
		msg := fmt.Sprintf("testbed: Hive %s metastore on %s %s; first errors in %s:\n%s\nlast lines:\n%s",
			m.Version, addr, why, m.logPath(), firstErrors(logSince(m.logPath(), logOffset), 8), log)
		if cause != nil {
			return fmt.Errorf("%s: %w", msg, cause)
		}
		return errors.New(msg)
	}
	for {
		if p.exited() {
			return fail(fmt.Sprintf("exited during start-up (%v)", p.err), nil)
		}
		since := logSince(m.logPath(), logOffset)
		for _, marker := range fatalMarkers {
			if strings.Contains(since, marker) {
				return fail("failed to start ("+marker+")", nil)
			}
		}
		var err error
		if m.Kerberos != nil {
			err = saslAnswers(addr, 5*time.Second, m.TLS != nil)
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err = getAllDatabases(ctx, addr, 5*time.Second, m.TLS != nil)
			cancel()
		}
		if err == nil && !p.exited() {
			// Something answered on the port; it must be this JVM. A port handed
			// out by FreePort can be taken by another process (another test
			// binary, a metastore of another run) before this JVM binds it:
			// then the answer came from that process, and this JVM fails to
			// bind (or is still trying). Retry with another port.
			owner, oerr := listeningOwner(m.Port, p.cmd.Process.Pid)
			if oerr == nil && owner {
				return nil
			}
			if oerr == nil {
				return fail("port was answered by another process", errPortTaken)
			}
			return fail("cannot tell which process listens on the port", oerr)
		}
		if time.Now().After(deadline) {
			return fail(fmt.Sprintf("did not answer (get_all_databases, or a SASL START when Kerberized) within %v (last error: %v)", timeout, err), nil)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// firstErrors returns the first n lines of a Java log that name an error or its cause (stack traces bury the root
// cause far above the last lines).
func firstErrors(log string, n int) string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, " ERROR ") || strings.HasPrefix(line, "Caused by:") ||
			strings.HasPrefix(line, "Exception in thread") {
			out = append(out, line)
			if len(out) == n {
				break
			}
		}
	}
	if len(out) == 0 {
		return "(none)"
	}
	return strings.Join(out, "\n")
}

// logSince returns the part of a log written after offset.
func logSince(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return ""
	}
	data, _ := io.ReadAll(f)
	return string(data)
}

// AuditUsers returns the ugi= values of the metastore's audit log lines (HiveMetaStore.audit in its metastore.log)
// that name needle, in order: who the metastore believed it served.
func (m *Metastore) AuditUsers(needle string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(m.Dir, "metastore.log"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, "audit") || !strings.Contains(line, needle) {
			continue
		}
		if i := strings.Index(line, "ugi="); i >= 0 {
			if f := strings.Fields(line[i+4:]); len(f) > 0 {
				out = append(out, f[0])
			}
		}
	}
	return out, nil
}
