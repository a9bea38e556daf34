package configs

import (
	"net/url"
	"strings"
)

// External table drop purge modes (ExternalTableDropPurgeConfig.Mode).
const (
	DropPurgeDisabled   = "DISABLED"
	DropPurgeBestEffort = "BEST_EFFORT"
)

// ExternalTableDropPurgeConfig is federation.external-table-drop-purge.*:
// after a successful drop_table of an EXTERNAL_TABLE with
// external.table.purge=true on a backend the purge serves (Profile.DropPurge),
// its data is deleted
// if its location lies under one of the catalog's
// DropPurgeAllowedPrefixes.
type ExternalTableDropPurgeConfig struct {
	Mode string
}

const purgePrefixes = "hms.proxy.external-table-drop-purge.allowed-prefixes"

// purgeSchemes are the location schemes the drop purge deletes (package
// fileio's file systems).
var purgeSchemes = map[string]bool{"file": true, "hdfs": true, "s3": true, "s3a": true}

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
				for _, pre := range cat.DropPurgeAllowedPrefixes {
					if u, err := url.Parse(pre); err == nil && u.Scheme != "" && !purgeSchemes[strings.ToLower(u.Scheme)] {
						p.fail(&Error{Key: "catalog." + cat.Name + ".conf." + purgePrefixes, Value: pre,
							Msg: "the drop purge deletes local paths (/path or file:///path), hdfs://, s3:// and s3a:// locations; " + u.Scheme + ":// is not one of them"})
					}
				}
				if len(cat.DropPurgeAllowedPrefixes) > 0 && !cat.RuntimeProfile.DropPurge() {
					p.warnf("catalog.%s.conf.%s: has no effect: the purge hook serves %s backends only (catalog.%s.runtime-profile=%s)",
						cat.Name, purgePrefixes, profilesWhere(Profile.DropPurge), cat.Name, cat.RuntimeProfile)
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
			hiveConfKey(purgePrefixes, "", &keyDef{typ: prefixListT{}, example: "hdfs://ns1/data/external/,file:///tmp/external/",
				meaning: "location prefixes under which the purge may delete (recursively, by path segment); keep it narrow. Local paths, `hdfs://`, `s3://` and `s3a://` (through the catalog's storage settings, docs/storage.md); other schemes are refused at start",
				bind:    func(c *Config, m match) any { return &catalogOf(c, m).DropPurgeAllowedPrefixes }}),
		},
	}
}
