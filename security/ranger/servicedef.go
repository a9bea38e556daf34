package ranger

import (
	"fmt"
)

// defInfo is what evaluation needs of a service definition, computed once
// per policy set: resource indexes, hierarchies, access types with their
// implied grants, and the order "any access" walks them in.
type defInfo struct {
	def         *ServiceDef
	resIndex    map[string]int // resource name -> index in def.Resources
	opts        []matchOptions // per resource
	hierarchies [][]int        // resource hierarchies (access policies)
	accessNames []string       // def.AccessTypes names
	anyOrder    []int          // indexes into accessNames, in Java HashSet order
	implied     map[string][]string
	denyEnabled bool // enableDenyAndExceptionsInPolicies
}

func newDefInfo(def *ServiceDef) (*defInfo, error) {
	if def == nil {
		return nil, fmt.Errorf("ranger: the policies carry no service definition")
	}
	d := &defInfo{def: def, resIndex: map[string]int{}, implied: map[string][]string{}}
	for i, r := range def.Resources {
		if r == nil || r.Name == "" {
			return nil, fmt.Errorf("ranger: service definition %q: resource %d has no name", def.Name, i)
		}
		d.resIndex[r.Name] = i
		d.opts = append(d.opts, readMatchOptions(r.MatcherOptions))
	}
	for _, a := range def.AccessTypes {
		if a == nil {
			continue
		}
		d.accessNames = append(d.accessNames, a.Name)
	}
	d.anyOrder = javaHashSetOrder(d.accessNames)
	for _, list := range [][]*AccessTypeDef{def.AccessTypes, def.MarkerAccessTypes} {
		for _, a := range list {
			if a != nil && len(a.ImpliedGrants) > 0 {
				d.implied[a.Name] = append(d.implied[a.Name], a.ImpliedGrants...)
			}
		}
	}
	// the hidden plugin option ranger.servicedef.enableDenyAndExceptionsInPolicies defaults to true
	d.denyEnabled = defOption(def.Options, "enableDenyAndExceptionsInPolicies", true)
	d.hierarchies = d.computeHierarchies()
	return d, nil
}

// computeHierarchies follows RangerServiceDefHelper: every path from a root
// resource to a leaf, plus each prefix of such a path ending in a resource
// marked isValidLeaf; a resource with neither parent nor children is a
// hierarchy of its own.
func (d *defInfo) computeHierarchies() [][]int {
	rs := d.def.Resources
	children := map[int][]int{}
	hasParent := map[int]bool{}
	for i, r := range rs {
		if r.Parent == "" {
			continue
		}
		p, ok := d.resIndex[r.Parent]
		if !ok {
			continue
		}
		children[p] = append(children[p], i)
		hasParent[i] = true
	}
	seen := map[string]bool{}
	var out [][]int
	add := func(h []int) {
		k := fmt.Sprint(h)
		if !seen[k] {
			seen[k] = true
			out = append(out, append([]int(nil), h...))
		}
	}
	var walk func(path []int)
	walk = func(path []int) {
		last := path[len(path)-1]
		if len(children[last]) == 0 {
			add(path)
			for k := 1; k < len(path); k++ {
				if v := rs[path[k-1]].IsValidLeaf; v != nil && *v {
					add(path[:k])
				}
			}
			return
		}
		for _, c := range children[last] {
			walk(append(append([]int(nil), path...), c))
		}
	}
	for i := range rs {
		if !hasParent[i] {
			walk([]int{i})
		}
	}
	return out
}

// hierarchyHas reports whether h names every resource in keys.
func hierarchyHas(h []int, keys []int) bool {
	for _, k := range keys {
		found := false
		for _, r := range h {
			if r == k {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// shortestHierarchy is the shortest hierarchy naming every key (nil if none).
func (d *defInfo) shortestHierarchy(keys []int) []int {
	var best []int
	for _, h := range d.hierarchies {
		if !hierarchyHas(h, keys) {
			continue
		}
		if best == nil || len(h) < len(best) {
			best = h
			if len(best) == len(keys) {
				break
			}
		}
	}
	return best
}

// accessIndex finds an access type of the definition, ignoring case as the
// engine compares them; -1 when the definition does not have it.
func (d *defInfo) accessIndex(name string) int {
	for i, n := range d.accessNames {
		if jEquals(newJstr(n), newJstr(name), true) {
			return i
		}
	}
	return -1
}
