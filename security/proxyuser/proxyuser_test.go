package proxyuser

import (
	"context"
	"errors"
	"os/user"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Names from Hadoop's TestProxyUsers.
const (
	realUser       = "proxier"
	proxyUser      = "proxied_user"
	authorizedUser = "authorized_proxied_user"
	proxyIP        = "1.2.3.4"
)

type fakeResolver struct {
	names map[string][]string // addr → names
	addrs map[string][]string // host → addrs
}

func (f fakeResolver) LookupAddr(_ context.Context, a string) ([]string, error) {
	if n, ok := f.names[a]; ok {
		return n, nil
	}
	return nil, errors.New("no PTR record")
}

func (f fakeResolver) LookupHost(_ context.Context, h string) ([]string, error) {
	if a, ok := f.addrs[h]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

func groupsOf(m map[string][]string) func(string) ([]string, error) {
	return func(u string) ([]string, error) {
		if g, ok := m[u]; ok {
			return g, nil
		}
		return nil, user.UnknownUserError(u)
	}
}

func TestHadoopProxyUsersCases(t *testing.T) {
	fooGroup := map[string][]string{proxyUser: {"foo_group"}, authorizedUser: {"foo_group"}}
	barGroup := map[string][]string{proxyUser: {"bar_group"}, authorizedUser: {"bar_group"}}
	res := fakeResolver{
		names: map[string][]string{"10.0.0.7": {"hs2-1.example.com."}},
		addrs: map[string][]string{"hs2-2.example.com": {"10.0.0.8"}},
	}
	type check struct {
		user, ip string
		ok       bool
	}
	cases := []struct {
		name   string
		conf   map[string]string
		groups map[string][]string
		checks []check
	}{
		{"testProxyUsers: allowed group", map[string]string{"hadoop.proxyuser.proxier.groups": "foo_group", "hadoop.proxyuser.proxier.hosts": proxyIP},
			fooGroup, []check{{proxyUser, "1.2.3.4", true}, {proxyUser, "1.2.3.5", false}}},
		{"testProxyUsers: other group", map[string]string{"hadoop.proxyuser.proxier.groups": "foo_group", "hadoop.proxyuser.proxier.hosts": proxyIP},
			barGroup, []check{{proxyUser, "1.2.3.4", false}, {proxyUser, "1.2.3.5", false}}},
		{"testProxyUsersWithUserConf", map[string]string{"hadoop.proxyuser.proxier.users": authorizedUser, "hadoop.proxyuser.proxier.hosts": proxyIP},
			fooGroup, []check{{authorizedUser, "1.2.3.4", true}, {authorizedUser, "1.2.3.5", false}, {proxyUser, "1.2.3.4", false}, {proxyUser, "1.2.3.5", false}}},
		{"testWildcardGroup", map[string]string{"hadoop.proxyuser.proxier.groups": "*", "hadoop.proxyuser.proxier.hosts": proxyIP},
			barGroup, []check{{proxyUser, "1.2.3.4", true}, {proxyUser, "1.2.3.5", false}}},
		{"testWildcardUser", map[string]string{"hadoop.proxyuser.proxier.users": "*", "hadoop.proxyuser.proxier.hosts": proxyIP},
			barGroup, []check{{authorizedUser, "1.2.3.4", true}, {proxyUser, "1.2.3.4", true}, {proxyUser, "1.2.3.5", false}}},
		{"testWildcardIP", map[string]string{"hadoop.proxyuser.proxier.groups": "foo_group", "hadoop.proxyuser.proxier.hosts": "*"},
			fooGroup, []check{{proxyUser, "1.2.3.4", true}, {proxyUser, "1.2.3.5", true}}},
		{"testWildcardIP: other group", map[string]string{"hadoop.proxyuser.proxier.groups": "foo_group", "hadoop.proxyuser.proxier.hosts": "*"},
			barGroup, []check{{proxyUser, "1.2.3.4", false}, {proxyUser, "1.2.3.5", false}}},
		{"testIPRange", map[string]string{"hadoop.proxyuser.proxier.groups": "*", "hadoop.proxyuser.proxier.hosts": "10.222.0.0/16"},
			fooGroup, []check{{proxyUser, "10.222.0.0", true}, {proxyUser, "10.222.255.1", true}, {proxyUser, "10.221.0.0", false}}},
		{"testWithDuplicateProxyGroups/Hosts", map[string]string{"hadoop.proxyuser.proxier.groups": "foo_group,foo_group", "hadoop.proxyuser.proxier.hosts": "1.2.3.4,1.2.3.4"},
			fooGroup, []check{{proxyUser, "1.2.3.4", true}}},
		{"testWithProxyGroupsAndUsersWithSpaces", map[string]string{"hadoop.proxyuser.proxier.users": " " + authorizedUser + " , x ",
			"hadoop.proxyuser.proxier.groups": " bar_group , y", "hadoop.proxyuser.proxier.hosts": " 1.2.3.4 , 1.2.3.5 "},
			barGroup, []check{{authorizedUser, "1.2.3.5", true}, {proxyUser, "1.2.3.4", true}}},
		{"no hosts key", map[string]string{"hadoop.proxyuser.proxier.users": "*"}, fooGroup, []check{{proxyUser, "1.2.3.4", false}}},
		{"no users or groups key", map[string]string{"hadoop.proxyuser.proxier.hosts": "*"}, fooGroup, []check{{proxyUser, "1.2.3.4", false}}},
		{"empty hosts", map[string]string{"hadoop.proxyuser.proxier.users": "*", "hadoop.proxyuser.proxier.hosts": ""}, fooGroup,
			[]check{{proxyUser, "1.2.3.4", false}}},
		{"host names (reverse and forward)", map[string]string{"hadoop.proxyuser.proxier.users": "*",
			"hadoop.proxyuser.proxier.hosts": "HS2-1.example.com,hs2-2.example.com"}, fooGroup,
			[]check{{proxyUser, "10.0.0.7", true}, {proxyUser, "10.0.0.8", true}, {proxyUser, "10.0.0.9", false}}},
		{"address with port, IPv6", map[string]string{"hadoop.proxyuser.proxier.users": "*", "hadoop.proxyuser.proxier.hosts": "1.2.3.4,::1"}, fooGroup,
			[]check{{proxyUser, "1.2.3.4:51234", true}, {proxyUser, "[::1]:9083", true}, {proxyUser, "[::ffff:1.2.3.4]:1", true}, {proxyUser, "not-an-ip", false}}},
		{"unknown user's groups", map[string]string{"hadoop.proxyuser.proxier.groups": "foo_group", "hadoop.proxyuser.proxier.hosts": "*"}, fooGroup,
			[]check{{"nobody-known", "1.2.3.4", false}}},
	}
	for _, c := range cases {
		r, err := ParseConf(c.conf, "security.front-door-conf.", Options{Groups: groupsOf(c.groups), Resolver: res})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, ch := range c.checks {
			err := r.Authorize(realUser, ch.user, ch.ip)
			if (err == nil) != ch.ok {
				t.Errorf("%s: Authorize(%s, %s, %s) = %v, want allowed=%v", c.name, realUser, ch.user, ch.ip, err, ch.ok)
			}
			if err != nil {
				var ae *AuthorizationError
				if !errors.As(err, &ae) || ae.Service != realUser || ae.User != ch.user {
					t.Errorf("%s: error %#v", c.name, err)
				}
				msg := err.Error()
				if !strings.Contains(msg, realUser) || !strings.Contains(msg, ch.user) {
					t.Errorf("%s: %q does not name the service and the user", c.name, msg)
				}
			}
		}
	}
}

func TestRefusalTexts(t *testing.T) {
	m := NewMetrics(nil)
	r, err := ParseConf(map[string]string{
		"hadoop.proxyuser.hive.hosts":  "hs2-1.example.com,10.1.0.0/16",
		"hadoop.proxyuser.hive.groups": "analysts",
	}, "security.front-door-conf.", Options{Groups: groupsOf(map[string][]string{"alice": {"analysts"}, "bob": {"sales"}}),
		Resolver: fakeResolver{}, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	svc := "hive/hs2-1.example.com@EXAMPLE.COM"
	if err := r.Authorize(svc, "alice", "10.1.2.3:40000"); err != nil {
		t.Fatal(err)
	}
	if err := r.Authorize(svc, "alice@EXAMPLE.COM", "10.1.2.3"); err != nil {
		t.Errorf("principal with realm: %v", err)
	}
	err = r.Authorize(svc, "bob", "10.1.2.3")
	want := "User: hive/hs2-1.example.com@EXAMPLE.COM is not allowed to impersonate bob (from 10.1.2.3: neither " +
		"security.front-door-conf.hadoop.proxyuser.hive.users nor security.front-door-conf.hadoop.proxyuser.hive.groups admits bob; groups of bob: sales)"
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	err = r.Authorize(svc, "alice", "192.168.7.7")
	want = "Unauthorized connection for super-user: hive/hs2-1.example.com@EXAMPLE.COM from IP 192.168.7.7 " +
		"(impersonating alice: not in security.front-door-conf.hadoop.proxyuser.hive.hosts)"
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	err = r.Authorize("oozie/o@EXAMPLE.COM", "alice", "10.1.2.3")
	if err == nil || !strings.Contains(err.Error(), "no hadoop.proxyuser.oozie.* rules") {
		t.Errorf("unknown service: %v", err)
	}
	err = r.Authorize(svc, "carol", "10.1.2.3")
	if err == nil || !strings.Contains(err.Error(), "groups of carol unknown") {
		t.Errorf("unknown user: %v", err)
	}
	// Asking for itself needs no rule (Hive's token manager does the same).
	if err := r.Authorize("oozie/o@EXAMPLE.COM", "oozie", "10.9.9.9"); err != nil {
		t.Errorf("self: %v", err)
	}
	if got := testutil.ToFloat64(m.checks.WithLabelValues("denied")); got != 4 {
		t.Errorf("denied = %v", got)
	}
	if got := testutil.ToFloat64(m.checks.WithLabelValues("allowed")); got != 3 {
		t.Errorf("allowed = %v", got)
	}
}

func TestParseErrors(t *testing.T) {
	for name, conf := range map[string]map[string]string{
		"bad cidr":      {"hadoop.proxyuser.hive.hosts": "10.0.0.0/40"},
		"bad host":      {"hadoop.proxyuser.hive.hosts": "bad host!"},
		"unknown kind":  {"hadoop.proxyuser.hive.ips": "*"},
		"dotted svc":    {"hadoop.proxyuser.a.b.hosts": "*"},
		"no kind":       {"hadoop.proxyuser.hive": "*"},
		"mixed wildcar": {"hadoop.proxyuser.hive.users": "*,alice"},
	} {
		_, err := ParseConf(conf, "security.front-door-conf.", Options{})
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		for k := range conf {
			if !strings.Contains(err.Error(), "security.front-door-conf."+k) {
				t.Errorf("%s: %q does not name the key", name, err)
			}
		}
	}
	r, err := ParseConf(map[string]string{"hive.metastore.x": "1", "hadoop.proxyuser.hive.hosts": "*", "hadoop.proxyuser.oozie.users": "a"}, "", Options{})
	if err != nil || strings.Join(r.Services(), ",") != "hive,oozie" {
		t.Errorf("services %v, %v", r, err)
	}
}

// TestOSGroups reads this machine's account database, as Hadoop's shell
// group mapping does: root is in group root.
func TestOSGroups(t *testing.T) {
	g, err := OSGroups("root")
	if err != nil {
		t.Fatal(err)
	}
	if len(g) == 0 || g[0] != "root" {
		t.Errorf("groups of root %v, want root first", g)
	}
	if _, err := OSGroups("no-such-user-hms-proxy"); err == nil {
		t.Error("unknown user has groups")
	}
	r, _ := ParseConf(map[string]string{"hadoop.proxyuser.hive.groups": "root", "hadoop.proxyuser.hive.hosts": "127.0.0.1"}, "", Options{})
	if err := r.Authorize("hive/h@R", "root", "127.0.0.1"); err != nil {
		t.Errorf("root via OS group root: %v", err)
	}
}
