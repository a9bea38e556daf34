package thriftgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/thriftgen/internal/idl"
	"github.com/hms-proxy/hms-proxy/thriftgen/internal/schema"
)

// The public reference IDLs (not part of the repository) are read from $HMS_PROXY_IDL_DIR, by default the shared
// folder next to the repository. They check the HDP delta (no HDP jar exists to extract from) and the extractor.

func idlDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("HMS_PROXY_IDL_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "idl")
	}
	if _, err := os.Stat(filepath.Join(dir, "hdp-3.1.5", "hive_metastore.thrift")); err != nil {
		t.Skipf("reference IDLs not found in %s (set HMS_PROXY_IDL_DIR): %v", dir, err)
	}
	return dir
}

func loadSchema(t *testing.T) *schema.Schema {
	t.Helper()
	s, err := schema.Load("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// wireView is profile p's view of the canonical schema with p's own wire field ids.
func wireView(t *testing.T, s *schema.Schema, p string) *schema.Schema {
	t.Helper()
	v, err := s.Project(p, true)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func parseIDL(t *testing.T, dir, folder, profile string) *schema.Schema {
	t.Helper()
	s, err := idl.ParseFile(filepath.Join(dir, folder, "hive_metastore.thrift"), profile)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Each HDP profile of schema.json, in its own wire ids, is exactly the public HDP IDL: every method, struct,
// field (id, name, type, requiredness, order) and enum value.
func TestHDPProfilesMatchIDL(t *testing.T) {
	dir := idlDir(t)
	s := loadSchema(t)
	for _, c := range []struct{ profile, folder string }{
		{schema.HDP78, "hdp-3.1.0.0-78"},
		{schema.HDP315, "hdp-3.1.5"},
	} {
		diff := schema.Diff(wireView(t, s, c.profile), parseIDL(t, dir, c.folder, c.profile), true)
		for _, d := range diff {
			t.Errorf("%s (a: schema.json, b: %s IDL): %s", c.profile, c.folder, d)
		}
	}
}

// The minimal checks the delta must pass whatever the IDL parser understands: HDP method names and Table ids.
func TestHDPMethodNamesAndTableIDs(t *testing.T) {
	dir := idlDir(t)
	for _, c := range []struct {
		p      ProfileSet
		folder string
		table  map[int16]string
	}{
		{ProfileHDP78, "hdp-3.1.0.0-78", map[int16]string{19: "writeId", 20: "isStatsCompliant"}},
		{ProfileHDP315, "hdp-3.1.5", map[int16]string{21: "colStats", 23: "accessType",
			24: "requiredReadCapabilities", 25: "requiredWriteCapabilities"}},
	} {
		ref := parseIDL(t, dir, c.folder, c.p.Names()[0])
		have := map[string]bool{}
		for _, m := range AllMethods() {
			if m.Profiles.Has(c.p) {
				have[m.Name] = true
			}
		}
		for _, m := range ref.Methods {
			if !have[m.Name] {
				t.Errorf("%s: IDL method %s missing", c.p, m.Name)
			}
			delete(have, m.Name)
		}
		for m := range have {
			t.Errorf("%s: method %s is not in the IDL", c.p, m)
		}
		// Table as the peer writes it: canonical fields mapped through the profile's dialect
		d := TableDialect(c.p)
		wire := map[int16]string{}
		for _, f := range LookupStruct("Table").Fields {
			if !f.Profiles.Has(c.p) {
				continue
			}
			id, ok := f.ID, true
			if d != nil {
				id, ok = d.WireID(f.ID)
			}
			if ok {
				wire[id] = f.Name
			}
		}
		refTable := ref.Structs["Table"]
		if len(refTable.Fields) != len(wire) {
			t.Errorf("%s: Table has %d wire fields, IDL %d", c.p, len(wire), len(refTable.Fields))
		}
		for _, f := range refTable.Fields {
			if wire[f.ID] != f.Name {
				t.Errorf("%s: Table wire id %d is %q, IDL says %s", c.p, f.ID, wire[f.ID], f.Name)
			}
		}
		for id, name := range c.table {
			if wire[id] != name {
				t.Errorf("%s: Table wire id %d is %q, want %s", c.p, id, wire[id], name)
			}
		}
	}
}

// The 3.1.3 schema extracted from the jar is the 3.1.3 IDL exactly, IDL defaults included (this also checks the
// IDL parser and the extractor's reading of defaults from the generated constructors).
func TestApache313MatchesIDL(t *testing.T) {
	dir := idlDir(t)
	s := loadSchema(t)
	for _, d := range schema.Diff(wireView(t, s, schema.Apache313), parseIDL(t, dir, "apache-3.1.3", schema.Apache313), true) {
		t.Errorf("APACHE_3_1_3 (a: jar, b: IDL): %s", d)
	}
}

// The real 4.1.0 jar contains everything of the 4.1 lower-bound IDL (Hive master of 2024-08-26) with the same
// ids, names and types; the differences are logged (go test -v -run LowerBound).
func TestApache410ContainsLowerBound(t *testing.T) {
	dir := idlDir(t)
	s := loadSchema(t)
	diff := schema.Diff(wireView(t, s, schema.Apache410), parseIDL(t, dir, "apache-4.1-lowerbound", schema.Apache410), false)
	for _, d := range diff {
		t.Logf("4.1.0 jar (a) vs 4.1 lower bound (b): %s", d)
		switch {
		case strings.HasSuffix(d, "only in a"):
		// a default the release added after the lower bound (DropCatalogRequest.ifExists = true)
		case strings.Contains(d, " in a, none in b") && strings.Contains(d, " has default "):
		// union members: the jar's Thrift 0.16 compiler marks them optional, the IDL leaves them default
		case strings.Contains(d, " is optional in a, default in b") && isUnion(s, d):
		default:
			t.Errorf("unexpected difference: %s", d)
		}
	}
}

func isUnion(s *schema.Schema, diffLine string) bool {
	name := strings.TrimPrefix(strings.SplitN(diffLine, ":", 2)[0], "struct ")
	st := s.Structs[name]
	return st != nil && st.Kind == schema.KindUnion
}
