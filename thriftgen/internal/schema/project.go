package schema

import (
	"fmt"
	"sort"
	"strconv"
)

// Project returns profile p's view of the canonical schema s: only what p has, p's requiredness, and — when wire is
// true — p's wire field ids (its dialects applied; fields without a wire id in p dropped).
func (s *Schema) Project(p string, wire bool) (*Schema, error) {
	if !contains(s.Profiles, p) {
		return nil, fmt.Errorf("schema has no profile %s", p)
	}
	one := []string{p}
	out := &Schema{Profiles: one, Source: s.Sources[p], Enums: map[string]*Enum{}, Structs: map[string]*Struct{}}
	for en, e := range s.Enums {
		if !contains(e.Profiles, p) {
			continue
		}
		oe := &Enum{Profiles: one}
		for _, v := range e.Values {
			if contains(v.Profiles, p) {
				oe.Values = append(oe.Values, &EnumValue{Name: v.Name, Value: v.Value, Profiles: one})
			}
		}
		out.Enums[en] = oe
	}
	for sn, st := range s.Structs {
		if !contains(st.Profiles, p) {
			continue
		}
		var toWire map[int16]int16
		var domain map[int16]bool
		if d := s.Dialects[p][sn]; wire && d != nil {
			toWire, domain = map[int16]int16{}, map[int16]bool{}
			for k, v := range d.WireToCanonical {
				w, err := strconv.ParseInt(k, 10, 16)
				if err != nil {
					return nil, err
				}
				toWire[v] = int16(w)
				domain[int16(w)], domain[v] = true, true
			}
		}
		os := &Struct{Kind: st.Kind, Profiles: one}
		for _, f := range st.Fields {
			if !contains(f.Profiles, p) {
				continue
			}
			id := f.ID
			if domain != nil && domain[id] {
				w, ok := toWire[id]
				if !ok {
					continue
				}
				id = w
			}
			req := f.Required
			switch {
			case contains(f.RequiredIn, p):
				req = ReqRequired
			case req == ReqOptional && len(f.OptionalIn) > 0 && !contains(f.OptionalIn, p):
				req = ReqDefault
			}
			os.Fields = append(os.Fields, &Field{ID: id, Name: f.Name, Required: req, Type: f.Type, Default: f.Default, Profiles: one})
		}
		out.Structs[sn] = os
	}
	for _, m := range s.Methods {
		if contains(m.Profiles, p) {
			mc := *m
			mc.Profiles = one
			out.Methods = append(out.Methods, &mc)
		}
	}
	return out, out.Validate()
}

// Diff lists the differences between two single-profile schemas a and b (profile labels ignored), one line each,
// sorted. Field order is compared only when order is true.
func Diff(a, b *Schema, order bool) []string {
	var d []string
	add := func(format string, args ...any) { d = append(d, fmt.Sprintf(format, args...)) }
	for _, en := range unionKeys(a.Enums, b.Enums) {
		ea, eb := a.Enums[en], b.Enums[en]
		switch {
		case ea == nil:
			add("enum %s: only in b", en)
			continue
		case eb == nil:
			add("enum %s: only in a", en)
			continue
		}
		va, vb := map[string]int32{}, map[string]int32{}
		for _, v := range ea.Values {
			va[v.Name] = v.Value
		}
		for _, v := range eb.Values {
			vb[v.Name] = v.Value
		}
		for _, vn := range unionKeys(va, vb) {
			x, okA := va[vn]
			y, okB := vb[vn]
			switch {
			case !okA:
				add("enum %s: value %s=%d only in b", en, vn, y)
			case !okB:
				add("enum %s: value %s=%d only in a", en, vn, x)
			case x != y:
				add("enum %s: value %s is %d in a, %d in b", en, vn, x, y)
			}
		}
	}
	for _, sn := range unionKeys(a.Structs, b.Structs) {
		sa, sb := a.Structs[sn], b.Structs[sn]
		switch {
		case sa == nil:
			add("struct %s: only in b", sn)
			continue
		case sb == nil:
			add("struct %s: only in a", sn)
			continue
		}
		if sa.Kind != sb.Kind {
			add("struct %s: kind %s in a, %s in b", sn, sa.Kind, sb.Kind)
		}
		before := len(d)
		ids := map[int16]bool{}
		for _, f := range sa.Fields {
			ids[f.ID] = true
		}
		for _, f := range sb.Fields {
			ids[f.ID] = true
		}
		var sorted []int
		for id := range ids {
			sorted = append(sorted, int(id))
		}
		sort.Ints(sorted)
		for _, i := range sorted {
			id := int16(i)
			fa, fb := sa.FieldByID(id), sb.FieldByID(id)
			switch {
			case fa == nil:
				add("struct %s: field %d:%s %s %s only in b", sn, id, fb.Required, fb.Type, fb.Name)
			case fb == nil:
				add("struct %s: field %d:%s %s %s only in a", sn, id, fa.Required, fa.Type, fa.Name)
			default:
				if fa.Name != fb.Name {
					add("struct %s: field %d named %s in a, %s in b", sn, id, fa.Name, fb.Name)
				}
				if !fa.Type.Equal(fb.Type) {
					add("struct %s: field %d %s is %s in a, %s in b", sn, id, fa.Name, fa.Type, fb.Type)
				}
				if fa.Required != fb.Required {
					add("struct %s: field %d %s is %s in a, %s in b", sn, id, fa.Name, fa.Required, fb.Required)
				}
				if string(fa.Default) != string(fb.Default) {
					add("struct %s: field %d %s has default %s in a, %s in b", sn, id, fa.Name, orNone(fa.Default), orNone(fb.Default))
				}
			}
		}
		if order && len(d) == before {
			var oa, ob []int16
			for _, f := range sa.Fields {
				oa = append(oa, f.ID)
			}
			for _, f := range sb.Fields {
				ob = append(ob, f.ID)
			}
			if fmt.Sprint(oa) != fmt.Sprint(ob) {
				add("struct %s: field order %v in a, %v in b", sn, oa, ob)
			}
		}
	}
	ma, mb := map[string]*Method{}, map[string]*Method{}
	for _, m := range a.Methods {
		ma[m.Name] = m
	}
	for _, m := range b.Methods {
		mb[m.Name] = m
	}
	for _, mn := range unionKeys(ma, mb) {
		x, y := ma[mn], mb[mn]
		switch {
		case x == nil:
			add("method %s: only in b", mn)
		case y == nil:
			add("method %s: only in a", mn)
		case x.Oneway != y.Oneway || x.Service != y.Service:
			add("method %s: oneway/service %v/%s in a, %v/%s in b", mn, x.Oneway, x.Service, y.Oneway, y.Service)
		}
	}
	sort.Strings(d)
	return d
}

func unionKeys[V any](a, b map[string]V) []string {
	m := map[string]bool{}
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
