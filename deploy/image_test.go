package deploy

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// podman runs the podman client with the settings this kind of host needs:
// runc as OCI runtime when installed (crun refuses hosts whose cgroup v2
// hierarchy holds controllers next to v1, as the test machines do;
// HMS_PROXY_OCI_RUNTIME overrides), and explicit rlimits, because a host
// without CAP_SYS_RESOURCE cannot grant podman's defaults.
type podman struct {
	t       *testing.T
	bin     string
	global  []string
	ulimits []string
}

func newPodman(t *testing.T) *podman {
	t.Helper()
	p := &podman{t: t, bin: needTool(t, "podman", "podman")}
	runtimeName := os.Getenv("HMS_PROXY_OCI_RUNTIME")
	if runtimeName == "" {
		if _, err := exec.LookPath("runc"); err == nil {
			runtimeName = "runc"
		}
	}
	if runtimeName != "" {
		p.global = []string{"--runtime", runtimeName}
	}
	var nofile syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile); err != nil {
		t.Fatal(err)
	}
	n := min(nofile.Max, 65536)
	p.ulimits = []string{"--ulimit", fmt.Sprintf("nofile=%d:%d", n, n), "--ulimit", "nproc=4096:4096"}
	return p
}

// run runs podman and returns its standard output; a failure fails the test
// with podman's standard error.
func (p *podman) run(args ...string) string {
	p.t.Helper()
	out, err := p.try(args...)
	if err != nil {
		p.t.Fatal(err)
	}
	return out
}

func (p *podman) try(args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(p.bin, append(append([]string{}, p.global...), args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("podman %s: %v\n%s%s", strings.Join(args, " "), err, stderr.String(), tail(stdout.String(), 40))
	}
	return stdout.String(), nil
}

// logs is what the container wrote (the proxy logs to standard error).
func (p *podman) logs(name string) string {
	out, err := exec.Command(p.bin, append(append([]string{}, p.global...), "logs", name)...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("podman logs %s: %v\n%s", name, err, out)
	}
	return string(out)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// builderImage stands in for the golang image, which no registry serves on
// the test machines: busybox (for the RUN steps' /bin/sh, mkdir and cp) and
// the CA certificates of the host. The host's Go toolchain and module
// downloads are mounted into the build (see TestImage), so it is tagged by
// the Go version. Only the base of the build stage is replaced; every step
// of the Dockerfile runs as written.
func builderImage(t *testing.T, p *podman) string {
	t.Helper()
	tag := "localhost/hms-proxy-test-go:" + runtime.Version()
	if _, err := p.try("image", "exists", tag); err == nil {
		return tag
	}
	const busybox = "/bin/busybox"
	_, err := os.Stat(busybox)
	needInstalled(t, busybox, "busybox-static", err == nil)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(h *tar.Header, data []byte) {
		h.Size = int64(len(data))
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"bin/", "etc/", "etc/ssl/", "etc/ssl/certs/", "root/", "usr/", "usr/local/", "usr/local/go/", "go/"} {
		add(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755}, nil)
	}
	add(&tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777}, nil)
	bb, err := os.ReadFile(busybox)
	if err != nil {
		t.Fatal(err)
	}
	add(&tar.Header{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755}, bb)
	for _, applet := range []string{"sh", "mkdir", "cp", "echo", "ls", "cat", "env", "rm"} {
		if err := tw.WriteHeader(&tar.Header{Name: "bin/" + applet, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777}); err != nil {
			t.Fatal(err)
		}
	}
	certs, err := os.ReadFile(imageCACerts)
	if err != nil {
		t.Fatalf("host CA certificates: %v (Debian package ca-certificates)", err)
	}
	add(&tar.Header{Name: strings.TrimPrefix(imageCACerts, "/"), Typeflag: tar.TypeReg, Mode: 0o644}, certs)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "builder.tar")
	if err := os.WriteFile(f, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	p.run("import", "--change", "ENV PATH=/usr/local/go/bin:/go/bin:/bin", "--change", "ENV GOPATH=/go",
		"--change", "ENV HOME=/root", "--change", "ENV GOTOOLCHAIN=local", f, tag)
	return tag
}

func goEnv(t *testing.T, key string) string {
	t.Helper()
	out, err := exec.Command("go", "env", key).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

type imageInspect struct {
	Config struct {
		User         string              `json:"User"`
		Entrypoint   []string            `json:"Entrypoint"`
		Cmd          []string            `json:"Cmd"`
		WorkingDir   string              `json:"WorkingDir"`
		ExposedPorts map[string]struct{} `json:"ExposedPorts"`
		Labels       map[string]string   `json:"Labels"`
		Healthcheck  any                 `json:"Healthcheck"`
	} `json:"Config"`
	Size int64 `json:"Size"`
}

// TestImage builds deploy/Dockerfile with podman (daemonless; Docker's
// engine does not run on the test machines), then checks the image as
// operators would meet it: its metadata, its files (one static binary, no
// shell), `version`, and a container that runs read-only, without
// capabilities, as uid 10001, in front of a real Hive metastore: /healthz
// and /readyz answer, a Thrift call goes through, the audit log is written
// to the mounted working directory, and SIGTERM stops it cleanly.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a container image")
	}
	p := newPodman(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	builder := builderImage(t, p)
	tag := fmt.Sprintf("localhost/hms-proxy:test-%d", os.Getpid())
	modDownloads := filepath.Join(goEnv(t, "GOMODCACHE"), "cache", "download")
	start := time.Now()
	// --layers=false: no intermediate images pile up run after run; the
	// Dockerfile's cache mounts (modules, build cache) keep rebuilds fast.
	p.run(append(append([]string{"build", "--layers=false"}, p.ulimits...),
		"--volume", goEnv(t, "GOROOT")+":/usr/local/go:ro",
		"--volume", modDownloads+":/modproxy:ro",
		"--build-arg", "GO_IMAGE="+builder,
		// No network in tests: modules come from the host's download cache.
		"--build-arg", "GOPROXY=file:///modproxy", "--build-arg", "GOSUMDB=off",
		"--build-arg", "VERSION=v0.0.0-imagetest", "--build-arg", "REVISION=0123456789abcdef",
		"--build-arg", "BUILD_TIME=2026-01-02T03:04:05Z",
		"-f", filepath.Join(root, "deploy", dockerfilePath), "-t", tag, root)...)
	t.Logf("podman build: %s", time.Since(start).Round(time.Second))
	t.Cleanup(func() { p.try("rmi", "-f", tag) })

	// Metadata.
	var cfgs []imageInspect
	if err := json.Unmarshal([]byte(p.run("image", "inspect", tag)), &cfgs); err != nil || len(cfgs) != 1 {
		t.Fatalf("image inspect: %v", err)
	}
	c := cfgs[0].Config
	if c.User != fmt.Sprintf("%d:%d", imageUID, imageUID) || strings.Join(c.Entrypoint, " ") != imageBinary ||
		strings.Join(c.Cmd, " ") != "serve "+imageConfigFile || c.WorkingDir != imageWorkdir || c.Healthcheck != nil {
		t.Errorf("image config: %+v", c)
	}
	thrift, mgmt := defaultPorts(t)
	for _, port := range []int{thrift, mgmt} {
		if _, ok := c.ExposedPorts[fmt.Sprintf("%d/tcp", port)]; !ok {
			t.Errorf("port %d not exposed: %v", port, c.ExposedPorts)
		}
	}
	if c.Labels["org.opencontainers.image.version"] != "v0.0.0-imagetest" || c.Labels["org.opencontainers.image.revision"] != "0123456789abcdef" {
		t.Errorf("labels: %v", c.Labels)
	}
	t.Logf("image size %.1f MB", float64(cfgs[0].Size)/1e6)

	// Files: exactly what the proxy needs, nothing to run but itself.
	files := exportFiles(t, p, tag)
	want := map[string]string{
		"etc/passwd": "file", "etc/group": "file", strings.TrimPrefix(imageCACerts, "/"): "file",
		strings.TrimPrefix(imageBinary, "/"): "file", "etc/hms-proxy": "dir",
		strings.TrimPrefix(imageWorkdir, "/"): fmt.Sprintf("dir %d", imageUID),
	}
	for name, kind := range want {
		if got := files[name].kind; got != kind {
			t.Errorf("image file /%s: %q, want %q", name, got, kind)
		}
	}
	for name, f := range files {
		if f.kind == "file" && f.mode&0o111 != 0 && name != strings.TrimPrefix(imageBinary, "/") {
			t.Errorf("executable /%s in the image: only the proxy should be there", name)
		}
		if f.kind == "symlink" {
			t.Errorf("symlink /%s in the image", name)
		}
	}
	if _, ok := files["bin/sh"]; ok {
		t.Error("/bin/sh in the image")
	}
	if !strings.Contains(string(files["etc/passwd"].data), fmt.Sprintf("hms-proxy:x:%d:%d:", imageUID, imageUID)) {
		t.Errorf("/etc/passwd: %q", files["etc/passwd"].data)
	}
	bin, err := elf.NewFile(bytes.NewReader(files[strings.TrimPrefix(imageBinary, "/")].data))
	if err != nil {
		t.Fatalf("the binary is not ELF: %v", err)
	}
	for _, prog := range bin.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Error("the binary has a program interpreter: it is dynamically linked")
		}
	}
	if libs, _ := bin.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs shared libraries: %v", libs)
	}

	// version, and no shell to start.
	out := p.run(append(append([]string{"run", "--rm"}, p.ulimits...), tag, "version")...)
	for _, line := range []string{"hms-proxy v0.0.0-imagetest\n", "revision:    0123456789abcdef\n", "build time:  2026-01-02T03:04:05Z\n", "CGO_ENABLED=0"} {
		if !strings.Contains(out, line) {
			t.Errorf("version in the image lacks %q:\n%s", line, out)
		}
	}
	if _, err := p.try(append(append([]string{"run", "--rm"}, p.ulimits...), "--entrypoint", "/bin/sh", tag, "-c", "true")...); err == nil {
		t.Error("/bin/sh ran in the image")
	}

	// A running container in front of a real metastore.
	hms := testbed.StartMetastoreT(t, testbed.Hive313)
	port, mport := proxytest.FreePort(t), proxytest.FreePort(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "hms-proxy.properties")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(`server.bind-host=127.0.0.1
server.port=%d
management.port=%d
catalogs=catalog1
catalog.catalog1.conf.hive.metastore.uris=%s
routing.iceberg-pointer-guard.enabled=false
`, port, mport, hms.URI)), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o750); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		// Rootless podman gives the directory to a subordinate uid (:U
		// below); hand it back before the temp dir is removed.
		t.Cleanup(func() { p.try("unshare", "chown", "-R", "0:0", state) })
	}
	name := fmt.Sprintf("hms-proxy-test-%d", os.Getpid())
	p.run(append(append([]string{"run", "-d", "--name", name, "--network", "host", "--read-only", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges"}, p.ulimits...),
		"-v", conf+":"+imageConfigFile+":ro", "-v", state+":"+imageWorkdir+":U", tag)...)
	t.Cleanup(func() { p.try("rm", "-f", name) })

	base := fmt.Sprintf("http://127.0.0.1:%d", mport)
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := httpGet(base + "/healthz")
		if code == http.StatusOK && strings.Contains(body, `"status":"UP"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz of the container: %d %q\n%s", code, body, p.logs(name))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code, body := httpGet(base + "/readyz"); code != http.StatusOK || !strings.Contains(body, `"status":"READY"`) {
		t.Errorf("/readyz of the container: %d %s", code, body)
	}
	client := proxytest.Client(t, fmt.Sprintf("thrift://127.0.0.1:%d", port))
	dbs, err := client.GetAllDatabases(t.Context())
	if err != nil || !strings.Contains(strings.Join(dbs, ","), "default") {
		t.Errorf("get_all_databases through the container: %v, %v", dbs, err)
	}
	if ps := p.run("exec", name, imageBinary, "version"); !strings.HasPrefix(ps, "hms-proxy v0.0.0-imagetest") {
		t.Errorf("exec version: %q", ps)
	}

	start = time.Now()
	p.run("stop", "-t", "40", name)
	stopped := time.Since(start)
	if code := strings.TrimSpace(p.run("inspect", "--format", "{{.State.ExitCode}}", name)); code != "0" {
		t.Errorf("exit code after SIGTERM: %s", code)
	}
	if logs := p.logs(name); !strings.Contains(logs, "msg=stopped") {
		t.Errorf("no orderly stop in the log:\n%s", logs)
	}
	t.Logf("container stopped on SIGTERM in %s", stopped.Round(time.Millisecond))
	audit, err := os.ReadFile(filepath.Join(state, "logs", "hms-proxy-audit.log"))
	if err != nil || !strings.Contains(string(audit), `"method":"get_all_databases"`) {
		t.Errorf("the audit log in the mounted working directory: %v\n%s", err, audit)
	}
}

type imageFile struct {
	kind string // "file", "dir" ("dir UID" when not root-owned), "symlink", "other"
	mode int64
	data []byte
}

// exportFiles lists the image's file system (podman create + export).
func exportFiles(t *testing.T, p *podman, tag string) map[string]imageFile {
	t.Helper()
	id := strings.TrimSpace(p.run("create", tag))
	defer p.try("rm", "-f", id)
	out := filepath.Join(t.TempDir(), "fs.tar")
	p.run("export", "-o", out, id)
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string]imageFile{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		name := strings.Trim(strings.TrimPrefix(h.Name, "./"), "/")
		if name == "" {
			continue
		}
		var fi imageFile
		switch h.Typeflag {
		case tar.TypeReg:
			fi.kind = "file"
			if fi.data, err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		case tar.TypeDir:
			fi.kind = "dir"
			if h.Uid != 0 {
				fi.kind = fmt.Sprintf("dir %d", h.Uid)
			}
		case tar.TypeSymlink:
			fi.kind = "symlink"
		default:
			fi.kind = "other"
		}
		fi.mode = h.Mode
		files[name] = fi
	}
	// Directories the runtime creates for every container are not the
	// image's content.
	for _, d := range []string{"dev", "proc", "sys", "etc/hostname", "etc/hosts", "etc/resolv.conf", "run", ".containerenv", "run/.containerenv"} {
		delete(files, d)
	}
	return files
}

func httpGet(url string) (int, string) {
	c := &http.Client{Timeout: 15 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
