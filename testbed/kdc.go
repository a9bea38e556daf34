package testbed

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// KDC is one real MIT Kerberos KDC (Debian's krb5-kdc) serving a realm the test created, on 127.0.0.1:Port (UDP and
// TCP), with its database, configuration and keytabs under Dir. Krb5Conf is a client configuration for the realm
// (Go, Java and the MIT tools read it).
type KDC struct {
	Realm    string
	Port     int
	Dir      string
	Krb5Conf string // Dir/krb5.conf

	opts KDCOptions
	mu   sync.Mutex
	proc *jvm // a krb5kdc process under the test bed's process rules
}

// KDCOptions configure StartKDC. Zero values mean the defaults.
type KDCOptions struct {
	// Realm is the realm name (default "HMSPROXY.TEST").
	Realm string
	// MaxLife is the longest ticket lifetime the KDC issues (default 1h); tests that watch tickets expire shorten it
	// (MIT's minimum useful value is a few seconds).
	MaxLife time.Duration
	// MaxRenewableLife (default 0: tickets are not renewable).
	MaxRenewableLife time.Duration
}

// Paths of Debian's MIT Kerberos server programs.
var kdcPrograms = map[string]string{
	"krb5kdc":      "/usr/sbin/krb5kdc",
	"kdb5_util":    "/usr/sbin/kdb5_util",
	"kadmin.local": "/usr/sbin/kadmin.local",
}

// StartKDC creates a realm (kdb5_util create -s) and starts krb5kdc on a free loopback port; it waits until the KDC
// answers. Stop it with Stop (or use StartKDCT).
func StartKDC(o KDCOptions) (*KDC, error) {
	for name, p := range kdcPrograms {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("testbed: MIT Kerberos %s is not installed (%s missing); install it with: sudo apt-get install -y krb5-kdc krb5-admin-server (make test does)", name, p)
		}
	}
	if o.Realm == "" {
		o.Realm = "HMSPROXY.TEST"
	}
	if o.MaxLife <= 0 {
		o.MaxLife = time.Hour
	}
	dir, err := newRunDir("kdc-")
	if err != nil {
		return nil, err
	}
	k := &KDC{Realm: o.Realm, Dir: dir, Krb5Conf: filepath.Join(dir, "krb5.conf"), opts: o}
	var lastErr error
	for attempt := 0; attempt < 4; attempt++ {
		if k.Port, err = freeUDPAndTCPPort(); err != nil {
			return nil, err
		}
		if err := k.writeConfig(); err != nil {
			return nil, err
		}
		if attempt == 0 {
			if out, err := k.run(kdcPrograms["kdb5_util"], "-r", k.Realm, "create", "-s", "-P", "hmsbed-master-key"); err != nil {
				return nil, fmt.Errorf("testbed: kdb5_util create for realm %s failed: %v\n%s", k.Realm, err, out)
			}
		}
		if lastErr = k.start(); lastErr == nil {
			return k, nil
		}
		if !errors.Is(lastErr, errPortTaken) {
			break
		}
	}
	return nil, lastErr
}

// StartKDCT starts a KDC that stops when the test ends; Dir is removed if the test passed.
func StartKDCT(t testing.TB, o KDCOptions) *KDC {
	t.Helper()
	skipIfRequested(t)
	k, err := StartKDC(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		k.Stop()
		if t.Failed() {
			t.Logf("KDC folder kept: %s (log %s)", k.Dir, filepath.Join(k.Dir, "kdc.log"))
		} else {
			os.RemoveAll(k.Dir)
		}
	})
	return k
}

// freeUDPAndTCPPort finds a port free for both UDP and TCP on 127.0.0.1.
func freeUDPAndTCPPort() (int, error) {
	for i := 0; i < 20; i++ {
		p, err := FreePort()
		if err != nil {
			return 0, err
		}
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", p))
		if err == nil {
			u.Close()
			return p, nil
		}
	}
	return 0, errors.New("testbed: no loopback port free for both UDP and TCP")
}

func (k *KDC) env() []string {
	return append(os.Environ(),
		"KRB5_CONFIG="+k.Krb5Conf,
		"KRB5_KDC_PROFILE="+filepath.Join(k.Dir, "kdc.conf"),
		"KRB5CCNAME=FILE:"+filepath.Join(k.Dir, "ccache"),
		runIDEnv+"="+runID)
}

func (k *KDC) run(prog string, args ...string) (string, error) {
	cmd := exec.Command(prog, args...)
	cmd.Env = k.env()
	cmd.Dir = k.Dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// lifetime renders a duration as MIT's "N s" delta.
func lifetime(d time.Duration) string { return fmt.Sprintf("%ds", int64(d/time.Second)) }

func (k *KDC) writeConfig() error {
	db := filepath.Join(k.Dir, "principal")
	kdcConf := fmt.Sprintf(`[kdcdefaults]
 kdc_listen = 127.0.0.1:%[2]d
 kdc_tcp_listen = 127.0.0.1:%[2]d

[realms]
 %[1]s = {
  database_name = %[3]s
  key_stash_file = %[4]s
  acl_file = %[5]s
  max_life = %[6]s
  max_renewable_life = %[7]s
  supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
  master_key_type = aes256-cts-hmac-sha1-96
 }

[logging]
 kdc = FILE:%[8]s
`, k.Realm, k.Port, db, filepath.Join(k.Dir, "stash"), filepath.Join(k.Dir, "kadm5.acl"),
		lifetime(k.opts.MaxLife), lifetime(k.opts.MaxRenewableLife), filepath.Join(k.Dir, "kdc.log"))
	krb5Conf := fmt.Sprintf(`# written by the hms-proxy test bed (testbed/kdc.go)
[libdefaults]
 default_realm = %[1]s
 dns_lookup_kdc = false
 dns_lookup_realm = false
 rdns = false
 udp_preference_limit = 1
 ticket_lifetime = %[3]s
 renew_lifetime = %[4]s
 forwardable = false
 default_tkt_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
 default_tgs_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96
 permitted_enctypes = aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96

[realms]
 %[1]s = {
  kdc = 127.0.0.1:%[2]d
 }

[domain_realm]
 localhost = %[1]s
 .localhost = %[1]s
`, k.Realm, k.Port, lifetime(k.opts.MaxLife), lifetime(k.opts.MaxRenewableLife))
	for name, body := range map[string]string{"kdc.conf": kdcConf, "krb5.conf": krb5Conf, "kadm5.acl": "*/admin *\n"} {
		if err := os.WriteFile(filepath.Join(k.Dir, name), []byte(body), 0o644); err != nil {
			return fmt.Errorf("testbed: %w", err)
		}
	}
	return nil
}

func (k *KDC) start() error {
	logPath := filepath.Join(k.Dir, "kdc.log")
	out, err := os.OpenFile(filepath.Join(k.Dir, "krb5kdc.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("testbed: %w", err)
	}
	defer out.Close()
	// -n: stay in the foreground (the test bed owns the process); -r: the realm to serve
	cmd := exec.Command(kdcPrograms["krb5kdc"], "-n", "-r", k.Realm, "-P", filepath.Join(k.Dir, "krb5kdc.pid"))
	cmd.Env = k.env()
	cmd.Dir = k.Dir
	cmd.Stdout, cmd.Stderr = out, out
	p, err := startJVM(cmd)
	if err != nil {
		return fmt.Errorf("testbed: starting krb5kdc: %w", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if p.exited() {
			log := tailFile(logPath, 20) + "\n" + tailFile(filepath.Join(k.Dir, "krb5kdc.out"), 20)
			if strings.Contains(log, "Address already in use") {
				return errPortTaken
			}
			return fmt.Errorf("testbed: krb5kdc exited during start-up (%v):\n%s", p.err, log)
		}
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", k.Port), time.Second); err == nil {
			c.Close()
			k.mu.Lock()
			k.proc = p
			k.mu.Unlock()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.stop(5 * time.Second)
	return fmt.Errorf("testbed: krb5kdc on 127.0.0.1:%d did not listen within 30s; log:\n%s", k.Port, tailFile(logPath, 20))
}

// Stop stops the KDC (SIGTERM, SIGKILL after 5 s). Idempotent.
func (k *KDC) Stop() {
	k.mu.Lock()
	p := k.proc
	k.proc = nil
	k.mu.Unlock()
	if p != nil {
		p.stop(5 * time.Second)
	}
}

// Kadmin runs one kadmin.local query against the realm's database and returns its output.
func (k *KDC) Kadmin(query string) (string, error) {
	out, err := k.run(kdcPrograms["kadmin.local"], "-r", k.Realm, "-q", query)
	if err != nil {
		return out, fmt.Errorf("testbed: kadmin.local -q %q: %v\n%s", query, err, out)
	}
	// kadmin.local exits 0 on most query errors; its messages say so
	for _, bad := range []string{" while ", "does not exist", "usage:", "Usage:"} {
		if strings.Contains(out, bad) {
			return out, fmt.Errorf("testbed: kadmin.local -q %q failed:\n%s", query, out)
		}
	}
	return out, nil
}

// Principal returns name@Realm.
func (k *KDC) Principal(name string) string { return name + "@" + k.Realm }

// AddPrincipal creates name@Realm with a random key (service or user principal, e.g. "hive/localhost" or "alice").
func (k *KDC) AddPrincipal(name string) error {
	_, err := k.Kadmin("addprinc -randkey " + k.Principal(name))
	return err
}

// AddPrincipalLife creates a principal whose tickets live at most maxLife.
func (k *KDC) AddPrincipalLife(name string, maxLife time.Duration) error {
	_, err := k.Kadmin(fmt.Sprintf("addprinc -randkey -maxlife %s %s", lifetime(maxLife), k.Principal(name)))
	return err
}

// Keytab writes the keys of the named principals (without changing them) to a new keytab file and returns its path.
func (k *KDC) Keytab(file string, names ...string) (string, error) {
	path := file
	if !filepath.IsAbs(path) {
		path = filepath.Join(k.Dir, file)
	}
	for _, n := range names {
		if _, err := k.Kadmin("ktadd -k " + path + " -norandkey " + k.Principal(n)); err != nil {
			return "", err
		}
	}
	return path, nil
}

// PrincipalKeytab creates the principals and writes their keys to file: the common one-liner of tests.
func (k *KDC) PrincipalKeytab(file string, names ...string) (string, error) {
	for _, n := range names {
		if err := k.AddPrincipal(n); err != nil {
			return "", err
		}
	}
	return k.Keytab(file, names...)
}

// Kinit gets a TGT for name from keytab into ccache with MIT's kinit (for tests that use MIT tools).
func (k *KDC) Kinit(name, keytab, ccache string) error {
	cmd := exec.Command("kinit", "-k", "-t", keytab, "-c", ccache, k.Principal(name))
	cmd.Env = k.env()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("testbed: kinit %s: %v\n%s", name, err, out)
	}
	return nil
}
