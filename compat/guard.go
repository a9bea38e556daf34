package compat

import (
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Guard keeps writes lossless across versions. A field the backend runtime
// does not have would be dropped by it without a word, and an enum value it
// does not know misread. For writes, the guard therefore looks at every such
// field in the arguments as the backend will receive them:
//   - a field the runtime lacks whose value the runtime already implies (its
//     IDL default, or a documented "unset" value: see implied.go) is left
//     out of the call, by a splice that deletes its bytes and keeps every
//     other byte as it is, and reported as a Drop;
//   - any other value of such a field refuses the call, naming field and
//     value;
//   - an enum value the runtime does not know refuses the call (the guard
//     never coerces one).
//
// Reads are trimmed, not checked (Trim): implied fields are dropped as for
// writes, anything else an older runtime ignores in a read request is a
// hint, not data, and goes through.
type Guard struct {
	r    *Runtime
	args map[string]*wire.Plan
}

// Drop is a field the guard left out of a call because its value is the one
// the backend runtime already implies.
type Drop struct {
	Struct, Field string
	Value         string // as sent by the client, e.g. false, -1, "hive", DEFAULT(0)
	Why           string // why the runtime implies it (or, translated, how it keeps it)
	// Translated: the field was rewritten into the form the runtime keeps
	// (translate.go), not left out.
	Translated bool
}

// API is the to_api label under which the router counts the drop in
// hms_proxy_backend_fallback_total.
func (d Drop) API() string {
	if d.Translated {
		return "translated:" + d.Struct + "." + d.Field
	}
	return "dropped_default:" + d.Struct + "." + d.Field
}

// Verdict is what the guard decided for one call: the splices that remove
// the dropped fields (sorted, non-overlapping, relative to the checked body)
// and the distinct fields dropped.
type Verdict struct {
	Patches []wire.Patch
	Dropped []Drop
}

func (v *Verdict) drop(d Drop) {
	for _, x := range v.Dropped {
		if x.Struct == d.Struct && x.Field == d.Field {
			return
		}
	}
	v.Dropped = append(v.Dropped, d)
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

// Check decides the arguments of a write (as the backend will receive them,
// in canonical ids): the verdict's patches remove what is dropped; an error
// (a *RefusedError) refuses the call.
func (g *Guard) Check(method string, body []byte) (Verdict, error) {
	return g.check(method, body, true)
}

// Trim is Check for a read: fields at a value the runtime implies are
// dropped all the same (the backend never sees a field it does not know),
// any other value goes through as the hint it is, and nothing is refused.
func (g *Guard) Trim(method string, body []byte) (Verdict, error) {
	return g.check(method, body, false)
}

func (g *Guard) check(method string, body []byte, write bool) (Verdict, error) {
	if g == nil {
		return Verdict{}, nil
	}
	plan := g.args[method]
	if plan.Empty() {
		return Verdict{}, nil // no field to look at: nothing escapes to the heap for the common call
	}
	var out Verdict
	translated := false // a field with a translation: the call is rewritten below
	droppedTo := -1     // end of the last dropped span: fields inside it go with it
	err := wire.Walk(body, plan, 0, func(s *wire.Span) error {
		if s.Role != wire.RoleField || s.Start < droppedTo {
			return nil
		}
		st := thriftgen.LookupStruct(s.Path.Name)
		f := st.FieldByID(s.FieldID)
		if f == nil {
			return nil // not in the canonical schema: passed on as it is
		}
		b := wire.Buf{B: body[:s.End], Pos: s.Start + 3}
		v, err := b.Decode(body[s.Start], 0)
		if err != nil {
			return err
		}
		if !f.Profiles.Has(g.r.Bit) {
			ok, why := impliedBy(st, f, &v)
			if !ok && !write {
				return nil // a hint: passed on as it is
			}
			if !ok && translationOf(st, f) != nil {
				translated, droppedTo = true, s.End
				return nil
			}
			if !ok {
				return refused("%s.%s = %s is set, but the backend runtime %s has no such field and would drop it; %s; hms-proxy does not drop data silently",
					st.Name, f.Name, renderValue(f.Type, &v), g.r.Name, impliedValues(st, f))
			}
			out.Patches = append(out.Patches, wire.Patch{Start: s.Start, End: s.End})
			out.drop(Drop{Struct: st.Name, Field: f.Name, Value: renderValue(f.Type, &v), Why: why})
			droppedTo = s.End
			return nil
		}
		if !write {
			return nil
		}
		return g.knownEnumValues(st, f, &v)
	})
	if err != nil {
		return Verdict{}, err
	}
	if translated {
		return g.translated(method, body)
	}
	return out, nil
}

// translated rewrites a write whose arguments hold a field with a
// translation: the arguments are decoded, translated, encoded again and
// checked once more (the translated fields are gone, every other field
// meets the same rule); the verdict is one patch that replaces the body.
func (g *Guard) translated(method string, body []byte) (Verdict, error) {
	args, err := wire.DecodeStruct(body)
	if err != nil {
		return Verdict{}, err
	}
	drops, err := translate(method, &args, g.r)
	if err != nil {
		return Verdict{}, err
	}
	nb := args.Encode()
	v, err := g.check(method, nb, true)
	if err != nil {
		return Verdict{}, err
	}
	out := Verdict{Patches: []wire.Patch{{Start: 0, End: len(body), Data: wire.Apply(nil, nb, v.Patches)}}}
	for _, d := range append(drops, v.Dropped...) {
		out.drop(d)
	}
	return out, nil
}

// knownEnumValues refuses an enum value (or list of them) the runtime does
// not know.
func (g *Guard) knownEnumValues(st *thriftgen.Struct, f *thriftgen.Field, v *wire.Value) error {
	vals := []wire.Value{*v}
	if v.Type == wire.TList || v.Type == wire.TSet {
		vals = v.Elems
	}
	t := f.Type
	for t.Kind == thriftgen.KindList || t.Kind == thriftgen.KindSet {
		t = t.Elem
	}
	e := thriftgen.LookupEnum(t.Name)
	if e == nil {
		return nil
	}
	for _, x := range vals {
		ev := e.ValueByNumber(int32(x.Int))
		if ev != nil && !ev.Profiles.Has(g.r.Bit) {
			return refused("%s.%s = %s (%d) is not a value the backend runtime %s knows; hms-proxy does not coerce it",
				st.Name, f.Name, ev.Name, x.Int, g.r.Name)
		}
	}
	return nil
}

// Leftover applies the same rule to the fields of a request struct that an
// adapter does not carry to the backend (a *_req wrapper served by a
// positional call): those the runtime lacks must hold a value it implies,
// or the call is refused. carried reports the fields the adapter read or
// mapped. Fields the runtime has are its own API's business and not looked
// at. A nil guard (a read) checks nothing.
func (g *Guard) Leftover(method string, req *wire.Value, structName string, carried func(id int16) bool) ([]Drop, error) {
	if g == nil || req == nil {
		return nil, nil
	}
	st := thriftgen.LookupStruct(structName)
	if st == nil {
		return nil, nil
	}
	var out Verdict
	for i := range req.Fields {
		fv := &req.Fields[i]
		f := st.FieldByID(fv.ID)
		if f == nil || carried(fv.ID) || f.Profiles.Has(g.r.Bit) {
			continue
		}
		ok, why := impliedBy(st, f, &fv.V)
		if !ok {
			return nil, refused("%s.%s = %s is set, but %s reaches the backend runtime %s as calls that have no place for it; %s; hms-proxy does not drop data silently",
				st.Name, f.Name, renderValue(f.Type, &fv.V), method, g.r.Name, impliedValues(st, f))
		}
		out.drop(Drop{Struct: st.Name, Field: f.Name, Value: renderValue(f.Type, &fv.V), Why: why})
	}
	return out.Dropped, nil
}
