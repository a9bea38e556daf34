package compat

import (
	"fmt"
	"sort"

	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Dialect maps the field ids of structs that a runtime numbers differently
// from the canonical schema: HDP 3.1.5's Table (its 23/24/25 are canonical
// 22/23/24) and 3.1.3's create_ischema_result (-1 on the wire, 2 canonical).
// It rewrites only the 2-byte ids in place; a canonical field the runtime
// cannot represent (Table.id toward HDP 3.1.5) is left out of what is sent
// to it, since that runtime has no slot for it.
type Dialect struct {
	profile thriftgen.ProfileSet
	byName  map[string]*thriftgen.Dialect
	args    map[string]*wire.Plan
	results map[string]*wire.Plan
	// touched has touchBit set for every method whose arguments or result
	// the dialect changes: Touches answers most calls without a map lookup.
	touched uint64
}

// touchBit is a method's bit in Dialect.touched (by its name's length and
// last byte: a cheap hash that separates most HMS method names).
func touchBit(method string) uint64 {
	if method == "" {
		return 1
	}
	return 1 << ((uint(len(method))*7 + uint(method[len(method)-1])) & 63)
}

// NewDialect returns the dialect of a runtime, nil when it has none.
func NewDialect(r *Runtime) (*Dialect, error) {
	d := &Dialect{profile: r.Bit, byName: map[string]*thriftgen.Dialect{}, args: map[string]*wire.Plan{}, results: map[string]*wire.Plan{}}
	var watch []string
	for _, td := range thriftgen.AllDialects() {
		if td.Profile == r.Bit {
			d.byName[td.Struct] = td
			watch = append(watch, td.Struct)
		}
	}
	if len(watch) == 0 {
		return nil, nil
	}
	sort.Strings(watch)
	comp := wire.NewCompiler(func(string, *thriftgen.Field) wire.Role { return wire.RoleNone }, watch...)
	for _, m := range thriftgen.AllMethods() {
		var err error
		if d.args[m.Name], err = comp.Plan(m.Args.Name); err != nil {
			return nil, err
		}
		if m.Result != nil {
			if d.results[m.Name], err = comp.Plan(m.Result.Name); err != nil {
				return nil, err
			}
		}
		if !d.args[m.Name].Empty() || !d.results[m.Name].Empty() {
			d.touched |= touchBit(m.Name)
		}
	}
	return d, nil
}

// ToCanonical rewrites a body received from the runtime into canonical ids.
func (d *Dialect) ToCanonical(method string, result bool, body []byte) ([]byte, error) {
	return d.remap(method, result, body, true)
}

// ToWire rewrites a canonical body into the runtime's ids.
func (d *Dialect) ToWire(method string, result bool, body []byte) ([]byte, error) {
	return d.remap(method, result, body, false)
}

func (d *Dialect) remap(method string, result bool, body []byte, toCanonical bool) ([]byte, error) {
	if d == nil {
		return body, nil
	}
	plan := d.args[method]
	if result {
		plan = d.results[method]
	}
	if plan.Empty() {
		return body, nil
	}
	var patches []wire.Patch
	err := wire.Walk(body, plan, 0, func(s *wire.Span) error {
		if s.Role != wire.RoleField {
			return nil
		}
		td := d.byName[s.Path.Name]
		if td == nil {
			return nil
		}
		var id int16
		var ok bool
		if toCanonical {
			id, ok = td.CanonicalID(s.FieldID)
		} else {
			id, ok = td.WireID(s.FieldID)
		}
		switch {
		case !ok:
			patches = append(patches, wire.Patch{Start: s.Start, End: s.End})
		case id != s.FieldID:
			patches = append(patches, wire.Patch{Start: s.Start + 1, End: s.Start + 3, Data: []byte{byte(uint16(id) >> 8), byte(id)}})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: cannot map %s field ids: %v", method, d.profile, err)
	}
	if len(patches) == 0 {
		return body, nil
	}
	sort.Slice(patches, func(i, j int) bool { return patches[i].Start < patches[j].Start })
	return wire.Apply(nil, body, patches), nil
}

// Touches reports whether the dialect changes anything in the method's
// arguments (result=false) or result; other calls skip it at no cost.
func (d *Dialect) Touches(method string, result bool) bool {
	if d == nil || d.touched&touchBit(method) == 0 {
		return false
	}
	if result {
		return !d.results[method].Empty()
	}
	return !d.args[method].Empty()
}
