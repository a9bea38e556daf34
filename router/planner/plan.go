package planner

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/router/methods"
	"github.com/hms-proxy/hms-proxy/router/naming"
	"github.com/hms-proxy/hms-proxy/wire"
)

// A Plan is what the planner decided to do with one request, before any
// I/O: one lane with the inward rewrites of the arguments (Single, or
// SplitLock for a lock naming several catalogs), a fan-out over several lanes
// (FanOut), an answer of the proxy's own (LocalAnswer), or a refusal with its
// reason (Refuse). Each shape is an executable primitive (engine.go: run
// against the executor's Cursor); the plan holds the one its Kind names, so
// a request plans and runs without allocating one. Plans are unit-tested
// without a backend and printed by the debug tracer.
type Plan struct {
	Kind PlanKind
	Spec *methods.Spec

	Single      // PlanSingle
	FanOut      // PlanFanOut
	LocalAnswer // PlanLocal
	Refuse      // PlanRefuse

	// The planner's scratch: the catalog hints of the arguments and their
	// walk (kept in the plan, so a walk allocates nothing).
	rt route
	av argVisitor

	patchArr [4]wire.Patch
	dbArr    [2]string
}

// Single sends the call to one lane through the policy chain.
type Single struct {
	Target        *naming.Catalog
	Patches       []wire.Patch // inward rewrites (external → backend names) of the arguments
	DBs           []string     // backend database names the request names (access modes, messages)
	DefaultRouted bool         // no catalog hint: the default catalog serves it
	Writes        bool         // access modes apply
	Mode          compat.Mode  // how the call meets the target's runtime
	Adapter       *compat.Adapter
	// SplitLock: a lock naming several catalogs; the lock shim splits it by
	// catalog and judges each part's access mode (Target is the default
	// catalog, Writes false, DBs empty). Its primitive is SplitLock.
	SplitLock bool
	// TxnLifecycle: a write of a transaction's own lifecycle (open,
	// heartbeat, abort, a commit without writes of its own), which the
	// access modes let pass (txn.go); the compat guard still checks it.
	TxnLifecycle bool
}

// FanOut asks several lanes the same read and merges their lists in lane
// order. Each leg's call is encoded when it is planned (Leg.Method and
// Leg.Args), so running the legs is a loop over ready bytes.
type FanOut struct {
	Legs  []Leg
	Merge Merge

	chain chain // a Chained run's state (engine.go)
}

// LocalAnswer is an answer the proxy gives itself.
type LocalAnswer struct {
	Local Local
}

// Refuse answers a refusal without asking any lane.
type Refuse struct {
	Refusal *Refusal
}

// PatchScratch is an empty slice of the plan's own patch array: the
// executor collects a reply's outward rewrites in it without allocating.
func (p *Plan) PatchScratch() []wire.Patch { return p.patchArr[:0] }

// PlanKind says which shape a plan has.
type PlanKind uint8

// The plan shapes.
const (
	PlanRefuse PlanKind = iota
	PlanSingle
	PlanFanOut
	PlanLocal
)

func (k PlanKind) String() string {
	return [...]string{"refuse", "single", "fan-out", "local"}[k]
}

// Local names an answer the proxy gives itself.
type Local uint8

// Local answers.
const (
	AnswerNone              Local = iota
	AnswerSetUGI                  // binds the caller's identity to the connection
	AnswerCatalogs                // get_catalogs: the configured catalogs
	AnswerVersion                 // getVersion: the front door's profile identity
	AnswerOneway                  // fb303 shutdown/reinitialize: never reach a backend
	AnswerHandler                 // an Options.Local handler (delegation tokens)
	AnswerRefreshPrivileges       // refresh_privileges: success (routing.refresh-privileges.synthetic-success)
	// AnswerEmpty: the method's empty success (an empty list, a void), what
	// the metastore answers when the request names nothing that exists (a
	// database pattern that is the empty name, a catalog no metastore
	// behind the proxy has, dropping such a catalog where that is no error).
	AnswerEmpty
)

// Merge says how fan-out answers are combined.
type Merge uint8

// Merges.
const (
	MergeDatabases Merge = iota // lists of external database names, union in catalog order
	MergeTableMeta              // lists of TableMeta, outward-rewritten
)

// LegOp is what one fan-out leg asks its catalog.
type LegOp uint8

// Leg operations.
const (
	// LegDatabases lists the catalog's databases (get_all_databases, or
	// get_databases(BackendPattern)), hides what exposure hides, and keeps
	// the external names that Match matches (all when nil).
	LegDatabases LegOp = iota
	// LegTableMeta calls get_table_meta with Args (the database pattern
	// already internal) and hides what exposure hides.
	LegTableMeta
	// LegTableMetaOfMatching lists the databases whose external names Match
	// matches, then asks get_table_meta for exactly those.
	LegTableMetaOfMatching
)

// Leg is one catalog's part of a fan-out.
type Leg struct {
	Cat            *naming.Catalog
	Op             LegOp
	BackendPattern string         // LegDatabases: "" = get_all_databases
	Match          *regexp.Regexp // external names to keep (nil: all)
	// Method and Args are the leg's call as it is sent, encoded when it
	// was planned: get_all_databases, get_databases(BackendPattern) or
	// get_table_meta (the database pattern already the backend's). A
	// LegTableMetaOfMatching leg's Args are the client's get_table_meta
	// arguments, whose pattern the executor replaces by the databases it
	// found.
	Method string
	Args   []byte
}

// RefusalKind is the exception a refusal is answered with.
type RefusalKind uint8

// Refusal kinds. A kind the method does not declare falls back to its
// MetaException, and to a TApplicationException when it declares none.
const (
	RefuseMeta RefusalKind = iota
	RefuseNoSuchObject
	RefuseInvalidOperation
	RefuseUnknownMethod // TApplicationException UNKNOWN_METHOD
	RefuseProtocol      // TApplicationException PROTOCOL_ERROR
	RefuseMessageType   // TApplicationException INVALID_MESSAGE_TYPE
	// RefuseTxnAborted: the TxnAbortedException the method declares (a
	// refused lock whose transaction the proxy aborted).
	RefuseTxnAborted
)

// Refusal is a request the proxy does not forward, with the reason a client
// reads and a short label for logs and tests.
type Refusal struct {
	Kind    RefusalKind
	Reason  string // label: ambiguous, namespace_less, catalog_registry, cross_catalog_rename, access_mode, exposure, ...
	Message string
	// Catalog is the one catalog the refused call was aimed at, when the
	// refusal came before routing set it (audit and the WARN line name it).
	Catalog string
	// Status is the request's status label (metrics, audit); "" is
	// "error" ("throttled" for a rate limit).
	Status string
	// Table: a RefuseNoSuchObject refusal is about a table (else a
	// database): it picks UnknownTableException over UnknownDBException.
	Table bool
}

func (r *Refusal) Error() string { return r.Message }

// NewRefusal is a refusal with its message formatted.
func NewRefusal(kind RefusalKind, reason, format string, args ...any) *Refusal {
	return &Refusal{Kind: kind, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// String renders a plan for the debug tracer.
func (p *Plan) String() string {
	var b strings.Builder
	b.WriteString(p.Kind.String())
	switch p.Kind {
	case PlanSingle:
		fmt.Fprintf(&b, " %s", p.Target.Name)
		if p.DefaultRouted {
			b.WriteString(" (default catalog: no catalog hint)")
		}
		fmt.Fprintf(&b, " mode=%s", modeName(p.Mode))
		if p.Adapter != nil {
			fmt.Fprintf(&b, " via %s", p.Adapter.To)
		}
		if p.Writes {
			b.WriteString(" writes")
		}
		if p.TxnLifecycle {
			b.WriteString(" (transaction lifecycle)")
		}
		if p.SplitLock {
			b.WriteString(" split-lock")
		}
		if len(p.Patches) > 0 {
			fmt.Fprintf(&b, " rewrites=%d", len(p.Patches))
		}
		if len(p.DBs) > 0 {
			fmt.Fprintf(&b, " dbs=%v", p.DBs)
		}
	case PlanFanOut:
		for _, l := range p.Legs {
			fmt.Fprintf(&b, " [%s", l.Cat.Name)
			switch l.Op {
			case LegDatabases:
				if l.BackendPattern != "" {
					fmt.Fprintf(&b, " get_databases(%q)", l.BackendPattern)
				} else {
					b.WriteString(" get_all_databases")
				}
			case LegTableMeta:
				pattern := ""
				if v, err := wire.DecodeStruct(l.Args); err == nil {
					pattern = v.Field(1).String()
				}
				fmt.Fprintf(&b, " get_table_meta(%q)", pattern)
			case LegTableMetaOfMatching:
				b.WriteString(" get_table_meta of matching databases")
			}
			if l.Match != nil {
				fmt.Fprintf(&b, " match %s", l.Match)
			}
			b.WriteString("]")
		}
	case PlanLocal:
		b.WriteString([...]string{"", " set_ugi", " get_catalogs", " getVersion", " oneway fb303", " local handler", " refresh_privileges success", " empty answer"}[p.Local])
	case PlanRefuse:
		fmt.Fprintf(&b, " %s: %s", p.Refusal.Reason, p.Refusal.Message)
	}
	return b.String()
}

func modeName(m compat.Mode) string {
	return [...]string{"native", "adapted", "hortonworks-only", "unsupported"}[m]
}
