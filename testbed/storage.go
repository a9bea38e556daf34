package testbed

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The storage servers of the test bed: a real S3 API (s3proxy over a local folder) and a real HDFS (Hadoop's mini
// cluster: one NameNode and one DataNode in a JVM), plain or Kerberized with the test bed's MIT KDC. Their jars come
// from Maven Central (testbed.MavenLib over testbed/java/<name>/pom.xml) into the cache.

func storagePom(name string) string {
	return filepath.Join(repoRoot(), "testbed", "java", name, "pom.xml")
}

// s3proxyClasspath is s3proxy's jars.
func s3proxyClasspath() (string, error) {
	if skipped() {
		return "", ErrSkip
	}
	lib, err := MavenLib("s3proxy", storagePom("s3proxy"))
	if err != nil {
		return "", err
	}
	return filepath.Join(lib, "*"), nil
}

// hdfsClasspath is the mini cluster's jars and hmsbed.MiniHdfs compiled against them (cached by source).
func hdfsClasspath() (string, error) {
	if skipped() {
		return "", ErrSkip
	}
	lib, err := MavenLib("hdfs", storagePom("hdfs"))
	if err != nil {
		return "", err
	}
	src := filepath.Join(repoRoot(), "testbed", "java", "hdfs", "src", "main", "java", "hmsbed", "MiniHdfs.java")
	code, err := os.ReadFile(src)
	if err != nil {
		return "", fmt.Errorf("testbed: the HDFS launcher's source: %w", err)
	}
	classes, err := cached(filepath.Join(Cache(), "hdfs-launcher", hashOf(code, []byte(lib))), func(dir string) error {
		javac := "javac"
		if jh := os.Getenv("JAVA_HOME"); jh != "" && fileExists(filepath.Join(jh, "bin", "javac")) {
			javac = filepath.Join(jh, "bin", "javac")
		}
		out, err := exec.Command(javac, "-nowarn", "-encoding", "UTF-8", "-d", dir, "-cp", filepath.Join(lib, "*"), src).CombinedOutput()
		if err != nil {
			return fmt.Errorf("testbed: compiling %s: %v\n%s", src, err, tail(string(out), 30))
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return classes + string(filepath.ListSeparator) + filepath.Join(lib, "*"), nil
}

// HiveS3ALib returns a folder with what a Hive 3.1.3 metastore needs for s3a:// warehouses (hadoop-aws 3.1.0, its
// AWS SDK bundle, javax.activation), for MetastoreStorage.LibDir.
func HiveS3ALib() (string, error) {
	if skipped() {
		return "", ErrSkip
	}
	return MavenLib("hivefs", storagePom("hivefs"))
}

// storageJVM are the flags of the storage servers' JVMs: small heaps, the serial collector, C1 only.
var storageJVM = []string{"-Xms32m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData"}

// S3 is one s3proxy server on 127.0.0.1:Port with static credentials, its objects under Dir/data.
type S3 struct {
	Port      int
	Endpoint  string // http://127.0.0.1:PORT
	AccessKey string
	SecretKey string
	Dir       string

	mu   sync.Mutex
	proc *jvm
	cp   string
}

// StartS3 starts s3proxy (filesystem backend, path-style, aws-v2-or-v4 signatures) and waits until it answers.
func StartS3() (*S3, error) {
	cp, err := s3proxyClasspath()
	if err != nil {
		return nil, err
	}
	dir, err := newRunDir("s3proxy-")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return nil, err
	}
	s := &S3{Dir: dir, AccessKey: "hmsbed-access-" + runID[:8], SecretKey: "hmsbed-secret-" + runID, cp: cp}
	if err := onFreePorts(1, func(p []int) error {
		s.Port, s.Endpoint = p[0], fmt.Sprintf("http://127.0.0.1:%d", p[0])
		return s.Start()
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// StartS3T starts s3proxy for a test; t.Cleanup stops it.
func StartS3T(t testing.TB) *S3 {
	t.Helper()
	skipIfRequested(t)
	s, err := StartS3()
	if err != nil {
		t.Fatal(err)
	}
	serverCleanup(t, "s3proxy", s.Dir, s.Stop)
	return s
}

func (s *S3) logPath() string { return filepath.Join(s.Dir, "s3proxy.log") }

// Start starts the server (again, after Stop: same port, same objects).
func (s *S3) Start() error {
	props := strings.Join([]string{
		"s3proxy.endpoint=" + s.Endpoint,
		"s3proxy.authorization=aws-v2-or-v4",
		"s3proxy.identity=" + s.AccessKey,
		"s3proxy.credential=" + s.SecretKey,
		// AWS SDKs of 2025 on send x-amz-checksum-* headers s3proxy 2.6.0 does not know
		"s3proxy.ignore-unknown-headers=true",
		// filesystem, not filesystem-nio2 (see shared/research/storage-facts.md)
		"jclouds.provider=filesystem",
		"jclouds.filesystem.basedir=" + filepath.Join(s.Dir, "data"),
	}, "\n") + "\n"
	propsPath := filepath.Join(s.Dir, "s3proxy.properties")
	if err := os.WriteFile(propsPath, []byte(props), 0o600); err != nil {
		return err
	}
	java, err := javaBin()
	if err != nil {
		return err
	}
	args := append(append([]string{}, storageJVM...), "-D"+RunProperty+"="+runID,
		"-cp", s.cp, "org.gaul.s3proxy.Main", "--properties", propsPath)
	return s.launch(java, args)
}

func (s *S3) launch(java string, args []string) error {
	logf, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	offset, _ := logf.Seek(0, 2)
	cmd := exec.Command(java, args...)
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	p, err := startJVM(cmd)
	logf.Close()
	if err != nil {
		return fmt.Errorf("testbed: starting s3proxy: %w", err)
	}
	deadline := time.Now().Add(startTimeout())
	for {
		since := logSince(s.logPath(), offset)
		if p.exited() || strings.Contains(since, "Address already in use") {
			p.stop(5 * time.Second)
			if strings.Contains(since, "Address already in use") {
				return errPortTaken
			}
			return fmt.Errorf("testbed: s3proxy exited during start-up (%v):\n%s", p.err, tail(since, 30))
		}
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.Port), time.Second); err == nil {
			c.Close()
			if owner, oerr := listeningOwner(s.Port, p.cmd.Process.Pid); oerr == nil && owner {
				s.mu.Lock()
				s.proc = p
				s.mu.Unlock()
				return nil
			} else if oerr == nil {
				p.stop(5 * time.Second)
				return errPortTaken
			}
		}
		if time.Now().After(deadline) {
			p.stop(5 * time.Second)
			return fmt.Errorf("testbed: s3proxy on port %d did not listen within %v:\n%s", s.Port, startTimeout(), tail(since, 30))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop kills the server at once (SIGKILL: a storage outage, not a shutdown). Idempotent.
func (s *S3) Stop() {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p != nil {
		p.stop(0)
	}
}

// Conf returns the catalog conf keys (fs.s3a.*) for this server.
func (s *S3) Conf() map[string]string {
	return map[string]string{
		"fs.s3a.endpoint":          s.Endpoint,
		"fs.s3a.endpoint.region":   "us-east-1",
		"fs.s3a.path.style.access": "true",
		"fs.s3a.access.key":        s.AccessKey,
		"fs.s3a.secret.key":        s.SecretKey,
	}
}

// Files lists the objects of bucket whose keys start with prefix, as stored on the server's disk (s3proxy's
// filesystem backend keeps one file per object; its folder entries are not objects).
func (s *S3) Files(bucket, prefix string) ([]string, error) {
	root := filepath.Join(s.Dir, "data", bucket)
	var out []string
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if info.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if strings.HasPrefix(rel, prefix) {
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// HDFS is one mini cluster (a NameNode and a DataNode) on loopback. URI is hdfs://127.0.0.1:Port.
type HDFS struct {
	Port     int
	URI      string
	Dir      string
	Kerberos *HDFSKerberos

	ports []int // NameNode RPC, NameNode HTTP, DataNode data, DataNode HTTP, DataNode IPC
	conf  []string
	cp    string

	mu   sync.Mutex
	proc *jvm
}

// HDFSOptions configure StartHDFS.
type HDFSOptions struct {
	// Kerberos makes the cluster Kerberized (NameNode and DataNode principals, block tokens, SASL data transfer).
	Kerberos *HDFSKerberos
	// Conf are more Hadoop settings (key=value), e.g. hadoop.proxyuser.<user>.hosts/groups.
	Conf []string
}

// HDFSKerberos are the settings of a Kerberized cluster. StartHDFS creates the service principals
// hdfs/localhost and HTTP/localhost in KDC.
type HDFSKerberos struct {
	KDC *KDC
	// DataTransferProtection is dfs.data.transfer.protection (default authentication).
	DataTransferProtection string
	// RPCProtection is hadoop.rpc.protection (default authentication).
	RPCProtection string

	// Principal is the NameNode's (and DataNode's) principal, set by StartHDFS.
	Principal string
	keytab    string
}

// StartHDFS starts a mini cluster and waits until its DataNode has registered.
func StartHDFS(o HDFSOptions) (*HDFS, error) {
	cp, err := hdfsClasspath()
	if err != nil {
		return nil, err
	}
	dir, err := newRunDir("hdfs-")
	if err != nil {
		return nil, err
	}
	h := &HDFS{Dir: dir, Kerberos: o.Kerberos, cp: cp, conf: o.Conf}
	if k := o.Kerberos; k != nil {
		if k.KDC == nil {
			return nil, errors.New("testbed: a Kerberized HDFS needs a KDC")
		}
		// A second cluster of the same realm shares the service principals (their keys are exported, not changed).
		for _, n := range []string{"hdfs/localhost", "HTTP/localhost"} {
			if err := k.KDC.AddPrincipal(n); err != nil && !strings.Contains(err.Error(), "already exists") {
				return nil, err
			}
		}
		if k.keytab, err = k.KDC.Keytab(filepath.Join(dir, "hdfs.keytab"), "hdfs/localhost", "HTTP/localhost"); err != nil {
			return nil, err
		}
		k.Principal = k.KDC.Principal("hdfs/localhost")
	}
	if err := onFreePorts(5, func(p []int) error {
		h.ports, h.Port, h.URI = p, p[0], fmt.Sprintf("hdfs://127.0.0.1:%d", p[0])
		return h.start(true)
	}); err != nil {
		return nil, err
	}
	return h, nil
}

// StartHDFST starts a mini cluster for a test; t.Cleanup stops it.
func StartHDFST(t testing.TB, o HDFSOptions) *HDFS {
	t.Helper()
	skipIfRequested(t)
	h, err := StartHDFS(o)
	if err != nil {
		t.Fatal(err)
	}
	serverCleanup(t, "HDFS (log hdfs.log)", h.Dir, h.Stop)
	return h
}

func (h *HDFS) logPath() string { return filepath.Join(h.Dir, "hdfs.log") }

// serverConf returns the cluster's settings.
func (h *HDFS) serverConf() []string {
	c := []string{
		"dfs.datanode.address=127.0.0.1:" + strconv.Itoa(h.ports[2]),
		"dfs.datanode.http.address=127.0.0.1:" + strconv.Itoa(h.ports[3]),
		"dfs.datanode.ipc.address=127.0.0.1:" + strconv.Itoa(h.ports[4]),
		"dfs.namenode.rpc-bind-host=127.0.0.1",
		"dfs.replication=1",
		// the metastore, the proxy and the checks run as different users
		"dfs.permissions.enabled=false",
		"dfs.namenode.safemode.extension=0",
		"dfs.client.use.datanode.hostname=false",
	}
	if k := h.Kerberos; k != nil {
		dtp, rpc := k.DataTransferProtection, k.RPCProtection
		if dtp == "" {
			dtp = "authentication"
		}
		if rpc == "" {
			rpc = "authentication"
		}
		realm := k.KDC.Realm
		c = append(c,
			"hadoop.security.authentication=kerberos",
			"hadoop.security.authorization=true",
			"hadoop.rpc.protection="+rpc,
			"dfs.block.access.token.enable=true",
			"dfs.data.transfer.protection="+dtp,
			"ignore.secure.ports.for.testing=true",
			"dfs.http.policy=HTTP_ONLY",
			"dfs.namenode.kerberos.principal="+k.Principal,
			"dfs.namenode.keytab.file="+k.keytab,
			"dfs.datanode.kerberos.principal="+k.Principal,
			"dfs.datanode.keytab.file="+k.keytab,
			"dfs.web.authentication.kerberos.principal=HTTP/localhost@"+realm,
			"dfs.web.authentication.kerberos.keytab="+k.keytab,
			"hadoop.security.auth_to_local=RULE:[2:$1@$0](.*@"+realm+")s/@.*//\nRULE:[1:$1@$0](.*@"+realm+")s/@.*//\nDEFAULT",
			"hmsbed.login.principal="+k.Principal,
			"hmsbed.login.keytab="+k.keytab,
		)
	}
	return append(c, h.conf...)
}

// ClientConf returns the catalog conf keys a client of this cluster needs (fs.defaultFS and, when Kerberized,
// hadoop.security.authentication, dfs.namenode.kerberos.principal, dfs.data.transfer.protection).
func (h *HDFS) ClientConf() map[string]string {
	m := map[string]string{"fs.defaultFS": h.URI}
	if k := h.Kerberos; k != nil {
		dtp := k.DataTransferProtection
		if dtp == "" {
			dtp = "authentication"
		}
		m["hadoop.security.authentication"] = "kerberos"
		m["dfs.namenode.kerberos.principal"] = k.Principal
		m["dfs.data.transfer.protection"] = dtp
		if k.RPCProtection != "" {
			m["hadoop.rpc.protection"] = k.RPCProtection
		}
	}
	return m
}

func (h *HDFS) start(format bool) error {
	java, err := javaBin()
	if err != nil {
		return err
	}
	conf := h.serverConf()
	var b strings.Builder
	for _, kv := range conf {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "%s=%s\n", propEscape(k), propEscape(v))
	}
	props := filepath.Join(h.Dir, "hdfs.properties")
	if err := os.WriteFile(props, []byte(b.String()), 0o600); err != nil {
		return err
	}
	flags, err := jvmFlags(Hive313) // the Kerberos module-access flags
	if err != nil {
		return err
	}
	args := append(append([]string{}, storageJVM...), flags...)
	args = append(args, "-D"+RunProperty+"="+runID, "-Djava.io.tmpdir="+filepath.Join(h.Dir, "tmp"))
	if h.Kerberos != nil {
		args = append(args, "-Djava.security.krb5.conf="+h.Kerberos.KDC.Krb5Conf)
	}
	if !format {
		args = append(args, "-Dhmsbed.format=false")
	}
	args = append(args, "-cp", h.cp, "hmsbed.MiniHdfs", props, filepath.Join(h.Dir, "cluster"), strconv.Itoa(h.ports[0]), strconv.Itoa(h.ports[1]))
	if err := os.MkdirAll(filepath.Join(h.Dir, "tmp"), 0o755); err != nil {
		return err
	}
	logf, err := os.OpenFile(h.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	offset, _ := logf.Seek(0, 2)
	cmd := exec.Command(java, args...)
	cmd.Dir = h.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if h.Kerberos != nil {
		cmd.Env = append(os.Environ(), "KRB5_CONFIG="+h.Kerberos.KDC.Krb5Conf)
	}
	p, err := startJVM(cmd)
	logf.Close()
	if err != nil {
		return fmt.Errorf("testbed: starting the HDFS mini cluster: %w", err)
	}
	deadline := time.Now().Add(startTimeout())
	for {
		since := logSince(h.logPath(), offset)
		if strings.Contains(since, "HMSBED-HDFS-READY") {
			h.mu.Lock()
			h.proc = p
			h.mu.Unlock()
			return nil
		}
		if p.exited() || strings.Contains(since, "BindException") || strings.Contains(since, "Address already in use") {
			p.stop(5 * time.Second)
			if strings.Contains(since, "BindException") || strings.Contains(since, "Address already in use") {
				return errPortTaken
			}
			return fmt.Errorf("testbed: the HDFS mini cluster exited during start-up (%v); first errors:\n%s\nlast lines:\n%s",
				p.err, firstErrors(since, 8), tail(since, 30))
		}
		if time.Now().After(deadline) {
			p.stop(5 * time.Second)
			return fmt.Errorf("testbed: the HDFS mini cluster was not ready within %v; log %s:\n%s", startTimeout(), h.logPath(), tail(since, 30))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Stop kills the cluster at once (SIGKILL: a storage outage). Idempotent.
func (h *HDFS) Stop() {
	h.mu.Lock()
	p := h.proc
	h.proc = nil
	h.mu.Unlock()
	if p != nil {
		p.stop(0)
	}
}

// Restart starts a stopped cluster again on the same ports with the same data.
func (h *HDFS) Restart() error {
	h.Stop()
	var err error
	for attempt := 0; attempt < 10; attempt++ {
		if err = h.start(false); !errors.Is(err, errPortTaken) {
			return err
		}
		time.Sleep(time.Second)
	}
	return err
}

// Running reports whether the cluster's JVM runs.
func (h *HDFS) Running() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.proc != nil && !h.proc.exited()
}

// propEscape escapes a key or value for a java.util.Properties file.
func propEscape(s string) string {
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Split(bufio.ScanRunes)
	for sc.Scan() {
		switch r := sc.Text(); r {
		case "\\":
			b.WriteString(`\\`)
		case "\n":
			b.WriteString(`\n`)
		case "=", ":", "#", "!", " ":
			b.WriteString(`\` + r)
		default:
			b.WriteString(r)
		}
	}
	return b.String()
}

// Storage is the storage bed a package's tests share: s3proxy, a plain HDFS and a Kerberized one with its KDC, on
// both of which ProxyUser may impersonate anyone (hadoop.proxyuser.<ProxyUser>.*).
type Storage struct {
	S3                   *S3
	HDFS, KerberizedHDFS *HDFS
	KDC                  *KDC
	ProxyUser            string
	// ProxyKeytab holds ProxyUser@realm and the users of StorageOptions.
	ProxyKeytab string
}

// StorageOptions configure StartStorage.
type StorageOptions struct {
	ProxyUser string   // default "hmsproxy"
	Users     []string // more principals in ProxyKeytab (e.g. "alice")
}

// StartStorage starts the storage bed, the servers concurrently. On error what started is stopped.
func StartStorage(o StorageOptions) (*Storage, error) {
	if o.ProxyUser == "" {
		o.ProxyUser = "hmsproxy"
	}
	s := &Storage{ProxyUser: o.ProxyUser}
	proxyConf := []string{"hadoop.proxyuser." + o.ProxyUser + ".hosts=*", "hadoop.proxyuser." + o.ProxyUser + ".groups=*"}
	var wg sync.WaitGroup
	var errS3, errPlain, errKrb error
	wg.Add(3)
	go func() { defer wg.Done(); s.S3, errS3 = StartS3() }()
	go func() { defer wg.Done(); s.HDFS, errPlain = StartHDFS(HDFSOptions{Conf: proxyConf}) }()
	go func() {
		defer wg.Done()
		if s.KDC, errKrb = StartKDC(KDCOptions{}); errKrb != nil {
			return
		}
		if s.ProxyKeytab, errKrb = s.KDC.PrincipalKeytab("proxy.keytab", append([]string{o.ProxyUser}, o.Users...)...); errKrb != nil {
			return
		}
		s.KerberizedHDFS, errKrb = StartHDFS(HDFSOptions{Kerberos: &HDFSKerberos{KDC: s.KDC}, Conf: proxyConf})
	}()
	wg.Wait()
	if err := errors.Join(errS3, errPlain, errKrb); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Stop stops every server of the bed. Idempotent.
func (s *Storage) Stop() {
	if s == nil {
		return
	}
	for _, h := range []*HDFS{s.HDFS, s.KerberizedHDFS} {
		if h != nil {
			h.Stop()
		}
	}
	if s.S3 != nil {
		s.S3.Stop()
	}
	if s.KDC != nil {
		s.KDC.Stop()
	}
}
