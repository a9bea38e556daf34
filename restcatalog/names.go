package restcatalog

import (
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"
)

// nsSeparator joins the levels of a multi-level namespace in a URL (the REST
// spec's default, the unit separator 0x1F).
const nsSeparator = "\x1f"

// nsRef is a REST namespace resolved to the proxy's names.
type nsRef struct {
	Name    string // the namespace as the client named it under the prefix
	Ext     string // the database's external name at the proxy (catalog2__sales)
	Catalog string // the catalog the database belongs to
}

// checkName refuses names that could escape a path or confuse a log or a
// metastore: empty, "." and "..", backslashes, NUL and other control
// characters, invalid UTF-8. A table or view name may contain '/' (Hive's
// table name rule allows it, hive.support.special.characters.tablename; its
// default location is a nested folder) as long as no part between slashes
// is empty, "." or ".."; a namespace name may not (Hive's database names are
// letters, digits and '_').
func checkName(kind, s string) *Error {
	switch {
	case s == "":
		return badRequest("%s name is empty", kind)
	case s == "." || s == "..":
		return badRequest("%s name %q is not allowed", kind, s)
	case !utf8.ValidString(s):
		return badRequest("%s name is not valid UTF-8", kind)
	case strings.Contains(s, "\\"):
		return badRequest("%s name %q contains a backslash", kind, s)
	case strings.Contains(s, "/") && kind == "namespace":
		return badRequest("namespace name %q contains '/': a namespace is a Hive database, whose name Hive allows only letters, digits and '_' in", s)
	case strings.Contains(s, ".."):
		return badRequest("%s name %q contains '..'", kind, s)
	}
	for _, part := range strings.Split(s, "/") {
		if part == "" || part == "." {
			return badRequest("%s name %q has an empty or '.' part between slashes", kind, s)
		}
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return badRequest("%s name %q contains the control character %U", kind, s, r)
		}
	}
	return nil
}

// namespaceLevels validates a namespace given as levels (a request body's
// identifier): HMS databases are one level.
func (rc *requestCtx) namespaceLevels(levels []string) (nsRef, *Error) {
	if len(levels) != 1 {
		return nsRef{}, badRequest("namespace %q has %d levels; namespaces here are HMS databases, exactly one level",
			strings.Join(levels, "."), len(levels))
	}
	return rc.namespaceName(levels[0])
}

// namespace resolves the {namespace} path parameter.
func (rc *requestCtx) namespace() (nsRef, *Error) {
	raw := rc.params["namespace"]
	if strings.Contains(raw, nsSeparator) {
		return nsRef{}, errorf(404, typeNoSuchNamespace,
			"Namespace does not exist: %s (namespaces here are HMS databases, exactly one level)", strings.ReplaceAll(raw, nsSeparator, "."))
	}
	if strings.Contains(raw, "/") {
		// Not a name Hive can store, so no such database exists (a create
		// names the rule: checkName).
		return nsRef{}, errorf(404, typeNoSuchNamespace,
			"Namespace does not exist: %s (a Hive database name has only letters, digits and '_')", raw)
	}
	return rc.namespaceName(raw)
}

// namespaceName resolves one namespace name under the request's prefix: the
// default catalog's prefix takes external names as they are (catalog2__sales
// is catalog2's sales), any other prefix names that catalog's own databases.
func (rc *requestCtx) namespaceName(name string) (nsRef, *Error) {
	if e := checkName("namespace", name); e != nil {
		return nsRef{}, e
	}
	ns := rc.h.ns
	prefix := ns.Lookup(rc.prefix)
	ref := nsRef{Name: name}
	if prefix.Default {
		ref.Ext = name
	} else {
		ref.Ext = ns.ExternalDB(prefix, name)
	}
	c, _, _ := ns.SplitDB(ref.Ext)
	ref.Catalog = c.Name
	rc.catalog = c.Name
	return ref, nil
}

// restName maps an external database name to the namespace shown under the
// request's prefix; ok is false when the prefix does not show it.
func (rc *requestCtx) restName(ext string) (string, bool) {
	ns := rc.h.ns
	prefix := ns.Lookup(rc.prefix)
	if prefix.Default {
		return ext, true
	}
	c, db, explicit := ns.SplitDB(ext)
	if !explicit || c != prefix {
		return "", false
	}
	return db, true
}

// forWrite applies the write gate to a namespace the request writes in.
func (rc *requestCtx) forWrite(ref nsRef) *Error {
	return rc.h.writable(ref, rc.route)
}

// callerOf is the request's network identity; the SPNEGO principal is
// added once authenticated.
func callerOf(r *http.Request) Caller {
	return Caller{RemoteAddr: r.RemoteAddr}
}
