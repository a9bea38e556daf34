package restcatalog_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/restcatalog"
	"github.com/hms-proxy/hms-proxy/router/naming"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// kdc is a real MIT Kerberos KDC (Debian's krb5-kdc) on a loopback port,
// with its database, configuration and logs in a temp folder. (A shared
// test-bed KDC is being built elsewhere; this one is the test's own.)
type kdc struct {
	dir, realm string
	env        []string
}

func startKDC(t *testing.T) *kdc {
	t.Helper()
	for _, tool := range []string{"krb5kdc", "kdb5_util", "kadmin.local", "kinit"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found (apt-get install -y krb5-kdc krb5-admin-server krb5-user): %v", tool, err)
		}
	}
	k := &kdc{dir: t.TempDir(), realm: "REST.TEST"}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	krb5 := fmt.Sprintf(`[libdefaults]
 default_realm = %[1]s
 dns_lookup_kdc = false
 dns_lookup_realm = false
 rdns = false
 dns_canonicalize_hostname = false
 udp_preference_limit = 1
[realms]
 %[1]s = {
  kdc = 127.0.0.1:%[2]d
 }
`, k.realm, port)
	kdcConf := fmt.Sprintf(`[kdcdefaults]
 kdc_ports = %[2]d
 kdc_tcp_ports = %[2]d
 kdc_listen = 127.0.0.1:%[2]d
 kdc_tcp_listen = 127.0.0.1:%[2]d
[realms]
 %[1]s = {
  database_name = %[3]s/principal
  key_stash_file = %[3]s/stash
  acl_file = %[3]s/kadm5.acl
  max_life = 1h
  supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
 }
[logging]
 kdc = FILE:%[3]s/kdc.log
`, k.realm, port, k.dir)
	for name, body := range map[string]string{"krb5.conf": krb5, "kdc.conf": kdcConf, "kadm5.acl": ""} {
		if err := os.WriteFile(filepath.Join(k.dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	k.env = append(os.Environ(), "KRB5_CONFIG="+filepath.Join(k.dir, "krb5.conf"), "KRB5_KDC_PROFILE="+filepath.Join(k.dir, "kdc.conf"),
		"KRB5CCNAME=FILE:"+filepath.Join(k.dir, "ccache"))
	k.run(t, "", "kdb5_util", "create", "-s", "-r", k.realm, "-P", "master-password")
	cmd := exec.Command("krb5kdc", "-n", "-r", k.realm)
	cmd.Env = k.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	for deadline := time.Now().Add(20 * time.Second); ; {
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			c.Close()
			break
		}
		select {
		case <-done:
			t.Fatalf("krb5kdc exited: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("krb5kdc not listening on %d: %s", port, out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return k
}

func (k *kdc) run(t *testing.T, stdin string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = k.env
	cmd.Stdin = strings.NewReader(stdin)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
	}
	return string(b)
}

func (k *kdc) kadmin(t *testing.T, q string) { k.run(t, "", "kadmin.local", "-r", k.realm, "-q", q) }

// The REST listener with SPNEGO against a real KDC, driven by curl
// --negotiate (MIT GSS-API): no token is a 401 ErrorModel with
// WWW-Authenticate: Negotiate; a ticket of alice is accepted and the request
// runs as alice@REST.TEST (into the metastore factory and the audit hook).
func TestSPNEGOWithARealKDC(t *testing.T) {
	k := startKDC(t)
	keytab := filepath.Join(k.dir, "http.keytab")
	k.kadmin(t, "addprinc -randkey HTTP/localhost@"+k.realm)
	k.kadmin(t, "ktadd -k "+keytab+" HTTP/localhost@"+k.realm)
	k.kadmin(t, "addprinc -pw alice-password alice@"+k.realm)

	sp, err := restcatalog.NewSPNEGO(restcatalog.SPNEGOOptions{Principal: "HTTP/_HOST@" + k.realm, Keytab: keytab, SecurityMode: "KERBEROS", Hostname: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	if sp.Principal() != "HTTP/localhost@"+k.realm {
		t.Errorf("principal %s", sp.Principal())
	}
	var mu sync.Mutex
	var callers []restcatalog.Caller
	var infos []restcatalog.RequestInfo
	ns := naming.NewNamespace("__", "c1", false, []*naming.Catalog{{Name: "c1", BackendName: "hive"}})
	h, err := restcatalog.New(restcatalog.Options{
		Naming: ns, WriteIsolated: func(string) bool { return true }, SPNEGO: sp,
		Metastore: func(_ context.Context, c restcatalog.Caller) (*thriftgen.Client, func(), error) {
			mu.Lock()
			callers = append(callers, c)
			mu.Unlock()
			return nil, nil, errors.New("no metastore in this test")
		},
		OnRequest: func(ri restcatalog.RequestInfo) { mu.Lock(); infos = append(infos, ri); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := restcatalog.Listen(h, restcatalog.ServerOptions{BindHost: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	base := "http://localhost:" + strconv.Itoa(srv.Addr().(*net.TCPAddr).Port)

	curl := func(args ...string) (int, string, string) {
		t.Helper()
		hdr := filepath.Join(t.TempDir(), "h")
		all := append([]string{"-s", "-D", hdr, "-o", "-", "-w", "\n%{http_code}"}, args...)
		out := k.run(t, "", "curl", all...)
		i := strings.LastIndexByte(out, '\n')
		code, _ := strconv.Atoi(out[i+1:])
		hb, _ := os.ReadFile(hdr)
		return code, out[:i], string(hb)
	}

	// No token.
	code, body, hdr := curl(base + "/v1/config")
	if code != 401 || !strings.Contains(body, `"NotAuthorizedException"`) || !strings.Contains(strings.ToLower(hdr), "www-authenticate: negotiate") {
		t.Errorf("without a ticket: %d %s %s", code, body, hdr)
	}
	if resp, err := http.Head(base + "/v1/c1/namespaces/x"); err != nil || resp.StatusCode != 401 || resp.ContentLength > 0 {
		t.Errorf("HEAD without a ticket: %v %v", resp, err)
	}
	// A bad token.
	if code, body, _ = curl("-H", "Authorization: Negotiate AAAA", base+"/v1/config"); code != 401 {
		t.Errorf("bad token: %d %s", code, body)
	}
	// With alice's ticket.
	k.run(t, "alice-password\n", "kinit", "alice@"+k.realm)
	if code, body, _ = curl("--negotiate", "-u", ":", base+"/v1/config"); code != 200 || !strings.Contains(body, `"prefix":"c1"`) {
		t.Fatalf("with a ticket: %d %s", code, body)
	}
	code, _, _ = curl("--negotiate", "-u", ":", base+"/v1/c1/namespaces")
	if code != 503 {
		t.Errorf("namespaces without a metastore: %d", code)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(callers) != 1 || callers[0].User != "alice@"+k.realm {
		t.Errorf("metastore factory saw %+v", callers)
	}
	var users []string
	for _, ri := range infos {
		users = append(users, fmt.Sprintf("%d:%s", ri.Status, ri.Caller.User))
	}
	if want := "401:,401:,401:,200:alice@REST.TEST,503:alice@REST.TEST"; strings.Join(users, ",") != want {
		t.Errorf("audit hook saw %s, want %s", strings.Join(users, ","), want)
	}
}

// SPNEGO settings that cannot work refuse to build.
func TestSPNEGOValidation(t *testing.T) {
	k := startKDC(t)
	keytab := filepath.Join(k.dir, "http.keytab")
	k.kadmin(t, "addprinc -randkey HTTP/localhost@"+k.realm)
	k.kadmin(t, "ktadd -k "+keytab+" HTTP/localhost@"+k.realm)
	for _, c := range []struct {
		o    restcatalog.SPNEGOOptions
		want string
	}{
		{restcatalog.SPNEGOOptions{Principal: "HTTP/localhost@" + k.realm, Keytab: keytab, SecurityMode: "NONE"}, "requires security.mode=KERBEROS"},
		{restcatalog.SPNEGOOptions{Principal: "HTTP/localhost@" + k.realm, SecurityMode: "KERBEROS"}, "must both be set"},
		{restcatalog.SPNEGOOptions{Principal: "hms/localhost@" + k.realm, Keytab: keytab, SecurityMode: "KERBEROS"}, "HTTP/<host>@REALM"},
		{restcatalog.SPNEGOOptions{Principal: "HTTP/other@" + k.realm, Keytab: keytab, SecurityMode: "KERBEROS"}, "holds no key for HTTP/other@"},
		{restcatalog.SPNEGOOptions{Principal: "HTTP/localhost@" + k.realm, Keytab: keytab + ".missing", SecurityMode: "KERBEROS"}, "rest-catalog.kerberos.keytab="},
	} {
		if _, err := restcatalog.NewSPNEGO(c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}

// A panic while serving is answered as a 500 ErrorModel without its stack,
// and the listener goes on serving.
func TestPanicIsAnAnswer(t *testing.T) {
	ns := naming.NewNamespace("__", "c1", false, []*naming.Catalog{{Name: "c1", BackendName: "hive"}})
	h, err := restcatalog.New(restcatalog.Options{Naming: ns, WriteIsolated: func(string) bool { return true },
		Metastore: func(context.Context, restcatalog.Caller) (*thriftgen.Client, func(), error) {
			panic("boom in a dependency")
		},
		Log: discardLog()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := restcatalog.Listen(h, restcatalog.ServerOptions{BindHost: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	e := &env{t: t, url: srv.URL()}
	typ, msg := e.do("GET", "/v1/c1/namespaces", nil).errorModel(t, 500)
	if typ != "InternalServerError" || strings.Contains(msg, "boom") {
		t.Errorf("%s: %s", typ, msg)
	}
	if a := e.do("GET", "/v1/config", nil); a.Status != 200 {
		t.Errorf("after a panic: %d", a.Status)
	}
}
