// Package proxybench runs hms-proxy in-process, assembled exactly as
// cmd/hms-proxy assembles it (app), in front of an instant backend
// (the benchmark's load fixture), for profiling and allocation counts; and
// builds synthetic replies for that backend when no real metastore recorded
// them.
package proxybench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/app"
	"github.com/hms-proxy/hms-proxy/bench/instant"
	"github.com/hms-proxy/hms-proxy/bench/msg"
	"github.com/hms-proxy/hms-proxy/bench/peer"
	"github.com/hms-proxy/hms-proxy/bench/workload"
	"github.com/hms-proxy/hms-proxy/configs"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// ProxyConfig describes one benchmark proxy.
type ProxyConfig struct {
	Port, MgmtPort int
	// Backends: one URI per catalog (catalog1 is the default); the same URI
	// may serve several catalogs.
	Backends []string
	PoolSize int
	Audit    bool
	Dir      string            // audit file goes here
	Extra    map[string]string // further keys (e.g. the database list cache)
}

// Props returns the hms-proxy.properties of a benchmark proxy. Everything not
// set here keeps the proxy's defaults (audit on, INFO logging, 600 s socket
// timeout, ...); the pool is sized to the benchmark's top concurrency so the
// proxy opens as many backend sessions as the direct client does.
func Props(c ProxyConfig) map[string]string {
	p := map[string]string{
		"server.bind-host":     "127.0.0.1",
		"server.port":          strconv.Itoa(c.Port),
		"management.enabled":   "true",
		"management.bind-host": "127.0.0.1",
		"management.port":      strconv.Itoa(c.MgmtPort),
		"logging.level":        "WARN",
		"audit.enabled":        strconv.FormatBool(c.Audit),
	}
	if c.Audit {
		p["audit.file"] = filepath.Join(c.Dir, "audit.log")
	}
	var names []string
	for i, uri := range c.Backends {
		name := "catalog" + strconv.Itoa(i+1)
		names = append(names, name)
		p["catalog."+name+".conf.hive.metastore.uris"] = uri
		p["catalog."+name+".shared-session-pool-size"] = strconv.Itoa(c.PoolSize)
		// runtime-profile: the default, Apache 3.1.3, whose schema the
		// instant backend's replies follow.
	}
	p["catalogs"] = strings.Join(names, ",")
	p["routing.default-catalog"] = "catalog1"
	if len(names) > 1 {
		p["synthetic-read-lock.store.mode"] = "IN_MEMORY" // one proxy instance
	}
	for k, v := range c.Extra {
		p[k] = v
	}
	return p
}

// PropsText renders props as a .properties file.
func PropsText(p map[string]string) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# written by hms-bench (make bench); do not edit\n")
	for _, k := range keys {
		b.WriteString(k + "=" + p[k] + "\n")
	}
	return b.String()
}

// Start builds and starts an in-process proxy; stop it with a.Shutdown.
func Start(props map[string]string, log io.Writer) (*app.App, error) {
	cfg, err := configs.Parse(props)
	if err != nil {
		return nil, fmt.Errorf("proxy config: %w", err)
	}
	if log == nil {
		log = io.Discard
	}
	a, err := app.Build(cfg, slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return nil, fmt.Errorf("proxy build: %w", err)
	}
	if err := a.Start(); err != nil {
		return nil, fmt.Errorf("proxy start: %w", err)
	}
	return a, nil
}

// FreePort asks the kernel for a free loopback port.
func FreePort() (int, error) { return peer.FreePort() }

// SyntheticReplies builds, without a metastore, the replies a Hive 3.1.3
// metastore gives to every workload's calls on data d (same shapes: a
// 20-column table, 1,000 six-column partitions, catName "hive" on every
// object so the proxy has the same names to rewrite).
func SyntheticReplies(d workload.Data) (instant.Replies, error) {
	hive := "hive"
	owner := thriftgen.PrincipalType_USER
	table := func(name string, cols int, partitioned bool) *thriftgen.Table {
		t := workload.Table(d.DB, name, cols, partitioned)
		t.CatName = &hive
		t.OwnerType = &owner
		t.CreateTime = 1764460800
		t.Parameters["transient_lastDdlTime"] = "1764460800"
		t.Parameters["numFiles"] = "0"
		t.Parameters["totalSize"] = "0"
		t.Sd.Location = "file:/warehouse/" + d.DB + ".db/" + name
		t.Temporary = new(bool)
		t.RewriteEnabled = new(bool)
		return t
	}
	part := func(i int) *thriftgen.Partition {
		v := workload.PartValue(i)
		p := workload.Partition(d.DB, d.TableParts, v, workload.PartitionedCols)
		p.CatName = &hive
		p.CreateTime = 1764460800
		p.Sd.Location = "file:/warehouse/" + d.DB + ".db/" + d.TableParts + "/p=" + v
		p.Parameters["transient_lastDdlTime"] = "1764460800"
		return p
	}
	var all, some []*thriftgen.Partition
	for i := 0; i < workload.Partitions; i++ {
		all = append(all, part(i))
		if i%(workload.Partitions/workload.ByNames) == 0 {
			some = append(some, part(i))
		}
	}
	tables := []string{d.TableGet, d.TableParts}
	for i := 0; i < workload.ListTables; i++ {
		tables = append(tables, fmt.Sprintf("t_list_%02d", i))
	}
	for _, k := range []int{1, 8, 64} {
		tables = append(tables, d.AddTable(k))
	}
	var metas []*thriftgen.TableMeta
	for _, t := range tables {
		metas = append(metas, &thriftgen.TableMeta{DbName: d.DB, TableName: t, TableType: "EXTERNAL_TABLE", CatName: &hive})
	}
	added := int32(workload.PartsPerAdd)
	r := instant.Replies{}
	add := func(method string, res thrift.TStruct) error {
		b, err := msg.EncodeReply(method, res)
		if err != nil {
			return err
		}
		r[method] = b
		return nil
	}
	steps := []struct {
		m string
		r thrift.TStruct
	}{
		{"get_table", &thriftgen.GetTableMethodResult{Success: table(d.TableGet, workload.TableColumns, false)}},
		{"get_all_databases", &thriftgen.GetAllDatabasesResult{Success: []string{"default", d.DB}}},
		{"get_databases", &thriftgen.GetDatabasesResult{Success: []string{d.DB}}},
		{"get_table_meta", &thriftgen.GetTableMetaResult{Success: metas}},
		{"get_all_tables", &thriftgen.GetAllTablesResult{Success: tables}},
		{"get_partitions_by_names", &thriftgen.GetPartitionsByNamesMethodResult{Success: some}},
		{"get_partitions", &thriftgen.GetPartitionsResult{Success: all}},
		{"create_table", &thriftgen.CreateTableResult{}},
		{"drop_table", &thriftgen.DropTableResult{}},
		{"add_partitions", &thriftgen.AddPartitionsMethodResult{Success: &added}},
	}
	for _, s := range steps {
		if err := add(s.m, s.r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// timeoutCtx is a 10-second context for shutdowns.
func timeoutCtx(tb interface{ Cleanup(func()) }) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	tb.Cleanup(cancel)
	return ctx
}
