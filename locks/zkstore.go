package locks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Defaults of synthetic-read-lock.store.zookeeper.*.
const (
	DefaultZnode                      = "/hms-proxy-synthetic-read-locks"
	DefaultZooKeeperConnectionTimeout = 15 * time.Second
	DefaultZooKeeperSessionTimeout    = 60 * time.Second
	DefaultZooKeeperBaseSleep         = 1 * time.Second
	DefaultZooKeeperMaxRetries        = 3
)

// ZooKeeperOptions configure a ZooKeeperStore; each field is one
// synthetic-read-lock.store.zookeeper.* key.
type ZooKeeperOptions struct {
	// ConnectString is connect-string: host:port[,host:port...][/chroot]. Required.
	ConnectString string
	// Znode is znode: the absolute path under which locks/ and txns/ live ("" = DefaultZnode).
	Znode string
	// ConnectionTimeout is connection-timeout-ms: the longest one ZooKeeper
	// operation may wait for its answer (0 = DefaultZooKeeperConnectionTimeout).
	ConnectionTimeout time.Duration
	// SessionTimeout is session-timeout-ms (0 = DefaultZooKeeperSessionTimeout).
	SessionTimeout time.Duration
	// BaseSleep is base-sleep-ms: the first pause before a retry; it doubles
	// with every further retry. Taken as given (0 = retry at once).
	BaseSleep time.Duration
	// MaxRetries is max-retries: how often an operation that failed for want of
	// a connection is tried again. Taken as given (0 = never); negative is an error.
	MaxRetries int
	// Logger receives the client's connection events at debug level (nil = discard).
	Logger *slog.Logger
	// Dialer opens the connections to ZooKeeper (nil: plain TCP). With
	// security.mode=KERBEROS it is a zksasl.Authenticator's Dial, which
	// authenticates every connection with SASL/Kerberos.
	Dialer zk.Dialer
	// ACL is given to every znode the store creates (nil: world:anyone:cdrwa;
	// under Kerberos zksasl.DefaultACL, the creator's SASL identity).
	ACL []zk.ACL
	// AuthError, when set, reports the last failed SASL exchange; operations
	// that fail for want of a session name it.
	AuthError func() error
}

// DefaultZooKeeperOptions gives the spec's defaults for a connect string.
func DefaultZooKeeperOptions(connectString string) ZooKeeperOptions {
	return ZooKeeperOptions{ConnectString: connectString, Znode: DefaultZnode,
		ConnectionTimeout: DefaultZooKeeperConnectionTimeout, SessionTimeout: DefaultZooKeeperSessionTimeout,
		BaseSleep: DefaultZooKeeperBaseSleep, MaxRetries: DefaultZooKeeperMaxRetries}
}

// ZooKeeperStore is the ZOOKEEPER store:
//
//	<znode>/locks/lock-<sequence>   one lock record (JSON); the sequence is its arrival order and part of its id
//	<znode>/txns/<txnId>/<lockId>   empty index node: the locks of a transaction, for commit_txn/abort_txn
//	<znode>/pending/<token>         EPHEMERAL, empty: the lock record with this token is not answered yet
//
// A pending record and its marker are created in one multi-operation, and
// the marker is deleted in the same multi-operation that writes the record
// answered, so a pending record without its marker is one whose creating
// instance's session ended before it answered: an orphan any instance
// removes (Orphaned, Sweep), at most a session timeout after the instance
// died instead of after the lock timeout.
//
// Every proxy instance on the same znode sees the same locks: ZooKeeper's
// sequential znodes order lock calls across instances, and every change of a
// record is a versioned write (compare-and-set), so replicas never overwrite
// each other and need no protocol of their own.
type ZooKeeperStore struct {
	opts        ZooKeeperOptions
	servers     []string
	chroot      string
	root        string // chroot + znode
	locksPath   string
	txnsPath    string
	pendingPath string
	conn        *zk.Conn
	log         *slog.Logger
	closed      chan struct{}
	closeOnce   sync.Once

	mu    sync.Mutex
	ready bool
	epoch uint32

	lostMu sync.Mutex
	lost   map[string]time.Time // tokens of lock creations whose outcome is unknown (the sweep removes their nodes)
}

// errTimeout marks a ZooKeeper call that got no answer within the connection timeout.
var errTimeout = errors.New("no answer from ZooKeeper")

// NewZooKeeperStore validates the options and starts the ZooKeeper client.
// It does not wait for ZooKeeper: the tree is created at the first operation,
// and while ZooKeeper is unreachable every operation fails with a *StoreError.
func NewZooKeeperStore(o ZooKeeperOptions) (*ZooKeeperStore, error) {
	if o.Znode == "" {
		o.Znode = DefaultZnode
	}
	if o.ConnectionTimeout == 0 {
		o.ConnectionTimeout = DefaultZooKeeperConnectionTimeout
	}
	if o.SessionTimeout == 0 {
		o.SessionTimeout = DefaultZooKeeperSessionTimeout
	}
	servers, chroot, err := parseConnectString(o.ConnectString)
	if err != nil {
		return nil, err
	}
	if err := checkZnode("synthetic-read-lock.store.zookeeper.znode", o.Znode); err != nil {
		return nil, err
	}
	switch {
	case o.ConnectionTimeout < 0:
		return nil, fmt.Errorf("locks: synthetic-read-lock.store.zookeeper.connection-timeout-ms is %v: must be at least 1 ms", o.ConnectionTimeout)
	case o.SessionTimeout < 0:
		return nil, fmt.Errorf("locks: synthetic-read-lock.store.zookeeper.session-timeout-ms is %v: must be at least 1 ms", o.SessionTimeout)
	case o.BaseSleep < 0:
		return nil, fmt.Errorf("locks: synthetic-read-lock.store.zookeeper.base-sleep-ms is %v: must not be negative", o.BaseSleep)
	case o.MaxRetries < 0:
		return nil, fmt.Errorf("locks: synthetic-read-lock.store.zookeeper.max-retries is %d: must not be negative", o.MaxRetries)
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	root := path.Clean(chroot + o.Znode)
	z := &ZooKeeperStore{opts: o, servers: servers, chroot: chroot, root: root,
		locksPath: root + "/locks", txnsPath: root + "/txns", pendingPath: root + "/pending", log: log, closed: make(chan struct{}),
		lost: map[string]time.Time{}}
	if o.ACL == nil {
		o.ACL = zk.WorldACL(zk.PermAll)
	}
	z.opts.ACL = o.ACL
	dial := o.Dialer
	if dial == nil {
		dial = plainDial
	}
	conn, events, err := zk.Connect(servers, o.SessionTimeout, zk.WithLogger(zkLogger{log}), zk.WithLogInfo(false), zk.WithDialer(dial))
	if err != nil {
		return nil, fmt.Errorf("locks: %s: %w", z.Describe(), err)
	}
	z.conn = conn
	go func() {
		for ev := range events {
			if ev.Type == zk.EventSession {
				log.Debug("synthetic lock store: ZooKeeper session", "state", ev.State.String(), "server", ev.Server)
			}
		}
	}()
	return z, nil
}

// plainDial is go-zookeeper's own default dialer.
func plainDial(network, address string, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout(network, address, timeout)
}

// parseConnectString splits host:port,...[/chroot].
func parseConnectString(s string) ([]string, string, error) {
	const key = "synthetic-read-lock.store.zookeeper.connect-string"
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, "", fmt.Errorf("locks: %s is empty: name the ZooKeeper servers as host:port[,host:port...][/chroot]", key)
	}
	hosts, chroot := s, ""
	if i := strings.Index(s, "/"); i >= 0 {
		hosts, chroot = s[:i], s[i:]
		if strings.ContainsAny(chroot, ",:") {
			return nil, "", fmt.Errorf("locks: %s %q: the chroot %q holds a server list; the chroot goes once, after the last server", key, s, chroot)
		}
		if chroot == "/" {
			chroot = ""
		} else if err := checkZnode(key+" chroot", chroot); err != nil {
			return nil, "", err
		}
	}
	var servers []string
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		host, port, err := net.SplitHostPort(h)
		if err != nil || host == "" {
			return nil, "", fmt.Errorf("locks: %s %q: server %q is not host:port", key, s, h)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, "", fmt.Errorf("locks: %s %q: server %q has no valid port", key, s, h)
		}
		servers = append(servers, h)
	}
	return servers, chroot, nil
}

func checkZnode(key, p string) error {
	if !strings.HasPrefix(p, "/") || p == "/" || strings.HasSuffix(p, "/") || strings.Contains(p, "//") ||
		path.Clean(p) != p {
		return fmt.Errorf("locks: %s %q: want an absolute znode path such as %s (no trailing slash, no empty or relative parts)", key, p, DefaultZnode)
	}
	return nil
}

// Mode is ModeZooKeeper.
func (z *ZooKeeperStore) Mode() string { return ModeZooKeeper }

// Describe names the store in every error.
func (z *ZooKeeperStore) Describe() string {
	return "ZOOKEEPER store " + z.opts.ConnectString + " znode " + z.opts.Znode
}

// Ping creates the tree if needed and reads the locks znode once (no retries:
// it answers whether ZooKeeper answers now).
func (z *ZooKeeperStore) Ping(ctx context.Context) error {
	if _, err := z.init(ctx); err != nil {
		return err
	}
	err := z.once(ctx, func() error {
		ok, _, err := z.conn.Exists(z.locksPath)
		if err == nil && !ok {
			err = fmt.Errorf("%w: %s is gone", errCorrupt, z.locksPath)
		}
		return err
	})
	if err != nil {
		return z.fail("ping", err)
	}
	return nil
}

// Close ends the ZooKeeper session.
func (z *ZooKeeperStore) Close() error {
	z.closeOnce.Do(func() {
		close(z.closed)
		z.conn.Close()
	})
	return nil
}

// zkLogger sends the client library's messages to slog at debug level.
type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	l.log.Debug("synthetic lock store: zookeeper client: " + fmt.Sprintf(format, args...))
}

// fail wraps a ZooKeeper failure into a *StoreError naming the store.
func (z *ZooKeeperStore) fail(op string, err error) error {
	var se *StoreError
	if errors.As(err, &se) {
		return err
	}
	if z.opts.AuthError != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNodeExists) {
		if aerr := z.opts.AuthError(); aerr != nil {
			err = fmt.Errorf("%w (last ZooKeeper SASL attempt: %v)", err, aerr)
		}
	}
	return &StoreError{Store: z.Describe(), Op: op, Exception: zkException(err), Err: err}
}

// zkException gives the ZooKeeper (KeeperException) name of a failure, the
// vocabulary of ZooKeeper's own logs and of the Java proxy's metric.
func zkException(err error) string {
	switch {
	case errors.Is(err, zk.ErrNoServer), errors.Is(err, zk.ErrConnectionClosed):
		return "ConnectionLossException"
	case errors.Is(err, zk.ErrSessionExpired):
		return "SessionExpiredException"
	case errors.Is(err, errTimeout), errors.Is(err, context.DeadlineExceeded):
		return "OperationTimeoutException"
	case errors.Is(err, zk.ErrNoAuth), errors.Is(err, zk.ErrAuthFailed):
		return "NoAuthException"
	case errors.Is(err, zk.ErrClosing):
		return "SessionClosedException"
	case errors.Is(err, context.Canceled):
		return "InterruptedException"
	case errors.Is(err, errCorrupt):
		return "DataInconsistencyException"
	}
	return "KeeperException"
}

var errCorrupt = errors.New("unexpected znode layout")

// retryable: the request was never sent (always safe to repeat), or the
// operation is idempotent and the connection was lost under it.
func retryable(err error, idempotent bool) bool {
	if errors.Is(err, zk.ErrNoServer) {
		return true
	}
	if !idempotent {
		return false
	}
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, errTimeout)
}

// call runs one ZooKeeper operation with the connection timeout, retrying
// connection failures up to MaxRetries times with doubling pauses from
// BaseSleep. f gets the attempt number (0 first).
func (z *ZooKeeperStore) call(ctx context.Context, idempotent bool, f func(attempt int) error) error {
	for attempt := 0; ; attempt++ {
		err := z.once(ctx, func() error { return f(attempt) })
		if err == nil || !retryable(err, idempotent) || attempt >= z.opts.MaxRetries {
			return err
		}
		pause := z.opts.BaseSleep << min(attempt, 10)
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-z.closed:
			t.Stop()
			return zk.ErrClosing
		}
	}
}

// once runs f and waits for it at most the connection timeout (or ctx). A call
// given up on still finishes in the background: the client library bounds it
// by the session's receive timeout.
func (z *ZooKeeperStore) once(ctx context.Context, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	t := time.NewTimer(z.opts.ConnectionTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("%w within %v (connection-timeout-ms)", errTimeout, z.opts.ConnectionTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// init creates the tree (once) and derives the epoch from the creation of the locks znode.
func (z *ZooKeeperStore) init(ctx context.Context) (uint32, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.ready {
		return z.epoch, nil
	}
	var parts []string
	for p := z.locksPath; p != "/" && p != "."; p = path.Dir(p) {
		parts = append([]string{p}, parts...)
	}
	parts = append(parts, z.txnsPath, z.pendingPath)
	for _, p := range parts {
		err := z.call(ctx, true, func(int) error {
			_, err := z.conn.Create(p, nil, 0, z.opts.ACL)
			if errors.Is(err, zk.ErrNodeExists) {
				return nil
			}
			return err
		})
		if err != nil {
			return 0, z.fail("create "+p, err)
		}
	}
	var stat *zk.Stat
	err := z.call(ctx, true, func(int) error {
		var ok bool
		var err error
		ok, stat, err = z.conn.Exists(z.locksPath)
		if err == nil && !ok {
			return fmt.Errorf("%w: %s vanished right after it was created", errCorrupt, z.locksPath)
		}
		return err
	})
	if err != nil {
		return 0, z.fail("stat "+z.locksPath, err)
	}
	h := uint64(stat.Czxid) * 0x9E3779B97F4A7C15
	z.epoch = uint32(h>>34) & epochMask
	z.ready = true
	return z.epoch, nil
}

func (z *ZooKeeperStore) lockPath(seq uint32) string {
	return fmt.Sprintf("%s/lock-%010d", z.locksPath, seq)
}

// markerPath is the ephemeral marker of a pending record.
func (z *ZooKeeperStore) markerPath(token string) string { return z.pendingPath + "/" + token }

// multiError gives the failure of a multi-operation: the first operation's
// own error (which of them failed matters to the caller), or the call's.
func multiError(res []zk.MultiResponse, err error) (int, error) {
	for i, r := range res {
		for _, known := range []error{zk.ErrNoNode, zk.ErrBadVersion, zk.ErrNodeExists, zk.ErrNoAuth, zk.ErrNotEmpty} {
			if errors.Is(r.Error, known) {
				return i, r.Error
			}
		}
	}
	return -1, err
}

func (z *ZooKeeperStore) indexPath(txnID, id int64) string {
	return z.txnsPath + "/" + strconv.FormatInt(txnID, 10) + "/" + strconv.FormatInt(id, 10)
}

// seqOf parses lock-<sequence>.
func seqOf(name string) (uint32, bool) {
	s, ok := strings.CutPrefix(name, "lock-")
	if !ok || len(s) != 10 {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n > 1<<31-1 {
		return 0, false
	}
	return uint32(n), true
}

// Create writes the record as a sequential znode, then its transaction index entry.
func (z *ZooKeeperStore) Create(ctx context.Context, r *Record) (int64, error) {
	epoch, err := z.init(ctx)
	if err != nil {
		return 0, err
	}
	data, err := encodeRecord(r)
	if err != nil {
		return 0, z.fail("create", err)
	}
	if r.Pending && r.Token == "" {
		return 0, z.fail("create", errors.New("a pending lock record needs a token to name its marker"))
	}
	created, err := z.createSequential(ctx, data, r.Token, r.Pending)
	if err != nil {
		return 0, z.fail("create", err)
	}
	seq, ok := seqOf(path.Base(created))
	if !ok {
		z.forget(ctx, created)
		return 0, z.fail("create", fmt.Errorf("%w: created %s, whose sequence is not a lock sequence (the sequence counter of %s may have wrapped past 2^31: recreate the znode)", errCorrupt, created, z.locksPath))
	}
	id := makeID(epoch, seq)
	if r.TxnID != 0 {
		if err := z.createIndex(ctx, r.TxnID, id); err != nil {
			// without its index entry commit_txn could not release the lock: take it back
			z.forget(ctx, created)
			return 0, z.fail("create txn index", err)
		}
	}
	return id, nil
}

// createSequential creates locks/lock-<seq>, with the pending marker of its
// token in the same multi-operation when pending. It is retried only when the
// request was never sent; when its outcome is unknown the token is remembered
// and the sweep removes the node should it exist.
func (z *ZooKeeperStore) createSequential(ctx context.Context, data []byte, token string, pending bool) (string, error) {
	var mu sync.Mutex
	abandoned := false
	var created string
	err := z.call(ctx, false, func(int) error {
		var p string
		var err error
		if pending {
			var res []zk.MultiResponse
			res, err = z.conn.Multi(
				&zk.CreateRequest{Path: z.markerPath(token), Acl: z.opts.ACL, Flags: zk.FlagEphemeral},
				&zk.CreateRequest{Path: z.locksPath + "/lock-", Data: data, Acl: z.opts.ACL, Flags: zk.FlagSequence})
			if _, err = multiError(res, err); err == nil {
				p = res[1].String
			}
		} else {
			p, err = z.conn.Create(z.locksPath+"/lock-", data, zk.FlagSequence, z.opts.ACL)
		}
		mu.Lock()
		defer mu.Unlock()
		if abandoned {
			if err == nil {
				_ = z.conn.Delete(p, -1) // nobody waits for this lock any more
				if pending {
					_ = z.conn.Delete(z.markerPath(token), -1)
				}
			} else if !errors.Is(err, zk.ErrNoServer) {
				z.remember(token)
			}
			return err
		}
		created = p
		return err
	})
	mu.Lock()
	defer mu.Unlock()
	if err != nil {
		if errors.Is(err, errTimeout) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			if created != "" {
				return created, nil // it finished just after the wait ended
			}
			abandoned = true // the creating goroutine cleans up when it finishes
		} else if errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrSessionExpired) {
			z.remember(token)
		}
		return "", err
	}
	return created, nil
}

func (z *ZooKeeperStore) remember(token string) {
	if token == "" {
		return
	}
	z.lostMu.Lock()
	z.lost[token] = time.Now()
	z.lostMu.Unlock()
}

// forget removes a lock node this store created but could not complete; if
// that fails too, the sweep finds it by its token or its age.
func (z *ZooKeeperStore) forget(ctx context.Context, p string) {
	err := z.call(ctx, true, func(int) error {
		err := z.conn.Delete(p, -1)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	})
	if err != nil {
		z.log.Warn("synthetic lock store: could not remove an incomplete lock node; the sweep removes it when it expires",
			"store", z.Describe(), "znode", p, "err", err)
	}
}

// createIndex creates txns/<txn>/<id>, creating the transaction folder as
// needed (a concurrent sweep may remove an empty folder between the two).
func (z *ZooKeeperStore) createIndex(ctx context.Context, txnID, id int64) error {
	folder := z.txnsPath + "/" + strconv.FormatInt(txnID, 10)
	entry := z.indexPath(txnID, id)
	for try := 0; try < 5; try++ {
		err := z.call(ctx, true, func(int) error {
			_, err := z.conn.Create(folder, nil, 0, z.opts.ACL)
			if errors.Is(err, zk.ErrNodeExists) {
				return nil
			}
			return err
		})
		if err != nil {
			return err
		}
		err = z.call(ctx, true, func(int) error {
			_, err := z.conn.Create(entry, nil, 0, z.opts.ACL)
			if errors.Is(err, zk.ErrNodeExists) {
				return nil
			}
			return err
		})
		if !errors.Is(err, zk.ErrNoNode) {
			return err
		}
	}
	return fmt.Errorf("%w: transaction folder %s keeps disappearing", errCorrupt, folder)
}

// read fetches one lock node; foreign nodes (not a record of this format) come back with ok=false.
func (z *ZooKeeperStore) read(ctx context.Context, epoch, seq uint32) (r *Record, stat *zk.Stat, ok bool, err error) {
	var data []byte
	err = z.call(ctx, true, func(int) error {
		var err error
		data, stat, err = z.conn.Get(z.lockPath(seq))
		return err
	})
	if err != nil {
		return nil, nil, false, err
	}
	rec, derr := decodeRecord(data)
	if derr != nil {
		return nil, stat, false, nil
	}
	rec.seq = seq
	rec.ID = makeID(epoch, seq)
	rec.version = stat.Version
	return rec, stat, true, nil
}

// Get reads one record by id.
func (z *ZooKeeperStore) Get(ctx context.Context, id int64) (*Record, error) {
	epoch, err := z.init(ctx)
	if err != nil {
		return nil, err
	}
	e, seq, ok := splitID(id)
	if !ok || e != epoch || seq > 1<<31-1 {
		return nil, ErrNotFound
	}
	r, _, ok, err := z.read(ctx, epoch, seq)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, z.fail("get", err)
	}
	if !ok {
		return nil, ErrNotFound
	}
	return r, nil
}

// children lists locks/ as sequences, ascending.
func (z *ZooKeeperStore) children(ctx context.Context) ([]uint32, error) {
	var names []string
	err := z.call(ctx, true, func(int) error {
		var err error
		names, _, err = z.conn.Children(z.locksPath)
		return err
	})
	if err != nil {
		return nil, err
	}
	seqs := make([]uint32, 0, len(names))
	for _, n := range names {
		if s, ok := seqOf(n); ok {
			seqs = append(seqs, s)
		}
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	return seqs, nil
}

type readResult struct {
	rec  *Record
	stat *zk.Stat
	ok   bool
	gone bool
	err  error
}

// readAll fetches lock nodes with a few requests in flight at once (ZooKeeper pipelines them on one session).
func (z *ZooKeeperStore) readAll(ctx context.Context, epoch uint32, seqs []uint32) []readResult {
	out := make([]readResult, len(seqs))
	const inFlight = 8
	sem := make(chan struct{}, inFlight)
	var wg sync.WaitGroup
	for i, s := range seqs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r, stat, ok, err := z.read(ctx, epoch, s)
			if errors.Is(err, zk.ErrNoNode) {
				out[i] = readResult{gone: true}
				return
			}
			out[i] = readResult{rec: r, stat: stat, ok: ok, err: err}
		}()
	}
	wg.Wait()
	return out
}

// List reads the records that arrived before the given id (all when 0).
func (z *ZooKeeperStore) List(ctx context.Context, before int64) ([]*Record, error) {
	epoch, err := z.init(ctx)
	if err != nil {
		return nil, err
	}
	limit := uint32(1<<32 - 1)
	if before != 0 {
		_, s, ok := splitID(before)
		if !ok {
			return nil, z.fail("list", fmt.Errorf("%d is not a shim lock id", before))
		}
		limit = s
	}
	seqs, err := z.children(ctx)
	if err != nil {
		return nil, z.fail("list", err)
	}
	n := sort.Search(len(seqs), func(i int) bool { return seqs[i] >= limit })
	var out []*Record
	for _, res := range z.readAll(ctx, epoch, seqs[:n]) {
		if res.err != nil {
			return nil, z.fail("list", res.err)
		}
		if res.ok {
			out = append(out, res.rec)
		}
	}
	return out, nil
}

// Update writes the record if its version is still the one read.
func (z *ZooKeeperStore) Update(ctx context.Context, r *Record) error {
	if _, err := z.init(ctx); err != nil {
		return err
	}
	data, err := encodeRecord(r)
	if err != nil {
		return z.fail("update", err)
	}
	var stat *zk.Stat
	answered := r.pendingStored && !r.Pending
	markerGone := false
	err = z.call(ctx, true, func(int) error {
		if !answered {
			var err error
			stat, err = z.conn.Set(z.lockPath(r.seq), data, r.version)
			return err
		}
		res, err := z.conn.Multi(&zk.SetDataRequest{Path: z.lockPath(r.seq), Data: data, Version: r.version},
			&zk.DeleteRequest{Path: z.markerPath(r.Token), Version: -1})
		op, err := multiError(res, err)
		if err == nil {
			stat = res[0].Stat
		}
		markerGone = op == 1 && errors.Is(err, zk.ErrNoNode)
		return err
	})
	switch {
	case markerGone:
		return ErrSessionLost
	case errors.Is(err, zk.ErrBadVersion):
		return ErrChanged
	case errors.Is(err, zk.ErrNoNode):
		return ErrNotFound
	case err != nil:
		return z.fail("update", err)
	}
	r.version, r.pendingStored = stat.Version, r.Pending
	return nil
}

// Orphaned reports whether a pending record's marker is gone: the session
// of the instance that took the lock ended before it answered.
func (z *ZooKeeperStore) Orphaned(ctx context.Context, r *Record) (bool, error) {
	if !r.pendingStored || r.Token == "" {
		return false, nil
	}
	if _, err := z.init(ctx); err != nil {
		return false, err
	}
	var exists bool
	err := z.call(ctx, true, func(int) error {
		var err error
		exists, _, err = z.conn.Exists(z.markerPath(r.Token))
		return err
	})
	if err != nil {
		return false, z.fail("orphan check", err)
	}
	return !exists, nil
}

// Delete removes the record, then its index entry.
func (z *ZooKeeperStore) Delete(ctx context.Context, r *Record, matchVersion bool) error {
	if _, err := z.init(ctx); err != nil {
		return err
	}
	version := int32(-1)
	if matchVersion {
		version = r.version
	}
	withMarker := r.pendingStored && r.Token != ""
	err := z.call(ctx, true, func(attempt int) error {
		if withMarker {
			res, err := z.conn.Multi(&zk.DeleteRequest{Path: z.lockPath(r.seq), Version: version},
				&zk.DeleteRequest{Path: z.markerPath(r.Token), Version: -1})
			op, err := multiError(res, err)
			if op != 1 || !errors.Is(err, zk.ErrNoNode) {
				if attempt > 0 && op == 0 && errors.Is(err, zk.ErrNoNode) {
					return nil // the lost first attempt did it
				}
				return err
			}
			// The marker went with the session that created it (or with
			// the lost first attempt): the record alone.
		}
		err := z.conn.Delete(z.lockPath(r.seq), version)
		if attempt > 0 && errors.Is(err, zk.ErrNoNode) {
			return nil // the lost first attempt did it
		}
		return err
	})
	switch {
	case errors.Is(err, zk.ErrBadVersion):
		return ErrChanged
	case errors.Is(err, zk.ErrNoNode):
		return ErrNotFound
	case err != nil:
		return z.fail("delete", err)
	}
	if r.TxnID != 0 {
		z.deleteIndex(ctx, r.TxnID, r.ID)
	}
	return nil
}

// deleteIndex removes an index entry; a failure only leaves an orphan entry, which the sweep removes.
func (z *ZooKeeperStore) deleteIndex(ctx context.Context, txnID, id int64) {
	err := z.call(ctx, true, func(int) error {
		err := z.conn.Delete(z.indexPath(txnID, id), -1)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	})
	if err != nil {
		z.log.Debug("synthetic lock store: index entry left for the sweep", "txnid", txnID, "lockid", id, "err", err)
	}
}

// TxnLocks lists the index of a transaction: one getChildren, NoNode for a transaction without shim locks.
func (z *ZooKeeperStore) TxnLocks(ctx context.Context, txnID int64) ([]int64, error) {
	if _, err := z.init(ctx); err != nil {
		return nil, err
	}
	var names []string
	err := z.call(ctx, true, func(int) error {
		var err error
		names, _, err = z.conn.Children(z.txnsPath + "/" + strconv.FormatInt(txnID, 10))
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, z.fail("txn_locks", err)
	}
	ids := make([]int64, 0, len(names))
	for _, n := range names {
		if id, err := strconv.ParseInt(n, 10, 64); err == nil && IsShimLockID(id) {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// Sweep removes expired records (by last heartbeat; foreign nodes by
// modification time), records of lost creations, orphan index entries and
// empty transaction folders. Deletions are versioned: a heartbeat that lands
// during the sweep keeps its lock.
func (z *ZooKeeperStore) Sweep(ctx context.Context, now time.Time, timeout time.Duration) (SweepResult, error) {
	var res SweepResult
	epoch, err := z.init(ctx)
	if err != nil {
		return res, err
	}
	cutoff := now.Add(-timeout).UnixMilli()
	seqs, err := z.children(ctx)
	if err != nil {
		return res, z.fail("sweep", err)
	}
	z.lostMu.Lock()
	lost := make(map[string]bool, len(z.lost))
	for t, at := range z.lost {
		if now.Sub(at) > 2*timeout {
			delete(z.lost, t) // long gone or never created
			continue
		}
		lost[t] = true
	}
	z.lostMu.Unlock()
	alive := map[int64]bool{}
	var firstErr error
	records := z.readAll(ctx, epoch, seqs)
	// The markers are listed after the records were read: a record created
	// since has its marker too (one multi-operation), and one answered since
	// has a new version, which the versioned delete below refuses.
	var markers []string
	err = z.call(ctx, true, func(int) error {
		var err error
		markers, _, err = z.conn.Children(z.pendingPath)
		return err
	})
	if err != nil {
		return res, z.fail("sweep", err)
	}
	live := make(map[string]bool, len(markers))
	for _, m := range markers {
		live[m] = true
	}
	for i, rr := range records {
		if rr.gone {
			continue
		}
		if rr.err != nil {
			if firstErr == nil {
				firstErr = rr.err
			}
			continue
		}
		p := z.lockPath(seqs[i])
		switch {
		case !rr.ok && rr.stat.Mtime < cutoff:
			if z.deleteVersioned(ctx, p, rr.stat.Version) {
				res.Foreign++
			}
		case !rr.ok:
			// a live node of another format: not ours to judge
		case rr.rec.pendingStored && rr.rec.Token != "" && !live[rr.rec.Token] && !lost[rr.rec.Token]:
			if z.deleteVersioned(ctx, p, rr.rec.version) {
				res.Orphans = append(res.Orphans, rr.rec)
				if rr.rec.TxnID != 0 {
					z.deleteIndex(ctx, rr.rec.TxnID, rr.rec.ID)
				}
			} else {
				alive[rr.rec.ID] = true
				res.Active++
			}
		case rr.rec.HeartbeatMs < cutoff || (rr.rec.Token != "" && lost[rr.rec.Token]):
			if z.deleteVersioned(ctx, p, rr.rec.version) {
				res.Expired = append(res.Expired, rr.rec)
				if rr.rec.TxnID != 0 {
					z.deleteIndex(ctx, rr.rec.TxnID, rr.rec.ID)
				}
				if rr.rec.pendingStored && rr.rec.Token != "" {
					z.deleteMarker(ctx, rr.rec.Token)
				}
				z.lostMu.Lock()
				delete(z.lost, rr.rec.Token)
				z.lostMu.Unlock()
			} else {
				alive[rr.rec.ID] = true
				res.Active++
			}
		default:
			alive[rr.rec.ID] = true
			res.Active++
		}
	}
	if err := z.sweepIndex(ctx, epoch, alive, &res); err != nil && firstErr == nil {
		firstErr = err
	}
	if firstErr != nil {
		return res, z.fail("sweep", firstErr)
	}
	return res, nil
}

// deleteMarker removes the pending marker of a record removed by the sweep
// (a lost creation of this instance keeps its marker until its session ends).
func (z *ZooKeeperStore) deleteMarker(ctx context.Context, token string) {
	_ = z.call(ctx, true, func(int) error {
		err := z.conn.Delete(z.markerPath(token), -1)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	})
}

// deleteVersioned deletes a node if unchanged; false when it changed or a failure kept it.
func (z *ZooKeeperStore) deleteVersioned(ctx context.Context, p string, version int32) bool {
	err := z.call(ctx, true, func(attempt int) error {
		err := z.conn.Delete(p, version)
		if attempt > 0 && errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	})
	return err == nil
}

// sweepIndex removes index entries whose lock is gone and empty transaction folders.
func (z *ZooKeeperStore) sweepIndex(ctx context.Context, epoch uint32, alive map[int64]bool, res *SweepResult) error {
	var txns []string
	err := z.call(ctx, true, func(int) error {
		var err error
		txns, _, err = z.conn.Children(z.txnsPath)
		return err
	})
	if err != nil {
		return err
	}
	for _, txn := range txns {
		folder := z.txnsPath + "/" + txn
		var entries []string
		err := z.call(ctx, true, func(int) error {
			var err error
			entries, _, err = z.conn.Children(folder)
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		left := len(entries)
		for _, e := range entries {
			id, perr := strconv.ParseInt(e, 10, 64)
			if perr == nil && alive[id] {
				continue
			}
			if perr == nil {
				// a lock created after the listing above is written before its entry: ask once more
				if ep, seq, ok := splitID(id); ok && ep == epoch && seq <= 1<<31-1 {
					var exists bool
					if err := z.call(ctx, true, func(int) error {
						var err error
						exists, _, err = z.conn.Exists(z.lockPath(seq))
						return err
					}); err != nil {
						return err
					}
					if exists {
						continue
					}
				}
			}
			if z.deleteVersioned(ctx, folder+"/"+e, -1) {
				res.OrphanIndex++
				left--
			}
		}
		if left == 0 {
			err := z.call(ctx, true, func(int) error { return z.conn.Delete(folder, -1) })
			if err == nil {
				res.EmptyTxns++
			} else if !errors.Is(err, zk.ErrNotEmpty) && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
		}
	}
	return nil
}
