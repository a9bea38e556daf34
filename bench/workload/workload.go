// Package workload defines the benchmark's Hive Metastore workloads: the data
// each needs on a real metastore, the pre-encoded requests the load generator
// sends, and synthetic replies for the instant backend when no metastore is
// at hand (the Go micro-benchmark).
package workload

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/bench/load"
	"github.com/hms-proxy/hms-proxy/bench/msg"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Workload names (as they appear in the results).
const (
	GetTable             = "get_table"
	GetAllDatabases      = "get_all_databases"
	GetAllTables         = "get_all_tables"
	GetPartitionsByNames = "get_partitions_by_names"
	GetPartitions        = "get_partitions"
	CreateDropTable      = "create_table+drop_table"
	AddPartitions        = "add_partitions"
	FanOutDatabases      = "fanout_get_all_databases"
	FanOutGetDatabases   = "fanout_get_databases"  // get_databases(DBPattern)
	FanOutTableMeta      = "fanout_get_table_meta" // get_table_meta("*", "*", [])
)

// All lists every workload in report order.
var All = []string{GetTable, GetAllDatabases, GetAllTables, GetPartitionsByNames, GetPartitions,
	CreateDropTable, AddPartitions, FanOutDatabases, FanOutGetDatabases, FanOutTableMeta}

// FanOuts are the workloads whose call a multi-catalog proxy sends to every
// catalog and merges; through a 1-catalog proxy, or straight to a
// metastore, the same request is one call.
var FanOuts = []string{FanOutDatabases, FanOutGetDatabases, FanOutTableMeta}

// IsFanOut reports whether w is one of FanOuts.
func IsFanOut(w string) bool { return strings.HasPrefix(w, "fanout_") }

// DBPattern is the get_databases pattern of FanOutGetDatabases, as Spark's
// SHOW DATABASES LIKE 'hmsbench*' sends it: on the default catalog it
// matches the benchmark's database.
const DBPattern = "hmsbench*"

// Sizes of the prepared data.
const (
	TableColumns    = 20   // columns of the get_table table
	Partitions      = 1000 // partitions of the partitioned table
	ByNames         = 100  // partition names per get_partitions_by_names
	PartsPerAdd     = 100  // partitions per add_partitions call
	ListTables      = 20   // extra tables so get_all_tables lists a realistic handful
	PartitionedCols = 6    // data columns of the partitioned tables
)

// Data names the objects the workloads use in one database.
type Data struct {
	DB          string
	TableGet    string // 20 columns
	TableParts  string // 1,000 partitions p=p0000..p0999
	AddTablePfx string // add_partitions targets: <pfx>_c<concurrency>
}

// NewData names the objects of a run (db unique per run).
func NewData(runID string) Data {
	return Data{DB: "hmsbench_" + runID, TableGet: "t_get", TableParts: "t_parts", AddTablePfx: "t_add"}
}

// AddTable is the add_partitions target table for a concurrency level.
func (d Data) AddTable(conc int) string { return d.AddTablePfx + "_c" + strconv.Itoa(conc) }

func sd(cols int) *thriftgen.StorageDescriptor {
	s := &thriftgen.StorageDescriptor{
		InputFormat:  "org.apache.hadoop.mapred.TextInputFormat",
		OutputFormat: "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
		SerdeInfo: &thriftgen.SerDeInfo{SerializationLib: "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
			Parameters: map[string]string{"serialization.format": "1"}},
		Parameters: map[string]string{}, BucketCols: []string{}, SortCols: []*thriftgen.Order{}, NumBuckets: -1}
	types := []string{"bigint", "string", "int", "double", "timestamp", "decimal(18,2)", "boolean", "date"}
	for i := 0; i < cols; i++ {
		s.Cols = append(s.Cols, &thriftgen.FieldSchema{Name: fmt.Sprintf("col_%02d", i), Type: types[i%len(types)],
			Comment: "benchmark column " + strconv.Itoa(i)})
	}
	return s
}

// Table builds an external table of the benchmark (cols columns, optional
// partition key "p").
func Table(db, name string, cols int, partitioned bool) *thriftgen.Table {
	t := &thriftgen.Table{TableName: name, DbName: db, Owner: "hmsbench", TableType: "EXTERNAL_TABLE",
		Parameters: map[string]string{"EXTERNAL": "TRUE", "comment": "hms-proxy benchmark"},
		Sd:         sd(cols), PartitionKeys: []*thriftgen.FieldSchema{}}
	if partitioned {
		t.PartitionKeys = []*thriftgen.FieldSchema{{Name: "p", Type: "string"}}
	}
	return t
}

// Partition builds one partition of table with value v.
func Partition(db, table, v string, cols int) *thriftgen.Partition {
	return &thriftgen.Partition{Values: []string{v}, DbName: db, TableName: table, Sd: sd(cols),
		Parameters: map[string]string{}}
}

// PartValue is the value of the i-th prepared partition.
func PartValue(i int) string { return fmt.Sprintf("p%04d", i) }

// ByNamesList is the get_partitions_by_names argument: every 10th partition.
func ByNamesList() []string {
	names := make([]string, 0, ByNames)
	for i := 0; i < ByNames; i++ {
		names = append(names, "p="+PartValue(i*(Partitions/ByNames)))
	}
	return names
}

// Client is a typed HMS client over a buffered socket.
type Client struct {
	*thriftgen.Client
	trans thrift.TTransport
}

// Dial opens a typed client to addr (host:port); timeout bounds each call.
func Dial(addr string, timeout time.Duration) (*Client, error) {
	cfg := &thrift.TConfiguration{ConnectTimeout: 10 * time.Second, SocketTimeout: timeout}
	trans := thrift.NewTBufferedTransport(thrift.NewTSocketConf(addr, cfg), 64<<10)
	if err := trans.Open(); err != nil {
		return nil, fmt.Errorf("connect %s: %w", addr, err)
	}
	p := thrift.NewTBinaryProtocolConf(trans, cfg)
	return &Client{Client: thriftgen.NewClient(thrift.NewTStandardClient(p, p)), trans: trans}, nil
}

// Close closes the connection.
func (c *Client) Close() { c.trans.Close() }

// Prepare creates the database and every table the workloads read, with the
// 1,000 partitions (10 add_partitions calls of 100), and the add_partitions
// targets for the given concurrency levels.
func Prepare(ctx context.Context, c *Client, d Data, concs []int) error {
	if err := c.CreateDatabase(ctx, &thriftgen.Database{Name: d.DB, Description: "hms-proxy benchmark data (dropped at the end of the run)"}); err != nil {
		return fmt.Errorf("create database %s: %w", d.DB, err)
	}
	if err := c.CreateTable(ctx, Table(d.DB, d.TableGet, TableColumns, false)); err != nil {
		return fmt.Errorf("create table %s.%s: %w", d.DB, d.TableGet, err)
	}
	for i := 0; i < ListTables; i++ {
		n := fmt.Sprintf("t_list_%02d", i)
		if err := c.CreateTable(ctx, Table(d.DB, n, 4, false)); err != nil {
			return fmt.Errorf("create table %s.%s: %w", d.DB, n, err)
		}
	}
	if err := c.CreateTable(ctx, Table(d.DB, d.TableParts, PartitionedCols, true)); err != nil {
		return fmt.Errorf("create table %s.%s: %w", d.DB, d.TableParts, err)
	}
	for b := 0; b < Partitions/PartsPerAdd; b++ {
		parts := make([]*thriftgen.Partition, 0, PartsPerAdd)
		for i := 0; i < PartsPerAdd; i++ {
			parts = append(parts, Partition(d.DB, d.TableParts, PartValue(b*PartsPerAdd+i), PartitionedCols))
		}
		n, err := c.AddPartitions(ctx, parts)
		if err != nil {
			return fmt.Errorf("add partitions %d.. to %s.%s: %w", b*PartsPerAdd, d.DB, d.TableParts, err)
		}
		if n != PartsPerAdd {
			return fmt.Errorf("add partitions to %s.%s: metastore added %d of %d", d.DB, d.TableParts, n, PartsPerAdd)
		}
	}
	for _, k := range concs {
		if err := c.CreateTable(ctx, Table(d.DB, d.AddTable(k), PartitionedCols, true)); err != nil {
			return fmt.Errorf("create table %s.%s: %w", d.DB, d.AddTable(k), err)
		}
	}
	return nil
}

// Markers replaced per operation (same length as the values put there).
const (
	nameMarker  = "bcxxxxxxxxxxxxxx" // create_table+drop_table: "bc" + 14 digits
	nameDigits  = 14
	valueMarker = "XXXXXXXXXXXX" // add_partitions: every value is <3-digit index><12 digits>
	valueDigits = 12
)

// Requests holds the encoded requests of every workload for one database.
type Requests struct {
	Static    map[string][]byte // workloads that send one constant request
	Create    *msg.Template
	Drop      *msg.Template
	AddByConc map[int]*msg.Template
}

// Encode builds every request.
func Encode(d Data, concs []int) (*Requests, error) {
	r := &Requests{Static: map[string][]byte{}, AddByConc: map[int]*msg.Template{}}
	add := func(name, method string, args thrift.TStruct) error {
		b, err := msg.Encode(method, args)
		if err != nil {
			return err
		}
		r.Static[name] = b
		return nil
	}
	if err := add(GetTable, "get_table", &thriftgen.GetTableArgs{Dbname: d.DB, TblName: d.TableGet}); err != nil {
		return nil, err
	}
	if err := add(GetAllDatabases, "get_all_databases", &thriftgen.GetAllDatabasesArgs{}); err != nil {
		return nil, err
	}
	r.Static[FanOutDatabases] = r.Static[GetAllDatabases]
	if err := add(FanOutGetDatabases, "get_databases", &thriftgen.GetDatabasesArgs{Pattern: DBPattern}); err != nil {
		return nil, err
	}
	if err := add(FanOutTableMeta, "get_table_meta", &thriftgen.GetTableMetaArgs{DbPatterns: "*", TblPatterns: "*", TblTypes: []string{}}); err != nil {
		return nil, err
	}
	if err := add(GetAllTables, "get_all_tables", &thriftgen.GetAllTablesArgs{DbName: d.DB}); err != nil {
		return nil, err
	}
	if err := add(GetPartitionsByNames, "get_partitions_by_names", &thriftgen.GetPartitionsByNamesArgs{DbName: d.DB, TblName: d.TableParts, Names: ByNamesList()}); err != nil {
		return nil, err
	}
	if err := add(GetPartitions, "get_partitions", &thriftgen.GetPartitionsArgs{DbName: d.DB, TblName: d.TableParts, MaxParts: -1}); err != nil {
		return nil, err
	}
	b, err := msg.Encode("create_table", &thriftgen.CreateTableArgs{Tbl: Table(d.DB, nameMarker, TableColumns, false)})
	if err != nil {
		return nil, err
	}
	if r.Create, err = msg.NewTemplate(b, nameMarker); err != nil {
		return nil, err
	}
	if b, err = msg.Encode("drop_table", &thriftgen.DropTableArgs{Dbname: d.DB, Name: nameMarker, DeleteData: false}); err != nil {
		return nil, err
	}
	if r.Drop, err = msg.NewTemplate(b, nameMarker); err != nil {
		return nil, err
	}
	for _, k := range concs {
		if r.AddByConc[k], err = addTemplate(d.DB, d.AddTable(k)); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func addTemplate(db, table string) (*msg.Template, error) {
	parts := make([]*thriftgen.Partition, 0, PartsPerAdd)
	for i := 0; i < PartsPerAdd; i++ {
		parts = append(parts, Partition(db, table, fmt.Sprintf("%03d%s", i, valueMarker), PartitionedCols))
	}
	b, err := msg.Encode("add_partitions", &thriftgen.AddPartitionsArgs{NewParts: parts})
	if err != nil {
		return nil, err
	}
	t, err := msg.NewTemplate(b, valueMarker)
	if err != nil {
		return nil, err
	}
	if len(t.Spots) != PartsPerAdd {
		return nil, fmt.Errorf("add_partitions template: %d value markers, want %d", len(t.Spots), PartsPerAdd)
	}
	return t, nil
}

// Methods are the RPC names a workload sends (the instant backend needs a
// reply for each).
func Methods(w string) []string {
	switch w {
	case CreateDropTable:
		return []string{"create_table", "drop_table"}
	case FanOutDatabases:
		return []string{"get_all_databases"}
	case FanOutGetDatabases: // the default catalog's leg, and the others' database lists
		return []string{"get_databases", "get_all_databases"}
	case FanOutTableMeta:
		return []string{"get_table_meta"}
	}
	return []string{w}
}

// RPCs is the number of calls one operation of the workload makes.
func RPCs(w string) int {
	if w == CreateDropTable {
		return 2
	}
	return 1
}

// Ops holds the unique-value counters shared by every worker of a run.
type Ops struct {
	names  load.Counter
	values load.Counter
}

// NewOps returns fresh counters.
func NewOps() *Ops {
	o := &Ops{}
	o.names.Width = nameDigits
	o.values.Width = valueDigits
	return o
}

// Op returns a new operation of workload w for one worker at concurrency conc.
func (o *Ops) Op(r *Requests, w string, conc int) (load.Op, error) {
	switch w {
	case CreateDropTable:
		return &load.Unique{Templates: []*msg.Template{r.Create, r.Drop},
			Next: func(dst []byte) []byte { return o.names.Next(append(dst, "bc"...)) }}, nil
	case AddPartitions:
		t := r.AddByConc[conc]
		if t == nil {
			return nil, fmt.Errorf("no add_partitions table for concurrency %d", conc)
		}
		return &load.Unique{Templates: []*msg.Template{t}, Next: o.values.Next}, nil
	}
	req, ok := r.Static[w]
	if !ok {
		return nil, fmt.Errorf("unknown workload %q (known: %s)", w, strings.Join(All, ", "))
	}
	return load.NewStatic(req)
}
