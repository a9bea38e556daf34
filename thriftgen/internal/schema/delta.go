package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
)

// Delta is thriftgen/hdp-delta.json: profiles for which no jar can be had, each written as the changes to an
// already known profile (its base), mostly by naming methods, structs, fields and enum values of a donor profile
// that the target has too (same ids, names and types). Profiles are applied in file order, so a base may be an
// earlier delta profile.
type Delta struct {
	About    []string        `json:"about"`
	Profiles []*DeltaProfile `json:"profiles"`
}

// DeltaProfile describes one profile relative to Base.
type DeltaProfile struct {
	Profile string `json:"profile"`
	Base    string `json:"base"`
	Donor   string `json:"donor"`
	// Methods are copied from Donor. Their args/result structs are copied whole unless Structs lists them.
	Methods []string `json:"methods,omitempty"`
	// Structs changes (or, if Base lacks them, creates with Donor's kind) structs.
	Structs map[string]*StructDelta `json:"structs,omitempty"`
	// Enums adds enum values (by name) from Donor; the enum is created if Base lacks it.
	Enums map[string]*EnumDelta `json:"enums,omitempty"`
	// Dialects are wire id maps of this profile (see Dialect), in canonical (Donor) numbering.
	Dialects map[string]*Dialect `json:"dialects,omitempty"`
	Notes    []string            `json:"notes,omitempty"`
}

// StructDelta lists field changes of one struct.
type StructDelta struct {
	Add      []int16           `json:"add,omitempty"`      // field ids copied from Donor
	Remove   []int16           `json:"remove,omitempty"`   // field ids of Base dropped
	Define   []*Field          `json:"define,omitempty"`   // fields no donor has
	Required map[string]string `json:"required,omitempty"` // field id -> requiredness in this profile
}

// EnumDelta lists enum values copied from Donor.
type EnumDelta struct {
	Add []string `json:"add"`
}

// LoadDelta reads and decodes a delta file; unknown keys are errors.
func LoadDelta(path string) (*Delta, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d Delta
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &d, nil
}

// Apply derives the delta's profiles. known holds single-profile schemas by profile name (the extracted ones);
// the derived schemas are added to it and also returned in order, with the dialects they declare.
func (d *Delta) Apply(known map[string]*Schema) ([]*Schema, map[string]map[string]*Dialect, error) {
	var out []*Schema
	dialects := map[string]map[string]*Dialect{}
	for _, dp := range d.Profiles {
		s, err := dp.apply(known)
		if err != nil {
			return nil, nil, fmt.Errorf("delta profile %s: %w", dp.Profile, err)
		}
		known[dp.Profile] = s
		out = append(out, s)
		if len(dp.Dialects) > 0 {
			dialects[dp.Profile] = dp.Dialects
		}
	}
	return out, dialects, nil
}

func (dp *DeltaProfile) apply(known map[string]*Schema) (*Schema, error) {
	if ProfileIndex(dp.Profile) < 0 {
		return nil, fmt.Errorf("unknown profile name %q", dp.Profile)
	}
	if known[dp.Profile] != nil {
		return nil, fmt.Errorf("profile %s is already defined", dp.Profile)
	}
	base, donor := known[dp.Base], known[dp.Donor]
	if base == nil {
		return nil, fmt.Errorf("base profile %q is not defined before it", dp.Base)
	}
	if donor == nil {
		return nil, fmt.Errorf("donor profile %q is not defined before it", dp.Donor)
	}
	s := base.Clone()
	s.Source = nil
	s.Dialects = nil

	for _, name := range dp.Methods {
		if s.Method(name) != nil {
			return nil, fmt.Errorf("method %s: already in base %s", name, dp.Base)
		}
		m := donor.Method(name)
		if m == nil {
			return nil, fmt.Errorf("method %s: not in donor %s", name, dp.Donor)
		}
		mc := *m
		s.Methods = append(s.Methods, &mc)
		for _, sn := range []string{m.Args, m.Result} {
			if sn == "" {
				continue
			}
			if s.Structs[sn] != nil {
				return nil, fmt.Errorf("method %s: struct %s already in base", name, sn)
			}
			if _, listed := dp.Structs[sn]; listed {
				continue // built below from the listed fields
			}
			s.Structs[sn] = cloneStruct(donor.Structs[sn])
		}
	}
	sort.Slice(s.Methods, func(i, j int) bool { return s.Methods[i].Name < s.Methods[j].Name })

	for _, sn := range sortedKeys(dp.Structs) {
		sd := dp.Structs[sn]
		ds := donor.Structs[sn]
		st := s.Structs[sn]
		if st == nil {
			if ds == nil {
				return nil, fmt.Errorf("struct %s: in neither base %s nor donor %s", sn, dp.Base, dp.Donor)
			}
			st = &Struct{Kind: ds.Kind, Profiles: s.Profiles}
			s.Structs[sn] = st
		}
		if s.Structs[sn] != nil && base.Structs[sn] != nil && len(sd.Add)+len(sd.Remove)+len(sd.Define)+len(sd.Required) == 0 {
			return nil, fmt.Errorf("struct %s: empty change of a base struct", sn)
		}
		for _, id := range sd.Remove {
			i := fieldIndex(st, id)
			if i < 0 {
				return nil, fmt.Errorf("struct %s: remove %d: no such field in base", sn, id)
			}
			st.Fields = append(st.Fields[:i], st.Fields[i+1:]...)
		}
		for _, id := range sd.Add {
			if st.FieldByID(id) != nil {
				return nil, fmt.Errorf("struct %s: add %d: field already present", sn, id)
			}
			if ds == nil || ds.FieldByID(id) == nil {
				return nil, fmt.Errorf("struct %s: add %d: donor %s has no such field", sn, id, dp.Donor)
			}
			f := *ds.FieldByID(id)
			insertInOrder(st, &f, ds.Fields)
		}
		for _, f := range sd.Define {
			if st.FieldByID(f.ID) != nil || st.FieldByName(f.Name) != nil {
				return nil, fmt.Errorf("struct %s: define %d %s: field id or name already present", sn, f.ID, f.Name)
			}
			if ds != nil && (ds.FieldByID(f.ID) != nil || ds.FieldByName(f.Name) != nil) {
				return nil, fmt.Errorf("struct %s: define %d %s: donor has this id or name, use add", sn, f.ID, f.Name)
			}
			fc := *f
			st.Fields = append(st.Fields, &fc)
		}
		for _, k := range sortedKeys(sd.Required) {
			id, err := strconv.ParseInt(k, 10, 16)
			if err != nil {
				return nil, fmt.Errorf("struct %s: required: field id %q is not an int16", sn, k)
			}
			f := st.FieldByID(int16(id))
			if f == nil {
				return nil, fmt.Errorf("struct %s: required: no field %d", sn, id)
			}
			r := sd.Required[k]
			if r != ReqDefault && r != ReqRequired && r != ReqOptional {
				return nil, fmt.Errorf("struct %s: required: field %d: unknown requiredness %q", sn, id, r)
			}
			if f.Required == r {
				return nil, fmt.Errorf("struct %s: required: field %d is already %s", sn, id, r)
			}
			f.Required = r
		}
	}

	for _, en := range sortedKeys(dp.Enums) {
		ed := dp.Enums[en]
		de := donor.Enums[en]
		if de == nil {
			return nil, fmt.Errorf("enum %s: not in donor %s", en, dp.Donor)
		}
		e := s.Enums[en]
		if e == nil {
			e = &Enum{}
			s.Enums[en] = e
		}
		for _, vn := range ed.Add {
			var dv *EnumValue
			for _, v := range de.Values {
				if v.Name == vn {
					dv = v
				}
			}
			if dv == nil {
				return nil, fmt.Errorf("enum %s: donor has no value %s", en, vn)
			}
			for _, v := range e.Values {
				if v.Name == vn {
					return nil, fmt.Errorf("enum %s: value %s already present", en, vn)
				}
			}
			vc := *dv
			e.Values = append(e.Values, &vc)
		}
		sort.Slice(e.Values, func(i, j int) bool { return e.Values[i].Value < e.Values[j].Value })
	}

	s.Relabel(dp.Profile)
	if err := s.Validate(); err != nil {
		return nil, err
	}
	for sn := range dp.Dialects {
		if s.Structs[sn] == nil {
			return nil, fmt.Errorf("dialect for unknown struct %s", sn)
		}
	}
	return s, nil
}

func cloneStruct(st *Struct) *Struct {
	c := &Struct{Kind: st.Kind, Profiles: st.Profiles}
	for _, f := range st.Fields {
		fc := *f
		c.Fields = append(c.Fields, &fc)
	}
	return c
}

func fieldIndex(st *Struct, id int16) int {
	for i, f := range st.Fields {
		if f.ID == id {
			return i
		}
	}
	return -1
}

// insertInOrder inserts f into st after the nearest field that precedes f in order and is already in st
// (at the front if none), so st keeps the relative order of order.
func insertInOrder(st *Struct, f *Field, order []*Field) {
	pos := 0
	for _, o := range order {
		if o.ID == f.ID {
			break
		}
		if i := fieldIndex(st, o.ID); i >= 0 {
			pos = i + 1
		}
	}
	st.Fields = append(st.Fields, nil)
	copy(st.Fields[pos+1:], st.Fields[pos:])
	st.Fields[pos] = f
}
