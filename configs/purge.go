package configs

// External table drop purge modes (ExternalTableDropPurgeConfig.Mode).
const (
	DropPurgeDisabled   = "DISABLED"
	DropPurgeBestEffort = "BEST_EFFORT"
)

// ExternalTableDropPurgeConfig is federation.external-table-drop-purge.*:
// after a successful drop_table of an EXTERNAL_TABLE with
// external.table.purge=true on an APACHE_3_1_3 backend, its data is deleted
// if its location lies under one of the catalog's
// DropPurgeAllowedPrefixes.
type ExternalTableDropPurgeConfig struct {
	Mode string
}

const purgePrefixes = "hms.proxy.external-table-drop-purge.allowed-prefixes"

func dropPurgeFeature() *feature {
	return &feature{
		id: "external-table-drop-purge", title: "External table drop purge",
		on:   func(c *Config) bool { return c.Federation.ExternalTableDropPurge.Mode == DropPurgeBestEffort },
		off:  offBecause("federation.external-table-drop-purge.mode=DISABLED"),
		loss: "leave the data of dropped external tables in place",
		validate: func(p *parser, c *Config) {
			if c.Federation.ExternalTableDropPurge.Mode != DropPurgeBestEffort {
				return
			}
			for _, cat := range c.Catalogs {
				if len(cat.DropPurgeAllowedPrefixes) > 0 && cat.RuntimeProfile != ProfileApache313 {
					p.warnf("catalog.%s.conf.%s: has no effect: the purge hook serves APACHE_3_1_3 backends only (catalog.%s.runtime-profile=%s)",
						cat.Name, purgePrefixes, cat.Name, cat.RuntimeProfile)
				}
			}
			if !anyCatalog(c, func(cat *CatalogConfig) bool { return len(cat.DropPurgeAllowedPrefixes) > 0 }) {
				p.warnf("federation.external-table-drop-purge.mode=BEST_EFFORT: no catalog sets catalog.<name>.conf.%s, so nothing is ever purged", purgePrefixes)
			}
		},
		keys: []*keyDef{
			{pattern: "federation.external-table-drop-purge.mode", typ: enum(DropPurgeDisabled, DropPurgeBestEffort), def: DropPurgeDisabled, example: DropPurgeBestEffort,
				sw: true, gate: gateNonDefault,
				meaning: "`BEST_EFFORT` deletes a dropped external table's data in the background (only after the metadata delete succeeded; failures are logged)",
				bind:    func(c *Config, _ match) any { return &c.Federation.ExternalTableDropPurge.Mode }},
			hiveConfKey(purgePrefixes, "", &keyDef{typ: prefixListT{}, example: "hdfs://ns1/tmp/,hdfs://ns1/data/external/",
				meaning: "location prefixes under which the purge may delete (recursively); keep it narrow",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).DropPurgeAllowedPrefixes }}),
		},
	}
}
