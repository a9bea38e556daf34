package configs

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

// Profiles lists every profile in a fixed order.
func Profiles() []Profile {
	return []Profile{ProfileApache313, ProfileApache410, ProfileHDP78, ProfileHDP315}
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
