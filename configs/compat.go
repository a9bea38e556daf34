package configs

import "strings"

// Profile names a Hive metastore Thrift API flavour: what a front-door
// listener speaks to its clients, or what a backend metastore speaks.
type Profile string

// The profiles; these strings are the configuration values.
const (
	ProfileApache313 Profile = "APACHE_3_1_3"
	ProfileApache410 Profile = "APACHE_4_1_0"
	ProfileHDP78     Profile = "HORTONWORKS_3_1_0_3_1_0_78"
	ProfileHDP315    Profile = "HORTONWORKS_3_1_0_3_1_5_6150_1"
)

// profileFacts are the runtime capabilities configs' own validation needs
// (a key that only means something on some runtimes), one line per profile.
// compat.Runtime is the authority on capabilities: configs imports no package
// of ours, so it keeps these two beside the names, and compat's
// TestConfigsProfileFactsMatchRuntimes holds them equal to the registry
// there. Validation asks these facts, never a profile's name.
var profileFacts = []struct {
	p Profile
	// compareAndSwap: compat.Runtime.CompareAndSwap (an Iceberg commit
	// without the metastore lock is safe).
	compareAndSwap bool
	// dropPurge: compat.Runtime.DropPurge (the external table drop purge
	// serves it).
	dropPurge bool
}{
	{p: ProfileApache313, dropPurge: true},
	{p: ProfileApache410, compareAndSwap: true},
	{p: ProfileHDP78},
	{p: ProfileHDP315},
}

// Profiles lists every profile in a fixed order.
func Profiles() []Profile {
	out := make([]Profile, len(profileFacts))
	for i, f := range profileFacts {
		out[i] = f.p
	}
	return out
}

// CompareAndSwap is configs' copy of compat.Runtime.CompareAndSwap for the
// runtime p (false for an unknown profile).
func (p Profile) CompareAndSwap() bool {
	for _, f := range profileFacts {
		if f.p == p {
			return f.compareAndSwap
		}
	}
	return false
}

// DropPurge is configs' copy of compat.Runtime.DropPurge for the runtime p.
func (p Profile) DropPurge() bool {
	for _, f := range profileFacts {
		if f.p == p {
			return f.dropPurge
		}
	}
	return false
}

// profilesWhere names the profiles a fact holds for ("A or B").
func profilesWhere(fact func(Profile) bool) string {
	var names []string
	for _, f := range profileFacts {
		if fact(f.p) {
			names = append(names, string(f.p))
		}
	}
	return strings.Join(names, " or ")
}

func profileNames() []string {
	ps := Profiles()
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = string(p)
	}
	return out
}

var profileT = enum(profileNames()...)

// CompatibilityConfig is compatibility.*.
type CompatibilityConfig struct {
	FrontendProfile                Profile // default APACHE_3_1_3
	FrontendStandaloneMetastoreJar string  // accepted for drop-in configs, ignored
	BackendStandaloneMetastoreJar  string  // accepted for drop-in configs, ignored
}

const jarIgnored = "every supported Hive version is compiled into hms-proxy; no standalone-metastore jar is loaded"

func compatibilityFeature() *feature {
	return &feature{
		id: "compatibility", title: "Profiles",
		keys: []*keyDef{
			{pattern: "compatibility.frontend-profile", typ: profileT, def: string(ProfileApache313), example: string(ProfileHDP315),
				meaning: "the Thrift API the primary listener speaks to its clients",
				bind:    func(c *Config, _ match) any { return &c.Compatibility.FrontendProfile }},
			{pattern: "compatibility.frontend-standalone-metastore-jar", typ: strT{}, example: "/opt/hms-proxy/hdp.jar",
				ignored: jarIgnored,
				meaning: "Hortonworks standalone-metastore jar of the primary listener (Java proxy)",
				bind:    func(c *Config, _ match) any { return &c.Compatibility.FrontendStandaloneMetastoreJar }},
			{pattern: "compatibility.backend-standalone-metastore-jar", typ: strT{}, example: "/opt/hms-proxy/hdp.jar",
				ignored: jarIgnored,
				meaning: "default Hortonworks backend runtime jar of the catalogs (Java proxy)",
				bind:    func(c *Config, _ match) any { return &c.Compatibility.BackendStandaloneMetastoreJar }},
		},
	}
}
