package codegen

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hms-proxy/hms-proxy/thriftgen/internal/schema"
)

var kindConst = map[string]string{"bool": "KindBool", "byte": "KindByte", "i16": "KindI16", "i32": "KindI32",
	"i64": "KindI64", "double": "KindDouble", "string": "KindString", "binary": "KindBinary", "list": "KindList",
	"set": "KindSet", "map": "KindMap", "struct": "KindStruct", "enum": "KindEnum"}

var reqConst = map[string]string{schema.ReqDefault: "RequirednessDefault", schema.ReqRequired: "RequirednessRequired",
	schema.ReqOptional: "RequirednessOptional"}

var structKindConst = map[string]string{schema.KindStruct: "StructKindStruct", schema.KindUnion: "StructKindUnion",
	schema.KindException: "StructKindException"}

func (g *gen) schemaFile() (string, error) {
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("package thriftgen\n\n")

	// every type used, by mangled name
	types := map[string]*schema.Type{}
	var note func(t *schema.Type) error
	note = func(t *schema.Type) error {
		m := g.mangle(t)
		if prev, ok := types[m]; ok {
			if !prev.Equal(t) {
				return fmt.Errorf("types %s and %s both mangle to %s", prev, t, m)
			}
			return nil
		}
		types[m] = t
		for _, sub := range []*schema.Type{t.Elem, t.Key, t.Value} {
			if sub != nil {
				if err := note(sub); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, n := range sortedKeys(g.s.Structs) {
		for _, f := range g.s.Structs[n].Fields {
			if err := note(f.Type); err != nil {
				return "", err
			}
		}
	}
	b.WriteString("// the value types of the schema's fields\nvar (\n")
	for _, m := range sortedKeys(types) {
		t := types[m]
		fmt.Fprintf(&b, "\tt%s = &Type{Kind: %s", m, kindConst[t.Kind])
		if t.Name != "" {
			fmt.Fprintf(&b, ", Name: %q", t.Name)
		}
		if t.Elem != nil {
			fmt.Fprintf(&b, ", Elem: t%s", g.mangle(t.Elem))
		}
		if t.Key != nil {
			fmt.Fprintf(&b, ", Key: t%s, Value: t%s", g.mangle(t.Key), g.mangle(t.Value))
		}
		b.WriteString("}\n")
	}
	b.WriteString(")\n\n")

	names := sortedKeys(g.s.Structs)
	index := map[string]int{}
	for i, n := range names {
		index[n] = i
	}
	fmt.Fprintf(&b, "// structTable holds every struct, sorted by name (%d).\nvar structTable = [...]Struct{\n", len(names))
	for _, n := range names {
		st := g.s.Structs[n]
		fmt.Fprintf(&b, "\t{Name: %q, GoName: %q, Kind: %s, Profiles: %s, Fields: []*Field{", n, g.structGo[n],
			structKindConst[st.Kind], profilesExpr(st.Profiles))
		if len(st.Fields) > 0 {
			b.WriteString("\n")
		}
		for _, fp := range g.plans[n].fields {
			f := fp.f
			fmt.Fprintf(&b, "\t\t{ID: %d, Name: %q, GoName: %q, Type: t%s, Required: %s, Profiles: %s", f.ID, f.Name,
				fp.goName, g.mangle(f.Type), reqConst[f.Required], profilesExpr(f.Profiles))
			if len(f.RequiredIn) > 0 {
				fmt.Fprintf(&b, ", RequiredIn: %s", profilesExpr(f.RequiredIn))
			}
			if len(f.OptionalIn) > 0 {
				fmt.Fprintf(&b, ", OptionalIn: %s", profilesExpr(f.OptionalIn))
			}
			if f.Default != nil {
				d, err := defaultExpr(f)
				if err != nil {
					return "", fmt.Errorf("%s.%s: %v", n, f.Name, err)
				}
				fmt.Fprintf(&b, ", Default: %s", d)
			}
			b.WriteString("},\n")
		}
		b.WriteString("\t}},\n")
	}
	b.WriteString("}\n\n")
	b.WriteString("var structIndex = map[string]*Struct{\n")
	for i, n := range names {
		fmt.Fprintf(&b, "\t%q: &structTable[%d],\n", n, i)
	}
	b.WriteString("}\n\n")

	enames := sortedKeys(g.s.Enums)
	fmt.Fprintf(&b, "// enumTable holds every enum, sorted by name (%d).\nvar enumTable = [...]Enum{\n", len(enames))
	for _, n := range enames {
		e := g.s.Enums[n]
		fmt.Fprintf(&b, "\t{Name: %q, GoName: %q, Profiles: %s, Values: []*EnumValue{\n", n, g.enumGo[n],
			profilesExpr(e.Profiles))
		for _, v := range e.Values {
			fmt.Fprintf(&b, "\t\t{Name: %q, Value: %d, Profiles: %s},\n", v.Name, v.Value, profilesExpr(v.Profiles))
		}
		b.WriteString("\t}},\n")
	}
	b.WriteString("}\n\nvar enumIndex = map[string]*Enum{\n")
	for i, n := range enames {
		fmt.Fprintf(&b, "\t%q: &enumTable[%d],\n", n, i)
	}
	b.WriteString("}\n\n")

	fmt.Fprintf(&b, "// methodTable holds every RPC, sorted by name (%d).\nvar methodTable = [...]Method{\n", len(g.s.Methods))
	for _, m := range g.s.Methods {
		fmt.Fprintf(&b, "\t{Name: %q, GoName: %q, Oneway: %v, Args: &structTable[%d], ", m.Name, g.methodGo[m.Name],
			m.Oneway, index[m.Args])
		if m.Result != "" {
			fmt.Fprintf(&b, "Result: &structTable[%d], ", index[m.Result])
		}
		fmt.Fprintf(&b, "Profiles: %s, Service: %q},\n", profilesExpr(m.Profiles), m.Service)
	}
	b.WriteString("}\n\nvar methodIndex = map[string]*Method{\n")
	for i, m := range g.s.Methods {
		fmt.Fprintf(&b, "\t%q: &methodTable[%d],\n", m.Name, i)
	}
	b.WriteString("}\n\n")

	b.WriteString("// dialectTable holds every dialect, by profile and struct.\nvar dialectTable = [...]Dialect{\n")
	profiles := schema.SortProfiles(sortedKeys(g.s.Dialects))
	for _, p := range profiles {
		for _, sn := range sortedKeys(g.s.Dialects[p]) {
			pairs, err := g.s.Dialects[p][sn].Pairs()
			if err != nil {
				return "", err
			}
			var ps []string
			for _, kv := range pairs {
				ps = append(ps, "{Wire: "+strconv.Itoa(int(kv[0]))+", Canonical: "+strconv.Itoa(int(kv[1]))+"}")
			}
			fmt.Fprintf(&b, "\t{Profile: %s, Struct: %q, Pairs: []IDPair{%s}},\n", profilesExpr([]string{p}), sn,
				strings.Join(ps, ", "))
		}
	}
	b.WriteString("}\n")
	return b.String(), nil
}

// sortedTypes returns container types by mangled name.
func (g *gen) sortedContainers() []string {
	ks := make([]string, 0, len(g.containers))
	for k := range g.containers {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// defaultExpr is the Go expression of a field's IDL default: &Default{Int: n} for bools (0/1), integers and enums,
// &Default{Str: s} for strings.
func defaultExpr(f *schema.Field) (string, error) {
	var v any
	if err := json.Unmarshal(f.Default, &v); err != nil {
		return "", err
	}
	switch x := v.(type) {
	case bool:
		if x {
			return "&Default{Int: 1}", nil
		}
		return "&Default{Int: 0}", nil
	case string:
		return fmt.Sprintf("&Default{Str: %q}", x), nil
	case float64:
		n, err := strconv.ParseInt(string(f.Default), 10, 64)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("&Default{Int: %d}", n), nil
	}
	return "", fmt.Errorf("default %s has no Go form", f.Default)
}
