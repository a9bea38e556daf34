package locks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
