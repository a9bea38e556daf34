package schema

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Merge builds the canonical union of single-profile schemas. Every part must already use canonical field ids,
// except that a field with a compiler-assigned (negative) id in one profile and a positive id elsewhere (same
// struct, name and type) is renumbered to the positive id, with a dialect recorded for the profile that uses the
// negative id (Apache 3.1.3's create_ischema_result.o2 is the known case). dialects holds the declared dialects
// (from the delta); the result carries both.
//
// Rules: an element's profiles are the union of the parts that have it; the same name must mean the same thing
// everywhere (kind, id, type, enum value, method shape) or Merge fails naming it. A field's canonical requiredness
// is "required" if it is required in every profile that has it, else "optional" if it is optional in any, else
// "default"; requiredIn lists the profiles where it is required when that is not all of them, optionalIn those
// where an optional field is optional when that is not all of them (the rest have it as default). Fields keep the wire
// order of every profile (Merge fails if two profiles order common fields differently). A field's IDL default must
// be the same in every profile that has it.
func Merge(parts []*Schema, dialects map[string]map[string]*Dialect) (*Schema, error) {
	out := &Schema{
		Enums:    map[string]*Enum{},
		Structs:  map[string]*Struct{},
		Dialects: map[string]map[string]*Dialect{},
		Sources:  map[string]map[string]JarRef{},
	}
	byProfile := map[string]*Schema{}
	for _, p := range parts {
		if len(p.Profiles) != 1 {
			return nil, fmt.Errorf("merge input has profiles %v, want exactly one", p.Profiles)
		}
		name := p.Profiles[0]
		if byProfile[name] != nil {
			return nil, fmt.Errorf("profile %s given twice", name)
		}
		byProfile[name] = p.Clone()
		out.Profiles = append(out.Profiles, name)
		if p.Source != nil {
			out.Sources[name] = p.Source
		}
	}
	out.Profiles = SortProfiles(out.Profiles)
	for p, m := range dialects {
		if byProfile[p] == nil {
			return nil, fmt.Errorf("dialect for profile %s, which is not merged", p)
		}
		out.Dialects[p] = map[string]*Dialect{}
		for sn, d := range m {
			out.Dialects[p][sn] = &Dialect{WireToCanonical: copyMap(d.WireToCanonical)}
		}
	}
	if err := renumberNegativeIDs(byProfile, out.Dialects); err != nil {
		return nil, err
	}

	// enums
	for _, p := range out.Profiles {
		for en, e := range byProfile[p].Enums {
			oe := out.Enums[en]
			if oe == nil {
				oe = &Enum{}
				out.Enums[en] = oe
			}
			oe.Profiles = append(oe.Profiles, p)
			for _, v := range e.Values {
				var ov *EnumValue
				for _, x := range oe.Values {
					if x.Name == v.Name || x.Value == v.Value {
						if x.Name != v.Name || x.Value != v.Value {
							return nil, fmt.Errorf("enum %s: %s=%d in %s conflicts with %s=%d in %v", en, v.Name, v.Value,
								p, x.Name, x.Value, x.Profiles)
						}
						ov = x
					}
				}
				if ov == nil {
					ov = &EnumValue{Name: v.Name, Value: v.Value}
					oe.Values = append(oe.Values, ov)
				}
				ov.Profiles = append(ov.Profiles, p)
			}
		}
	}
	for _, e := range out.Enums {
		sort.Slice(e.Values, func(i, j int) bool { return e.Values[i].Value < e.Values[j].Value })
	}

	// structs
	perStructOrder := map[string]map[string][]int16{} // struct -> profile -> wire order of ids
	for _, p := range out.Profiles {
		for sn, st := range byProfile[p].Structs {
			os := out.Structs[sn]
			if os == nil {
				os = &Struct{Kind: st.Kind}
				out.Structs[sn] = os
				perStructOrder[sn] = map[string][]int16{}
			}
			if os.Kind != st.Kind {
				return nil, fmt.Errorf("struct %s: kind %s in %s, %s in %v", sn, st.Kind, p, os.Kind, os.Profiles)
			}
			os.Profiles = append(os.Profiles, p)
			var order []int16
			for _, f := range st.Fields {
				order = append(order, f.ID)
				of := os.FieldByID(f.ID)
				if of == nil {
					if byName := os.FieldByName(f.Name); byName != nil {
						return nil, fmt.Errorf("struct %s: field %s has id %d in %s and %d in %v", sn, f.Name, f.ID, p,
							byName.ID, byName.Profiles)
					}
					of = &Field{ID: f.ID, Name: f.Name, Type: f.Type, Default: f.Default}
					insertInOrder(os, of, st.Fields)
				} else if of.Name != f.Name || !of.Type.Equal(f.Type) {
					return nil, fmt.Errorf("struct %s: field id %d is %s %s in %s but %s %s in %v", sn, f.ID,
						f.Type, f.Name, p, of.Type, of.Name, of.Profiles)
				} else if string(of.Default) != string(f.Default) {
					return nil, fmt.Errorf("struct %s: field %s has default %s in %s but %s in %v", sn, f.Name,
						orNone(f.Default), p, orNone(of.Default), of.Profiles)
				}
				of.Profiles = append(of.Profiles, p)
				switch f.Required {
				case ReqRequired:
					of.RequiredIn = append(of.RequiredIn, p)
				case ReqOptional:
					of.OptionalIn = append(of.OptionalIn, p)
				}
				switch {
				case of.Required == "":
					of.Required = f.Required
				case of.Required == ReqOptional || f.Required == ReqOptional:
					of.Required = ReqOptional
				case of.Required == ReqRequired && f.Required == ReqRequired:
				default:
					of.Required = ReqDefault
				}
			}
			perStructOrder[sn][p] = order
		}
	}
	for sn, os := range out.Structs {
		for _, f := range os.Fields {
			if f.Required == ReqRequired || len(f.RequiredIn) == 0 {
				f.RequiredIn = nil
			}
			if f.Required != ReqOptional || len(f.OptionalIn) == len(f.Profiles) {
				f.OptionalIn = nil
			}
		}
		// every profile's wire order must be the merged order restricted to its fields
		pos := map[int16]int{}
		for i, f := range os.Fields {
			pos[f.ID] = i
		}
		for p, order := range perStructOrder[sn] {
			for i := 1; i < len(order); i++ {
				if pos[order[i-1]] > pos[order[i]] {
					return nil, fmt.Errorf("struct %s: profile %s writes field %d before %d, another profile the other way",
						sn, p, order[i-1], order[i])
				}
			}
		}
	}

	// methods
	byName := map[string]*Method{}
	for _, p := range out.Profiles {
		for _, m := range byProfile[p].Methods {
			om := byName[m.Name]
			if om == nil {
				mc := *m
				mc.Profiles = nil
				om = &mc
				byName[m.Name] = om
				out.Methods = append(out.Methods, om)
			}
			if om.Oneway != m.Oneway || om.Args != m.Args || om.Result != m.Result || om.Service != m.Service {
				return nil, fmt.Errorf("method %s differs between %s and %v", m.Name, p, om.Profiles)
			}
			om.Profiles = append(om.Profiles, p)
		}
	}
	sort.Slice(out.Methods, func(i, j int) bool { return out.Methods[i].Name < out.Methods[j].Name })
	if len(out.Dialects) == 0 {
		out.Dialects = nil
	}
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("merged schema: %w", err)
	}
	return out, nil
}

func orNone(lit []byte) string {
	if lit == nil {
		return "none"
	}
	return string(lit)
}

func copyMap(m map[string]int16) map[string]int16 {
	c := map[string]int16{}
	for k, v := range m {
		c[k] = v
	}
	return c
}

// renumberNegativeIDs gives fields with a compiler-assigned negative id in one profile the positive id the same
// field has in the other profiles, and records the profile's dialect.
func renumberNegativeIDs(byProfile map[string]*Schema, dialects map[string]map[string]*Dialect) error {
	for _, p := range SortProfiles(keys(byProfile)) {
		s := byProfile[p]
		for _, sn := range sortedKeys(s.Structs) {
			for _, f := range s.Structs[sn].Fields {
				if f.ID >= 0 {
					continue
				}
				var ids []int16
				var where []string
				for _, q := range SortProfiles(keys(byProfile)) {
					if q == p || byProfile[q].Structs[sn] == nil {
						continue
					}
					g := byProfile[q].Structs[sn].FieldByName(f.Name)
					if g == nil || g.ID < 0 {
						continue
					}
					if !g.Type.Equal(f.Type) {
						return fmt.Errorf("struct %s: field %s is %s in %s but %s in %s", sn, f.Name, f.Type, p, g.Type, q)
					}
					if len(ids) > 0 && ids[0] != g.ID {
						return fmt.Errorf("struct %s: field %s has ids %d and %d in %s", sn, f.Name, ids[0], g.ID,
							strings.Join(append(where, q), ", "))
					}
					ids = append(ids, g.ID)
					where = append(where, q)
				}
				if len(ids) == 0 {
					continue // negative everywhere: the negative id is canonical
				}
				if other := s.Structs[sn].FieldByID(ids[0]); other != nil {
					return fmt.Errorf("struct %s: cannot renumber %s from %d to %d in %s: id taken by %s", sn, f.Name,
						f.ID, ids[0], p, other.Name)
				}
				if dialects[p] == nil {
					dialects[p] = map[string]*Dialect{}
				}
				d := dialects[p][sn]
				if d == nil {
					d = &Dialect{WireToCanonical: map[string]int16{}}
					dialects[p][sn] = d
				}
				d.WireToCanonical[strconv.Itoa(int(f.ID))] = ids[0]
				f.ID = ids[0]
			}
		}
	}
	return nil
}

func keys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
