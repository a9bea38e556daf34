package schema

import "fmt"

// Build loads the extracted per-profile schemas, derives the delta's profiles and merges them all: the whole
// path from extractor output to thriftgen/schema.json.
func Build(profileFiles []string, deltaPath string) (*Schema, error) {
	known := map[string]*Schema{}
	var parts []*Schema
	for _, f := range profileFiles {
		s, err := Load(f)
		if err != nil {
			return nil, err
		}
		if len(s.Profiles) != 1 || s.Source == nil {
			return nil, fmt.Errorf("%s: not an extracted single-profile schema (profiles %v)", f, s.Profiles)
		}
		if known[s.Profiles[0]] != nil {
			return nil, fmt.Errorf("%s: profile %s given twice", f, s.Profiles[0])
		}
		known[s.Profiles[0]] = s
		parts = append(parts, s)
	}
	d, err := LoadDelta(deltaPath)
	if err != nil {
		return nil, err
	}
	derived, dialects, err := d.Apply(known)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", deltaPath, err)
	}
	return Merge(append(parts, derived...), dialects)
}
