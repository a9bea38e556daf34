package compat

import (
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Guard keeps writes lossless across versions: a field the backend runtime
// does not have, or an enum value it does not know, would be dropped or
// misread there without a word. For writes, such a call is refused with the
// field named instead. (Reads go through: what an older runtime ignores in
// a read request is a hint, not data.)
type Guard struct {
	r    *Runtime
	args map[string]*wire.Plan
}

// NewGuard compiles the checks of one runtime: only fields it lacks and enum
// fields whose enum has values it lacks are looked at; a runtime with
// neither in a method's arguments pays nothing for that method.
func NewGuard(r *Runtime) (*Guard, error) {
	comp := wire.NewFlagCompiler(func(_ string, f *thriftgen.Field) bool {
		return !f.Profiles.Has(r.Bit) || foreignEnum(f.Type, r.Bit)
	})
	g := &Guard{r: r, args: map[string]*wire.Plan{}}
	for _, m := range thriftgen.AllMethods() {
		if !m.Profiles.Has(r.Bit) {
			continue
		}
		p, err := comp.Plan(m.Args.Name)
		if err != nil {
			return nil, err
		}
		g.args[m.Name] = p
	}
	return g, nil
}

func foreignEnum(t *thriftgen.Type, bit thriftgen.ProfileSet) bool {
	for t.Kind == thriftgen.KindList || t.Kind == thriftgen.KindSet {
		t = t.Elem
	}
	if t.Kind != thriftgen.KindEnum {
		return false
	}
	e := thriftgen.LookupEnum(t.Name)
	if e == nil {
		return false
	}
	for _, v := range e.Values {
		if !v.Profiles.Has(bit) {
			return true
		}
	}
	return false
}

// Check returns a refusal when the arguments of method (as the backend will
// receive them, in canonical ids) set something the runtime cannot carry.
func (g *Guard) Check(method string, body []byte) error {
	if g == nil {
		return nil
	}
	plan := g.args[method]
	if plan.Empty() {
		return nil
	}
	return wire.Walk(body, plan, 0, func(s *wire.Span) error {
		if s.Role != wire.RoleField {
			return nil
		}
		st := thriftgen.LookupStruct(s.Path.Name)
		f := st.FieldByID(s.FieldID)
		if f == nil {
			return nil // not in the canonical schema: passed on as it is
		}
		if !f.Profiles.Has(g.r.Bit) {
			return refused("%s.%s (field %d) is set, but the backend runtime %s has no such field and would drop it; hms-proxy does not drop data silently",
				st.Name, f.Name, f.ID, g.r.Name)
		}
		b := wire.Buf{B: body[:s.End], Pos: s.Start + 3}
		v, err := b.Decode(body[s.Start], 0)
		if err != nil {
			return err
		}
		vals := []wire.Value{v}
		if v.Type == wire.TList || v.Type == wire.TSet {
			vals = v.Elems
		}
		t := f.Type
		for t.Kind == thriftgen.KindList || t.Kind == thriftgen.KindSet {
			t = t.Elem
		}
		e := thriftgen.LookupEnum(t.Name)
		for _, x := range vals {
			ev := e.ValueByNumber(int32(x.Int))
			if ev != nil && !ev.Profiles.Has(g.r.Bit) {
				return refused("%s.%s = %s (%d) is not a value the backend runtime %s knows; hms-proxy does not coerce it",
					st.Name, f.Name, ev.Name, x.Int, g.r.Name)
			}
		}
		return nil
	})
}
