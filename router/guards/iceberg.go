package guards

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hms-proxy/hms-proxy/wire"
)

// Iceberg's table parameters (BaseMetastoreTableOperations) and the Hive
// storage handler key.
const (
	KeyMetadataLocation         = "metadata_location"
	KeyPreviousMetadataLocation = "previous_metadata_location"
	KeyTableType                = "table_type"
	KeyStorageHandler           = "storage_handler"
	IcebergTableType            = "ICEBERG"

	// The descriptor Iceberg writes when the Hive engine is off: readable by
	// nothing (Hive 3.1 fails with "Cannot create an instance of
	// InputFormat class org.apache.hadoop.mapred.FileInputFormat").
	abstractInputFormat  = "org.apache.hadoop.mapred.FileInputFormat"
	abstractOutputFormat = "org.apache.hadoop.mapred.FileOutputFormat"
	abstractSerde        = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"

	// Hive 4's compare-and-set on alter (hive_metastoreConstants), read by
	// HiveAlterHandler from the EnvironmentContext; alter_table_req carries
	// them as expectedParameterKey / expectedParameterValue.
	EnvExpectedParameterKey   = "expected_parameter_key"
	EnvExpectedParameterValue = "expected_parameter_value"
	// StatsSetupConst.CASCADE: what alter_table_with_cascade means in an
	// EnvironmentContext.
	envCascade = "CASCADE"
)

// Outcome is the outcome label of hms_proxy_iceberg_pointer_guard_events_total.
type Outcome string

// The outcomes.
const (
	OutcomeRepaired          Outcome = "repaired"
	OutcomeForwardCommit     Outcome = "forward_commit"
	OutcomeNotIceberg        Outcome = "not_iceberg"
	OutcomeCacheSuppressed   Outcome = "cache_suppressed"
	OutcomeReadFailed        Outcome = "read_failed"
	OutcomeRepairLockTimeout Outcome = "repair_lock_timeout"
)

// IsIceberg reports whether a metastore record is an Iceberg table: it has a
// metadata_location, or table_type=ICEBERG.
func IsIceberg(record *wire.Value) bool {
	p := params(record, false)
	if v, ok := param(p, KeyMetadataLocation); ok && v != "" {
		return true
	}
	v, _ := param(p, KeyTableType)
	return strings.EqualFold(v, IcebergTableType)
}

// CarriesPointer reports whether a Table sent by a client sets an Iceberg
// pointer (create or alter): the negative cache must forget its name.
func CarriesPointer(tbl *wire.Value) bool { return IsIceberg(tbl) }

// Decide classifies an alter's Table (req) against the current record
// without changing either: not_iceberg, forward_commit (a commit built on
// the record's pointer, or a request that already carries everything the
// guard keeps) or repaired; keys lists what Merge would restore.
func Decide(req, record *wire.Value, hiveEngineDescriptor bool) (o Outcome, keys []string) {
	if !IsIceberg(record) {
		return OutcomeNotIceberg, nil
	}
	cur, _ := param(params(record, false), KeyMetadataLocation)
	if prev, ok := param(params(req, false), KeyPreviousMetadataLocation); ok && cur != "" && prev == cur {
		return OutcomeForwardCommit, nil
	}
	c := clone(*req)
	keys = Merge(&c, record, hiveEngineDescriptor)
	if len(keys) == 0 {
		return OutcomeForwardCommit, nil
	}
	return OutcomeRepaired, keys
}

// Merge restores over req what the record holds and req would erase: the
// Iceberg keys (metadata_location, previous_metadata_location, table_type)
// missing from req, and, with hiveEngineDescriptor and a record that has a
// storage_handler, the Hive-readable descriptor: storage_handler when req
// lacks it, and the SD's input format, output format and serde library when
// req's are empty or the abstract ones of a Hive-engine-less writer. It
// never imposes: keys req sets itself are kept. It returns what it set.
func Merge(req, record *wire.Value, hiveEngineDescriptor bool) []string {
	rp := params(record, false)
	var set []string
	put := func(k, v string) {
		p := params(req, true)
		if p == nil {
			req.Set(tblParams, newStringMap())
			p = req.Field(tblParams)
		}
		setParam(p, k, v)
		set = append(set, k)
	}
	for _, k := range [...]string{KeyMetadataLocation, KeyPreviousMetadataLocation, KeyTableType} {
		if v, ok := param(rp, k); ok {
			if _, has := param(params(req, false), k); !has {
				put(k, v)
			}
		}
	}
	handler, _ := param(rp, KeyStorageHandler)
	if !hiveEngineDescriptor || handler == "" {
		return set
	}
	if _, has := param(params(req, false), KeyStorageHandler); !has {
		put(KeyStorageHandler, handler)
	}
	rsd := record.Field(tblSD)
	if rsd == nil || rsd.Type != wire.TStruct {
		return set
	}
	sd := req.Field(tblSD)
	if sd == nil || sd.Type != wire.TStruct {
		req.Set(tblSD, clone(*rsd))
		return append(set, "sd")
	}
	for _, f := range [...]struct {
		id       int16
		name     string
		abstract string
	}{{sdInputFmt, "sd.inputFormat", abstractInputFormat}, {sdOutputFmt, "sd.outputFormat", abstractOutputFormat}} {
		if want := rsd.Field(f.id).String(); want != "" {
			if got := sd.Field(f.id).String(); got == "" || got == f.abstract && want != f.abstract {
				sd.Set(f.id, wire.Str(want))
				set = append(set, f.name)
			}
		}
	}
	if rs := rsd.Field(sdSerde); rs != nil && rs.Type == wire.TStruct {
		want := rs.Field(serdeLib).String()
		s := sd.Field(sdSerde)
		switch {
		case want == "":
		case s == nil || s.Type != wire.TStruct:
			sd.Set(sdSerde, clone(*rs))
			set = append(set, "sd.serdeInfo")
		default:
			if got := s.Field(serdeLib).String(); got == "" || got == abstractSerde && want != abstractSerde {
				s.Set(serdeLib, wire.Str(want))
				set = append(set, "sd.serdeInfo.serializationLib")
			}
		}
	}
	return set
}

// clone deep-copies a value.
func clone(v wire.Value) wire.Value {
	out := v
	if v.Str != nil {
		out.Str = append([]byte(nil), v.Str...)
	}
	if v.Fields != nil {
		out.Fields = make([]wire.Field, len(v.Fields))
		for i, f := range v.Fields {
			out.Fields[i] = wire.Field{ID: f.ID, V: clone(f.V)}
		}
	}
	if v.Elems != nil {
		out.Elems = make([]wire.Value, len(v.Elems))
		for i, e := range v.Elems {
			out.Elems[i] = clone(e)
		}
	}
	return out
}

// Alter methods and their fields (canonical ids).
const (
	altArgsDB    int16 = 1 // alter_table*_args.dbname
	altArgsTable int16 = 2 // tbl_name
	altArgsNew   int16 = 3 // new_tbl
	altArgsEnv   int16 = 4 // environment_context (alter_table_with_environment_context)
	altArgsCasc  int16 = 4 // cascade (alter_table_with_cascade)
	altReq       int16 = 1 // alter_table_req_args.req
	reqDB        int16 = 2 // AlterTableRequest.dbName
	reqTable     int16 = 3 // AlterTableRequest.tableName
	reqTbl       int16 = 4 // AlterTableRequest.table
	reqEnv       int16 = 5 // AlterTableRequest.environmentContext
	reqWriteID   int16 = 6 // AlterTableRequest.writeId
	reqExpKey    int16 = 10
	reqExpVal    int16 = 11
)

// SelfGuarded reports whether an alter_table* call protects itself, so the
// pointer guard forwards it as it is, without reading the record: a
// compare-and-set (alter_table_req's expectedParameterKey, or
// expected_parameter_key in the EnvironmentContext, as Iceberg's own commits
// send), which the guard must never replace by its own; or a write id (an
// alter of a Hive ACID table, which is never an Iceberg table). casKey is
// the compare-and-set's key ("" for a write id).
func SelfGuarded(method string, args *wire.Value) (casKey string, self bool) {
	var env *wire.Value
	switch method {
	case "alter_table_with_environment_context":
		env = At(args, []int16{altArgsEnv})
	case "alter_table_req":
		r := At(args, []int16{altReq})
		if r == nil {
			return "", false
		}
		if k := r.Field(reqExpKey); k != nil && k.Type == wire.TString && len(k.Str) > 0 {
			return string(k.Str), true
		}
		if w := r.Field(reqWriteID); w != nil && w.Type == wire.TI64 && w.Int > 0 {
			return "", true
		}
		env = At(r, []int16{reqEnv})
	}
	if env == nil {
		return "", false
	}
	props := env.Field(envProperties)
	if props == nil || props.Type != wire.TMap || props.KeyType != wire.TString || props.ElemType != wire.TString {
		return "", false
	}
	v, ok := param(props, EnvExpectedParameterKey)
	return v, ok && v != ""
}

// AlterTarget returns the database, table name and new Table of an
// alter_table* call's args, or ok=false for another method.
func AlterTarget(method string, args *wire.Value) (db, table string, tbl *wire.Value, ok bool) {
	switch method {
	case "alter_table", "alter_table_with_environment_context", "alter_table_with_cascade":
		tbl = At(args, []int16{altArgsNew})
		return args.Field(altArgsDB).String(), args.Field(altArgsTable).String(), tbl, tbl != nil
	case "alter_table_req":
		r := At(args, []int16{altReq})
		if r == nil {
			return "", "", nil, false
		}
		tbl = At(r, []int16{reqTbl})
		return r.Field(reqDB).String(), r.Field(reqTable).String(), tbl, tbl != nil
	}
	return "", "", nil, false
}

// WithExpectedPointer makes an alter conditional on a Hive 4 metastore: it
// applies only while metadata_location is still pointer. alter_table and
// alter_table_with_cascade become alter_table_with_environment_context
// (cascade as the CASCADE property, as the metastore itself does); it
// returns the method to send.
func WithExpectedPointer(method string, args *wire.Value, pointer string) (string, error) {
	switch method {
	case "alter_table_req":
		r := At(args, []int16{altReq})
		if r == nil {
			return "", fmt.Errorf("alter_table_req without a request")
		}
		r.Set(reqExpKey, wire.Str(KeyMetadataLocation))
		r.Set(reqExpVal, wire.Str(pointer))
		return method, nil
	case "alter_table", "alter_table_with_cascade", "alter_table_with_environment_context":
	default:
		return "", fmt.Errorf("%s is not an alter_table call", method)
	}
	cascade := false
	if method == "alter_table_with_cascade" {
		if c := args.Field(altArgsCasc); c != nil {
			cascade = c.Int != 0
		}
		args.Del(altArgsCasc)
	}
	env := args.Field(altArgsEnv)
	if env == nil || env.Type != wire.TStruct {
		args.Set(altArgsEnv, wire.Struct())
		env = args.Field(altArgsEnv)
	}
	props := env.Field(envProperties)
	if props == nil || props.Type != wire.TMap {
		env.Set(envProperties, newStringMap())
		props = env.Field(envProperties)
	}
	setParam(props, EnvExpectedParameterKey, KeyMetadataLocation)
	setParam(props, EnvExpectedParameterValue, pointer)
	if cascade {
		setParam(props, envCascade, "true")
	}
	return "alter_table_with_environment_context", nil
}

// LockState mirrors thriftgen's LockState.
type LockState int32

// Lock states.
const (
	LockAcquired    LockState = 1
	LockWaiting     LockState = 2
	LockAbort       LockState = 3
	LockNotAcquired LockState = 4
)

// Backend is what the lock-holding repair needs from the router: calls to
// the catalog's metastore, with backend (internal) names.
type Backend interface {
	// GetTable reads the current record.
	GetTable(ctx context.Context, db, table string) (*wire.Value, error)
	// Lock asks for the lock Iceberg's own commits take
	// (org.apache.iceberg.hive.MetastoreLock): one EXCLUSIVE component at
	// TABLE level for db.table, no transaction.
	Lock(ctx context.Context, db, table string) (id int64, state LockState, err error)
	CheckLock(ctx context.Context, id int64) (LockState, error)
	Unlock(ctx context.Context, id int64) error
	// Alter sends an alter_table* call with these args; the error is the
	// backend's (the router relays it to the client as it is).
	Alter(ctx context.Context, method string, args *wire.Value) error
}

// IcebergOptions: routing.iceberg-pointer-guard.*.
type IcebergOptions struct {
	Enabled              bool          // enabled (true)
	CacheTTL             time.Duration // table-cache-ttl-ms (30s); 0 disables the cache
	CacheMaxEntries      int           // table-cache-max-entries (10000)
	LockEnabled          bool          // lock-enabled (true)
	LockAcquireTimeout   time.Duration // lock-acquire-timeout-ms (10s); 0 is one attempt
	HiveEngineDescriptor bool          // hive-engine-descriptor (true)
	// LockPollInterval between check_lock calls while the lock waits (Iceberg
	// backs off from 50 ms); zero means 50 ms.
	LockPollInterval time.Duration
	Metrics          *IcebergMetrics
	Now              func() time.Time // nil: time.Now
	// Log receives one line per repair and per unprotected repair; nil
	// drops them.
	Log func(msg string)
}

// DefaultIcebergOptions are the specification's defaults.
func DefaultIcebergOptions() IcebergOptions {
	return IcebergOptions{Enabled: true, CacheTTL: 30 * time.Second, CacheMaxEntries: 10000, LockEnabled: true,
		LockAcquireTimeout: 10 * time.Second, HiveEngineDescriptor: true}
}

// IcebergGuard is the Iceberg pointer guard.
type IcebergGuard struct {
	o     IcebergOptions
	cache *notIcebergCache
}

// NewIcebergGuard validates the options.
func NewIcebergGuard(o IcebergOptions) (*IcebergGuard, error) {
	switch {
	case o.CacheTTL < 0:
		return nil, fmt.Errorf("routing.iceberg-pointer-guard.table-cache-ttl-ms must be >= 0, got %v", o.CacheTTL)
	case o.CacheMaxEntries < 0:
		return nil, fmt.Errorf("routing.iceberg-pointer-guard.table-cache-max-entries must be >= 0, got %d", o.CacheMaxEntries)
	case o.CacheTTL > 0 && o.CacheMaxEntries == 0:
		return nil, fmt.Errorf("routing.iceberg-pointer-guard.table-cache-max-entries=0 with table-cache-ttl-ms=%d: set the TTL to 0 to disable the cache", o.CacheTTL.Milliseconds())
	case o.LockAcquireTimeout < 0:
		return nil, fmt.Errorf("routing.iceberg-pointer-guard.lock-acquire-timeout-ms must be >= 0, got %v", o.LockAcquireTimeout)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.LockPollInterval <= 0 {
		o.LockPollInterval = 50 * time.Millisecond
	}
	g := &IcebergGuard{o: o}
	if o.CacheTTL > 0 {
		g.cache = &notIcebergCache{ttl: o.CacheTTL, max: o.CacheMaxEntries, now: o.Now, m: map[string]*list.Element{}, order: list.New()}
	}
	return g, nil
}

// Enabled reports routing.iceberg-pointer-guard.enabled.
func (g *IcebergGuard) Enabled() bool { return g != nil && g.o.Enabled }

// Forget drops a name from the non-Iceberg memory; the router calls it for
// create_table* and alter_table* whose Table carries a pointer
// (CarriesPointer), for the old and the new name of a rename.
func (g *IcebergGuard) Forget(catalog, db, table string) {
	if g != nil && g.cache != nil {
		g.cache.del(cacheKey(catalog, db, table))
	}
}

// AlterCall is one alter_table* call the router is about to forward.
type AlterCall struct {
	Catalog string
	// Lockable: the table lock Iceberg clients take can be taken here (the
	// default catalog's metastore, or the lock shim that serves the other
	// catalogs' locks with isolation).
	Lockable bool
	// CompareAndSet: the backend is Hive 4, which honours
	// expected_parameter_key/value.
	CompareAndSet bool
	Method        string
	Args          *wire.Value // decoded *_args, backend names
}

// AlterResult says what Handle did. With Sent the guard sent the alter
// itself (a repair) and the router answers the client from Handle's error;
// otherwise the router forwards the original call unchanged.
type AlterResult struct {
	Outcome Outcome
	Sent    bool
	Merged  []string
}

// Handle runs the guard for one alter. It never fails a write for its own
// sake: a failed read passes the alter through (read_failed), a lock that is
// not granted in time or fails leaves the repair unprotected
// (repair_lock_timeout). The only error is the backend's answer to a
// repaired alter the guard sent.
func (g *IcebergGuard) Handle(ctx context.Context, be Backend, call AlterCall) (AlterResult, error) {
	if !g.Enabled() {
		return AlterResult{}, nil
	}
	db, table, req, ok := AlterTarget(call.Method, call.Args)
	if !ok {
		return AlterResult{}, nil
	}
	if cas, self := SelfGuarded(call.Method, call.Args); self {
		if CarriesPointer(req) {
			g.Forget(call.Catalog, db, table)
		}
		if cas == KeyMetadataLocation {
			// Conditional on the pointer: a commit built on it.
			return g.count(call, AlterResult{Outcome: OutcomeForwardCommit}), nil
		}
		return AlterResult{}, nil
	}
	key := cacheKey(call.Catalog, db, table)
	if CarriesPointer(req) {
		g.Forget(call.Catalog, db, table)
	} else if g.cache != nil && g.cache.has(key) {
		return g.count(call, AlterResult{Outcome: OutcomeCacheSuppressed}), nil
	}
	rec, err := be.GetTable(ctx, db, table)
	if err != nil || rec == nil {
		g.logf("iceberg pointer guard: %s of %s.%s in catalog %s passed as it is: reading the record failed: %v", call.Method, db, table, call.Catalog, err)
		return g.count(call, AlterResult{Outcome: OutcomeReadFailed}), nil
	}
	o, _ := Decide(req, rec, g.o.HiveEngineDescriptor)
	switch o {
	case OutcomeNotIceberg:
		if g.cache != nil {
			g.cache.put(key)
		}
		return g.count(call, AlterResult{Outcome: o}), nil
	case OutcomeForwardCommit:
		return g.count(call, AlterResult{Outcome: o}), nil
	}
	outcome := OutcomeRepaired
	if g.o.LockEnabled && call.Lockable {
		id, locked, lerr := g.acquire(ctx, be, db, table)
		if locked {
			defer func() {
				if err := be.Unlock(context.WithoutCancel(ctx), id); err != nil {
					g.logf("iceberg pointer guard: unlock %d of %s.%s in catalog %s: %v", id, db, table, call.Catalog, err)
				}
			}()
			// Re-read under the lock: the record may have moved.
			if again, err := be.GetTable(ctx, db, table); err == nil && again != nil {
				rec = again
			} else {
				g.logf("iceberg pointer guard: re-reading %s.%s in catalog %s under the lock failed, merging the first read: %v", db, table, call.Catalog, err)
			}
		} else {
			outcome = OutcomeRepairLockTimeout
			g.logf("iceberg pointer guard: %s of %s.%s in catalog %s repaired without the table lock: %v", call.Method, db, table, call.Catalog, lerr)
		}
	}
	res := AlterResult{Outcome: outcome, Sent: true}
	switch again, _ := Decide(req, rec, g.o.HiveEngineDescriptor); again {
	case OutcomeRepaired:
		res.Merged = Merge(req, rec, g.o.HiveEngineDescriptor)
	default: // the record changed under the lock into one that needs nothing
		res.Outcome = again
	}
	method := call.Method
	if cur, _ := param(params(rec, false), KeyMetadataLocation); call.CompareAndSet && cur != "" && res.Merged != nil {
		if method, err = WithExpectedPointer(call.Method, call.Args, cur); err != nil {
			return res, err
		}
	}
	if res.Merged != nil {
		g.logf("iceberg pointer guard: %s of %s.%s in catalog %s: restored %s from the record", call.Method, db, table, call.Catalog, strings.Join(res.Merged, ", "))
	}
	err = be.Alter(ctx, method, call.Args)
	return g.count(call, res), err
}

// acquire asks for the table lock and waits for it up to the timeout. A lock
// still waiting at the deadline is released.
func (g *IcebergGuard) acquire(ctx context.Context, be Backend, db, table string) (int64, bool, error) {
	deadline := g.o.Now().Add(g.o.LockAcquireTimeout)
	id, st, err := be.Lock(ctx, db, table)
	for err == nil && st == LockWaiting && g.o.Now().Before(deadline) {
		t := time.NewTimer(min(g.o.LockPollInterval, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			err = ctx.Err()
		case <-t.C:
			st, err = be.CheckLock(ctx, id)
		}
	}
	switch {
	case err == nil && st == LockAcquired:
		return id, true, nil
	case err == nil && st == LockWaiting:
		err = fmt.Errorf("lock %d still waiting after %v (lock-acquire-timeout-ms)", id, g.o.LockAcquireTimeout)
	case err == nil:
		err = fmt.Errorf("lock %d in state %d", id, st)
	}
	if id != 0 && (st == LockWaiting || st == LockAcquired) {
		if uerr := be.Unlock(context.WithoutCancel(ctx), id); uerr != nil {
			err = errors.Join(err, fmt.Errorf("releasing lock %d: %w", id, uerr))
		}
	}
	return 0, false, err
}

func (g *IcebergGuard) count(call AlterCall, r AlterResult) AlterResult {
	g.o.Metrics.inc(call.Catalog, r.Outcome)
	return r
}

func (g *IcebergGuard) logf(format string, a ...any) {
	if g.o.Log != nil {
		g.o.Log(fmt.Sprintf(format, a...))
	}
}

func cacheKey(catalog, db, table string) string {
	return strings.ToLower(catalog) + "\x00" + strings.ToLower(db) + "\x00" + strings.ToLower(table)
}

// notIcebergCache remembers names the metastore said are not Iceberg tables,
// for a TTL, at most max of them (the oldest go first).
type notIcebergCache struct {
	ttl   time.Duration
	max   int
	now   func() time.Time
	mu    sync.Mutex
	m     map[string]*list.Element
	order *list.List // of *cacheEntry, oldest first
}

type cacheEntry struct {
	key     string
	expires time.Time
}

func (c *notIcebergCache) has(k string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[k]
	if e == nil {
		return false
	}
	if !c.now().Before(e.Value.(*cacheEntry).expires) {
		c.order.Remove(e)
		delete(c.m, k)
		return false
	}
	return true
}

func (c *notIcebergCache) put(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[k]; e != nil {
		c.order.Remove(e)
	}
	for len(c.m) >= c.max {
		old := c.order.Front()
		c.order.Remove(old)
		delete(c.m, old.Value.(*cacheEntry).key)
	}
	c.m[k] = c.order.PushBack(&cacheEntry{key: k, expires: c.now().Add(c.ttl)})
}

func (c *notIcebergCache) del(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[k]; e != nil {
		c.order.Remove(e)
		delete(c.m, k)
	}
}

func (c *notIcebergCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// MetricIcebergPointerGuardEvents is the specification's metric.
const MetricIcebergPointerGuardEvents = "hms_proxy_iceberg_pointer_guard_events_total"

// IcebergMetrics of the pointer guard; a nil *IcebergMetrics counts nothing.
type IcebergMetrics struct{ events *prometheus.CounterVec }

// NewIcebergMetrics creates and registers (reg may be nil) the metric.
func NewIcebergMetrics(reg prometheus.Registerer) *IcebergMetrics {
	m := &IcebergMetrics{events: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricIcebergPointerGuardEvents,
		Help: "Iceberg pointer guard decisions on alter_table, by catalog and outcome: repaired, forward_commit, not_iceberg, cache_suppressed, read_failed, repair_lock_timeout. All but cache_suppressed, and a commit conditional on the pointer it read (counted as forward_commit), cost one get_table.",
	}, []string{"catalog", "outcome"})}
	if reg != nil {
		reg.MustRegister(m.events)
	}
	return m
}

func (m *IcebergMetrics) inc(catalog string, o Outcome) {
	if m == nil || o == "" {
		return
	}
	m.events.WithLabelValues(catalog, string(o)).Inc()
}
