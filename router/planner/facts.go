// Package planner decides what the router does with one request, before any
// I/O: its only inputs are the method row (router/methods), the request's
// arguments walked once, and the lanes' static facts (their naming and
// runtimes, Facts). It returns a Plan: one lane with the inward rewrites
// (Single, SplitLock), a fan-out (FanOut), an answer of the proxy's own
// (LocalAnswer), or a refusal (Refuse). Each is an executable primitive in
// the shape of Vitess' engine: the router runs it against a narrow Cursor
// (send an exchange through the policy chain to its lane, answer, record).
//
// The package reaches no pool and no network: it imports neither the router
// nor net, which the repository's import test holds (docs/architecture.md).
package planner

import (
	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/router/methods"
	"github.com/hms-proxy/hms-proxy/router/naming"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Facts are what the planner knows of the deployment: the lanes' static
// facts and the router-wide ones. Read-only once given to New.
type Facts struct {
	Namespace *naming.Namespace
	// Lanes are the static facts of each catalog's lane, by
	// naming.Catalog.Index.
	Lanes    []LaneFacts
	Table    *methods.Table
	Adapters *compat.Adapters
	// MaxMessage bounds the walk of a request's arguments.
	MaxMessage int
	// LockShim: a synthetic lock shim serves the locks of non-default
	// catalogs (a lock naming several catalogs is split, not refused).
	LockShim bool
	// Local names the methods the proxy answers with a handler of its own
	// (delegation tokens).
	Local map[string]bool
	// SyntheticRefreshPrivileges answers refresh_privileges with success.
	SyntheticRefreshPrivileges bool
}

// LaneFacts are one lane's static facts: its catalog and its backend
// runtime (the capabilities compat plans calls with).
type LaneFacts struct {
	Catalog *naming.Catalog
	Runtime *compat.Runtime
}

// Planner plans requests over one configuration generation's lanes.
type Planner struct {
	ns               *naming.Namespace
	lanes            []LaneFacts
	table            *methods.Table
	adapters         *compat.Adapters
	maxMsg           int
	lockShim         bool
	local            map[string]bool
	syntheticRefresh bool
}

// New builds a planner over f.
func New(f Facts) *Planner {
	return &Planner{ns: f.Namespace, lanes: f.Lanes, table: f.Table, adapters: f.Adapters, maxMsg: f.MaxMessage,
		lockShim: f.LockShim, local: f.Local, syntheticRefresh: f.SyntheticRefreshPrivileges}
}

// runtime is catalog c's backend runtime.
func (pl *Planner) runtime(c *naming.Catalog) *compat.Runtime { return pl.lanes[c.Index].Runtime }

// call is one request as the planner sees it.
type call struct {
	plan *Plan
	msg  *wire.Message
	door *Frontend
}

// Frontend is one front-door listener's view: its name and the method set of
// its profile.
type Frontend struct {
	Name    string
	Profile thriftgen.ProfileSet
	Runtime *compat.Runtime // identity (getVersion); nil = forward
	Dialect *compat.Dialect // field-id dialect of the profile's clients; nil = canonical
	// Internal: the proxy's own in-process connections (the Iceberg REST
	// frontend's metastore client). What they hold, such as a lock taken for
	// a commit, belongs to this instance and ends with it.
	Internal bool
}

// Allows reports whether the listener's profile has the method.
func (f *Frontend) Allows(s *methods.Spec) bool {
	return f == nil || f.Profile == 0 || s.Method.Profiles&f.Profile != 0
}
