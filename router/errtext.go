package router

import (
	"sort"
	"strings"

	"github.com/hms-proxy/hms-proxy/wire"
)

// Exception messages of a call routed to a non-default catalog name its
// objects as that catalog's metastore knows them ("Database e1 is not
// empty", "hive.sales_2024.nope_1 table not found"). To this client e1 may
// be another catalog's database, and a Spark client does not recognise its
// own error. The call's own database names are rewritten to their external
// names, and "<backend catalog>.<db>" to "<proxy catalog>.<external db>";
// nothing else in the text changes, and a database name is only rewritten
// where it reads as a name (qualified, quoted, or after "database").

// errText rewrites one message for exchange x (unchanged for the default
// catalog or a call that names no database).
func (r *Router) errText(x *Exchange, msg string) string {
	cat := x.Cat
	if cat == nil || cat.Default || len(x.req.plan.DBs) == 0 {
		return msg
	}
	return rewriteErrText(msg, cat.BackendName, cat.Name, r.ns.Separator(), x.req.plan.DBs)
}

func isIdent(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func rewriteErrText(msg, backendCat, proxyCat, sep string, dbs []string) string {
	isDB := func(tok string) bool {
		for _, d := range dbs {
			if strings.EqualFold(tok, d) {
				return true
			}
		}
		return false
	}
	var b strings.Builder
	changed := false
	prevWord := ""
	for i := 0; i < len(msg); {
		if !isIdent(msg[i]) {
			b.WriteByte(msg[i])
			i++
			continue
		}
		j := i
		for j < len(msg) && isIdent(msg[j]) {
			j++
		}
		tok := msg[i:j]
		// "<backend catalog>.<db>"
		if strings.EqualFold(tok, backendCat) && j < len(msg) && msg[j] == '.' {
			k := j + 1
			for k < len(msg) && isIdent(msg[k]) {
				k++
			}
			if next := msg[j+1 : k]; isDB(next) {
				b.WriteString(proxyCat + "." + proxyCat + sep + next)
				changed, prevWord, i = true, next, k
				continue
			}
		}
		if isDB(tok) {
			before, after := byte(0), byte(0)
			if i > 0 {
				before = msg[i-1]
			}
			if j < len(msg) {
				after = msg[j]
			}
			quoted := (before == '`' || before == '\'' || before == '"') && before == after
			pw := strings.ToLower(prevWord)
			if after == '.' || quoted || pw == "database" || pw == "db" || pw == "schema" {
				b.WriteString(proxyCat + sep + tok)
				changed, prevWord, i = true, tok, j
				continue
			}
		}
		b.WriteString(tok)
		prevWord, i = tok, j
	}
	if !changed {
		return msg
	}
	return b.String()
}

// errTextPatches adds the rewrite of a declared exception's message (field 1
// of the exception struct in a result body) to patches.
func (r *Router) errTextPatches(x *Exchange, body []byte, patches []wire.Patch) ([]wire.Patch, error) {
	if x.Cat == nil || x.Cat.Default || len(x.req.plan.DBs) == 0 {
		return patches, nil
	}
	b := wire.Buf{B: body}
	t, _, err := b.FieldHeader()
	if err != nil || t != wire.TStruct {
		return patches, err
	}
	for {
		ft, id, err := b.FieldHeader()
		if err != nil || ft == wire.TStop {
			return patches, err
		}
		if id == 1 && ft == wire.TString {
			start := b.Pos
			v, err := b.Bytes()
			if err != nil {
				return patches, err
			}
			msg := string(v)
			if nm := r.errText(x, msg); nm != msg {
				patches = append(patches, wire.Patch{Start: start, End: b.Pos, Data: wire.AppendString(nil, nm)})
				sort.Slice(patches, func(i, j int) bool { return patches[i].Start < patches[j].Start })
			}
			return patches, nil
		}
		if err := b.Skip(ft, 1); err != nil {
			return patches, err
		}
	}
}

// failureText is a backend error's text for a message that names catalog
// cat already: the "catalog <cat>: " the pool and the fan-out put in front
// is dropped, so the client reads the catalog once.
func failureText(err error, cat string) string {
	s := err.Error()
	for p := "catalog " + cat + ": "; strings.HasPrefix(s, p); {
		s = s[len(p):]
	}
	return s
}
