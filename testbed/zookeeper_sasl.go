package testbed

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ZooKeeperSASLOptions configure StartZooKeeperSASL.
type ZooKeeperSASLOptions struct {
	// KDC issues the server's keys (required).
	KDC *KDC
	// Principal is the server's service principal without realm (default "zookeeper/localhost": Java and Go
	// clients dialling 127.0.0.1 ask for the canonical name of 127.0.0.1, which is localhost here).
	Principal string
	// RequireSASL makes the server close every session that has not authenticated with SASL before its first
	// operation (ZooKeeper 3.7+: zookeeper.enforce.auth.enabled=true, zookeeper.enforce.auth.schemes=sasl). Without
	// it a client without SASL is served, and only the znodes' ACLs keep it out.
	RequireSASL bool
}

// StartZooKeeperSASL starts a standalone ZooKeeper that authenticates clients with SASL/Kerberos (GSSAPI): the
// SASLAuthenticationProvider, and a JAAS Server section with the principal's keytab from the KDC. Session ids are
// the full principals (ZooKeeper's default: neither host nor realm removed). Debian's package is ZooKeeper 3.8.0.
func StartZooKeeperSASL(o ZooKeeperSASLOptions) (*ZooKeeper, error) {
	if o.KDC == nil {
		return nil, fmt.Errorf("testbed: StartZooKeeperSASL needs a KDC")
	}
	if o.Principal == "" {
		o.Principal = "zookeeper/localhost"
	}
	return startZooKeeper(func(z *ZooKeeper) error {
		keytab := filepath.Join(z.Dir, "zookeeper.keytab")
		// several servers of one KDC share the principal (and its key)
		if err := o.KDC.AddPrincipal(o.Principal); err != nil && !strings.Contains(err.Error(), "already exists") {
			return err
		}
		if _, err := o.KDC.Keytab(keytab, o.Principal); err != nil {
			return err
		}
		jaas := filepath.Join(z.Dir, "jaas.conf")
		conf := fmt.Sprintf(`Server {
  com.sun.security.auth.module.Krb5LoginModule required
  useKeyTab=true
  keyTab="%s"
  storeKey=true
  useTicketCache=false
  principal="%s";
};
`, keytab, o.KDC.Principal(o.Principal))
		if err := os.WriteFile(jaas, []byte(conf), 0o644); err != nil {
			return fmt.Errorf("testbed: %w", err)
		}
		z.extraConfig = append(z.extraConfig, "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider")
		z.jvmArgs = append(z.jvmArgs, "-Djava.security.auth.login.config="+jaas, "-Djava.security.krb5.conf="+o.KDC.Krb5Conf,
			// ZooKeeper's KerberosName reads the default realm from the JDK's Kerberos configuration.
			"--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
			"--add-opens=java.security.jgss/sun.security.krb5=ALL-UNNAMED")
		if o.RequireSASL {
			z.jvmArgs = append(z.jvmArgs, "-Dzookeeper.enforce.auth.enabled=true", "-Dzookeeper.enforce.auth.schemes=sasl")
		}
		return nil
	})
}

// StartZooKeeperSASLT starts a SASL ZooKeeper that stops when the test ends (see StartZooKeeperT).
func StartZooKeeperSASLT(t testing.TB, o ZooKeeperSASLOptions) *ZooKeeper {
	t.Helper()
	skipIfRequested(t)
	z, err := StartZooKeeperSASL(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = z.Stop()
		if !t.Failed() {
			_ = os.RemoveAll(z.Dir)
		} else {
			t.Logf("ZooKeeper folder kept: %s", z.Dir)
		}
	})
	return z
}
