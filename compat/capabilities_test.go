package compat

import (
	"testing"

	"github.com/hms-proxy/hms-proxy/configs"
)

// What differs between runtimes is a capability of compat.Runtime; these
// are the values the rest of the proxy relies on.
func TestRuntimeCapabilities(t *testing.T) {
	want := map[string]struct {
		cas   bool
		rules int
		purge bool
	}{
		"APACHE_3_1_3":                   {rules: 3, purge: true},
		"APACHE_4_1_0":                   {cas: true, rules: 4},
		"HORTONWORKS_3_1_0_3_1_0_78":     {rules: 3},
		"HORTONWORKS_3_1_0_3_1_5_6150_1": {rules: 3},
	}
	for _, rt := range Runtimes() {
		w, ok := want[rt.Name]
		if !ok {
			t.Errorf("runtime %s: no expected capabilities in this test (add them)", rt.Name)
			continue
		}
		if rt.CompareAndSwap != w.cas || rt.LockRules != w.rules || rt.DropPurge != w.purge {
			t.Errorf("runtime %s: CompareAndSwap %v LockRules %d DropPurge %v, want %v %d %v",
				rt.Name, rt.CompareAndSwap, rt.LockRules, rt.DropPurge, w.cas, w.rules, w.purge)
		}
		if rt.LockRules != 3 && rt.LockRules != 4 {
			t.Errorf("runtime %s: LockRules %d is neither Hive 3's nor Hive 4's lock table", rt.Name, rt.LockRules)
		}
	}
}

// configs validates two keys by runtime facts it keeps beside the profile
// names (it imports no package of ours): they must be compat's.
func TestConfigsProfileFactsMatchRuntimes(t *testing.T) {
	ps := configs.Profiles()
	if len(ps) != len(Runtimes()) {
		t.Fatalf("configs has %d profiles, compat %d", len(ps), len(Runtimes()))
	}
	for _, p := range ps {
		rt, err := Lookup(string(p))
		if err != nil {
			t.Fatalf("configs profile %s: %v", p, err)
		}
		if p.CompareAndSwap() != rt.CompareAndSwap || p.DropPurge() != rt.DropPurge {
			t.Errorf("profile %s: configs says CompareAndSwap %v DropPurge %v, compat %v %v",
				p, p.CompareAndSwap(), p.DropPurge(), rt.CompareAndSwap, rt.DropPurge)
		}
	}
}
