package schema

import (
	"strings"
	"testing"
)

func one(p string, fields ...*Field) *Schema {
	for _, f := range fields {
		f.Profiles = []string{p}
	}
	return &Schema{
		Profiles: []string{p},
		Source:   map[string]JarRef{"hive": {Jar: "x.jar", Sha256: "00"}},
		Enums:    map[string]*Enum{},
		Structs: map[string]*Struct{
			"S": {Kind: KindStruct, Profiles: []string{p}, Fields: fields},
		},
	}
}

func str(id int16, name, req string) *Field {
	return &Field{ID: id, Name: name, Required: req, Type: &Type{Kind: "string"}}
}

func TestMergeRequiredness(t *testing.T) {
	m, err := Merge([]*Schema{
		one(Apache313, str(1, "a", ReqRequired), str(2, "b", ReqDefault), str(3, "c", ReqRequired)),
		one(Apache410, str(1, "a", ReqOptional), str(2, "b", ReqOptional), str(3, "c", ReqRequired)),
		one(HDP78, str(2, "b", ReqDefault)),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := m.Structs["S"]
	a, b, c := s.FieldByID(1), s.FieldByID(2), s.FieldByID(3)
	if a.Required != ReqOptional || strings.Join(a.RequiredIn, ",") != Apache313 || strings.Join(a.OptionalIn, ",") != Apache410 {
		t.Errorf("a: %+v", a)
	}
	if b.Required != ReqOptional || len(b.RequiredIn) != 0 || strings.Join(b.OptionalIn, ",") != Apache410 {
		t.Errorf("b: %+v", b)
	}
	if c.Required != ReqRequired || c.RequiredIn != nil || c.OptionalIn != nil {
		t.Errorf("c: %+v", c)
	}
	// projection gives each profile its own requiredness back
	for p, want := range map[string]string{Apache313: ReqRequired, Apache410: ReqOptional} {
		v, err := m.Project(p, true)
		if err != nil {
			t.Fatal(err)
		}
		if got := v.Structs["S"].FieldByID(1).Required; got != want {
			t.Errorf("%s: a is %s, want %s", p, got, want)
		}
	}
}

func TestMergeRejectsConflicts(t *testing.T) {
	for _, c := range []struct {
		name  string
		parts []*Schema
		want  string
	}{
		{"type", []*Schema{one(Apache313, str(1, "a", ReqDefault)),
			one(Apache410, &Field{ID: 1, Name: "a", Required: ReqDefault, Type: &Type{Kind: "i32"}})}, "field id 1"},
		{"name", []*Schema{one(Apache313, str(1, "a", ReqDefault)), one(Apache410, str(1, "b", ReqDefault))}, "field id 1"},
		{"moved id", []*Schema{one(Apache313, str(1, "a", ReqDefault)), one(Apache410, str(2, "a", ReqDefault))}, "has id 2"},
		{"order", []*Schema{one(Apache313, str(1, "a", ReqDefault), str(2, "b", ReqDefault)),
			one(Apache410, str(2, "b", ReqDefault), str(1, "a", ReqDefault))}, "writes field"},
	} {
		if _, err := Merge(c.parts, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

func TestMergeRenumbersCompilerAssignedIDs(t *testing.T) {
	m, err := Merge([]*Schema{
		one(Apache313, str(1, "a", ReqDefault), str(-1, "b", ReqDefault)),
		one(Apache410, str(1, "a", ReqDefault), str(2, "b", ReqDefault)),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f := m.Structs["S"].FieldByName("b"); f.ID != 2 || len(f.Profiles) != 2 {
		t.Fatalf("b = %+v", f)
	}
	if d := m.Dialects[Apache313]["S"]; d == nil || d.WireToCanonical["-1"] != 2 {
		t.Fatalf("dialects = %+v", m.Dialects)
	}
}

func TestDeltaErrors(t *testing.T) {
	base := one(Apache313, str(1, "a", ReqDefault))
	donor := one(Apache410, str(1, "a", ReqDefault), str(2, "b", ReqOptional))
	for _, c := range []struct {
		name string
		dp   *DeltaProfile
		want string
	}{
		{"unknown donor field", &DeltaProfile{Profile: HDP78, Base: Apache313, Donor: Apache410,
			Structs: map[string]*StructDelta{"S": {Add: []int16{7}}}}, "donor APACHE_4_1_0 has no such field"},
		{"duplicate add", &DeltaProfile{Profile: HDP78, Base: Apache313, Donor: Apache410,
			Structs: map[string]*StructDelta{"S": {Add: []int16{1}}}}, "already present"},
		{"unknown method", &DeltaProfile{Profile: HDP78, Base: Apache313, Donor: Apache410,
			Methods: []string{"nope"}}, "not in donor"},
		{"define shadows donor", &DeltaProfile{Profile: HDP78, Base: Apache313, Donor: Apache410,
			Structs: map[string]*StructDelta{"S": {Define: []*Field{str(2, "b", ReqOptional)}}}}, "use add"},
		{"no-op requiredness", &DeltaProfile{Profile: HDP78, Base: Apache313, Donor: Apache410,
			Structs: map[string]*StructDelta{"S": {Required: map[string]string{"1": ReqDefault}}}}, "already default"},
		{"bad base", &DeltaProfile{Profile: HDP78, Base: HDP315, Donor: Apache410}, "not defined before"},
	} {
		d := &Delta{Profiles: []*DeltaProfile{c.dp}}
		_, _, err := d.Apply(map[string]*Schema{Apache313: base, Apache410: donor})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
	d := &Delta{Profiles: []*DeltaProfile{{Profile: HDP78, Base: Apache313, Donor: Apache410,
		Structs: map[string]*StructDelta{"S": {Add: []int16{2}}}}}}
	out, _, err := d.Apply(map[string]*Schema{Apache313: base, Apache410: donor})
	if err != nil {
		t.Fatal(err)
	}
	if f := out[0].Structs["S"].FieldByID(2); f == nil || f.Name != "b" || f.Profiles[0] != HDP78 {
		t.Fatalf("added field = %+v", f)
	}
}

func TestParseRejectsUnknownKeysAndDanglingTypes(t *testing.T) {
	if _, err := Parse([]byte(`{"profiles":["APACHE_3_1_3"],"bogus":1}`), "x"); err == nil {
		t.Error("unknown key accepted")
	}
	bad := `{"profiles":["APACHE_3_1_3"],"enums":{},"methods":[],"structs":{"S":{"kind":"struct","profiles":["APACHE_3_1_3"],` +
		`"fields":[{"id":1,"name":"a","required":"default","type":{"kind":"struct","name":"Nope"},"profiles":["APACHE_3_1_3"]}]}}}`
	if _, err := Parse([]byte(bad), "x"); err == nil || !strings.Contains(err.Error(), "unknown struct") {
		t.Errorf("err = %v", err)
	}
}
