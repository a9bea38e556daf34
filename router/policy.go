package router

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/hms-proxy/hms-proxy/configs"
	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Policy is one catalog's write policy and exposure rules (NewPolicy from its keys).
type Policy struct {
	access    configs.AccessMode
	whitelist map[string]bool
	exposure  *Exposure
}

func NewPolicy(cc *configs.CatalogConfig) *Policy {
	p := &Policy{access: cc.AccessMode, whitelist: map[string]bool{}}
	for _, db := range cc.WriteDBWhitelist {
		p.whitelist[strings.ToLower(db)] = true
	}
	p.exposure = &Exposure{deny: cc.ExposeMode == configs.ExposeDenyByDefault, dbs: cc.ExposeDBPatterns}
	for _, tr := range cc.ExposeTablePatterns {
		p.exposure.tables = append(p.exposure.tables, tableRule{db: tr.DB, tables: tr.Tables})
	}
	return p
}

// writeRefusal explains why a write is not allowed, "" when it is.
func (p *Policy) writeRefusal(catalog, method string, dbs []string) string {
	switch p.access {
	case configs.AccessReadOnly:
		return fmt.Sprintf("catalog %s is READ_ONLY (catalog.%s.access-mode): %s is a write", catalog, catalog, method)
	case configs.AccessReadWriteDBWhitelist:
		if len(dbs) == 0 {
			return fmt.Sprintf("catalog %s allows writes only to databases in catalog.%s.write-db-whitelist, and %s names no database", catalog, catalog, method)
		}
		for _, db := range dbs {
			if !p.whitelist[strings.ToLower(db)] {
				return fmt.Sprintf("catalog %s allows writes only to databases in catalog.%s.write-db-whitelist; database %s is not listed (%s)", catalog, catalog, db, method)
			}
		}
	}
	return ""
}

// WriteRefusal explains why catalog's write policy refuses a write (what
// names it in the message) to database db, a backend name; "" when it is
// allowed. With db "" it answers for the catalog as a whole: only READ_ONLY
// refuses every write there. The Iceberg REST frontend asks it before it
// takes a lock or writes a file, and leaves the write endpoints out of
// /v1/config where the catalog refuses every write.
func (r *Router) WriteRefusal(catalog, db, what string) string {
	c := r.ns.Lookup(catalog)
	if c == nil {
		return ""
	}
	p := r.lane(c).policy
	if db == "" {
		if p.access != configs.AccessReadOnly {
			return ""
		}
		return p.writeRefusal(c.Name, what, nil)
	}
	return p.writeRefusal(c.Name, what, []string{db})
}

// Exposure is selective federation exposure: which backend databases and
// tables of a catalog clients may see. Patterns match backend names, whole
// string, case-insensitively (compiled that way by configs).
type Exposure struct {
	deny   bool
	dbs    []*regexp.Regexp
	tables []tableRule
}

type tableRule struct {
	db     *regexp.Regexp
	tables []*regexp.Regexp
}

func (e *Exposure) active() bool { return e != nil && (e.deny || len(e.tables) > 0) }

// DBVisible: under DENY_BY_DEFAULT a database is visible when a db rule or a
// table rule matches it; under ALLOW_ALL always.
func (e *Exposure) DBVisible(db string) bool {
	if !e.deny {
		return true
	}
	for _, re := range e.dbs {
		if re.MatchString(db) {
			return true
		}
	}
	for _, tr := range e.tables {
		if tr.db.MatchString(db) {
			return true
		}
	}
	return false
}

// TableVisible: table rules of matching databases narrow the tables; without
// any, a table is as visible as its database.
func (e *Exposure) TableVisible(db, table string) bool {
	narrowed := false
	for _, tr := range e.tables {
		if !tr.db.MatchString(db) {
			continue
		}
		narrowed = true
		for _, re := range tr.tables {
			if re.MatchString(table) {
				return true
			}
		}
	}
	if narrowed {
		return false
	}
	return e.DBVisible(db)
}

// TablesNarrowed says whether table rules narrow the tables of database db
// (some of its tables may be hidden while it is visible).
func (e *Exposure) TablesNarrowed(db string) bool {
	for _, tr := range e.tables {
		if tr.db.MatchString(db) {
			return true
		}
	}
	return false
}

// filterNames removes the hidden tables of database db from a result body
// whose success value is a list of table names.
func (e *Exposure) filterNames(body []byte, db string) ([]byte, int, error) {
	v, err := wire.DecodeStruct(body)
	if err != nil {
		return nil, 0, err
	}
	list := v.Field(0)
	if list == nil {
		return body, 0, nil // an exception or an empty result
	}
	kept := list.Elems[:0]
	removed := 0
	for _, el := range list.Elems {
		if e.TableVisible(db, string(el.Str)) {
			kept = append(kept, el)
		} else {
			removed++
		}
	}
	list.Elems = kept
	if removed == 0 {
		return body, 0, nil
	}
	return v.Encode(), removed, nil
}

// callRefusal is writeRefusal for one call with its arguments: a commit_txn
// is named with the writes it carries (planner.CommitOwnWrites), and under a
// whitelist one that updates a table parameter by table id (keyValue) is
// refused, since which database that table is in cannot be read from the
// request.
func (p *Policy) callRefusal(catalog, method string, dbs []string, body []byte) string {
	if method == "commit_txn" && p.access != configs.AccessReadWrite {
		fields, id := planner.CommitOwnWrites(body)
		if len(fields) > 0 {
			method += " carrying " + strings.Join(fields, " and ")
		}
		if id >= 0 && p.access == configs.AccessReadWriteDBWhitelist {
			return fmt.Sprintf("catalog %s allows writes only to databases in catalog.%s.write-db-whitelist; %s updates a parameter of the table with id %d, whose database the request does not name",
				catalog, catalog, method, id)
		}
	}
	return p.writeRefusal(catalog, method, dbs)
}
