package gssapi

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/security/sasl"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// TestFrontDoorOptions: each bad setting is refused at construction with the key it came from.
func TestFrontDoorOptions(t *testing.T) {
	r := newRealm(t, testbed.KDCOptions{})
	ok := FrontDoorOptions{Principal: r.kdc.Principal("hive/_HOST"), Keytab: r.serverKT, Krb5Conf: r.kdc.Krb5Conf,
		BindHost: "127.0.0.1", Protection: "privacy"}
	fd, err := NewFrontDoor(ok)
	if err != nil {
		t.Fatal(err)
	}
	if fd.Acceptor.Principal() != r.serverP {
		t.Fatalf("_HOST on 127.0.0.1 expanded to %s, want %s", fd.Acceptor.Principal(), r.serverP)
	}
	for name, c := range map[string]struct {
		edit func(*FrontDoorOptions)
		want string
	}{
		"no principal":        {func(o *FrontDoorOptions) { o.Principal = "" }, "security.server-principal is required"},
		"no keytab":           {func(o *FrontDoorOptions) { o.Keytab = "" }, "security.keytab is required"},
		"missing keytab file": {func(o *FrontDoorOptions) { o.Keytab = "/nonexistent.keytab" }, "/nonexistent.keytab"},
		"not a keytab":        {func(o *FrontDoorOptions) { o.Keytab = r.kdc.Krb5Conf }, "not a valid keytab"},
		"principal not in keytab": {func(o *FrontDoorOptions) { o.Principal = r.kdc.Principal("HTTP/_HOST") },
			"holds no key for HTTP/localhost@" + r.kdc.Realm},
		"no realm":       {func(o *FrontDoorOptions) { o.Principal = "hive/_HOST" }, "has no realm"},
		"bad protection": {func(o *FrontDoorOptions) { o.Protection = "secret" }, "security.front-door-conf.hadoop.rpc.protection"},
		"bad rule":       {func(o *FrontDoorOptions) { o.AuthToLocal = "RULE:[9:$1]" }, "security.front-door-conf.hadoop.security.auth_to_local"},
		"no krb5.conf":   {func(o *FrontDoorOptions) { o.Krb5Conf = "/nonexistent/krb5.conf" }, "/nonexistent/krb5.conf"},
	} {
		o := ok
		c.edit(&o)
		if _, err := NewFrontDoor(o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	// the KDC is down: the login fails at start, as Hadoop's loginUserFromKeytab would
	r.kdc.Stop()
	if _, err := NewFrontDoor(ok); err == nil || !strings.Contains(err.Error(), "keytab login of "+r.serverP) {
		t.Errorf("KDC down: %v", err)
	}
	front, back := (*FrontDoor)(nil).Status(), (*Login)(nil).Status()
	if front.State != StateDisabled || !front.Healthy || back.State != StateDisabled {
		t.Errorf("disabled: front door %+v, backend %+v", front, back)
	}
}

// TestFrontDoorWithJavaClient: the front door as the proxy wires it, against the real Java client. auth_to_local
// decides the user the handler sees; a principal the rules do not map is refused during the handshake; after the
// server principal's TGT expires /readyz shows STALE (still healthy) and clients are still authenticated from the
// keytab.
func TestFrontDoorWithJavaClient(t *testing.T) {
	r := newRealm(t, testbed.KDCOptions{})
	if err := r.kdc.AddPrincipalLife("hive/127.0.0.1", 6*time.Second); err != nil {
		t.Fatal(err)
	}
	kt, err := r.kdc.Keytab("fd.keytab", "hive/127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.kdc.AddPrincipal("bob"); err != nil {
		t.Fatal(err)
	}
	bobKT, _ := r.kdc.Keytab("bob.keytab", "bob")
	m, _ := sasl.NewMetrics(nil)
	fd, err := NewFrontDoor(FrontDoorOptions{Principal: r.kdc.Principal("hive/127.0.0.1"), Keytab: kt,
		Krb5Conf: r.kdc.Krb5Conf, Protection: "privacy,integrity",
		AuthToLocal: `RULE:[1:$1@$0](alice@HMSPROXY\.TEST)s/.*/analyst/`, Listener: "fd", Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	st := fd.Status()
	if st.State != StateActive || !st.Healthy || !st.LoggedIn || st.Principal != r.kdc.Principal("hive/127.0.0.1") {
		t.Fatalf("front-door status %+v", st)
	}
	h := startHMSWith(t, fd.Server, fd)
	// Hive 4.1's client keeps the URI host: hive/127.0.0.1
	client := func(name, keytab string) testbed.KerberosClient {
		return testbed.KerberosClient{KDC: r.kdc, Principal: r.kdc.Principal(name), Keytab: keytab,
			ServerPrincipal: r.kdc.Principal("hive/_HOST"), Protection: "privacy"}
	}
	steps := testbed.RunScenarioT(t, testbed.Hive410, h.uri(), "version", client("alice", r.aliceKT).Args()...)
	if d := steps[len(steps)-1].Detail; !strings.Contains(d, "user_analyst") {
		t.Fatalf("auth_to_local did not map alice to analyst: %s", d)
	}
	if _, err := testbed.RunScenario(testbed.Hive410, h.uri(), "version", client("bob", bobKT).Args()...); err == nil {
		t.Fatal("bob, whom no rule maps, was served")
	}
	hs := h.waitHandshakeErrors(t, 1) // the Java client retries: one failure per attempt
	var he *sasl.HandshakeError
	if !errors.As(hs[0], &he) || he.Reason != ReasonAuthToLocal || m.Failures("fd", Mechanism, ReasonAuthToLocal) != float64(len(hs)) {
		t.Fatalf("bob's refusal: %v", hs)
	}

	time.Sleep(time.Until(time.Unix(st.TGTExpiresAtEpochSecond, 0)) + time.Second)
	st = fd.Status()
	if st.State != StateStale || !st.Healthy || st.SecondsUntilExpiry == nil || *st.SecondsUntilExpiry > 0 {
		t.Fatalf("status after the TGT expired: %+v", st)
	}
	testbed.RunScenarioT(t, testbed.Hive410, h.uri(), "version", client("alice", r.aliceKT).Args()...)
}
