// Package purge deletes the data of dropped external tables:
// federation.external-table-drop-purge.mode=BEST_EFFORT with the per-catalog
// allow-list catalog.<name>.conf.hms.proxy.external-table-drop-purge.allowed-prefixes.
//
// The caller's contract: Submit only after the backend metastore answered the
// drop_table (or drop_table_with_environment_context) successfully, with the
// Table as it was read before the drop. The deletion runs later in a small
// pool of workers (hms-proxy-drop-purge-N in the log); a failure is logged
// and counted and never undoes the metadata delete.
//
// Only local file:// locations are deleted here. hdfs:// (and every other
// scheme) is refused at start: there is no HDFS to test a client against in
// this project, so none is claimed.
package purge

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hms-proxy/hms-proxy/wire"
)

// Mode is federation.external-table-drop-purge.mode.
type Mode uint8

const (
	// Off: nothing is deleted by the proxy.
	Off Mode = iota
	// BestEffort: BEST_EFFORT.
	BestEffort
)

// ParseMode reads the mode; "" and DISABLED are Off.
func ParseMode(s string) (Mode, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "", "DISABLED":
		return Off, nil
	case "BEST_EFFORT":
		return BestEffort, nil
	}
	return 0, fmt.Errorf("federation.external-table-drop-purge.mode=%q: want BEST_EFFORT or DISABLED", s)
}

// Options configure a Purger.
type Options struct {
	Mode Mode
	// Prefixes per proxy catalog name: the allowed-prefixes of
	// catalog.<name>.conf.hms.proxy.external-table-drop-purge.allowed-prefixes.
	Prefixes map[string][]string
	Workers  int // default 2
	Queue    int // queued purges at most; default 64
	Log      func(msg string)
	Metrics  *Metrics
}

// Purger is the background purge pool.
type Purger struct {
	o        Options
	prefixes map[string][]string // catalog (lower case) → cleaned absolute directories
	jobs     chan job
	mu       sync.Mutex
	closed   bool
	stop     chan struct{} // closed by Close: workers skip what is queued
	wg       sync.WaitGroup
}

type job struct {
	catalog, table, dir, prefix string
}

// New validates the options and starts the workers (none when Off). A
// catalog with prefixes under Off, a BEST_EFFORT without any prefix, and any
// prefix that is not an absolute local file:// directory are errors.
func New(o Options) (*Purger, error) {
	p := &Purger{o: o, prefixes: map[string][]string{}, stop: make(chan struct{})}
	for cat, list := range o.Prefixes {
		key := fmt.Sprintf("catalog.%s.conf.hms.proxy.external-table-drop-purge.allowed-prefixes", cat)
		for _, raw := range list {
			raw = strings.TrimSpace(raw)
			if raw == "" {
				continue
			}
			dir, err := localDir(raw)
			if err != nil {
				return nil, fmt.Errorf("%s: %q: %v", key, raw, err)
			}
			if dir == "/" {
				return nil, fmt.Errorf("%s: %q allows the whole file system", key, raw)
			}
			p.prefixes[strings.ToLower(cat)] = append(p.prefixes[strings.ToLower(cat)], dir)
		}
	}
	switch {
	case o.Mode == Off && len(p.prefixes) > 0:
		return nil, fmt.Errorf("external-table-drop-purge allowed-prefixes are set but federation.external-table-drop-purge.mode is not BEST_EFFORT")
	case o.Mode == Off:
		return p, nil
	case len(p.prefixes) == 0:
		return nil, fmt.Errorf("federation.external-table-drop-purge.mode=BEST_EFFORT needs catalog.<name>.conf.hms.proxy.external-table-drop-purge.allowed-prefixes for at least one catalog")
	}
	if o.Workers <= 0 {
		p.o.Workers = 2
	}
	if o.Queue <= 0 {
		p.o.Queue = 64
	}
	p.jobs = make(chan job, p.o.Queue)
	for i := 0; i < p.o.Workers; i++ {
		p.wg.Add(1)
		go p.worker(fmt.Sprintf("hms-proxy-drop-purge-%d", i))
	}
	return p, nil
}

// localDir turns a prefix or location into a clean absolute local path.
// Relative paths, ".." segments, query or fragment parts and every scheme
// but file are refused.
func localDir(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	switch {
	case strings.EqualFold(u.Scheme, "hdfs") || strings.EqualFold(u.Scheme, "viewfs"):
		return "", fmt.Errorf("scheme %s is not supported: this build deletes only local file:// paths (an HDFS client is not built in)", u.Scheme)
	case !strings.EqualFold(u.Scheme, "file"):
		return "", fmt.Errorf("scheme %q is not supported: only file:// paths", u.Scheme)
	case u.Host != "" && u.Host != "localhost":
		return "", fmt.Errorf("file URL with host %q", u.Host)
	case u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("query or fragment in a path")
	case !strings.HasPrefix(u.Path, "/"):
		return "", fmt.Errorf("not an absolute path")
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == ".." || seg == "." {
			return "", fmt.Errorf("%q segment in the path", seg)
		}
	}
	return path.Clean(u.Path), nil
}

// under reports whether dir is strictly below prefix, segment by segment:
// /data/ext allows /data/ext/t but not /data/external or /data/ext itself.
func under(dir, prefix string) bool {
	return strings.HasPrefix(dir, prefix+"/") && len(dir) > len(prefix)+1
}

// Decision says whether a dropped table's data will be purged, and why not.
type Decision struct {
	OK     bool
	Dir    string // the directory to delete
	Prefix string // the allow-listed directory it is under
	Reason string // why not
}

// Decide checks a Table (as read before the drop) against the rules: the
// mode, an EXTERNAL_TABLE with external.table.purge=true, a file:// location
// under one of the catalog's prefixes.
func (p *Purger) Decide(catalog string, tbl *wire.Value) Decision {
	if p.o.Mode != BestEffort {
		return Decision{Reason: "federation.external-table-drop-purge.mode is not BEST_EFFORT"}
	}
	if t := tbl.Field(12).String(); t != "EXTERNAL_TABLE" {
		return Decision{Reason: "table type " + t + " is not EXTERNAL_TABLE"}
	}
	if v := stringParam(tbl.Field(9), "external.table.purge"); !strings.EqualFold(v, "true") {
		return Decision{Reason: "external.table.purge is not true"}
	}
	var loc string
	if sd := tbl.Field(7); sd != nil {
		loc = sd.Field(2).String()
	}
	if loc == "" {
		return Decision{Reason: "no location"}
	}
	dir, err := localDir(loc)
	if err != nil {
		return Decision{Reason: fmt.Sprintf("location %q: %v", loc, err)}
	}
	for _, pre := range p.prefixes[strings.ToLower(catalog)] {
		if under(dir, pre) {
			return Decision{OK: true, Dir: dir, Prefix: pre}
		}
	}
	return Decision{Reason: fmt.Sprintf("location %q is under no allowed prefix of catalog %s", loc, catalog)}
}

func stringParam(m *wire.Value, key string) string {
	if m == nil || m.Type != wire.TMap {
		return ""
	}
	for i := 0; i+1 < len(m.Elems); i += 2 {
		if string(m.Elems[i].Str) == key {
			return string(m.Elems[i+1].Str)
		}
	}
	return ""
}

// errClosed: Submit after Close.
var errClosed = errors.New("purge: shutting down, not accepted")

// Submit queues the purge of a dropped table (see the package contract). It
// returns the decision; a table that is not eligible is logged and counted,
// not an error. A full queue or a closed purger is an error (the purge is
// skipped and logged).
func (p *Purger) Submit(catalog, table string, tbl *wire.Value) (Decision, error) {
	d := p.Decide(catalog, tbl)
	if !d.OK {
		if p.o.Mode == BestEffort {
			p.logf("purge of %s in catalog %s skipped: %s", table, catalog, d.Reason)
			p.o.Metrics.inc(catalog, "not_allowed")
		}
		return d, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		p.logf("purge of %s (%s) in catalog %s skipped: the proxy is shutting down", table, d.Dir, catalog)
		p.o.Metrics.inc(catalog, "skipped_shutdown")
		return d, errClosed
	}
	select {
	case p.jobs <- job{catalog: catalog, table: table, dir: d.Dir, prefix: d.Prefix}:
		return d, nil
	default:
		p.logf("purge of %s (%s) in catalog %s skipped: %d purges already queued", table, d.Dir, catalog, p.o.Queue)
		p.o.Metrics.inc(catalog, "queue_full")
		return d, fmt.Errorf("purge queue full (%d)", p.o.Queue)
	}
}

func (p *Purger) worker(name string) {
	defer p.wg.Done()
	for j := range p.jobs {
		select {
		case <-p.stop:
			p.logf("%s: purge of %s (%s) in catalog %s skipped: the proxy is shutting down", name, j.table, j.dir, j.catalog)
			p.o.Metrics.inc(j.catalog, "skipped_shutdown")
			continue
		default:
		}
		if err := remove(j.prefix, j.dir); err != nil {
			p.logf("%s: purge of %s (%s) in catalog %s failed: %v", name, j.table, j.dir, j.catalog, err)
			p.o.Metrics.inc(j.catalog, "failed")
			continue
		}
		p.logf("%s: purged %s (%s) in catalog %s", name, j.table, j.dir, j.catalog)
		p.o.Metrics.inc(j.catalog, "deleted")
	}
}

// remove deletes dir below prefix through an os.Root opened at the prefix:
// no path component may leave the prefix, a symlink is removed as a link and
// never followed.
func remove(prefix, dir string) error {
	root, err := os.OpenRoot(prefix)
	if err != nil {
		return err
	}
	defer root.Close()
	rel := strings.TrimPrefix(dir, prefix+"/")
	if _, err := root.Lstat(rel); err != nil {
		return err // a missing directory is reported, not silently "purged"
	}
	return root.RemoveAll(rel)
}

// Close stops accepting purges; running ones finish (Close waits for them
// until ctx ends), queued ones are logged and skipped.
func (p *Purger) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed || p.jobs == nil {
		p.closed = true
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.stop)
	close(p.jobs)
	p.mu.Unlock()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("purge: running purges did not finish before the shutdown deadline: %w", ctx.Err())
	}
}

func (p *Purger) logf(format string, a ...any) {
	if p.o.Log != nil {
		p.o.Log(fmt.Sprintf(format, a...))
	}
}

// MetricPurges counts purge outcomes.
const MetricPurges = "hms_proxy_external_table_purge_total"

// Metrics of the purge; nil counts nothing.
type Metrics struct{ purges *prometheus.CounterVec }

// NewMetrics creates and registers (reg may be nil) the metric.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{purges: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricPurges,
		Help: "Data purges after a successful DROP TABLE of an external table, by catalog and result: deleted, failed, not_allowed (not eligible or outside the allow-list), queue_full, skipped_shutdown.",
	}, []string{"catalog", "result"})}
	if reg != nil {
		reg.MustRegister(m.purges)
	}
	return m
}

func (m *Metrics) inc(catalog, result string) {
	if m != nil {
		m.purges.WithLabelValues(catalog, result).Inc()
	}
}
