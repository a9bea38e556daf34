package testbed

import (
	"archive/zip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Keycloak, the identity provider of the REST listener's OAuth2 tests: org.keycloak:keycloak-quarkus-dist from Maven
// Central, unpacked and built once into the cache (kc.sh build --db=dev-file), with its realms imported once into
// an H2 template database. Each instance gets its own home (links to the built distribution, a copy of the
// template) and listens on loopback HTTP only, with a local cache (no cluster, no discovery traffic).
//
// Realms (testbed/keycloak/realm-*.json): "hms" with the confidential clients pyiceberg, spark, trino and rck
// (client credentials; the client scope "catalog" puts audience "hms-proxy" and a groups claim into their access
// tokens), shortlived (tokens live 1 s) and other-service (no hms-proxy audience); "other", a second issuer whose
// client intruder gets tokens for audience hms-proxy.

// KeycloakVersion is the Keycloak release of the test bed.
const KeycloakVersion = "26.4.7"

// Client secrets of the realm files.
var KeycloakSecrets = map[string]string{
	"pyiceberg": "pyiceberg-secret", "spark": "spark-secret", "trino": "trino-secret", "rck": "rck-secret",
	"shortlived": "shortlived-secret", "other-service": "other-secret", "intruder": "intruder-secret",
}

// Keycloak is a running Keycloak.
type Keycloak struct {
	URL string // http://127.0.0.1:PORT
	Dir string // its home: data, log
	p   *jvm
}

// Issuer is the issuer URL of a realm (the iss of its tokens).
func (k *Keycloak) Issuer(realm string) string { return k.URL + "/realms/" + realm }

// TokenEndpoint is the OAuth2 token endpoint of a realm.
func (k *Keycloak) TokenEndpoint(realm string) string {
	return k.Issuer(realm) + "/protocol/openid-connect/token"
}

// Token fetches an access token with the client-credentials grant.
func (k *Keycloak) Token(realm, client string) (string, error) {
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {client}, "client_secret": {KeycloakSecrets[client]},
		"scope": {"catalog"}}
	if realm == "hms" && client == "other-service" {
		form.Del("scope") // it has no catalog scope: its tokens are for another audience
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).PostForm(k.TokenEndpoint(realm), form)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var body struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return "", fmt.Errorf("keycloak token of %s/%s: %d: %v", realm, client, resp.StatusCode, err)
	}
	if body.AccessToken == "" {
		return "", fmt.Errorf("keycloak token of %s/%s: %d %s: %s", realm, client, resp.StatusCode, body.Error, body.Description)
	}
	return body.AccessToken, nil
}

// Stop stops Keycloak (SIGTERM, then SIGKILL after 15 s).
func (k *Keycloak) Stop() error {
	if k.p != nil {
		k.p.stop(15 * time.Second)
	}
	return nil
}

// keycloakJava is the JDK Keycloak runs on: the one the test bed uses (17), which Keycloak 26.4 supports.
func keycloakJava() (string, error) { return javaBin() }

// keycloakDist returns the built distribution with its template database, preparing it on first use.
func keycloakDist() (string, error) {
	var realms [][]byte
	files, _ := filepath.Glob(filepath.Join(repoRoot(), "testbed", "keycloak", "realm-*.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		realms = append(realms, b)
	}
	if len(realms) == 0 {
		return "", fmt.Errorf("testbed: no realm files in testbed/keycloak")
	}
	key := hashOf(append(realms, []byte(KeycloakVersion), []byte("build --db=dev-file"))...)
	return cached(filepath.Join(Cache(), "keycloak", KeycloakVersion+"-"+key), func(dir string) error {
		zipPath, err := MavenArtifact("org.keycloak:keycloak-quarkus-dist:" + KeycloakVersion + ":zip")
		if err != nil {
			return err
		}
		if err := unzipStrip(zipPath, dir); err != nil {
			return fmt.Errorf("testbed: unpacking %s: %w", zipPath, err)
		}
		java, err := keycloakJava()
		if err != nil {
			return err
		}
		build := exec.Command(filepath.Join(dir, "bin", "kc.sh"), "build", "--db=dev-file")
		build.Env = append(os.Environ(), "JAVA_HOME="+filepath.Dir(filepath.Dir(java)), "JAVA_OPTS_KC_HEAP=-Xms64m -Xmx384m")
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("testbed: kc.sh build: %v\n%s", err, tail(string(out), 30))
		}
		// The template: a first start imports the realms into data/h2.
		if err := os.MkdirAll(filepath.Join(dir, "data", "import"), 0o755); err != nil {
			return err
		}
		for i, f := range files {
			if err := os.WriteFile(filepath.Join(dir, "data", "import", filepath.Base(f)), realms[i], 0o644); err != nil {
				return err
			}
		}
		k, err := runKeycloak(dir, dir, true)
		if err != nil {
			return err
		}
		_ = k.Stop()
		if _, err := os.Stat(filepath.Join(dir, "data", "h2")); err != nil {
			return fmt.Errorf("testbed: Keycloak's first start left no database: %v", err)
		}
		return os.Rename(filepath.Join(dir, "data", "h2"), filepath.Join(dir, "template-h2"))
	})
}

// StartKeycloak starts a Keycloak of its own on a free loopback port, with the test bed's realms.
func StartKeycloak() (*Keycloak, error) {
	if skipped() {
		return nil, ErrSkip
	}
	dist, err := keycloakDist()
	if err != nil {
		return nil, err
	}
	home, err := newRunDir("keycloak-")
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"lib", "providers", "themes", "conf"} {
		if err := os.Symlink(filepath.Join(dist, d), filepath.Join(home, d)); err != nil {
			return nil, err
		}
	}
	if err := copyTree(filepath.Join(dist, "template-h2"), filepath.Join(home, "data", "h2")); err != nil {
		return nil, err
	}
	return runKeycloak(dist, home, false)
}

// StartKeycloakT is StartKeycloak for tests: skipped with the real test bed, stopped at cleanup.
func StartKeycloakT(t interface {
	Helper()
	Skip(...any)
	Fatalf(string, ...any)
	Cleanup(func())
}) *Keycloak {
	t.Helper()
	if skipped() {
		t.Skip(ErrSkip.Error())
	}
	k, err := StartKeycloak()
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { _ = k.Stop() })
	return k
}

// runKeycloak starts the optimized server with home as kc.home.dir and waits until the realm "hms" answers.
func runKeycloak(dist, home string, importRealms bool) (*Keycloak, error) {
	java, err := keycloakJava()
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		args := []string{"-Xms64m", "-Xmx384m", "-XX:MetaspaceSize=96M", "-XX:MaxMetaspaceSize=256m", "-XX:+UseSerialGC",
			"-XX:TieredStopAtLevel=1", "-XX:+ExitOnOutOfMemoryError", "-Dfile.encoding=UTF-8", "-Djava.security.egd=file:/dev/urandom",
			"--add-opens=java.base/java.util=ALL-UNNAMED", "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
			"--add-opens=java.base/java.security=ALL-UNNAMED", "-Duser.language=en", "-Duser.country=US",
			"-Djava.util.concurrent.ForkJoinPool.common.threadFactory=io.quarkus.bootstrap.forkjoin.QuarkusForkJoinWorkerThreadFactory",
			"-D" + RunProperty + "=" + runID, "-Dkc.home.dir=" + home, "-Djboss.server.config.dir=" + filepath.Join(home, "conf"),
			"-Djava.util.logging.manager=org.jboss.logmanager.LogManager", "-Dpicocli.disable.closures=true",
			"-cp", filepath.Join(home, "lib", "quarkus-run.jar"), "io.quarkus.bootstrap.runner.QuarkusEntryPoint",
			"start", "--optimized", "--http-enabled=true", "--http-host=127.0.0.1", "--http-port=" + strconv.Itoa(port),
			"--hostname-strict=false", "--cache=local", "--log=file", "--log-file=" + filepath.Join(home, "keycloak.log")}
		if importRealms {
			args = append(args, "--import-realm")
		}
		logf, err := os.OpenFile(filepath.Join(home, "keycloak.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(java, args...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = home, logf, logf
		p, err := startJVM(cmd)
		logf.Close()
		if err != nil {
			return nil, fmt.Errorf("testbed: starting Keycloak: %w", err)
		}
		k := &Keycloak{URL: "http://127.0.0.1:" + strconv.Itoa(port), Dir: home, p: p}
		err = k.waitReady(p, port, 2*startTimeout())
		if err == errPortTaken && attempt < 3 {
			continue
		}
		if err != nil {
			p.stop(5 * time.Second)
			return nil, err
		}
		return k, nil
	}
}

// waitReady waits until the realm's discovery document answers from this process.
func (k *Keycloak) waitReady(p *jvm, port int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	client := &http.Client{Timeout: 5 * time.Second}
	for time.Now().Before(deadline) {
		if p.exited() {
			out := tailFile(filepath.Join(k.Dir, "keycloak.out"), 20) + "\n" + tailFile(filepath.Join(k.Dir, "keycloak.log"), 20)
			if strings.Contains(out, "Address already in use") || strings.Contains(out, "Port already bound") {
				return errPortTaken
			}
			return fmt.Errorf("testbed: Keycloak exited during start-up (%v):\n%s", p.err, out)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, "GET", k.Issuer("hms")+"/.well-known/openid-configuration", nil)
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				cancel()
				if owner, err := listeningOwner(port, p.cmd.Process.Pid); err != nil || !owner {
					return errPortTaken
				}
				return nil
			}
		}
		cancel()
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("testbed: Keycloak on %s did not serve realm hms within %v; log tail:\n%s", k.URL, limit,
		tailFile(filepath.Join(k.Dir, "keycloak.log"), 30))
}

// unzipStrip unpacks a zip whose entries share one top folder into dir, without that folder.
func unzipStrip(zipPath, dir string) error {
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return err
	}
	defer zr.Close()
	for _, f := range zr.File {
		_, rel, ok := strings.Cut(f.Name, "/")
		if !ok || rel == "" {
			continue
		}
		dst := filepath.Join(dir, filepath.FromSlash(rel))
		if !strings.HasPrefix(dst, filepath.Clean(dir)+string(os.PathSeparator)) {
			return fmt.Errorf("zip entry %q leaves the folder", f.Name)
		}
		if f.FileInfo().IsDir() {
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := extract(f, dst); err != nil {
			return err
		}
	}
	return nil
}

func extract(f *zip.File, dst string) error {
	r, err := f.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	w, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, f.Mode()|0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, r); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}
