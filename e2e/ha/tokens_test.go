package ha

import (
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/security/tokens"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/testbed/cluster"
)

// A delegation token issued by one replica of a Kerberized cluster keeps
// working after that replica is SIGKILLed: the real HiveMetaStoreClient
// authenticates with it over DIGEST-MD5 through the balancer, renews and
// cancels it there, as a Spark executor or a HiveServer2 session would; the
// token store is the shared ZooKeeper. (The synthetic lock store refuses
// ZooKeeper under Kerberos until it can authenticate to ZooKeeper, so this
// cluster has one catalog, and the lock failover is the other test's.)
func TestDelegationTokenOfAKilledReplicaIsServedByTheOthers(t *testing.T) {
	needHive(t)
	kdc := testbed.StartKDCT(t, testbed.KDCOptions{})
	t.Setenv("KRB5_CONFIG", kdc.Krb5Conf) // the replicas inherit it (the Go side reads it as MIT tools do)
	proxyKT, err := kdc.PrincipalKeytab("proxy.keytab", "hmsproxy/localhost")
	if err != nil {
		t.Fatal(err)
	}
	aliceKT, err := kdc.PrincipalKeytab("alice.keytab", "alice")
	if err != nil {
		t.Fatal(err)
	}
	zk := zooKeeper(t)
	const dt = "security.front-door-conf.hive.cluster.delegation."
	c, err := cluster.Start(cluster.Options{Binary: proxyBinary(t), Dir: t.TempDir(), Replicas: 3,
		Catalogs: []cluster.Catalog{{Name: "catalog1", URI: hms1.URI}},
		Props: map[string]string{
			"security.mode":             "KERBEROS",
			"security.server-principal": "hmsproxy/_HOST@" + kdc.Realm,
			"security.keytab":           proxyKT,
			// this ZooKeeper has no Kerberos (e2e/kerberos runs the stores on one that has)
			"security.zookeeper.sasl.enabled":          "false",
			dt + "token.store.class":                   "org.apache.hadoop.hive.metastore.security.ZooKeeperTokenStore",
			dt + "token.store.zookeeper.connectString": zk.Addr,
			dt + "token.store.zookeeper.znode":         "/" + uniq("tokens"),
			dt + "token.store.zookeeper.acl":           "world:anyone:cdrwa",
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	alice := testbed.KerberosClient{KDC: kdc, Principal: kdc.Principal("alice"), Keytab: aliceKT,
		ServerPrincipal: "hmsproxy/_HOST@" + kdc.Realm}
	op := func(uri string, args ...string) string {
		t.Helper()
		steps := testbed.RunScenarioT(t, testbed.Hive313, uri, "token", append(args, alice.Args()...)...)
		return steps[len(steps)-1].Detail
	}
	issuer := c.Replicas[0]
	tok := op(issuer.URI(), "--op", "get", "--owner", "alice", "--renewer", "alice")
	if _, err := tokens.DecodeToken(tok); err != nil {
		t.Fatalf("get_delegation_token through %s answered %q: %v", issuer.Name, tok, err)
	}
	if err := issuer.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := c.HAProxy.WaitState(issuer.Name, "DOWN", 15*time.Second); err != nil {
		t.Fatal(err)
	}
	op(c.URI(), "--op", "use", "--token", tok)
	if d := op(c.URI(), "--op", "renew", "--token", tok); !strings.HasPrefix(d, "expiry=") {
		t.Fatalf("renew through the balancer answered %q", d)
	}
	served := 0.0
	for _, r := range c.Replicas[1:] {
		n, err := r.Metric("hms_proxy_authentication_handshake_duration_seconds_count", "mechanism", "DIGEST-MD5")
		if err != nil {
			t.Fatal(err)
		}
		served += n
	}
	if served < 1 {
		t.Errorf("no surviving replica counted a DIGEST-MD5 handshake")
	}
	op(c.URI(), "--op", "cancel", "--token", tok)
	op(c.URI(), "--op", "use", "--expect-fail", "--token", tok)
}
