package hdptest

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// catalogName is the only catalog of the double (HMS's default catalog).
const catalogName = "hive"

// store is the double's in-memory metastore: databases, their tables and
// the tables' partitions. Objects are kept as private copies.
type store struct {
	mu  sync.Mutex
	dbs map[string]*dbEntry
}

type dbEntry struct {
	db     *thriftgen.Database
	tables map[string]*tableEntry
}

type tableEntry struct {
	tbl   *thriftgen.Table
	parts map[string]*thriftgen.Partition // by partition name k=v/k2=v2
}

func newStore() *store { return &store{dbs: map[string]*dbEntry{}} }

// clone deep-copies a generated struct through its own codec.
func clone[T any, PT interface {
	*T
	thrift.TStruct
}](v PT) (PT, error) {
	if v == nil {
		return nil, nil
	}
	ctx := context.Background()
	buf := thrift.NewTMemoryBuffer()
	p := thrift.NewTBinaryProtocolConf(buf, nil)
	if err := v.Write(ctx, p); err != nil {
		return nil, err
	}
	out := PT(new(T))
	if err := out.Read(ctx, p); err != nil {
		return nil, err
	}
	return out, nil
}

// ---- test-side access ----------------------------------------------------

// Database returns a copy of a stored database, nil when absent.
func (s *Server) Database(name string) *thriftgen.Database {
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	e := s.store.dbs[strings.ToLower(name)]
	if e == nil {
		return nil
	}
	d, err := clone(e.db)
	if err != nil {
		panic(fmt.Sprintf("hdptest: copy of database %s: %v", name, err))
	}
	return d
}

// Table returns a copy of a stored table exactly as the double holds it
// (only fields of its profile), nil when absent.
func (s *Server) Table(db, name string) *thriftgen.Table {
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	e := s.store.table(db, name)
	if e == nil {
		return nil
	}
	t, err := clone(e.tbl)
	if err != nil {
		panic(fmt.Sprintf("hdptest: copy of table %s.%s: %v", db, name, err))
	}
	return t
}

// PutDatabase stores a database directly (test setup, no RPC).
func (s *Server) PutDatabase(d *thriftgen.Database) error {
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	return s.store.createDB(d)
}

// PutTable stores a table directly (test setup, no RPC); its database must
// exist.
func (s *Server) PutTable(t *thriftgen.Table) error {
	s.store.mu.Lock()
	defer s.store.mu.Unlock()
	return s.store.createTable(t)
}

// ---- store operations (caller holds mu) ------------------------------------

func (st *store) db(name string) (*dbEntry, error) {
	e := st.dbs[strings.ToLower(name)]
	if e == nil {
		return nil, noSuchObject("database %s.%s does not exist (test double)", catalogName, name)
	}
	return e, nil
}

func (st *store) table(db, name string) *tableEntry {
	e := st.dbs[strings.ToLower(db)]
	if e == nil {
		return nil
	}
	return e.tables[strings.ToLower(name)]
}

func (st *store) getTable(db, name string) (*tableEntry, error) {
	if t := st.table(db, name); t != nil {
		return t, nil
	}
	return nil, noSuchObject("%s.%s.%s table not found (test double)", catalogName, db, name)
}

func (st *store) createDB(d *thriftgen.Database) error {
	if d == nil || d.Name == "" {
		return &hmsError{typ: "InvalidObjectException", msg: "database without a name"}
	}
	name := strings.ToLower(d.Name)
	if st.dbs[name] != nil {
		return alreadyExists("Database %s already exists", name)
	}
	c, err := clone(d)
	if err != nil {
		return metaErr("test double cannot store database %s: %v", name, err)
	}
	c.Name = name
	if c.CatalogName == nil {
		cat := catalogName
		c.CatalogName = &cat
	}
	if c.LocationUri == "" {
		c.LocationUri = "file:/hdptest/warehouse/" + name + ".db"
	}
	st.dbs[name] = &dbEntry{db: c, tables: map[string]*tableEntry{}}
	return nil
}

func (st *store) dropDB(name string, cascade bool) error {
	e, err := st.db(name)
	if err != nil {
		return err
	}
	if len(e.tables) > 0 && !cascade {
		return invalidOperation("Database %s is not empty. One or more tables exist.", name)
	}
	delete(st.dbs, strings.ToLower(name))
	return nil
}

func (st *store) createTable(t *thriftgen.Table) error {
	if t == nil || t.TableName == "" {
		return &hmsError{typ: "InvalidObjectException", msg: "table without a name"}
	}
	e, err := st.db(t.DbName)
	if err != nil {
		return noSuchObject("The database %s.%s does not exist", catalogName, t.DbName)
	}
	name := strings.ToLower(t.TableName)
	if e.tables[name] != nil {
		return alreadyExists("Table %s.%s.%s already exists", catalogName, e.db.Name, name)
	}
	c, err := clone(t)
	if err != nil {
		return metaErr("test double cannot store table %s: %v", name, err)
	}
	c.TableName, c.DbName = name, e.db.Name
	if c.CatName == nil {
		cat := catalogName
		c.CatName = &cat
	}
	if c.CreateTime == 0 {
		c.CreateTime = int32(time.Now().Unix())
	}
	e.tables[name] = &tableEntry{tbl: c, parts: map[string]*thriftgen.Partition{}}
	return nil
}

func (st *store) alterTable(db, name string, nt *thriftgen.Table) error {
	old, err := st.getTable(db, name)
	if err != nil {
		return invalidOperation("alter is not possible: %v", err)
	}
	if nt == nil {
		return invalidOperation("alter of %s.%s without a new table", db, name)
	}
	c, err := clone(nt)
	if err != nil {
		return metaErr("test double cannot store table %s: %v", name, err)
	}
	e, _ := st.db(db)
	newDB, newName := strings.ToLower(c.DbName), strings.ToLower(c.TableName)
	if newDB == "" {
		newDB = e.db.Name
	}
	if newDB != e.db.Name {
		return invalidOperation("test double does not move tables between databases (%s to %s)", e.db.Name, newDB)
	}
	if newName == "" {
		newName = strings.ToLower(name)
	}
	c.DbName, c.TableName = newDB, newName
	if c.CatName == nil {
		c.CatName = old.tbl.CatName
	}
	delete(e.tables, strings.ToLower(name))
	e.tables[newName] = &tableEntry{tbl: c, parts: old.parts}
	return nil
}

func (st *store) dropTable(db, name string) error {
	if _, err := st.getTable(db, name); err != nil {
		return err
	}
	e, _ := st.db(db)
	delete(e.tables, strings.ToLower(name))
	return nil
}

func (st *store) copyTable(t *tableEntry) (*thriftgen.Table, error) {
	c, err := clone(t.tbl)
	if err != nil {
		return nil, metaErr("test double cannot copy table %s: %v", t.tbl.TableName, err)
	}
	return c, nil
}

// tableNames lists a database's tables matching an HMS name pattern.
func (st *store) tableNames(db, pattern string) ([]string, error) {
	e, err := st.db(db)
	if err != nil {
		return nil, metaErr("%v", err)
	}
	re, err := hmsPattern(pattern)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for n := range e.tables {
		if re.MatchString(n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (st *store) dbNames(pattern string) ([]string, error) {
	re, err := hmsPattern(pattern)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for n := range st.dbs {
		if re.MatchString(n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}

// hmsPattern turns an HMS name pattern ('*' any run, '|' alternatives,
// case-insensitive) into a regular expression.
func hmsPattern(p string) (*regexp.Regexp, error) {
	if p == "" {
		p = "*"
	}
	var alts []string
	for _, a := range strings.Split(p, "|") {
		alts = append(alts, strings.ReplaceAll(regexp.QuoteMeta(strings.TrimSpace(a)), `\*`, ".*"))
	}
	re, err := regexp.Compile("(?i)^(?:" + strings.Join(alts, "|") + ")$")
	if err != nil {
		return nil, metaErr("pattern %q: %v", p, err)
	}
	return re, nil
}

func partName(t *thriftgen.Table, values []string) (string, error) {
	if len(values) != len(t.PartitionKeys) {
		return "", metaErr("table %s.%s has %d partition keys, got %d values", t.DbName, t.TableName, len(t.PartitionKeys), len(values))
	}
	parts := make([]string, len(values))
	for i, k := range t.PartitionKeys {
		parts[i] = strings.ToLower(k.Name) + "=" + values[i]
	}
	return strings.Join(parts, "/"), nil
}

func (st *store) addPartition(p *thriftgen.Partition) (*thriftgen.Partition, error) {
	if p == nil {
		return nil, &hmsError{typ: "InvalidObjectException", msg: "no partition"}
	}
	t, err := st.getTable(p.DbName, p.TableName)
	if err != nil {
		return nil, &hmsError{typ: "InvalidObjectException", msg: err.Error()}
	}
	name, err := partName(t.tbl, p.Values)
	if err != nil {
		return nil, err
	}
	if t.parts[name] != nil {
		return nil, alreadyExists("Partition already exists: %s", name)
	}
	c, err := clone(p)
	if err != nil {
		return nil, metaErr("test double cannot store partition %s: %v", name, err)
	}
	c.DbName, c.TableName = t.tbl.DbName, t.tbl.TableName
	if c.CreateTime == 0 {
		c.CreateTime = int32(time.Now().Unix())
	}
	t.parts[name] = c
	return clone(c)
}

func (st *store) partitionsByNames(db, tbl string, names []string) ([]*thriftgen.Partition, error) {
	t, err := st.getTable(db, tbl)
	if err != nil {
		return nil, err
	}
	out := []*thriftgen.Partition{}
	for _, n := range names {
		if p := t.parts[n]; p != nil {
			c, err := clone(p)
			if err != nil {
				return nil, metaErr("test double cannot copy partition %s: %v", n, err)
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// ---- the methods -----------------------------------------------------------

// dispatch serves the methods the double implements; every other method of
// its profile is refused as not implemented, never answered with a fake
// success.
func (s *Server) dispatch(m *thriftgen.Method, args thrift.TStruct) (thrift.TStruct, error) {
	st := s.store
	st.mu.Lock()
	defer st.mu.Unlock()
	switch a := args.(type) {
	case *thriftgen.GetVersionArgs:
		v := s.runtime.Version
		return &thriftgen.GetVersionResult{Success: &v}, nil
	case *thriftgen.GetStatusArgs:
		alive := thriftgen.FbStatus_ALIVE
		return &thriftgen.GetStatusResult{Success: &alive}, nil

	case *thriftgen.GetAllDatabasesArgs:
		names, err := st.dbNames("*")
		return &thriftgen.GetAllDatabasesResult{Success: names}, err
	case *thriftgen.GetDatabasesArgs:
		names, err := st.dbNames(a.Pattern)
		return &thriftgen.GetDatabasesResult{Success: names}, err
	case *thriftgen.GetDatabaseArgs:
		d, err := s.copyDB(a.Name)
		return &thriftgen.GetDatabaseResult{Success: d}, err
	case *thriftgen.GetDatabaseReqArgs:
		if a.Request == nil || a.Request.Name == nil {
			return nil, metaErr("get_database_req without a database name")
		}
		if c := a.Request.CatalogName; c != nil && !strings.EqualFold(*c, catalogName) {
			return nil, noSuchObject("catalog %s does not exist (test double has only %s)", *c, catalogName)
		}
		d, err := s.copyDB(*a.Request.Name)
		return &thriftgen.GetDatabaseReqResult{Success: d}, err
	case *thriftgen.CreateDatabaseArgs:
		return &thriftgen.CreateDatabaseResult{}, st.createDB(a.Database)
	case *thriftgen.DropDatabaseArgs:
		return &thriftgen.DropDatabaseResult{}, st.dropDB(a.Name, a.Cascade)

	case *thriftgen.CreateTableArgs:
		return &thriftgen.CreateTableResult{}, st.createTable(a.Tbl)
	case *thriftgen.CreateTableWithEnvironmentContextArgs:
		return &thriftgen.CreateTableWithEnvironmentContextResult{}, st.createTable(a.Tbl)
	case *thriftgen.CreateTableWithConstraintsArgs:
		return &thriftgen.CreateTableWithConstraintsResult{}, st.createTable(a.Tbl)
	case *thriftgen.CreateTableReqArgs:
		if a.Request == nil {
			return nil, metaErr("create_table_req without a request")
		}
		return &thriftgen.CreateTableReqResult{}, st.createTable(a.Request.Table)

	case *thriftgen.GetTableArgs:
		t, err := s.copyTable(a.Dbname, a.TblName)
		return &thriftgen.GetTableMethodResult{Success: t}, err
	case *thriftgen.GetTableReqArgs:
		if a.Req == nil {
			return nil, metaErr("get_table_req without a request")
		}
		t, err := s.copyTable(a.Req.DbName, a.Req.TblName)
		if err != nil {
			return nil, err
		}
		return &thriftgen.GetTableReqResult{Success: &thriftgen.GetTableResult{Table: t}}, nil
	case *thriftgen.GetTablesArgs:
		names, err := st.tableNames(a.DbName, a.Pattern)
		return &thriftgen.GetTablesMethodResult{Success: names}, err
	case *thriftgen.GetAllTablesArgs:
		names, err := st.tableNames(a.DbName, "*")
		return &thriftgen.GetAllTablesResult{Success: names}, err
	case *thriftgen.GetTableObjectsByNameArgs:
		ts, err := s.tableObjects(a.Dbname, a.TblNames)
		return &thriftgen.GetTableObjectsByNameResult{Success: ts}, err
	case *thriftgen.GetTableObjectsByNameReqArgs:
		if a.Req == nil || a.Req.TblNames == nil {
			return nil, invalidOperation("get_table_objects_by_name_req without table names")
		}
		ts, err := s.tableObjects(a.Req.DbName, a.Req.TblNames)
		if err != nil {
			return nil, err
		}
		return &thriftgen.GetTableObjectsByNameReqResult{Success: &thriftgen.GetTablesResult{Tables: ts}}, nil

	case *thriftgen.AlterTableArgs:
		return &thriftgen.AlterTableResult{}, st.alterTable(a.Dbname, a.TblName, a.NewTbl)
	case *thriftgen.AlterTableWithEnvironmentContextArgs:
		return &thriftgen.AlterTableWithEnvironmentContextResult{}, st.alterTable(a.Dbname, a.TblName, a.NewTbl)
	case *thriftgen.AlterTableReqArgs:
		if a.Req == nil {
			return nil, metaErr("alter_table_req without a request")
		}
		if err := st.alterTable(a.Req.DbName, a.Req.TableName, a.Req.Table); err != nil {
			return nil, err
		}
		return &thriftgen.AlterTableReqResult{Success: &thriftgen.AlterTableResponse{}}, nil

	case *thriftgen.TruncateTableArgs:
		_, err := st.getTable(a.DbName, a.TableName)
		return &thriftgen.TruncateTableResult{}, err
	case *thriftgen.TruncateTableReqArgs:
		if a.Req == nil {
			return nil, metaErr("truncate_table_req without a request")
		}
		if _, err := st.getTable(a.Req.DbName, a.Req.TableName); err != nil {
			return nil, metaErr("%v", err)
		}
		return &thriftgen.TruncateTableReqResult{Success: &thriftgen.TruncateTableResponse{}}, nil

	case *thriftgen.DropTableArgs:
		return &thriftgen.DropTableResult{}, st.dropTable(a.Dbname, a.Name)
	case *thriftgen.DropTableWithEnvironmentContextArgs:
		return &thriftgen.DropTableWithEnvironmentContextResult{}, st.dropTable(a.Dbname, a.Name)

	case *thriftgen.AddPartitionArgs:
		p, err := st.addPartition(a.NewPart)
		return &thriftgen.AddPartitionResult{Success: p}, err
	case *thriftgen.GetPartitionsByNamesArgs:
		ps, err := st.partitionsByNames(a.DbName, a.TblName, a.Names)
		return &thriftgen.GetPartitionsByNamesMethodResult{Success: ps}, err
	case *thriftgen.GetPartitionsByNamesReqArgs:
		if a.Req == nil {
			return nil, metaErr("get_partitions_by_names_req without a request")
		}
		ps, err := st.partitionsByNames(a.Req.DbName, a.Req.TblName, a.Req.Names)
		if err != nil {
			return nil, err
		}
		return &thriftgen.GetPartitionsByNamesReqResult{Success: &thriftgen.GetPartitionsByNamesResult{Partitions: ps}}, nil

	// Hortonworks-only methods.
	case *thriftgen.GetTablesExtArgs:
		infos, err := s.tablesExt(a.Req)
		return &thriftgen.GetTablesExtResult{Success: infos}, err
	case *thriftgen.AddWriteNotificationLogArgs:
		r := a.Rqst
		if r == nil {
			return nil, metaErr("add_write_notification_log without a request")
		}
		if _, err := st.getTable(r.Db, r.Table); err != nil {
			return nil, err // undeclared: answered as TApplicationException
		}
		return &thriftgen.AddWriteNotificationLogResult{Success: &thriftgen.WriteNotificationLogResponse{}}, nil
	case *thriftgen.GetAllMaterializedViewObjectsForRewritingArgs:
		views, err := s.rewritableViews()
		return &thriftgen.GetAllMaterializedViewObjectsForRewritingResult{Success: views}, err
	}
	return nil, metaErr("test double does not implement %s", m.Name)
}

func (s *Server) copyDB(name string) (*thriftgen.Database, error) {
	e, err := s.store.db(name)
	if err != nil {
		return nil, err
	}
	d, err := clone(e.db)
	if err != nil {
		return nil, metaErr("test double cannot copy database %s: %v", name, err)
	}
	return d, nil
}

func (s *Server) copyTable(db, name string) (*thriftgen.Table, error) {
	t, err := s.store.getTable(db, name)
	if err != nil {
		return nil, err
	}
	return s.store.copyTable(t)
}

func (s *Server) tableObjects(db string, names []string) ([]*thriftgen.Table, error) {
	if _, err := s.store.db(db); err != nil {
		return nil, &hmsError{typ: "UnknownDBException", msg: err.Error()}
	}
	out := []*thriftgen.Table{}
	for _, n := range names {
		if t := s.store.table(db, n); t != nil {
			c, err := s.store.copyTable(t)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// tablesExt answers get_tables_ext from the stored tables: the name always,
// the access type and capability lists when requested.
func (s *Server) tablesExt(r *thriftgen.GetTablesExtRequest) ([]*thriftgen.ExtendedTableInfo, error) {
	if r == nil {
		return nil, metaErr("get_tables_ext without a request")
	}
	out := []*thriftgen.ExtendedTableInfo{}
	if !strings.EqualFold(r.Catalog, catalogName) {
		return out, nil // HMS: an unknown catalog has no tables
	}
	names, err := s.store.tableNames(r.Database, r.TableNamePattern)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if r.Limit != nil && *r.Limit > 0 && len(out) >= int(*r.Limit) {
			break
		}
		t := s.store.table(r.Database, n).tbl
		info := &thriftgen.ExtendedTableInfo{TblName: n}
		if r.RequestedFields&int32(thriftgen.GetTablesExtRequestFields_ACCESS_TYPE) != 0 && t.AccessType != nil {
			at := int32(*t.AccessType)
			info.AccessType = &at
		}
		if r.RequestedFields&int32(thriftgen.GetTablesExtRequestFields_PROCESSOR_CAPABILITIES) != 0 {
			info.RequiredReadCapabilities = append([]string(nil), t.RequiredReadCapabilities...)
			info.RequiredWriteCapabilities = append([]string(nil), t.RequiredWriteCapabilities...)
		}
		out = append(out, info)
	}
	return out, nil
}

// rewritableViews lists materialized views with rewriting enabled.
func (s *Server) rewritableViews() ([]*thriftgen.Table, error) {
	out := []*thriftgen.Table{}
	var dbs []string
	for n := range s.store.dbs {
		dbs = append(dbs, n)
	}
	sort.Strings(dbs)
	for _, d := range dbs {
		var names []string
		for n := range s.store.dbs[d].tables {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			t := s.store.dbs[d].tables[n]
			if t.tbl.TableType == "MATERIALIZED_VIEW" && t.tbl.RewriteEnabled != nil && *t.tbl.RewriteEnabled {
				c, err := s.store.copyTable(t)
				if err != nil {
					return nil, err
				}
				out = append(out, c)
			}
		}
	}
	return out, nil
}
