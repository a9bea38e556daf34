package main

import (
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/configs"
)

// configs imports no project package, so it keeps its own profile
// constants; they must be exactly compat's profile registry, in order, or a
// profile the configuration accepts would have no runtime (or the other way
// round).
func TestConfigsProfilesAreTheRegistrys(t *testing.T) {
	var reg, cfg []string
	for _, r := range compat.Runtimes() {
		reg = append(reg, r.Name)
	}
	for _, p := range configs.Profiles() {
		cfg = append(cfg, string(p))
	}
	if strings.Join(reg, ",") != strings.Join(cfg, ",") {
		t.Fatalf("configs.Profiles() = %v, compat.Runtimes() = %v: add the profile to both (configs/config.go, compat/compat.go)", cfg, reg)
	}
	for _, p := range configs.Profiles() {
		if _, err := compat.Lookup(string(p)); err != nil {
			t.Errorf("configs profile %s: %v", p, err)
		}
	}
}
