package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/router/methods"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Kind is what happens to one RPC on one backend runtime.
type Kind uint8

// The outcomes of a call on a backend runtime.
const (
	Native        Kind = iota // forwarded as it is
	Adapted                   // a compat adapter serves it with calls the runtime has
	HDPRefusal                // Hortonworks-only method on a runtime without it: MetaException
	UnknownMethod             // no safe mapping: TApplicationException UNKNOWN_METHOD
	ProxyAnswers              // answered by the proxy itself, no backend call
	RefusedAlways             // refused by policy whatever the backend
	NotForwarded              // fb303 control call, never sent to a backend
)

// refusal reports whether the outcome never serves the call.
func (k Kind) refusal() bool {
	return k == HDPRefusal || k == UnknownMethod || k == RefusedAlways || k == NotForwarded
}

// Outcome is one cell of the method matrix.
type Outcome struct {
	Kind     Kind
	Adapter  *compat.Adapter // when Adapted
	Remapped []string        // dialect structs whose field ids are remapped for this runtime
}

// Backend is one runtime profile as a column of the matrix.
type Backend struct {
	Runtime *compat.Runtime
	Label   string // short column label
}

// shortLabel is the column label of a profile (the registry's label).
func shortLabel(name string) string {
	if rt, err := compat.Lookup(name); err == nil {
		return rt.Label
	}
	return name
}

// MethodRow is one RPC of the canonical API with everything the code says
// about it.
type MethodRow struct {
	Method   *thriftgen.Method
	Spec     *methods.Spec
	Routing  string
	Fallback string
	Cells    []Outcome // one per Backend, in profile order
	// Always is true when the routing note decides the call before any
	// backend is chosen (refused without a namespace in its arguments).
	AlwaysRefused bool
}

// Matrix is everything the generator computes from code.
type Matrix struct {
	Backends []Backend
	Rows     []*MethodRow
	byName   map[string]*MethodRow
	Families []methods.Family // every family the method table uses, sorted
	Adapters *compat.Adapters
}

// Row returns the row of an RPC, nil when the canonical API lacks it.
func (m *Matrix) Row(name string) *MethodRow { return m.byName[name] }

// Backend returns the column of a profile name.
func (m *Matrix) Backend(profile string) (int, *Backend) {
	for i := range m.Backends {
		if m.Backends[i].Runtime.Name == profile {
			return i, &m.Backends[i]
		}
	}
	return -1, nil
}

// BuildMatrix classifies every RPC of thriftgen.AllMethods() with the
// router's method table and compat's runtime plans.
func BuildMatrix() (*Matrix, error) {
	table, err := methods.BuildTable()
	if err != nil {
		return nil, err
	}
	mx := &Matrix{byName: map[string]*MethodRow{}}
	ads, err := compat.NewAdapters()
	if err != nil {
		return nil, err
	}
	mx.Adapters = ads
	for _, rt := range compat.Runtimes() {
		mx.Backends = append(mx.Backends, Backend{Runtime: rt, Label: rt.Label})
	}
	reach := newReach()
	families := map[methods.Family]bool{}
	for _, m := range thriftgen.AllMethods() {
		spec := table.Lookup(m.Name)
		if spec == nil {
			return nil, fmt.Errorf("RPC %s has no row in the router's method table", m.Name)
		}
		families[spec.Family] = true
		row := &MethodRow{Method: m, Spec: spec}
		row.Routing, row.AlwaysRefused = routingNote(spec)
		row.Fallback = fallbackNote(spec)
		for _, b := range mx.Backends {
			row.Cells = append(row.Cells, outcome(spec, ads, b.Runtime, reach))
		}
		mx.Rows = append(mx.Rows, row)
		mx.byName[m.Name] = row
	}
	for f := range families {
		mx.Families = append(mx.Families, f)
	}
	sort.Slice(mx.Families, func(i, j int) bool { return mx.Families[i] < mx.Families[j] })
	return mx, nil
}

// outcome is what the router does with the RPC on a backend of runtime rt:
// the specials it serves itself first, then compat's plan.
func outcome(spec *methods.Spec, ads *compat.Adapters, rt *compat.Runtime, reach *reach) Outcome {
	switch spec.Special {
	case methods.LocalCatalogs, methods.LocalSetUGI, methods.LocalVersion:
		return Outcome{Kind: ProxyAnswers}
	case methods.RefuseAlways:
		return Outcome{Kind: RefusedAlways}
	case methods.DropOneway:
		return Outcome{Kind: NotForwarded}
	}
	mode, ad := ads.Plan(rt, spec.Name)
	switch mode {
	case compat.Adapted:
		return Outcome{Kind: Adapted, Adapter: ad}
	case compat.HortonworksOnly:
		return Outcome{Kind: HDPRefusal}
	case compat.Unsupported:
		return Outcome{Kind: UnknownMethod}
	}
	return Outcome{Kind: Native, Remapped: reach.dialectStructs(spec.Method, rt.Bit)}
}

// routingNote says how the router picks the catalog (computed from the
// method table's Special and Unrouted and from whether the arguments carry
// any namespace at all), and whether the call is refused before routing.
func routingNote(spec *methods.Spec) (string, bool) {
	switch spec.Special {
	case methods.FanOutDatabases:
		return "fan-out: every catalog, merged, external names", false
	case methods.FanOutTableMeta:
		return "fan-out: every catalog the pattern can match, merged", false
	case methods.LocalCatalogs:
		return "proxy answers: the configured catalogs", false
	case methods.LocalSetUGI:
		return "proxy answers: binds the identity to the connection", false
	case methods.LocalVersion:
		return "proxy answers: the front door's profile version", false
	case methods.RefuseAlways:
		return "refused always: " + spec.Why, true
	case methods.DropOneway:
		return "never forwarded (fb303 control call)", true
	}
	if spec.Args.Empty() {
		if spec.Unrouted == methods.Refuse {
			return "refused: a global write whose arguments name no namespace", true
		}
		return "default catalog (no namespace in the arguments)", false
	}
	if spec.Unrouted == methods.Refuse {
		return "by namespace; refused without one", false
	}
	return "by namespace; default catalog without one", false
}

// Fallback notes (also the legend's words).
const (
	fallbackAnyFailure    = "empty answer on any backend failure"
	fallbackUnknownMethod = "empty answer if the backend answers UNKNOWN_METHOD"
)

func fallbackNote(spec *methods.Spec) string {
	switch {
	case spec.Special != methods.None && spec.Special != methods.FanOutDatabases && spec.Special != methods.FanOutTableMeta:
		return ""
	case spec.EmptyOnAnyFailure():
		return fallbackAnyFailure
	case spec.EmptyOnUnknownMethod():
		return fallbackUnknownMethod
	}
	return ""
}

// reach answers whether a method's arguments or result can carry a struct,
// to tell where a runtime's field-id dialect applies.
type reach struct{}

func newReach() *reach { return &reach{} }

// carries reports whether a value of struct s can contain struct target
// (s itself included).
func (r *reach) carries(s *thriftgen.Struct, target string) bool {
	seen := map[string]bool{}
	var visit func(s *thriftgen.Struct) bool
	var walk func(t *thriftgen.Type) bool
	visit = func(s *thriftgen.Struct) bool {
		if s == nil || seen[s.Name] {
			return false
		}
		seen[s.Name] = true
		if s.Name == target {
			return true
		}
		for _, f := range s.Fields {
			if walk(f.Type) {
				return true
			}
		}
		return false
	}
	walk = func(t *thriftgen.Type) bool {
		if t == nil {
			return false
		}
		switch t.Kind {
		case thriftgen.KindStruct:
			return visit(thriftgen.LookupStruct(t.Name))
		case thriftgen.KindList, thriftgen.KindSet:
			return walk(t.Elem)
		case thriftgen.KindMap:
			return walk(t.Key) || walk(t.Value)
		}
		return false
	}
	return visit(s)
}

// dialectStructs lists the structs of profile p's dialects that the method's
// arguments or result carry.
func (r *reach) dialectStructs(m *thriftgen.Method, p thriftgen.ProfileSet) []string {
	var out []string
	for _, d := range thriftgen.AllDialects() {
		if d.Profile == p && (r.carries(m.Args, d.Struct) || r.carries(m.Result, d.Struct)) {
			out = append(out, d.Struct)
		}
	}
	sort.Strings(out)
	return out
}

// nativeIn renders a method's profiles with the short labels.
func nativeIn(p thriftgen.ProfileSet) string {
	if p == thriftgen.ProfileAll {
		return "all"
	}
	var out []string
	for _, n := range p.Names() {
		out = append(out, shortLabel(n))
	}
	return strings.Join(out, ", ")
}
