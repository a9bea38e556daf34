package configs

import (
	"strings"
	"testing"
	"time"
)

// The ranger.* keys, validated as they will be once the Ranger feature is
// wired (override: implemented); today ranger.enabled=true still refuses
// start (TestKeysThatDidNothingRefuse).
func TestRangerKeys(t *testing.T) {
	built := map[string]Status{"ranger": StatusImplemented}
	good := map[string]string{
		"ranger.enabled": "true", "ranger.policy.rest.url": "http://r1:6080/, https://r2:6182",
		"ranger.service-name": "hms_hive", "ranger.cluster-name": "prod", "ranger.ignore-tag-policies": "true",
		"ranger.policy.cache.dir": "/var/cache/r", "ranger.policy.poll-interval-ms": "15000",
		"security.groups.mapping": "file,shell", "security.groups.mapping.file": "/etc/hms-proxy/groups",
		"catalog.catalog2.ranger.enabled": "true", "catalog.catalog2.ranger.service-name": "c2_hive",
	}
	cfg, errs, _ := parseAll(t, merge(refusalBase, good), built)
	if errs != nil {
		t.Fatalf("errors:\n%s", errText(errs))
	}
	r := cfg.Ranger
	if got := RangerURLs(r.PolicyRESTURL); len(got) != 2 || got[0] != "http://r1:6080" || got[1] != "https://r2:6182" {
		t.Errorf("URLs %q", got)
	}
	if r.ClusterName != "prod" || !r.IgnoreTagPolicies || r.PollInterval != 15*time.Second || r.ServiceType != "hive" || r.AppID != "hms-proxy" {
		t.Errorf("shared plugin %+v", r)
	}
	c2 := cfg.Catalog("catalog2").Ranger
	if c2.ServiceName != "c2_hive" || c2.PolicyRESTURL != r.PolicyRESTURL || c2.PolicyCacheDir != "/var/cache/r" {
		t.Errorf("catalog2 plugin %+v", c2)
	}
	if g := cfg.GroupMapping; strings.Join(g.Sources, ",") != "file,shell" || g.File != "/etc/hms-proxy/groups" || g.CacheTTL != 5*time.Minute {
		t.Errorf("group mapping %+v", g)
	}
	for _, c := range []struct {
		set  map[string]string
		key  string
		want string
	}{
		{map[string]string{"ranger.policy.rest.url": "ranger:6080"}, "ranger.policy.rest.url", "not an http(s) URL"},
		{map[string]string{"ranger.service-type": "hdfs"}, "ranger.service-type", "Hive service definition only"},
		{map[string]string{"security.groups.mapping": "file", "security.groups.mapping.file": ""}, "security.groups.mapping.file", "required"},
		{map[string]string{"security.groups.mapping": "shell"}, "security.groups.mapping", "does not name file"},
		{map[string]string{"security.groups.mapping": "ldap"}, "security.groups.mapping", "ldap"},
		{map[string]string{"ranger.ssl.truststore.password": "x"}, "ranger.ssl.truststore.file", "without a truststore"},
	} {
		props := merge(refusalBase, good, c.set)
		for k, v := range c.set {
			if v == "" {
				delete(props, k)
			}
		}
		_, errs, _ := parseAll(t, props, built)
		if e := errorOn(errs, c.key); e == nil || !strings.Contains(e.Error(), c.want) {
			t.Errorf("%v: want an error on %s saying %q; got:\n%s", c.set, c.key, c.want, errText(errs))
		}
	}
}
