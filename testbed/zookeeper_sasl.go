package testbed

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	// ShortIDs makes the server keep only the short name of a client principal as its SASL id
	// (zookeeper.kerberos.removeHostFromPrincipal and removeRealmFromPrincipal, as Kerberized Hadoop clusters
	// set them): hive/host1@REALM and hive/host2@REALM are then both sasl:hive.
	ShortIDs bool
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
	z, err := startZooKeeper(func(z *ZooKeeper) error {
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
		if o.ShortIDs {
			z.jvmArgs = append(z.jvmArgs, "-Dzookeeper.kerberos.removeHostFromPrincipal=true",
				"-Dzookeeper.kerberos.removeRealmFromPrincipal=true")
		}
		if o.RequireSASL {
			z.jvmArgs = append(z.jvmArgs, "-Dzookeeper.enforce.auth.enabled=true", "-Dzookeeper.enforce.auth.schemes=sasl")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// "ruok" answers before the server serves sessions; "srvr" names the mode only once it does
	deadline := time.Now().Add(startTimeout())
	for !serving(z.Addr) {
		if time.Now().After(deadline) {
			_ = z.Stop()
			return nil, fmt.Errorf("testbed: SASL ZooKeeper on %s answers but does not serve within %v", z.Addr, startTimeout())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return z, nil
}

// serving asks the four-letter word "srvr": a server that serves sessions reports its mode.
func serving(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("srvr")); err != nil {
		return false
	}
	b, _ := io.ReadAll(c)
	return strings.Contains(string(b), "Mode:")
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
