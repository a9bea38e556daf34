// Package deploy tests the packaging under deploy/: the container image
// (deploy/Dockerfile: its properties, and a real build and run with podman),
// the systemd unit (systemd-analyze) and the Kubernetes manifests (strict
// decoding into the Kubernetes API types, and a real proxy answering their
// probes).
package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/configs"
)

const dockerfilePath = "Dockerfile"

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line int
	cmd  string // upper case: FROM, RUN, COPY, ...
	args string
}

// stage is one FROM ... section.
type stage struct {
	base, name string
	ins        []instruction
}

// parseDockerfile splits a Dockerfile into stages (the instructions before
// the first FROM, ARGs only, are returned apart). It understands comments,
// parser directives and backslash continuations, which is what the file
// uses; anything else is an error.
func parseDockerfile(text string) (global []instruction, stages []stage, err error) {
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		start := i + 1
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		for strings.HasSuffix(l, "\\") && i+1 < len(lines) {
			i++
			next := strings.TrimSpace(lines[i])
			if strings.HasPrefix(next, "#") {
				continue
			}
			l = strings.TrimSpace(strings.TrimSuffix(l, "\\")) + " " + next
		}
		cmd, args, _ := strings.Cut(l, " ")
		in := instruction{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		switch {
		case in.cmd == "FROM":
			f := strings.Fields(in.args)
			st := stage{base: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			} else if len(f) != 1 {
				return nil, nil, fmt.Errorf("line %d: FROM %q", start, in.args)
			}
			stages = append(stages, st)
		case len(stages) == 0:
			if in.cmd != "ARG" {
				return nil, nil, fmt.Errorf("line %d: %s before the first FROM", start, in.cmd)
			}
			global = append(global, in)
		default:
			stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, in)
		}
	}
	if len(stages) == 0 {
		return nil, nil, fmt.Errorf("no FROM")
	}
	return global, stages, nil
}

func (s stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.ins {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

func (s stage) last(cmd string) (instruction, bool) {
	all := s.all(cmd)
	if len(all) == 0 {
		return instruction{}, false
	}
	return all[len(all)-1], true
}

// execForm decodes an exec-form (JSON array) argument list.
func execForm(t *testing.T, in instruction) []string {
	t.Helper()
	var v []string
	if err := json.Unmarshal([]byte(in.args), &v); err != nil {
		t.Errorf("line %d: %s %s is not exec form (a JSON array); the shell form needs /bin/sh, which the image does not have", in.line, in.cmd, in.args)
	}
	return v
}

func readDockerfile(t *testing.T) ([]instruction, []stage) {
	t.Helper()
	b, err := os.ReadFile(dockerfilePath)
	if err != nil {
		t.Fatal(err)
	}
	global, stages, err := parseDockerfile(string(b))
	if err != nil {
		t.Fatalf("%s: %v", dockerfilePath, err)
	}
	return global, stages
}

// defaultPorts are the ports the proxy listens on when the file does not
// say: from the configuration package itself.
func defaultPorts(t *testing.T) (thrift, management int) {
	t.Helper()
	cfg, err := configs.Parse(map[string]string{"catalogs": "c", "catalog.c.conf.hive.metastore.uris": "thrift://h:1",
		"management.enabled": "true"})
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Server.Port, cfg.Management.Port
}

// Image facts the other packaging files and docs/operations.md#container-image-deploydockerfile rely on.
const (
	imageBinary     = "/usr/local/bin/hms-proxy"
	imageConfigFile = "/etc/hms-proxy/hms-proxy.properties"
	imageWorkdir    = "/var/lib/hms-proxy"
	imageUID        = 10001
	imageCACerts    = "/etc/ssl/certs/ca-certificates.crt"
	defaultGoImage  = "golang:1.26-bookworm"
	buildStageAlias = "build"
)

// The Dockerfile, read as a builder reads it: multi-stage, a static build,
// a final stage with nothing to execute but the binary, run as a fixed
// non-root user, config at the documented path, ports as the defaults.
func TestDockerfileProperties(t *testing.T) {
	global, stages := readDockerfile(t)
	if len(stages) < 2 {
		t.Fatalf("%d stage(s): want a build stage and a run-time stage", len(stages))
	}
	var goImage string
	for _, a := range global {
		if k, v, ok := strings.Cut(a.args, "="); ok && k == "GO_IMAGE" {
			goImage = v
		}
	}
	build, final := stages[0], stages[len(stages)-1]
	if build.name != buildStageAlias || build.base != "${GO_IMAGE}" || goImage != defaultGoImage {
		t.Errorf("build stage FROM %s AS %s with GO_IMAGE=%s; want FROM ${GO_IMAGE} AS %s, GO_IMAGE=%s", build.base, build.name, goImage, buildStageAlias, defaultGoImage)
	}
	goBuild := ""
	for _, r := range build.all("RUN") {
		if strings.Contains(r.args, "go build") {
			goBuild = r.args
		}
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "./cmd/hms-proxy", "-X main.version=${VERSION}",
		"-X main.revision=${REVISION}", "-X main.buildTime=${BUILD_TIME}", "-o /out" + imageBinary} {
		if !strings.Contains(goBuild, want) {
			t.Errorf("the go build of the build stage lacks %q: %q", want, goBuild)
		}
	}

	// The run-time stage.
	if final.base != "scratch" && !strings.HasPrefix(final.base, "gcr.io/distroless/static") {
		t.Errorf("run-time base %s: want scratch or distroless/static (no shell, no package manager)", final.base)
	}
	if runs := final.all("RUN"); len(runs) > 0 {
		t.Errorf("line %d: RUN in the run-time stage: it would need a shell in the image", runs[0].line)
	}
	if hc := final.all("HEALTHCHECK"); len(hc) > 0 {
		t.Errorf("line %d: HEALTHCHECK: nothing in the image can run it; orchestrators probe /healthz and /readyz over HTTP", hc[0].line)
	}
	user, ok := final.last("USER")
	if !ok {
		t.Fatal("no USER: the image would run as root")
	}
	uid, gid, _ := strings.Cut(user.args, ":")
	if n, err := strconv.Atoi(uid); err != nil || n != imageUID {
		t.Errorf("USER %s: want the numeric uid %d (Kubernetes runAsNonRoot can only verify a number)", user.args, imageUID)
	}
	if n, err := strconv.Atoi(gid); err != nil || n == 0 {
		t.Errorf("USER %s: want a numeric, non-root group", user.args)
	}
	if wd, _ := final.last("WORKDIR"); wd.args != imageWorkdir {
		t.Errorf("WORKDIR %q, want %s", wd.args, imageWorkdir)
	}
	chowned := false
	for _, c := range final.all("COPY") {
		if strings.Contains(c.args, fmt.Sprintf("--chown=%d:", imageUID)) && strings.HasSuffix(c.args, " "+imageWorkdir) {
			chowned = true
		}
		if !strings.Contains(c.args, "--from="+buildStageAlias) {
			t.Errorf("line %d: COPY %s into the run-time image from outside the build stage", c.line, c.args)
		}
	}
	if !chowned {
		t.Errorf("the working directory %s is not given to uid %d: relative paths (the default audit.file) could not be written", imageWorkdir, imageUID)
	}
	ep, ok := final.last("ENTRYPOINT")
	if !ok || strings.Join(execForm(t, ep), " ") != imageBinary {
		t.Errorf("ENTRYPOINT %q, want [%q]", ep.args, imageBinary)
	}
	cmd, ok := final.last("CMD")
	if !ok || strings.Join(execForm(t, cmd), " ") != "serve "+imageConfigFile {
		t.Errorf("CMD %q, want [\"serve\", %q]", cmd.args, imageConfigFile)
	}
	thrift, mgmt := defaultPorts(t)
	expose, _ := final.last("EXPOSE")
	if got, want := expose.args, fmt.Sprintf("%d %d", thrift, mgmt); got != want {
		t.Errorf("EXPOSE %q, want the default server.port and management.port %q", got, want)
	}
	// The build stage provides what the COPY into scratch takes.
	stageText := ""
	for _, r := range build.all("RUN") {
		stageText += r.args + "\n"
	}
	for _, want := range []string{"/out/etc/passwd", "/out/etc/group", "/out" + imageCACerts, "/state",
		fmt.Sprintf(":%d:%d:", imageUID, imageUID), "hms-proxy version"} {
		if !strings.Contains(stageText, want) {
			t.Errorf("the build stage does not prepare %q", want)
		}
	}
}

// The parser refuses what it does not understand instead of skipping it.
func TestParseDockerfile(t *testing.T) {
	g, st, err := parseDockerfile("# syntax=docker/dockerfile:1\nARG A=1\nFROM x AS b\nRUN a \\\n  # comment\n  b\nFROM scratch\nCMD [\"c\"]\n")
	if err != nil || len(g) != 1 || len(st) != 2 || st[0].name != "b" || st[0].ins[0].args != "a b" || st[1].ins[0].cmd != "CMD" {
		t.Fatalf("%v %+v %v", g, st, err)
	}
	for _, bad := range []string{"RUN x\n", "FROM a b\n", ""} {
		if _, _, err := parseDockerfile(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

var debPackageName = regexp.MustCompile(`^[a-z0-9.+-]+$`)

// needTool finds a program of a Debian package (see needInstalled).
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	needInstalled(t, name, pkg, err == nil)
	return p
}

// needInstalled stops a test whose tool (what, from Debian package pkg) is
// missing: it fails where the package could be installed (root with
// apt-get: make test installs testbed/apt-packages.txt) and skips, saying
// so, where it cannot.
func needInstalled(t *testing.T, what, pkg string, found bool) {
	t.Helper()
	if found {
		return
	}
	if !debPackageName.MatchString(pkg) {
		t.Fatalf("bad package name %q", pkg)
	}
	_, aptErr := exec.LookPath("apt-get")
	if os.Geteuid() == 0 && aptErr == nil {
		t.Fatalf("%s not found; it comes with the Debian package %s (testbed/apt-packages.txt, installed by make test): apt-get install -y %s", what, pkg, pkg)
	}
	t.Skipf("%s not found and cannot be installed here (needs root and apt-get): install the Debian package %s to run this test", what, pkg)
}
