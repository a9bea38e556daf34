package viewsql

import (
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hms-proxy/hms-proxy/wire"
)

// Field ids of the canonical Table struct (thriftgen's schema; checked by a
// test).
const (
	tableFieldTableName        int16 = 1
	tableFieldDBName           int16 = 2
	tableFieldParameters       int16 = 9
	tableFieldViewOriginalText int16 = 10
	tableFieldViewExpandedText int16 = 11
	tableFieldTableType        int16 = 12
)

// Spark's view properties (CatalogTable): the engine's current namespace at
// creation, against which Spark resolves the one-part names of the view
// text. view.query.out.* (column names) and view.sqlConfig.* (session
// settings) are not names of ours and are never touched.
const (
	sparkNumParts       = "view.catalogAndNamespace.numParts"
	sparkPartPrefix     = "view.catalogAndNamespace.part."
	sparkDefaultDB      = "view.default.database" // Spark 2.x
	sparkSessionCatalog = "spark_catalog"
)

// Mode is federation.view-text-rewrite.mode.
type Mode uint8

const (
	// ModeRewrite rewrites view SQL both ways (the default).
	ModeRewrite Mode = iota + 1
	// ModeDisabled passes view SQL unchanged.
	ModeDisabled
)

// ParseMode reads federation.view-text-rewrite.mode.
func ParseMode(s string) (Mode, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "", "REWRITE":
		return ModeRewrite, nil
	case "DISABLED":
		return ModeDisabled, nil
	}
	return 0, fmt.Errorf("federation.view-text-rewrite.mode=%q: want REWRITE or DISABLED", s)
}

// TableOptions configure TableRewriter.
type TableOptions struct {
	Mode Mode // federation.view-text-rewrite.mode; zero is ModeRewrite
	// PreserveOriginalText: federation.view-text-rewrite.preserve-original-text.
	PreserveOriginalText bool
	Metrics              *Metrics // nil: not counted
}

// TableRewriter rewrites the view parts of a Table (thriftgen field ids) held
// as a wire.Value: viewExpandedText, viewOriginalText (unless preserved) and
// the database named by Spark's view properties.
type TableRewriter struct {
	r   *Rewriter
	o   TableOptions
	off bool
}

// NewTableRewriter builds a TableRewriter over r.
func NewTableRewriter(r *Rewriter, o TableOptions) *TableRewriter {
	return &TableRewriter{r: r, o: o, off: o.Mode == ModeDisabled}
}

// TableResult reports one Table rewrite.
type TableResult struct {
	Changed  int // references and properties rewritten
	Findings []Finding
}

// Err is non-nil when an inward rewrite found references to another catalog
// (see Result.Err): the router refuses the create or alter with it.
func (t TableResult) Err() error { return Result{Findings: t.Findings}.Err() }

// Rewrite rewrites tbl in place for a view stored in catalog. The Table's
// dbName may be in either form (the router may rewrite it before or after);
// a prefix of catalog itself is stripped to find the backend database. A
// Table without view text and without Spark view properties is not touched.
func (t *TableRewriter) Rewrite(d Direction, catalog string, tbl *wire.Value) (TableResult, error) {
	var out TableResult
	if t.off || tbl == nil {
		return out, nil
	}
	c := t.r.byName[strings.ToLower(catalog)]
	if c == nil {
		return out, fmt.Errorf("viewsql: unknown catalog %q", catalog)
	}
	db := tbl.Field(tableFieldDBName).String()
	if x, internal, explicit := t.r.splitDB(db); explicit && x == c {
		db = internal
	}
	if isIcebergView(tbl) {
		return out, nil
	}
	v := View{Catalog: c.Name, DB: db}
	seen := false // a view: view text or Spark's view properties
	finding := func(f Finding) {
		f.Direction, f.Catalog = d, c.Name
		out.Findings = append(out.Findings, f)
		if t.r.report != nil {
			t.r.report(f)
		}
	}
	if params := tbl.Field(tableFieldParameters); params != nil && params.Type == wire.TMap &&
		params.KeyType == wire.TString && params.ElemType == wire.TString {
		// One-part names in Spark's text resolve against its recorded
		// namespace, not the view's database.
		if sdb, ok := sparkDB(params); ok {
			seen = true
			if x, internal, explicit := t.r.splitDB(sdb); explicit && x == c {
				sdb = internal
			}
			v.DB = sdb
		}
		n, fs := t.rewriteParams(d, c, params, d == Inward && hasOnePart(tbl))
		out.Changed += n
		for _, f := range fs {
			finding(f)
		}
	}
	for _, id := range [...]int16{tableFieldViewExpandedText, tableFieldViewOriginalText} {
		if id == tableFieldViewOriginalText && t.o.PreserveOriginalText {
			continue
		}
		f := tbl.Field(id)
		if f == nil || f.Type != wire.TString || len(f.Str) == 0 {
			continue
		}
		seen = true
		// Options.Report is called by Rewrite itself.
		res, err := t.r.Rewrite(d, v, string(f.Str))
		if err != nil {
			return out, err
		}
		if res.Changed > 0 {
			f.Str = []byte(res.Text)
			out.Changed += res.Changed
		}
		out.Findings = append(out.Findings, res.Findings...)
	}
	if seen {
		t.o.Metrics.observe(c.Name, d, out)
	}
	return out, nil
}

// param reads one entry of a Table's parameters map.
func param(params *wire.Value, k string) (string, bool) {
	for i := 0; i+1 < len(params.Elems); i += 2 {
		if string(params.Elems[i].Str) == k {
			return string(params.Elems[i+1].Str), true
		}
	}
	return "", false
}

// icebergViewType is the table_type parameter of an Iceberg view.
const icebergViewType = "ICEBERG-VIEW"

// isIcebergView: an Iceberg view (parameter table_type=ICEBERG-VIEW) keeps
// its SQL in its metadata file, in the dialect and with the names of the
// engine that wrote it through an Iceberg catalog (a non-default catalog's
// REST prefix names that catalog's databases without a prefix); the view
// text of its metastore record is a copy no Hive resolves. Neither direction
// touches it: judged by the proxy's Thrift names, a correct Iceberg view
// would be refused or altered.
func isIcebergView(tbl *wire.Value) bool {
	params := tbl.Field(tableFieldParameters)
	if params == nil || params.Type != wire.TMap || params.KeyType != wire.TString || params.ElemType != wire.TString {
		return false
	}
	typ, _ := param(params, "table_type")
	return strings.EqualFold(typ, icebergViewType)
}

// sparkDB returns the database Spark resolves one-part names against.
func sparkDB(params *wire.Value) (string, bool) {
	get := func(k string) (string, bool) { return param(params, k) }
	if n, ok := get(sparkNumParts); ok {
		p0, _ := get(sparkPartPrefix + "0")
		p1, ok1 := get(sparkPartPrefix + "1")
		if n == "2" && strings.EqualFold(p0, sparkSessionCatalog) && ok1 {
			return p1, true
		}
		return "", false
	}
	return get(sparkDefaultDB)
}

// hasOnePart reports whether a view text of tbl names a table by one part
// (not a CTE): only such names resolve against Spark's current namespace.
func hasOnePart(tbl *wire.Value) bool {
	for _, id := range [...]int16{tableFieldViewExpandedText, tableFieldViewOriginalText} {
		f := tbl.Field(id)
		if f == nil || f.Type != wire.TString {
			continue
		}
		text := string(f.Str)
		for _, ref := range scan(text, lex(text)) {
			if len(ref.parts) == 1 && !ref.cte {
				return true
			}
		}
	}
	return false
}

// rewriteParams rewrites the database of Spark's current namespace. Inward,
// a namespace of another catalog is a cross-catalog reference only when
// onePart (a one-part table name resolves against it); otherwise it changes
// nothing the view reads (Spark records the session's current database even
// for a fully qualified view), and is left as it is and reported.
func (t *TableRewriter) rewriteParams(d Direction, c *Catalog, params *wire.Value, onePart bool) (int, []Finding) {
	var dbIdx = -1
	numParts, part0 := "", ""
	for i := 0; i+1 < len(params.Elems); i += 2 {
		switch k := string(params.Elems[i].Str); k {
		case sparkNumParts:
			numParts = string(params.Elems[i+1].Str)
		case sparkPartPrefix + "0":
			part0 = string(params.Elems[i+1].Str)
		case sparkPartPrefix + "1", sparkDefaultDB:
			if k == sparkDefaultDB && dbIdx >= 0 {
				continue
			}
			dbIdx = i + 1
		}
	}
	if dbIdx < 0 {
		return 0, nil
	}
	key := string(params.Elems[dbIdx-1].Str)
	if key != sparkDefaultDB && !(numParts == "2" && strings.EqualFold(part0, sparkSessionCatalog)) {
		return 0, nil // a namespace of another Spark catalog: not ours
	}
	val := string(params.Elems[dbIdx].Str)
	edits, f := t.r.twoPart(d, c, name{val: val, ok: true}, func(s string) []edit { return []edit{{with: s}} })
	if f != nil {
		f.Ref, f.Detail = key+"="+val, f.Detail+" (Spark view property)"
		if f.Reason == CrossCatalog && d == Inward && !onePart {
			f.Reason = Unclassified
			f.Detail += "; the view names every table with its database, so this namespace resolves nothing"
		}
		return 0, []Finding{*f}
	}
	if len(edits) == 0 {
		return 0, nil
	}
	params.Elems[dbIdx].Str = []byte(edits[0].with)
	return 1, nil
}

// Metrics of the view rewrite.
type Metrics struct {
	rewrites *prometheus.CounterVec
	findings *prometheus.CounterVec
}

// Metric names.
const (
	MetricViewRewrites   = "hms_proxy_view_text_rewrites_total"
	MetricViewUnresolved = "hms_proxy_view_text_unresolved_references_total"
)

// NewMetrics creates the view rewrite metrics and registers them with reg
// (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		rewrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricViewRewrites,
			Help: "View definitions (Table objects with view SQL or Spark view properties) seen by the view SQL rewrite, by catalog, direction (inward, outward) and result (rewritten, unchanged).",
		}, []string{"catalog", "direction", "result"}),
		findings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricViewUnresolved,
			Help: "Table references in view SQL left unchanged because they could not be classified (unclassified) or name another catalog (cross_catalog), by catalog and direction.",
		}, []string{"catalog", "direction", "reason"}),
	}
	if reg != nil {
		reg.MustRegister(m.rewrites, m.findings)
	}
	return m
}

func (m *Metrics) observe(catalog string, d Direction, r TableResult) {
	if m == nil {
		return
	}
	res := "unchanged"
	if r.Changed > 0 {
		res = "rewritten"
	}
	m.rewrites.WithLabelValues(catalog, d.String(), res).Inc()
	for _, f := range r.Findings {
		m.findings.WithLabelValues(catalog, d.String(), f.Reason.String()).Inc()
	}
}
