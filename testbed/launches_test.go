package testbed

import (
	"os/exec"
	"strings"
	"testing"
)

// The launch counts name a Java server by its main class (past the JVM flags and the class path) and anything else
// by its binary: the names the e2e packages print after their tests.
func TestLaunchNames(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"/usr/lib/jvm/java-17/bin/java", "-Xmx512m", "-Dx=y", "-cp", "a.jar:b/*", "org.apache.hadoop.hive.metastore.HiveMetaStore", "-p", "1"}, "HiveMetaStore"},
		{[]string{"/usr/bin/java", "-jar", "/c/keycloak/quarkus-run.jar", "start-dev"}, "quarkus-run.jar"},
		{[]string{"/usr/bin/java", "@/tmp/argfile", "-classpath", "x", "Main"}, "Main"},
		{[]string{"/usr/sbin/krb5kdc", "-n"}, "krb5kdc"},
	} {
		cmd := exec.Command(c.args[0], c.args[1:]...)
		if got := launchName(cmd); got != c.want {
			t.Errorf("launchName(%v) = %q, want %q", c.args, got, c.want)
		}
	}
	before := LaunchSummary()
	CountLaunch("zz-test-launch")
	CountLaunch("zz-test-launch")
	if got := LaunchSummary(); got == before || !strings.Contains(got, "2 zz-test-launch") {
		t.Fatalf("after two launches the summary says %q", got)
	}
}
