package monitoring

// RangerPluginStatus is one Ranger plugin in /readyz's "ranger" section.
// Diagnostic: a plugin without policies in force refuses its catalogs'
// calls (saying why); it does not take the replica out of the balancer,
// whose other catalogs still serve.
type RangerPluginStatus struct {
	Service  string   `json:"service"`
	Catalogs []string `json:"catalogs"`
	Ready    bool     `json:"ready"`
	// NotReady says why the plugin's catalogs are refused.
	NotReady      string `json:"notReady,omitempty"`
	PolicyVersion int64  `json:"policyVersion"`
	// Source is where the policies in force came from: an Admin URL or the
	// local policy cache.
	Source                 string `json:"source,omitempty"`
	LastSuccessEpochSecond int64  `json:"lastSuccessEpochSecond,omitempty"`
	LastError              string `json:"lastError,omitempty"`
}

// RangerSource may additionally be implemented by a ReadinessSource when
// some catalog is guarded by Ranger; an empty answer leaves the section out.
type RangerSource interface {
	RangerStatus() []RangerPluginStatus
}
