package planner

import (
	"regexp"
	"strings"

	"github.com/hms-proxy/hms-proxy/router/naming"
	"github.com/hms-proxy/hms-proxy/wire"
)

// The fan-out reads: get_all_databases, get_databases(pattern) and
// get_table_meta(db_patterns, ...). One planner serves the two pattern
// forms: a Hive 3 catalog marker naming a proxy catalog narrows the call to
// that lane; the empty name (or a marker no metastore has) names nothing;
// "*" asks every lane; anything else is split into its '|' alternatives,
// each with a catalog prefix going to that catalog alone (its rest as the
// backend's pattern) and each without one matching every catalog's
// external names. Per lane the leg then either asks the backend with a
// pattern (the backend applies it) or lists the lane's databases and keeps
// those whose external names match. The two reads differ only where a
// fanOutRead says.

// EmptyArgs is the encoded argument struct of get_all_databases.
var EmptyArgs = []byte{wire.TStop}

// fanOutRead is one fan-out read's part of the planning.
type fanOutRead struct {
	name  string
	merge Merge
	// all is the leg that asks lane c for every database's; ask the leg
	// that asks c's backend with a pattern; keep the leg that lists c's
	// databases and keeps those whose external names match.
	all  func(c *naming.Catalog) Leg
	ask  func(c *naming.Catalog, backendPattern string) Leg
	keep func(c *naming.Catalog, match *regexp.Regexp) Leg
	// marked is the leg of a pattern whose marker names lane c.
	marked func(c *naming.Catalog, pattern string) (Leg, *Refusal)
	// defaultAsksBoth: on the default lane, which has both prefixed and
	// unprefixed alternatives, ask the backend with all of them (the
	// default catalog's names are its external names) instead of keeping.
	defaultAsksBoth bool
}

// planFanOut plans get_all_databases, get_databases and get_table_meta.
func (pl *Planner) planFanOut(req *call) {
	p, m := req.plan, req.msg
	var read fanOutRead
	var args wire.Value
	switch m.Name {
	case "get_all_databases":
		read = pl.databases(m.Name)
	default:
		var err error
		if args, err = wire.DecodeStruct(m.Body()); err != nil {
			p.Kind, p.Refusal = PlanRefuse, NewRefusal(RefuseProtocol, "bad_arguments", "%s: cannot read arguments: %v", m.Name, err)
			return
		}
		if m.Name == "get_table_meta" {
			read = pl.tableMeta(args)
		} else {
			read = pl.databases(m.Name)
		}
	}
	p.Kind, p.Merge = PlanFanOut, read.merge
	cats := pl.ns.Catalogs()
	p.Legs = make([]Leg, 0, len(cats))
	if m.Name == "get_all_databases" {
		for _, c := range cats {
			p.Legs = append(p.Legs, read.all(c))
		}
		return
	}
	// Hive 3 clients send "@<catalog>#<pattern>": a proxy catalog there
	// narrows the call to that catalog ("@hive#" alone means every
	// database); a backend name ("hive") does not narrow it.
	ref := patternRef(args.Field(1))
	pattern := ref.Name
	if pl.namesNothing(ref) {
		p.Kind, p.Local = PlanLocal, AnswerEmpty
		return
	}
	if only := pl.ns.MarkerCatalog(ref); only != nil {
		leg, ref := read.marked(only, pattern)
		if ref != nil {
			p.Kind, p.Refusal = PlanRefuse, ref
			return
		}
		p.Legs = append(p.Legs, leg)
		return
	}
	if pattern == "" || pattern == "*" {
		for _, c := range cats {
			p.Legs = append(p.Legs, read.all(c))
		}
		return
	}
	per := make([][]string, len(cats)) // backend alternatives per catalog (by index)
	var external []string              // alternatives over external names
	for _, pp := range pl.patternParts(pattern) {
		if pp.cat != nil {
			per[pp.cat.Index] = append(per[pp.cat.Index], pp.rest)
		} else {
			external = append(external, pp.rest)
		}
	}
	var extRe *regexp.Regexp
	if len(external) > 0 {
		var err error
		if extRe, err = naming.Pattern(strings.Join(external, "|")); err != nil {
			p.Kind, p.Refusal = PlanRefuse, NewRefusal(RefuseMeta, "bad_pattern", "%s: %v", read.name, err)
			return
		}
	}
	for _, c := range cats {
		backend := per[c.Index]
		switch {
		case len(backend) > 0 && (extRe == nil || c.Default && read.defaultAsksBoth):
			alts := backend
			if c.Default && extRe != nil {
				alts = append(alts, external...)
			}
			p.Legs = append(p.Legs, read.ask(c, strings.Join(alts, "|")))
		case len(backend) > 0:
			// Both prefixed alternatives of this catalog and unprefixed
			// ones: list all, keep what either matches.
			re, err := naming.Pattern(strings.Join(backend, "|"))
			if err != nil {
				p.Kind, p.Refusal = PlanRefuse, NewRefusal(RefuseMeta, "bad_pattern", "%s: %v", read.name, err)
				return
			}
			p.Legs = append(p.Legs, read.keep(c, unionMatch(extRe, internalOnly(re, pl.ns, c))))
		case extRe != nil && c.Default:
			// The default catalog's names are unprefixed: its backend
			// applies the pattern itself.
			p.Legs = append(p.Legs, read.ask(c, strings.Join(external, "|")))
		case extRe != nil:
			// Match the client's pattern against this catalog's external
			// names (for table metadata: then ask for exactly those
			// databases).
			p.Legs = append(p.Legs, read.keep(c, extRe))
		}
	}
}

// databases is get_all_databases and get_databases(pattern): a leg lists
// the lane's databases, all of them or by a backend pattern, and keeps the
// external names a Match matches.
func (pl *Planner) databases(name string) fanOutRead {
	return fanOutRead{name: name, merge: MergeDatabases,
		all: func(c *naming.Catalog) Leg {
			return Leg{Cat: c, Op: LegDatabases, Method: "get_all_databases", Args: EmptyArgs}
		},
		ask: func(c *naming.Catalog, backendPattern string) Leg {
			return Leg{Cat: c, Op: LegDatabases, BackendPattern: backendPattern, Method: "get_databases",
				Args: encodePattern(backendPattern)}
		},
		keep: func(c *naming.Catalog, match *regexp.Regexp) Leg {
			return Leg{Cat: c, Op: LegDatabases, Match: match, Method: "get_all_databases", Args: EmptyArgs}
		},
		marked: func(c *naming.Catalog, pattern string) (Leg, *Refusal) {
			leg := Leg{Cat: c, Op: LegDatabases, Method: "get_all_databases", Args: EmptyArgs}
			if pattern != "" && pattern != "*" {
				re, err := naming.Pattern(pattern)
				if err != nil {
					return leg, NewRefusal(RefuseMeta, "bad_pattern", "get_databases: %v", err)
				}
				leg.Match = internalOrExternal(re, pl.ns, c)
			}
			return leg, nil
		}}
}

// tableMeta is get_table_meta: a leg asks the lane for the table metadata of
// a backend database pattern, or lists its databases, keeps those whose
// external names match and asks for exactly those.
func (pl *Planner) tableMeta(args wire.Value) fanOutRead {
	// The legs' arguments differ only in the database pattern, and most
	// often not at all ("*" on every lane): encoded once per pattern (a
	// leg's Args are read, never written).
	var lastPattern string
	var last []byte
	withDB := func(backendPattern string) []byte {
		if last != nil && backendPattern == lastPattern {
			return last
		}
		a := wire.Value{Type: wire.TStruct, Fields: append([]wire.Field(nil), args.Fields...)}
		a.Set(1, wire.Str(backendPattern))
		lastPattern, last = backendPattern, a.Encode()
		return last
	}
	return fanOutRead{name: "get_table_meta", merge: MergeTableMeta, defaultAsksBoth: true,
		all: func(c *naming.Catalog) Leg {
			return Leg{Cat: c, Op: LegTableMeta, Method: "get_table_meta", Args: withDB("*")}
		},
		ask: func(c *naming.Catalog, backendPattern string) Leg {
			return Leg{Cat: c, Op: LegTableMeta, Method: "get_table_meta", Args: withDB(backendPattern)}
		},
		keep: func(c *naming.Catalog, match *regexp.Regexp) Leg {
			return Leg{Cat: c, Op: LegTableMetaOfMatching, Match: match, Method: "get_table_meta", Args: args.Encode()}
		},
		marked: func(c *naming.Catalog, pattern string) (Leg, *Refusal) {
			if pattern == "" {
				pattern = "*"
			}
			return Leg{Cat: c, Op: LegTableMeta, Method: "get_table_meta", Args: withDB(pattern)}, nil
		}}
}

// encodePattern is get_databases' argument struct.
func encodePattern(pattern string) []byte {
	b := wire.AppendString(wire.AppendFieldHeader(nil, wire.TString, 1), pattern)
	return append(b, wire.TStop)
}

// patternPart is one '|' alternative of a database pattern: with a catalog
// prefix it goes to that catalog alone (its rest as the backend pattern);
// without one it matches every catalog's external names.
type patternPart struct {
	cat  *naming.Catalog // nil: every catalog
	rest string          // the pattern for cat's backend, or the external pattern
}

func (pl *Planner) patternParts(pattern string) []patternPart {
	var parts []patternPart
	for _, alt := range naming.Alternatives(pattern) {
		if c, rest, ok := pl.ns.SplitPattern(alt); ok {
			parts = append(parts, patternPart{cat: c, rest: rest})
		} else {
			parts = append(parts, patternPart{rest: alt})
		}
	}
	return parts
}

// internalOnly turns a pattern over catalog c's backend names into one over
// its external names ("<c><sep>" + the backend pattern).
func internalOnly(re *regexp.Regexp, ns *naming.Namespace, c *naming.Catalog) *regexp.Regexp {
	if c.Default {
		return re
	}
	inner := strings.TrimSuffix(strings.TrimPrefix(re.String(), "(?i)^(?:"), ")$")
	return mustCompile("(?i)^" + regexp.QuoteMeta(c.Name+ns.Separator()) + "(?:" + inner + ")$")
}

// internalOrExternal matches a name of catalog c given in either form (a
// Hive 3 client naming the catalog with a marker sends backend names).
func internalOrExternal(re *regexp.Regexp, ns *naming.Namespace, c *naming.Catalog) *regexp.Regexp {
	if c.Default {
		return re
	}
	return unionMatch(re, internalOnly(re, ns, c))
}

// unionMatch matches what either pattern matches (a nil one matches nothing).
func unionMatch(a, b *regexp.Regexp) *regexp.Regexp {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return mustCompile("(?:" + a.String() + ")|(?:" + b.String() + ")")
}

// mustCompile compiles an expression built from compiled ones (it cannot
// fail), kept as naming keeps patterns.
func mustCompile(expr string) *regexp.Regexp {
	re, err := naming.Compile(expr)
	if err != nil {
		panic("planner: " + err.Error())
	}
	return re
}
