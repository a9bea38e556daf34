// Package smoke is the manual HMS smoke client: direct metastore RPCs against
// any metastore or hms-proxy URI, one output line per step, for checking the
// transaction and lock paths of a real installation without Beeline.
//
//	smoke txn          --uri thrift://host:9083 --db DB --table TABLE
//	smoke lock         --uri thrift://host:9083 --db DB [--table T] [--partition P] [lock flags]
//	smoke notification --uri thrift://host:9083 --db DB --table T --txn-id N --write-id N --files-added PATH[,PATH]
//
// --auth kerberos (with --server-principal, --client-principal, --keytab,
// --krb5-conf) talks SASL/GSSAPI, as a client with
// hive.metastore.sasl.enabled=true does.
//
// txn runs open_txns, allocate_table_write_ids, lock, check_lock,
// get_valid_write_ids and commit_txn on a transactional table. lock opens one
// transaction, takes the requested lock, checks it, optionally heartbeats and
// unlocks it, and then commits or aborts the transaction (--close-txn).
// notification sends add_write_notification_log (Hive 4 and HDP metastores).
// When a txn or lock run fails after open_txns, the client aborts the
// transaction (best effort, also with --close-txn none), so a failed smoke does
// not hold back the ValidTxnList watermark until the transaction times out.
//
// cmd/hms-proxy runs it as "hms-proxy smoke ...".
package smoke

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/security/gssapi"
	"github.com/hms-proxy/hms-proxy/security/sasl"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Exit codes of Run.
const (
	ExitOK    = 0 // every step passed
	ExitFail  = 1 // a step failed (its line says which and why)
	ExitUsage = 2 // bad arguments, or a feature this build does not have
)

const usage = `usage: smoke txn|lock|notification --uri thrift://HOST:PORT [flags]

modes:
  txn            open_txns, allocate_table_write_ids, lock, check_lock, get_valid_write_ids, commit_txn
                 (needs a transactional table: --db, --table)
  lock           open_txns, lock, check_lock, [heartbeat], [unlock], commit_txn|abort_txn
  notification   add_write_notification_log (Hive 4 and Hortonworks metastores)
`

// options are every flag of every mode.
type options struct {
	mode          string
	uri           string
	auth          string
	conf          multiFlag
	user          string
	host          string
	timeout       time.Duration
	wait          time.Duration
	db, table     string
	partition     string
	lockType      string
	lockLevel     string
	operationType string
	transactional string
	lockInTxn     bool
	heartbeat     bool
	unlock        bool
	closeTxn      string
	txnID         int64
	writeID       int64
	filesAdded    multiFlag
	partitionVals string
	replace       bool
	framed        bool
	// Kerberos (--auth kerberos): the front door's principal (_HOST allowed),
	// the client's login, and the QOPs offered (hadoop.rpc.protection).
	serverPrincipal string
	clientPrincipal string
	keytab          string
	krb5Conf        string
	qops            []sasl.QOP
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// Run runs the smoke client with args (without the program name); step lines
// go to stdout, usage and argument errors to stderr.
func Run(args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK // -h / --help of a mode: its flags were printed
	}
	if err != nil {
		fmt.Fprintln(stderr, "smoke:", err)
		return ExitUsage
	}
	ctx := context.Background()
	out := &printer{w: stdout}
	client, closeFn, err := connect(o)
	if err != nil {
		out.step("connect", 0, err, "")
		return ExitFail
	}
	defer closeFn()
	// Hive's client sends set_ugi only without SASL: a Kerberized session's
	// user is its principal.
	if o.auth == "none" && !out.run("set_ugi", func() (string, error) {
		groups, err := client.SetUgi(ctx, o.user, []string{o.user})
		return fmt.Sprintf("user %s, groups %v", o.user, groups), err
	}) {
		return ExitFail
	}
	var ok bool
	switch o.mode {
	case "txn":
		ok = runTxn(ctx, client, o, out)
	case "lock":
		ok = runLock(ctx, client, o, out)
	case "notification":
		ok = runNotification(ctx, client, o, out)
	}
	if !ok {
		return ExitFail
	}
	return ExitOK
}

func parse(args []string, stderr io.Writer) (*options, error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, usage)
		return nil, errors.New("name a mode first: txn, lock or notification")
	}
	o := &options{mode: args[0]}
	switch o.mode {
	case "txn", "lock", "notification":
	default:
		fmt.Fprint(stderr, usage)
		return nil, fmt.Errorf("unknown mode %q: want txn, lock or notification", o.mode)
	}
	fs := flag.NewFlagSet("smoke "+o.mode, flag.ContinueOnError)
	fs.SetOutput(stderr)
	defUser := "hms-proxy-smoke"
	if u, err := user.Current(); err == nil && u.Username != "" {
		defUser = u.Username
	}
	defHost, _ := os.Hostname()
	fs.StringVar(&o.uri, "uri", "", "metastore or proxy URI, thrift://host:port (required)")
	fs.StringVar(&o.auth, "auth", "none", "none or kerberos (SASL/GSSAPI, as hive.metastore.sasl.enabled=true)")
	var hdpJar, protection string
	fs.StringVar(&o.serverPrincipal, "server-principal", "", "Kerberos principal of the metastore or the proxy's front door, _HOST allowed (with --auth kerberos)")
	fs.StringVar(&o.clientPrincipal, "client-principal", "", "Kerberos principal of the client (with --auth kerberos)")
	fs.StringVar(&o.keytab, "keytab", "", "keytab of --client-principal (with --auth kerberos)")
	fs.StringVar(&o.krb5Conf, "krb5-conf", "", "krb5.conf (with --auth kerberos; default $KRB5_CONFIG, then /etc/krb5.conf)")
	fs.StringVar(&hdpJar, "hdp-standalone-metastore-jar", "", "accepted for the Java client's command lines; not needed here")
	fs.Var(&o.conf, "conf", "client setting key=value (repeatable): hive.metastore.client.socket.timeout, "+
		"hive.metastore.thrift.framed.transport.enabled (or their metastore.* names), hadoop.rpc.protection (with --auth kerberos)")
	fs.StringVar(&o.user, "user", defUser, "user for set_ugi and the lock and transaction records")
	fs.StringVar(&o.host, "hostname", defHost, "host name sent in open_txns and lock")
	fs.DurationVar(&o.timeout, "timeout", 60*time.Second, "socket timeout of each call")
	fs.DurationVar(&o.wait, "wait", 30*time.Second, "how long check_lock is polled while the lock is WAITING")
	fs.StringVar(&o.db, "db", "", "database (external name when talking to the proxy, e.g. catalog2__sales)")
	fs.StringVar(&o.table, "table", "", "table")
	fs.StringVar(&o.partition, "partition", "", "partition name, e.g. p=2026-04-01")
	fs.StringVar(&o.lockType, "lock-type", "", "SHARED_READ, SHARED_WRITE, EXCL_WRITE or EXCLUSIVE (txn: SHARED_WRITE, lock: SHARED_READ)")
	fs.StringVar(&o.lockLevel, "lock-level", "", "DB, TABLE or PARTITION (default: from --table/--partition)")
	fs.StringVar(&o.operationType, "operation-type", "", "SELECT, INSERT, UPDATE, DELETE, UNSET or NO_TXN (txn: INSERT, lock: NO_TXN)")
	fs.StringVar(&o.transactional, "transactional", "", "isTransactional of the lock component, true or false (txn: true, lock: false)")
	fs.BoolVar(&o.lockInTxn, "lock-in-txn", true, "lock mode: take the lock inside the opened transaction (false: without txnid, as Iceberg and Spark do)")
	fs.BoolVar(&o.heartbeat, "heartbeat", false, "lock mode: heartbeat the lock and transaction after check_lock")
	fs.BoolVar(&o.unlock, "unlock", false, "lock mode: unlock before closing the transaction (Hive refuses this for a granted lock of a transaction)")
	fs.StringVar(&o.closeTxn, "close-txn", "commit", "lock mode: commit, abort or none")
	fs.Int64Var(&o.txnID, "txn-id", 0, "notification: transaction id")
	fs.Int64Var(&o.writeID, "write-id", 0, "notification: write id")
	fs.Var(&o.filesAdded, "files-added", "notification: added file paths (comma-separated, repeatable)")
	fs.StringVar(&o.partitionVals, "partition-vals", "", "notification: partition values, comma-separated")
	fs.BoolVar(&o.replace, "replace", false, "notification: the write replaced the data (INSERT OVERWRITE)")
	if err := fs.Parse(args[1:]); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	o.auth = strings.ToLower(o.auth)
	switch o.auth {
	case "none", "kerberos":
	default:
		return nil, fmt.Errorf("--auth %q: want none or kerberos", o.auth)
	}
	if hdpJar != "" {
		fmt.Fprintln(stderr, "smoke: note: --hdp-standalone-metastore-jar is not needed: this client speaks add_write_notification_log itself")
	}
	if o.uri == "" {
		return nil, errors.New("--uri is required (thrift://host:port)")
	}
	for _, kv := range o.conf {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("--conf %q: want key=value", kv)
		}
		switch strings.TrimSpace(k) {
		case "hive.metastore.client.socket.timeout", "metastore.client.socket.timeout":
			d, err := hiveDuration(v)
			if err != nil {
				return nil, fmt.Errorf("--conf %s: %w", k, err)
			}
			o.timeout = d
		case "hive.metastore.thrift.framed.transport.enabled", "metastore.thrift.framed.transport.enabled":
			b, err := strictBool(v)
			if err != nil {
				return nil, fmt.Errorf("--conf %s: %w", k, err)
			}
			o.framed = b
		case "hadoop.rpc.protection":
			protection = v
		default:
			return nil, fmt.Errorf("--conf %s: this client does not use that setting", k)
		}
	}
	if err := o.checkKerberos(protection); err != nil {
		return nil, err
	}
	if o.timeout <= 0 || o.wait < 0 {
		return nil, errors.New("--timeout must be positive and --wait not negative")
	}
	needDB := o.db == ""
	switch o.mode {
	case "txn":
		if needDB || o.table == "" {
			return nil, errors.New("txn needs --db and --table (a transactional table)")
		}
		setDefault(&o.lockType, "SHARED_WRITE")
		setDefault(&o.operationType, "INSERT")
		setDefault(&o.transactional, "true")
	case "lock":
		if needDB {
			return nil, errors.New("lock needs --db")
		}
		setDefault(&o.lockType, "SHARED_READ")
		setDefault(&o.operationType, "NO_TXN")
		setDefault(&o.transactional, "false")
		switch o.closeTxn {
		case "commit", "abort", "none":
		default:
			return nil, fmt.Errorf("--close-txn %q: want commit, abort or none", o.closeTxn)
		}
	case "notification":
		if needDB || o.table == "" || o.txnID <= 0 || o.writeID <= 0 || len(o.filesAdded) == 0 {
			return nil, errors.New("notification needs --db, --table, --txn-id, --write-id and --files-added")
		}
	}
	return o, nil
}

func setDefault(s *string, v string) {
	if *s == "" {
		*s = v
	}
}

func strictBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%q is not true or false", v)
}

// hiveDuration reads a Hive duration: an integer with an optional unit (ms, s, m, h, d; bare = seconds).
func hiveDuration(v string) (time.Duration, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil || i == 0 {
		return 0, fmt.Errorf("%q is not a Hive duration (an integer with ms, s, m, h or d, e.g. 600s)", v)
	}
	unit := map[string]time.Duration{"": time.Second, "ms": time.Millisecond, "msec": time.Millisecond,
		"s": time.Second, "sec": time.Second, "m": time.Minute, "min": time.Minute, "h": time.Hour,
		"hour": time.Hour, "d": 24 * time.Hour, "day": 24 * time.Hour}
	u, ok := unit[strings.TrimSpace(s[i:])]
	if !ok {
		return 0, fmt.Errorf("%q is not a Hive duration (an integer with ms, s, m, h or d, e.g. 600s)", v)
	}
	return time.Duration(n) * u, nil
}

// checkKerberos checks the Kerberos flags against --auth, as Hive's client
// would: SASL needs the principals and a keytab, and is never framed.
func (o *options) checkKerberos(protection string) error {
	if o.auth != "kerberos" {
		if o.serverPrincipal != "" || o.clientPrincipal != "" || o.keytab != "" || o.krb5Conf != "" || protection != "" {
			return errors.New("--server-principal, --client-principal, --keytab, --krb5-conf and --conf hadoop.rpc.protection need --auth kerberos")
		}
		return nil
	}
	var missing []string
	for _, f := range []struct{ name, v string }{{"--server-principal", o.serverPrincipal}, {"--client-principal", o.clientPrincipal}, {"--keytab", o.keytab}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("--auth kerberos needs %s", strings.Join(missing, ", "))
	}
	if o.framed {
		return errors.New("--auth kerberos with framed transport: Hive's SASL transport is never framed (hive.metastore.thrift.framed.transport.enabled=false)")
	}
	if o.krb5Conf == "" {
		o.krb5Conf = os.Getenv("KRB5_CONFIG")
	}
	if o.krb5Conf == "" {
		o.krb5Conf = "/etc/krb5.conf"
	}
	if protection == "" {
		protection = "privacy,integrity,authentication"
	}
	q, err := sasl.ParseProtection(protection)
	if err != nil {
		return fmt.Errorf("--conf %w", err)
	}
	o.qops = q
	return nil
}

// kerberosDial logs in from the keytab and returns a dial function that opens
// a SASL/GSSAPI session with the server principal.
func kerberosDial(o *options) (func(ctx context.Context, network, addr string) (net.Conn, error), error) {
	kt, err := gssapi.LoadKeytab(o.keytab)
	if err != nil {
		return nil, fmt.Errorf("--keytab %s: %w", o.keytab, err)
	}
	cfg, err := gssapi.LoadConfig(o.krb5Conf)
	if err != nil {
		return nil, fmt.Errorf("--krb5-conf %s: %w", o.krb5Conf, err)
	}
	l, err := gssapi.NewLogin(gssapi.LoginOptions{Principal: o.clientPrincipal, Keytab: kt, Config: cfg})
	if err != nil {
		return nil, fmt.Errorf("--client-principal %s: %w", o.clientPrincipal, err)
	}
	in, err := gssapi.NewInitiator(gssapi.InitiatorOptions{Login: l, Principal: o.serverPrincipal, QOPs: o.qops, HandshakeTimeout: o.timeout})
	if err != nil {
		return nil, fmt.Errorf("--server-principal %s: %w", o.serverPrincipal, err)
	}
	return in.Dial(&net.Dialer{Timeout: o.timeout}), nil
}

// connect opens TBinaryProtocol over a buffered (or framed) socket, as Hive's
// client does; with --auth kerberos over a SASL/GSSAPI session.
func connect(o *options) (*thriftgen.Client, func(), error) {
	u, err := url.Parse(o.uri)
	if err != nil || u.Scheme != "thrift" || u.Host == "" {
		return nil, nil, fmt.Errorf("--uri %q: want thrift://host:port", o.uri)
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil {
		return nil, nil, fmt.Errorf("--uri %q: want thrift://host:port", o.uri)
	}
	cfg := &thrift.TConfiguration{ConnectTimeout: o.timeout, SocketTimeout: o.timeout}
	if o.auth == "kerberos" {
		dial, err := kerberosDial(o)
		if err != nil {
			return nil, nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
		defer cancel()
		c, err := dial(ctx, "tcp", u.Host)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", o.uri, err)
		}
		trans := thrift.NewTBufferedTransport(thrift.NewTSocketFromConnConf(c, cfg), 64<<10)
		proto := thrift.NewTBinaryProtocolConf(trans, cfg)
		return thriftgen.NewClient(thrift.NewTStandardClient(proto, proto)), func() { trans.Close() }, nil
	}
	var trans thrift.TTransport = thrift.NewTBufferedTransport(thrift.NewTSocketConf(u.Host, cfg), 64<<10)
	if o.framed {
		trans = thrift.NewTFramedTransportConf(thrift.NewTSocketConf(u.Host, cfg), cfg)
	}
	if err := trans.Open(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", o.uri, err)
	}
	proto := thrift.NewTBinaryProtocolConf(trans, cfg)
	return thriftgen.NewClient(thrift.NewTStandardClient(proto, proto)), func() { trans.Close() }, nil
}

// printer writes one line per step.
type printer struct{ w io.Writer }

func (p *printer) step(name string, d time.Duration, err error, detail string) {
	status := "ok  "
	if err != nil {
		status = "FAIL"
	}
	line := fmt.Sprintf("%s %-28s %6d ms", status, name, d.Milliseconds())
	if detail != "" {
		line += "  " + detail
	}
	if err != nil {
		line += "  error: " + describe(err)
	}
	fmt.Fprintln(p.w, line)
}

// run times one step and prints it; false when it failed.
func (p *printer) run(name string, f func() (string, error)) bool {
	start := time.Now()
	detail, err := f()
	p.step(name, time.Since(start), err, detail)
	return err == nil
}

// describe names a Thrift exception by its type, as Hive's logs do.
func describe(err error) string {
	msg := err.Error()
	switch e := err.(type) {
	case *thriftgen.NoSuchLockException:
		return "NoSuchLockException: " + e.Message
	case *thriftgen.NoSuchTxnException:
		return "NoSuchTxnException: " + e.Message
	case *thriftgen.TxnAbortedException:
		return "TxnAbortedException: " + e.Message
	case *thriftgen.TxnOpenException:
		return "TxnOpenException: " + e.Message
	case *thriftgen.MetaException:
		return "MetaException: " + e.Message
	case *thriftgen.NoSuchObjectException:
		return "NoSuchObjectException: " + e.Message
	case thrift.TApplicationException:
		return fmt.Sprintf("TApplicationException(%d): %s", e.TypeId(), msg)
	}
	return msg
}

// lockComponent builds the requested component.
func lockComponent(o *options) (*thriftgen.LockComponent, error) {
	lt, err := enumByName(o.lockType, thriftgen.LockType_SHARED_READ, thriftgen.LockType_EXCL_WRITE)
	if err != nil {
		return nil, fmt.Errorf("--lock-type: %w", err)
	}
	op, err := enumByName(o.operationType, thriftgen.DataOperationType_SELECT, thriftgen.DataOperationType_NO_TXN)
	if err != nil {
		return nil, fmt.Errorf("--operation-type: %w", err)
	}
	tx, err := strictBool(o.transactional)
	if err != nil {
		return nil, fmt.Errorf("--transactional: %w", err)
	}
	level := o.lockLevel
	if level == "" {
		switch {
		case o.partition != "":
			level = "PARTITION"
		case o.table != "":
			level = "TABLE"
		default:
			level = "DB"
		}
	}
	lv, err := enumByName(level, thriftgen.LockLevel_DB, thriftgen.LockLevel_PARTITION)
	if err != nil {
		return nil, fmt.Errorf("--lock-level: %w", err)
	}
	c := &thriftgen.LockComponent{Type: lt, Level: lv, Dbname: o.db, OperationType: &op, IsTransactional: &tx}
	switch lv {
	case thriftgen.LockLevel_DB:
		if o.table != "" || o.partition != "" {
			return nil, errors.New("--lock-level DB takes no --table or --partition")
		}
	case thriftgen.LockLevel_TABLE:
		if o.table == "" || o.partition != "" {
			return nil, errors.New("--lock-level TABLE needs --table and no --partition")
		}
	case thriftgen.LockLevel_PARTITION:
		if o.table == "" || o.partition == "" {
			return nil, errors.New("--lock-level PARTITION needs --table and --partition")
		}
	}
	if o.table != "" {
		c.Tablename = &o.table
	}
	if o.partition != "" {
		c.Partitionname = &o.partition
	}
	return c, nil
}

type thriftEnum interface {
	~int32
	String() string
}

func enumByName[E thriftEnum](name string, first, last E) (E, error) {
	var names []string
	for v := first; v <= last; v++ {
		if strings.EqualFold(v.String(), strings.TrimSpace(name)) {
			return v, nil
		}
		names = append(names, v.String())
	}
	return 0, fmt.Errorf("%q: want one of %s", name, strings.Join(names, ", "))
}

// openTxn runs open_txns.
func openTxn(ctx context.Context, c *thriftgen.Client, o *options, out *printer) (int64, bool) {
	var txn int64
	ok := out.run("open_txns", func() (string, error) {
		agent := "hms-proxy-smoke"
		resp, err := c.OpenTxns(ctx, &thriftgen.OpenTxnRequest{NumTxns: 1, User: o.user, Hostname: o.host, AgentInfo: &agent})
		if err != nil {
			return "", err
		}
		if len(resp.TxnIds) != 1 {
			return "", fmt.Errorf("asked for 1 transaction, got %d", len(resp.TxnIds))
		}
		txn = resp.TxnIds[0]
		return fmt.Sprintf("txnid %d", txn), nil
	})
	return txn, ok
}

// abortAfterFailure aborts txn after a failed step (best effort; its own line says how it went).
func abortAfterFailure(ctx context.Context, c *thriftgen.Client, txn int64, out *printer) {
	out.run("abort_txn (after failure)", func() (string, error) {
		return fmt.Sprintf("txnid %d", txn), c.AbortTxn(ctx, &thriftgen.AbortTxnRequest{Txnid: txn})
	})
}

// lockAndCheck runs lock, then check_lock until it is no longer WAITING (bounded by --wait).
func lockAndCheck(ctx context.Context, c *thriftgen.Client, o *options, out *printer, txn int64) (int64, bool) {
	comp, err := lockComponent(o)
	if err != nil {
		out.step("lock", 0, err, "")
		return 0, false
	}
	req := &thriftgen.LockRequest{Component: []*thriftgen.LockComponent{comp}, User: o.user, Hostname: o.host}
	agent := "hms-proxy-smoke"
	req.AgentInfo = &agent
	if txn != 0 {
		req.Txnid = &txn
	}
	var lockID int64
	var state thriftgen.LockState
	if !out.run("lock", func() (string, error) {
		resp, err := c.Lock(ctx, req)
		if err != nil {
			return "", err
		}
		lockID, state = resp.Lockid, resp.State
		return fmt.Sprintf("lockid %d %v on %s %s", lockID, state, comp.Type, describeComp(comp)), nil
	}) {
		return 0, false
	}
	ok := out.run("check_lock", func() (string, error) {
		deadline := time.Now().Add(o.wait)
		pause := 100 * time.Millisecond
		polls := 0
		for {
			creq := &thriftgen.CheckLockRequest{Lockid: lockID}
			if txn != 0 {
				creq.Txnid = &txn
			}
			resp, err := c.CheckLock(ctx, creq)
			polls++
			if err != nil {
				return "", err
			}
			state = resp.State
			if state != thriftgen.LockState_WAITING || time.Now().Add(pause).After(deadline) {
				break
			}
			time.Sleep(pause)
			pause = min(2*pause, time.Second)
		}
		detail := fmt.Sprintf("lockid %d %v after %d check(s)", lockID, state, polls)
		if state != thriftgen.LockState_ACQUIRED {
			return detail, fmt.Errorf("lock not acquired: %v (waited up to %v, --wait)", state, o.wait)
		}
		return detail, nil
	})
	return lockID, ok
}

func describeComp(c *thriftgen.LockComponent) string {
	s := c.Level.String() + " " + c.Dbname
	if c.Tablename != nil {
		s += "." + *c.Tablename
	}
	if c.Partitionname != nil {
		s += "/" + *c.Partitionname
	}
	if c.OperationType != nil {
		s += " " + c.OperationType.String()
	}
	if c.IsTransactional != nil {
		s += fmt.Sprintf(" transactional=%v", *c.IsTransactional)
	}
	return s
}

func runTxn(ctx context.Context, c *thriftgen.Client, o *options, out *printer) bool {
	txn, ok := openTxn(ctx, c, o, out)
	if !ok {
		return false
	}
	steps := func() bool {
		if !out.run("allocate_table_write_ids", func() (string, error) {
			resp, err := c.AllocateTableWriteIds(ctx, &thriftgen.AllocateTableWriteIdsRequest{DbName: o.db,
				TableName: o.table, TxnIds: []int64{txn}})
			if err != nil {
				return "", err
			}
			var parts []string
			for _, w := range resp.TxnToWriteIds {
				parts = append(parts, fmt.Sprintf("txnid %d → writeid %d", w.TxnId, w.WriteId))
			}
			if len(parts) == 0 {
				return "", errors.New("no write id allocated")
			}
			return strings.Join(parts, ", "), nil
		}) {
			return false
		}
		if _, ok := lockAndCheck(ctx, c, o, out, txn); !ok {
			return false
		}
		var validTxns string
		if !out.run("get_open_txns", func() (string, error) {
			resp, err := c.GetOpenTxns(ctx)
			if err != nil {
				return "", err
			}
			validTxns = validTxnList(resp, txn)
			return "validTxnList " + validTxns, nil
		}) {
			return false
		}
		return out.run("get_valid_write_ids", func() (string, error) {
			full := o.db + "." + o.table
			resp, err := c.GetValidWriteIds(ctx, &thriftgen.GetValidWriteIdsRequest{FullTableNames: []string{full},
				ValidTxnList: &validTxns})
			if err != nil {
				return "", err
			}
			var parts []string
			for _, w := range resp.TblValidWriteIds {
				parts = append(parts, fmt.Sprintf("%s high watermark %d, %d invalid", w.FullTableName,
					w.WriteIdHighWaterMark, len(w.InvalidWriteIds)))
			}
			if len(parts) == 0 {
				return "", fmt.Errorf("no write ids for %s", full)
			}
			return strings.Join(parts, "; "), nil
		}) && out.run("commit_txn", func() (string, error) {
			return fmt.Sprintf("txnid %d", txn), c.CommitTxn(ctx, &thriftgen.CommitTxnRequest{Txnid: txn})
		})
	}
	if !steps() {
		abortAfterFailure(ctx, c, txn, out)
		return false
	}
	return true
}

// validTxnList renders the transaction snapshot as Hive's ValidReadTxnList
// does ("<high watermark>:<min open>:<open,...>:<aborted,...>"), leaving out
// the caller's own transaction.
func validTxnList(r *thriftgen.GetOpenTxnsResponse, own int64) string {
	var open, aborted []string
	for i, t := range r.OpenTxns {
		if t == own {
			continue
		}
		if i/8 < len(r.AbortedBits) && r.AbortedBits[i/8]&(1<<(uint(i)%8)) != 0 {
			aborted = append(aborted, strconv.FormatInt(t, 10))
		} else {
			open = append(open, strconv.FormatInt(t, 10))
		}
	}
	minOpen := int64(1<<63 - 1)
	if r.MinOpenTxn != nil {
		minOpen = *r.MinOpenTxn
	}
	return fmt.Sprintf("%d:%d:%s:%s", r.TxnHighWaterMark, minOpen, strings.Join(open, ","), strings.Join(aborted, ","))
}

func runLock(ctx context.Context, c *thriftgen.Client, o *options, out *printer) bool {
	txn, ok := openTxn(ctx, c, o, out)
	if !ok {
		return false
	}
	lockTxn := txn
	if !o.lockInTxn {
		lockTxn = 0
	}
	steps := func() bool {
		lockID, ok := lockAndCheck(ctx, c, o, out, lockTxn)
		if !ok {
			return false
		}
		if o.heartbeat && !out.run("heartbeat", func() (string, error) {
			req := &thriftgen.HeartbeatRequest{Lockid: &lockID}
			if lockTxn != 0 {
				req.Txnid = &lockTxn
			}
			return fmt.Sprintf("lockid %d txnid %d", lockID, lockTxn), c.Heartbeat(ctx, req)
		}) {
			return false
		}
		if o.unlock && !out.run("unlock", func() (string, error) {
			return fmt.Sprintf("lockid %d", lockID), c.Unlock(ctx, &thriftgen.UnlockRequest{Lockid: lockID})
		}) {
			return false
		}
		switch o.closeTxn {
		case "commit":
			return out.run("commit_txn", func() (string, error) {
				return fmt.Sprintf("txnid %d", txn), c.CommitTxn(ctx, &thriftgen.CommitTxnRequest{Txnid: txn})
			})
		case "abort":
			return out.run("abort_txn", func() (string, error) {
				return fmt.Sprintf("txnid %d", txn), c.AbortTxn(ctx, &thriftgen.AbortTxnRequest{Txnid: txn})
			})
		}
		out.step("close_txn", 0, nil, fmt.Sprintf("txnid %d left open (--close-txn none)", txn))
		return true
	}
	if !steps() {
		abortAfterFailure(ctx, c, txn, out)
		return false
	}
	return true
}

func runNotification(ctx context.Context, c *thriftgen.Client, o *options, out *printer) bool {
	var files []string
	for _, f := range o.filesAdded {
		for _, p := range strings.Split(f, ",") {
			if p = strings.TrimSpace(p); p != "" {
				files = append(files, p)
			}
		}
	}
	req := &thriftgen.WriteNotificationLogRequest{TxnId: o.txnID, WriteId: o.writeID, Db: o.db, Table: o.table,
		FileInfo: &thriftgen.InsertEventRequestData{FilesAdded: files}}
	if o.replace {
		req.FileInfo.Replace = &o.replace
	}
	if o.partitionVals != "" {
		req.PartitionVals = strings.Split(o.partitionVals, ",")
	}
	return out.run("add_write_notification_log", func() (string, error) {
		_, err := c.AddWriteNotificationLog(ctx, req)
		return fmt.Sprintf("%s.%s txnid %d writeid %d, %d file(s)", o.db, o.table, o.txnID, o.writeID, len(files)), err
	})
}
