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
// Locations are deleted through the proxy's file layer (package fileio):
// local paths (through an os.Root opened at the allowed prefix), hdfs://
// (one recursive delete at the NameNode, as the dropping user where the
// catalog impersonates) and s3:// / s3a:// (a listed, bounded batch delete).
// Any other scheme is refused at start.
package purge

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hms-proxy/hms-proxy/fileio"
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
	// Files opens the file system of a location in a catalog (the
	// proxy's fileio.Resolver); nil deletes local paths only.
	Files func(catalog, location string) (fileio.IO, error)
	// Timeout bounds one purge (default 10 minutes).
	Timeout time.Duration
	Log     func(msg string)
	Metrics *Metrics
}

// Purger is the background purge pool.
type Purger struct {
	o        Options
	prefixes map[string][]location // catalog (lower case) → allowed prefixes
	jobs     chan job
	mu       sync.Mutex
	closed   bool
	stop     chan struct{} // closed by Close: workers skip what is queued
	wg       sync.WaitGroup
}

type job struct {
	catalog, table, user string
	dir, prefix          location
}

// New validates the options and starts the workers (none when Off). A
// catalog with prefixes under Off, a BEST_EFFORT without any prefix, and any
// prefix that is not an absolute location of a supported scheme are errors.
func New(o Options) (*Purger, error) {
	p := &Purger{o: o, prefixes: map[string][]location{}, stop: make(chan struct{})}
	if p.o.Files == nil {
		p.o.Files = func(_, loc string) (fileio.IO, error) {
			if _, err := fileio.LocalPath(loc); err != nil {
				return nil, err
			}
			return fileio.Local{}, nil
		}
	}
	if p.o.Timeout <= 0 {
		p.o.Timeout = 10 * time.Minute
	}
	for cat, list := range o.Prefixes {
		key := fmt.Sprintf("catalog.%s.conf.hms.proxy.external-table-drop-purge.allowed-prefixes", cat)
		for _, raw := range list {
			raw = strings.TrimSpace(raw)
			if raw == "" {
				continue
			}
			dir, err := parseLocation(raw)
			if err != nil {
				return nil, fmt.Errorf("%s: %q: %v", key, raw, err)
			}
			if dir.path == "/" {
				return nil, fmt.Errorf("%s: %q allows the whole file system", key, raw)
			}
			if _, err := p.o.Files(cat, dir.String()); err != nil {
				return nil, fmt.Errorf("%s: %q: %v", key, raw, err)
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

// location is a location split for comparison: the scheme ("file" for a
// local path), the authority (NameNode, name service or bucket) and a clean
// absolute path.
type location struct{ scheme, authority, path string }

func (l location) String() string { return l.scheme + "://" + l.authority + l.path }

// parseLocation reads a prefix or a table location. Relative paths, ".."
// and "." segments, query or fragment parts, file URLs naming another host
// and schemes without a file system here are refused.
func parseLocation(raw string) (location, error) {
	if strings.HasPrefix(raw, "/") {
		raw = "file://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return location{}, err
	}
	l := location{scheme: strings.ToLower(u.Scheme), authority: strings.ToLower(u.Host)}
	switch l.scheme {
	case "file":
		if l.authority != "" && l.authority != "localhost" {
			return location{}, fmt.Errorf("file URL with host %q", u.Host)
		}
		l.authority = ""
	case "hdfs", "s3", "s3a":
		if l.authority == "" {
			return location{}, fmt.Errorf("%s:// location without a NameNode, name service or bucket", l.scheme)
		}
	case "":
		return location{}, fmt.Errorf("not an absolute location")
	default:
		return location{}, fmt.Errorf("scheme %q is not supported: the purge deletes file, hdfs, s3 and s3a locations", u.Scheme)
	}
	switch {
	case u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return location{}, fmt.Errorf("query or fragment in a path")
	case !strings.HasPrefix(u.Path, "/"):
		return location{}, fmt.Errorf("not an absolute path")
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == ".." || seg == "." {
			return location{}, fmt.Errorf("%q segment in the path", seg)
		}
	}
	l.path = path.Clean(u.Path)
	return l, nil
}

// under reports whether dir is strictly below prefix, segment by segment
// and on the same file system: /data/ext allows /data/ext/t but not
// /data/external or /data/ext itself.
func under(dir, prefix location) bool {
	return dir.scheme == prefix.scheme && dir.authority == prefix.authority &&
		strings.HasPrefix(dir.path, prefix.path+"/") && len(dir.path) > len(prefix.path)+1
}

// Decision says whether a dropped table's data will be purged, and why not.
type Decision struct {
	OK     bool
	Dir    string // the directory to delete
	Prefix string // the allow-listed directory it is under
	Reason string // why not

	dir, prefix location
}

// Decide checks a Table (as read before the drop) against the rules: the
// mode, an EXTERNAL_TABLE with external.table.purge=true, a location under
// one of the catalog's prefixes.
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
	dir, err := parseLocation(loc)
	if err != nil {
		return Decision{Reason: fmt.Sprintf("location %q: %v", loc, err)}
	}
	for _, pre := range p.prefixes[strings.ToLower(catalog)] {
		if under(dir, pre) {
			return Decision{OK: true, Dir: dir.String(), Prefix: pre.String(), dir: dir, prefix: pre}
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

// Submit queues the purge of a dropped table (see the package contract);
// user is who dropped it (HDFS deletes run as that user where the catalog
// impersonates; "" for the proxy itself). It returns the decision; a table that is not eligible is logged and counted,
// not an error. A full queue or a closed purger is an error (the purge is
// skipped and logged).
func (p *Purger) Submit(catalog, table, user string, tbl *wire.Value) (Decision, error) {
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
	case p.jobs <- job{catalog: catalog, table: table, user: user, dir: d.dir, prefix: d.prefix}:
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
		if err := p.remove(j); err != nil {
			p.logf("%s: purge of %s (%s) in catalog %s failed: %v", name, j.table, j.dir, j.catalog, err)
			p.o.Metrics.inc(j.catalog, "failed")
			continue
		}
		p.logf("%s: purged %s (%s) in catalog %s", name, j.table, j.dir, j.catalog)
		p.o.Metrics.inc(j.catalog, "deleted")
	}
}

// remove deletes a job's directory through its file system, which keeps
// the deletion below the prefix (locally an os.Root opened at the prefix:
// no path component may leave it, a symlink is removed as a link and never
// followed).
func (p *Purger) remove(j job) error {
	ctx, cancel := context.WithTimeout(context.Background(), p.o.Timeout)
	defer cancel()
	ctx = fileio.WithUser(ctx, j.user)
	fs, err := p.o.Files(j.catalog, j.dir.String())
	if err != nil {
		return err
	}
	_, err = fs.RemoveTree(ctx, j.prefix.String(), j.dir.String())
	return err // a missing directory is reported, not silently "purged"
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
