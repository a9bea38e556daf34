package icemeta_test

// Hand-made commit cases: one or more per update action and requirement,
// and bad inputs. Each runs through icemeta (TestCases, with the outcome
// and a check of what a user would see) and through iceberg-go
// (TestDifferential, same decision, same resulting metadata).

type commitCase struct {
	name    string
	base    string // testdata file; "" for a commit that creates
	reqs    string // JSON array
	updates string // JSON array
	// want is "ok", "bad" (400: an update is refused) or "conflict" (409:
	// a requirement is not met); wantIn is a text the error must contain.
	want   string
	wantIn string
	// check looks at the result (decoded back from its JSON).
	check func(m map[string]any) string
	// divergent names a known, deliberate difference from iceberg-go (the
	// differential test then compares the decision only).
	divergent string
}

var snapshotV2 = `{"snapshot-id": 7000000000000000001, "parent-snapshot-id": 3051729675574597004, "sequence-number": 3, "timestamp-ms": 1764591000000,
  "manifest-list": "file:/warehouse/db/t/metadata/snap-7-1-c.avro", "summary": {"operation": "overwrite", "total-records": "4"}, "schema-id": 0, "x-writer": "kept"}`

var commitCases = []commitCase{
	{name: "assign-uuid", base: "base-v2.json", updates: `[{"action":"assign-uuid","uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1"}]`, want: "ok",
		check: field("table-uuid", "9c12d441-03fe-4693-9a96-a0705ddf69c1")},
	{name: "assign-uuid bad", base: "base-v2.json", updates: `[{"action":"assign-uuid","uuid":"not-a-uuid"}]`, want: "bad", wantIn: `assign-uuid): field "uuid"`},
	{name: "upgrade v1 to v2", base: "base-v1.json", updates: `[{"action":"upgrade-format-version","format-version":2}]`, want: "ok",
		check: field("format-version", 2.0)},
	{name: "upgrade v2 to v3", base: "base-v2.json", updates: `[{"action":"upgrade-format-version","format-version":3}]`, want: "ok",
		check: all(field("format-version", 3.0), field("next-row-id", 0.0))},
	{name: "downgrade refused", base: "base-v2.json", updates: `[{"action":"upgrade-format-version","format-version":1}]`, want: "bad", wantIn: "downgrade"},
	{name: "upgrade to v4 refused", base: "base-v2.json", updates: `[{"action":"upgrade-format-version","format-version":4}]`, want: "bad", wantIn: "format-version"},
	{name: "add-schema and set current -1", base: "base-v2.json",
		updates: `[{"action":"add-schema","schema":{"type":"struct","schema-id":1,"fields":[{"id":1,"name":"id","required":true,"type":"long"},{"id":2,"name":"label","required":false,"type":"string"},{"id":8,"name":"score","required":false,"type":"double"}]},"last-column-id":8},
		{"action":"set-current-schema","schema-id":-1}]`, want: "ok",
		check: all(field("current-schema-id", 1.0), field("last-column-id", 8.0), count("schemas", 2))},
	{name: "add-schema without last-column-id", base: "base-v2.json",
		updates: `[{"action":"add-schema","schema":{"type":"struct","schema-id":1,"fields":[{"id":1,"name":"id","required":true,"type":"long"},{"id":9,"name":"z","required":false,"type":"int"}]}}]`, want: "ok",
		check: all(field("current-schema-id", 0.0), field("last-column-id", 9.0))},
	{name: "add-schema same as existing is reused", base: "base-v2.json",
		updates: `[{"action":"add-schema","schema":{"type":"struct","schema-id":5,"identifier-field-ids":[1],"fields":[{"id":1,"name":"id","required":true,"type":"long"},{"id":2,"name":"name","required":false,"type":"string","doc":"display name"},{"id":3,"name":"tags","required":false,"type":{"type":"list","element-id":5,"element-required":false,"element":"string"}},{"id":4,"name":"attrs","required":false,"type":{"type":"map","key-id":6,"key":"string","value-id":7,"value-required":false,"value":"decimal(9, 2)"}}]}},{"action":"set-current-schema","schema-id":-1}]`,
		want:    "ok", check: all(count("schemas", 1), field("current-schema-id", 0.0), count("metadata-log", 2)),
		divergent: "an update that changes nothing adds no metadata-log entry in icemeta (as in Java, where the builder reports no change); iceberg-go logs the base"},
	{name: "add-schema same fields, identifier ids [] for absent", base: "base-v1.json",
		updates: `[{"action":"add-schema","schema":{"type":"struct","schema-id":1,"identifier-field-ids":[],"fields":[{"id":1,"name":"id","required":false,"type":"long"},{"id":2,"name":"ts","required":false,"type":"timestamptz"}]}},{"action":"set-current-schema","schema-id":-1}]`,
		want:    "ok", check: count("schemas", 1),
		divergent: "a change that changes nothing adds no metadata-log entry in icemeta; iceberg-go logs the base"},
	{name: "add-schema v3 type in v2", base: "base-v2.json",
		updates: `[{"action":"add-schema","schema":{"type":"struct","schema-id":1,"fields":[{"id":1,"name":"id","required":true,"type":"long"},{"id":8,"name":"v","required":false,"type":"variant"}]}}]`, want: "bad", wantIn: "variant"},
	{name: "add-schema field without id", base: "base-v2.json",
		updates: `[{"action":"add-schema","schema":{"type":"struct","schema-id":1,"fields":[{"name":"x","required":false,"type":"long"}]}}]`, want: "bad", wantIn: `"x" has no id`,
		divergent: "iceberg-go reads a field without an id as id 0"},
	{name: "add-schema missing", base: "base-v2.json", updates: `[{"action":"add-schema"}]`, want: "bad", wantIn: `field "schema": is required`},
	{name: "set-current-schema -1 without add", base: "base-v2.json", updates: `[{"action":"set-current-schema","schema-id":-1}]`, want: "bad", wantIn: "added no schema"},
	{name: "set-current-schema unknown", base: "base-v2.json", updates: `[{"action":"set-current-schema","schema-id":7}]`, want: "bad", wantIn: "schema 7 does not exist"},
	{name: "add-spec and set default -1", base: "base-v2.json",
		updates: `[{"action":"add-spec","spec":{"spec-id":1,"fields":[{"name":"name_part","transform":"identity","source-id":2,"field-id":1000},{"name":"id_bucket","transform":"bucket[16]","source-id":1,"field-id":1001}]}},{"action":"set-default-spec","spec-id":-1}]`,
		want:    "ok", check: all(field("default-spec-id", 1.0), field("last-partition-id", 1001.0), count("partition-specs", 2))},
	{name: "add-spec unknown source", base: "base-v2.json",
		updates: `[{"action":"add-spec","spec":{"spec-id":1,"fields":[{"name":"p","transform":"identity","source-id":42,"field-id":1001}]}}]`, want: "bad", wantIn: "source-id 42"},
	{name: "set-default-spec unknown", base: "base-v2.json", updates: `[{"action":"set-default-spec","spec-id":3}]`, want: "bad", wantIn: "spec 3 does not exist"},
	{name: "add-sort-order and set default -1", base: "base-v2.json",
		updates: `[{"action":"add-sort-order","sort-order":{"order-id":2,"fields":[{"transform":"identity","source-id":1,"direction":"desc","null-order":"nulls-last"}]}},{"action":"set-default-sort-order","sort-order-id":-1}]`,
		want:    "ok", check: all(field("default-sort-order-id", 2.0), count("sort-orders", 3))},
	{name: "add-sort-order existing is reused", base: "base-v2.json",
		updates: `[{"action":"add-sort-order","sort-order":{"order-id":5,"fields":[{"transform":"identity","source-id":1,"direction":"asc","null-order":"nulls-first"}]}},{"action":"set-default-sort-order","sort-order-id":-1}]`,
		want:    "ok", check: all(field("default-sort-order-id", 1.0), count("sort-orders", 2))},
	{name: "unsorted default", base: "base-v2.json", updates: `[{"action":"set-default-sort-order","sort-order-id":0}]`, want: "ok", check: field("default-sort-order-id", 0.0)},
	{name: "set-default-sort-order unknown", base: "base-v2.json", updates: `[{"action":"set-default-sort-order","sort-order-id":9}]`, want: "bad", wantIn: "sort order 9"},
	{name: "add-snapshot and set main", base: "base-v2.json",
		reqs:    `[{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":3051729675574597004}]`,
		updates: `[{"action":"add-snapshot","snapshot":` + snapshotV2 + `},{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":7000000000000000001}]`,
		want:    "ok", check: all(field("current-snapshot-id", 7000000000000000001.0), field("last-sequence-number", 3.0), count("snapshots", 3), count("snapshot-log", 3),
			field("last-updated-ms", 1764591000000.0), snapshotKept("x-writer"))},
	{name: "add-snapshot stale sequence number", base: "base-v2.json",
		updates: `[{"action":"add-snapshot","snapshot":{"snapshot-id": 7000000000000000002, "parent-snapshot-id": 3051729675574597004, "sequence-number": 2, "timestamp-ms": 1764591000000, "manifest-list": "file:/m.avro", "summary": {"operation": "append"}}}]`,
		want:    "bad", wantIn: "sequence-number 2"},
	{name: "add-snapshot duplicate id", base: "base-v2.json",
		updates: `[{"action":"add-snapshot","snapshot":{"snapshot-id": 3051729675574597004, "sequence-number": 3, "timestamp-ms": 1764591000000, "manifest-list": "file:/m.avro", "summary": {"operation": "append"}}}]`,
		want:    "bad", wantIn: "already exists"},
	{name: "add-snapshot v3 row lineage", base: "base-v3.json",
		updates: `[{"action":"add-snapshot","snapshot":{"snapshot-id": 11, "sequence-number": 1, "timestamp-ms": 1764591000000, "manifest-list": "file:/m.avro", "summary": {"operation": "append"}, "first-row-id": 0, "added-rows": 25}},{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":11}]`,
		want:    "ok", check: all(field("next-row-id", 25.0), field("current-snapshot-id", 11.0))},
	{name: "add-snapshot v3 without first-row-id", base: "base-v3.json",
		updates: `[{"action":"add-snapshot","snapshot":{"snapshot-id": 11, "sequence-number": 1, "timestamp-ms": 1764591000000, "manifest-list": "file:/m.avro", "summary": {"operation": "append"}}}]`,
		want:    "bad", wantIn: "first-row-id"},
	{name: "tag and branch with retention", base: "base-v2.json",
		updates: `[{"action":"set-snapshot-ref","ref-name":"audit","type":"branch","snapshot-id":3055729675574597004,"max-snapshot-age-ms":3600000,"min-snapshots-to-keep":2},{"action":"set-snapshot-ref","ref-name":"v1","type":"tag","snapshot-id":3051729675574597004}]`,
		want:    "ok", check: all(refIs("audit", 3055729675574597004, "branch"), refIs("v1", 3051729675574597004, "tag"), field("current-snapshot-id", 3051729675574597004.0))},
	{name: "ref to unknown snapshot", base: "base-v2.json", updates: `[{"action":"set-snapshot-ref","ref-name":"x","type":"tag","snapshot-id":5}]`, want: "bad", wantIn: "snapshot 5 does not exist"},
	{name: "ref bad type", base: "base-v2.json", updates: `[{"action":"set-snapshot-ref","ref-name":"x","type":"label","snapshot-id":3051729675574597004}]`, want: "bad", wantIn: `field "type"`},
	{name: "main rolled back", base: "base-v2.json", updates: `[{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":3055729675574597004}]`, want: "ok",
		check: all(field("current-snapshot-id", 3055729675574597004.0), count("snapshot-log", 3))},
	{name: "remove-snapshot-ref", base: "base-v2.json", updates: `[{"action":"remove-snapshot-ref","ref-name":"first"}]`, want: "ok", check: noRef("first")},
	{name: "remove-snapshot-ref unknown", base: "base-v2.json", updates: `[{"action":"remove-snapshot-ref","ref-name":"nope"}]`, want: "bad", wantIn: `ref "nope"`},
	{name: "remove-snapshots", base: "base-v2.json", updates: `[{"action":"remove-snapshots","snapshot-ids":[3055729675574597004]}]`, want: "ok",
		check: all(count("snapshots", 1), noRef("first"), count("statistics", 0), count("snapshot-log", 1))},
	{name: "remove current snapshot refused", base: "base-v2.json", updates: `[{"action":"remove-snapshots","snapshot-ids":[3051729675574597004]}]`, want: "bad", wantIn: "current snapshot"},
	{name: "set-location", base: "base-v2.json", updates: `[{"action":"set-location","location":"file:/warehouse/db/t2"}]`, want: "ok", check: field("location", "file:/warehouse/db/t2")},
	{name: "set and remove properties", base: "base-v2.json", updates: `[{"action":"set-properties","updates":{"a":"1","b":"2"}},{"action":"remove-properties","removals":["b","owner"]}]`, want: "ok",
		check: props(map[string]string{"a": "1", "write.parquet.compression-codec": "zstd"})},
	{name: "set reserved property", base: "base-v2.json", updates: `[{"action":"set-properties","updates":{"format-version":"3"}}]`, want: "bad", wantIn: `"format-version" is reserved`},
	{name: "set-properties without updates", base: "base-v2.json", updates: `[{"action":"set-properties"}]`, want: "bad", wantIn: `field "updates": is required`,
		divergent: "iceberg-go reads a missing updates member as no properties"},
	{name: "set-statistics replaces", base: "base-v2.json",
		updates: `[{"action":"set-statistics","snapshot-id":3055729675574597004,"statistics":{"snapshot-id":3055729675574597004,"statistics-path":"file:/warehouse/db/t/metadata/stats-2.puffin","file-size-in-bytes":500,"file-footer-size-in-bytes":50,"blob-metadata":[]}}]`,
		want:    "ok", check: count("statistics", 1)},
	{name: "remove-statistics", base: "base-v2.json", updates: `[{"action":"remove-statistics","snapshot-id":3055729675574597004}]`, want: "ok", check: count("statistics", 0)},
	{name: "partition statistics set and removed", base: "base-v2.json",
		updates: `[{"action":"set-partition-statistics","partition-statistics":{"snapshot-id":3051729675574597004,"statistics-path":"file:/warehouse/db/t/metadata/pstats.parquet","file-size-in-bytes":77}}]`,
		want:    "ok", check: count("partition-statistics", 1)},
	{name: "remove-partition-specs default refused", base: "base-v2.json", updates: `[{"action":"remove-partition-specs","spec-ids":[0]}]`, want: "bad", wantIn: "default partition spec"},
	{name: "remove-schemas current refused", base: "base-v2.json", updates: `[{"action":"remove-schemas","schema-ids":[0]}]`, want: "bad", wantIn: "current schema"},
	{name: "unknown action", base: "base-v2.json", updates: `[{"action":"rename-everything"}]`, want: "bad", wantIn: `unknown table update action "rename-everything"`},
	{name: "metadata log grows", base: "base-v2.json", updates: `[{"action":"set-properties","updates":{"k":"v"}}]`, want: "ok",
		check: all(count("metadata-log", 3), kept("x-engine-note"))},
	{name: "metadata log trimmed", base: "base-v2.json", updates: `[{"action":"set-properties","updates":{"write.metadata.previous-versions-max":"1"}}]`, want: "ok",
		check: count("metadata-log", 1)},

	// Requirements.
	{name: "assert-table-uuid ok", base: "base-v2.json", reqs: `[{"type":"assert-table-uuid","uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1"}]`, updates: `[]`, want: "ok"},
	{name: "assert-table-uuid differs", base: "base-v2.json", reqs: `[{"type":"assert-table-uuid","uuid":"00000000-0000-4000-8000-000000000000"}]`, updates: `[]`, want: "conflict", wantIn: "00000000-0000-4000-8000-000000000000"},
	{name: "assert-create on existing", base: "base-v2.json", reqs: `[{"type":"assert-create"}]`, updates: `[]`, want: "conflict", wantIn: "already exists"},
	{name: "assert-ref-snapshot-id differs", base: "base-v2.json", reqs: `[{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":1}]`, updates: `[]`, want: "conflict", wantIn: "main"},
	{name: "assert-ref-snapshot-id null but exists", base: "base-v2.json", reqs: `[{"type":"assert-ref-snapshot-id","ref":"first","snapshot-id":null}]`, updates: `[]`, want: "conflict", wantIn: "first"},
	{name: "assert-ref-snapshot-id null and absent", base: "base-v2.json", reqs: `[{"type":"assert-ref-snapshot-id","ref":"new-branch","snapshot-id":null}]`, updates: `[]`, want: "ok"},
	{name: "assert-ref-snapshot-id missing ref", base: "base-v2.json", reqs: `[{"type":"assert-ref-snapshot-id","ref":"gone","snapshot-id":5}]`, updates: `[]`, want: "conflict", wantIn: "gone"},
	{name: "assert-last-assigned-field-id", base: "base-v2.json", reqs: `[{"type":"assert-last-assigned-field-id","last-assigned-field-id":5}]`, updates: `[]`, want: "conflict", wantIn: "Requirement failed: last assigned field id changed: the commit expects 5, the table has 7"},
	{name: "assert-current-schema-id", base: "base-v2.json", reqs: `[{"type":"assert-current-schema-id","current-schema-id":1}]`, updates: `[]`, want: "conflict", wantIn: "Requirement failed: current schema changed: the commit expects schema 1, the table's is 0"},
	{name: "assert-last-assigned-partition-id", base: "base-v2.json", reqs: `[{"type":"assert-last-assigned-partition-id","last-assigned-partition-id":999}]`, updates: `[]`, want: "conflict", wantIn: "Requirement failed: last assigned partition id changed: the commit expects 999, the table has 1000"},
	{name: "assert-default-spec-id", base: "base-v2.json", reqs: `[{"type":"assert-default-spec-id","default-spec-id":1}]`, updates: `[]`, want: "conflict", wantIn: "Requirement failed: default partition spec changed: the commit expects spec 1, the table's is 0"},
	{name: "assert-default-sort-order-id", base: "base-v2.json", reqs: `[{"type":"assert-default-sort-order-id","default-sort-order-id":0}]`, updates: `[]`, want: "conflict", wantIn: "Requirement failed: default sort order changed: the commit expects order 0, the table's is 1"},
	{name: "all requirements met", base: "base-v2.json", reqs: `[{"type":"assert-last-assigned-field-id","last-assigned-field-id":7},{"type":"assert-current-schema-id","current-schema-id":0},{"type":"assert-last-assigned-partition-id","last-assigned-partition-id":1000},{"type":"assert-default-spec-id","default-spec-id":0},{"type":"assert-default-sort-order-id","default-sort-order-id":1}]`,
		updates: `[{"action":"set-properties","updates":{"ok":"yes"}}]`, want: "ok", check: props(map[string]string{"ok": "yes", "owner": "etl", "write.parquet.compression-codec": "zstd"})},
	{name: "unknown requirement", base: "base-v2.json", reqs: `[{"type":"assert-nothing"}]`, updates: `[]`, want: "bad", wantIn: "assert-nothing"},

	// A commit that creates (the Java client's create transaction).
	{name: "create transaction", reqs: `[{"type":"assert-create"}]`,
		updates: `[{"action":"assign-uuid","uuid":"2d7f1a9c-61d2-4a0e-b6a4-0f4b9a1f2e11"},{"action":"upgrade-format-version","format-version":2},
		{"action":"add-schema","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"},{"id":2,"name":"data","required":false,"type":"string"}]},"last-column-id":2},
		{"action":"set-current-schema","schema-id":-1},{"action":"add-spec","spec":{"spec-id":0,"fields":[{"name":"data","transform":"identity","source-id":2,"field-id":1000}]}},
		{"action":"set-default-spec","spec-id":-1},{"action":"add-sort-order","sort-order":{"order-id":0,"fields":[]}},{"action":"set-default-sort-order","sort-order-id":-1},
		{"action":"set-location","location":"file:/warehouse/db/new"},{"action":"set-properties","updates":{"created-by":"test"}}]`,
		want: "ok", check: all(field("table-uuid", "2d7f1a9c-61d2-4a0e-b6a4-0f4b9a1f2e11"), count("schemas", 1), field("current-schema-id", 0.0), field("last-partition-id", 1000.0)),
		divergent: "iceberg-go seeds a created table with an empty schema 0, so the client's schema becomes schema 1; icemeta starts empty as Java's REST server does"},
	// A staged create of a format-version 1 table (pyiceberg's
	// create_table_transaction, Spark's CTAS with 'format-version'='1'): the
	// first upgrade-format-version of a new table picks its version.
	{name: "create transaction of a v1 table", reqs: `[{"type":"assert-create"}]`,
		updates: `[{"action":"assign-uuid","uuid":"2d7f1a9c-61d2-4a0e-b6a4-0f4b9a1f2e11"},{"action":"upgrade-format-version","format-version":1},
		{"action":"add-schema","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"}]},"last-column-id":1},
		{"action":"set-current-schema","schema-id":-1},{"action":"set-location","location":"file:/warehouse/db/v1"}]`,
		want: "ok", check: all(field("format-version", 1.0), field("current-schema-id", 0.0)),
		divergent: "iceberg-go seeds a created table with an empty schema 0"},
	{name: "create transaction downgrading after its version was set", reqs: `[{"type":"assert-create"}]`,
		updates: `[{"action":"upgrade-format-version","format-version":2},{"action":"upgrade-format-version","format-version":1},
		{"action":"add-schema","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":true,"type":"long"}]},"last-column-id":1}]`,
		want: "bad", wantIn: "cannot downgrade format version 2 to 1"},
}
