package ranger

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ranger.config-dir: the Java plugin's XML files, as an Ambari- or
// Cloudera-managed HiveServer2 has them.
func TestReadConfigDir(t *testing.T) {
	dir := t.TempDir()
	write := func(name, props string) {
		doc := `<?xml version="1.0"?><configuration>` + props + `</configuration>`
		if err := os.WriteFile(filepath.Join(dir, name), []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := func(n, v string) string { return "<property><name>" + n + "</name><value>" + v + "</value></property>" }
	write("ranger-hive-security.xml", p("ranger.plugin.hive.policy.rest.url", "https://ra1:6182,https://ra2:6182")+
		p("ranger.plugin.hive.service.name", "cl1_hive")+p("ranger.plugin.hive.policy.pollIntervalMs", "30000")+
		p("ranger.plugin.hive.policy.rest.client.connection.timeoutMs", "120000")+p("ranger.plugin.hive.super.users", "hive, admin ")+
		p("ranger.plugin.hive.policy.cache.dir", "/etc/ranger/cl1_hive/policycache"))
	write("ranger-policymgr-ssl.xml", p("xasecure.policymgr.clientssl.truststore", "/etc/security/truststore.jks")+
		p("xasecure.policymgr.clientssl.truststore.type", "jks"))
	x, err := ReadConfigDir(dir, "hive")
	if err != nil {
		t.Fatal(err)
	}
	if x.PolicyRESTURL != "https://ra1:6182,https://ra2:6182" || x.ServiceName != "cl1_hive" || x.PollInterval != 30*time.Second ||
		x.ConnectTimeout != 2*time.Minute || strings.Join(x.SuperUsers, ",") != "hive,admin" || x.TruststoreFile != "/etc/security/truststore.jks" ||
		x.PolicyCacheDir != "/etc/ranger/cl1_hive/policycache" || len(x.Files) != 2 {
		t.Fatalf("%+v", x)
	}
	write("ranger-hive-security.xml", p("ranger.plugin.hive.policy.pollIntervalMs", "30s"))
	if _, err := ReadConfigDir(dir, "hive"); err == nil || !strings.Contains(err.Error(), "ranger.plugin.hive.policy.pollIntervalMs") {
		t.Fatalf("a bad number: %v", err)
	}
	write("ranger-hive-security.xml", "<configuration><property>")
	if _, err := ReadConfigDir(dir, "hive"); err == nil || !strings.Contains(err.Error(), "not Hadoop configuration XML") {
		t.Fatalf("bad XML: %v", err)
	}
	if x, err := ReadConfigDir(t.TempDir(), "hive"); err != nil || len(x.Files) != 0 {
		t.Fatalf("an empty directory: %+v %v", x, err)
	}

	// the plugin's super users are super users of the engine
	sp, roles := loadTestdata(t)
	e, err := NewEngine(sp, roles, EngineOptions{Location: time.UTC, SuperUsers: []string{"admin"}})
	if err != nil {
		t.Fatal(err)
	}
	if d := e.Decide(&Request{User: "admin", Database: "sales", Table: "tmp_x", Access: "drop"}); !d.Allowed || d.Reason != "superuser" {
		t.Fatalf("super user: %+v", d)
	}
}
