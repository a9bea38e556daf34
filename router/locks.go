package router

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/locks"
	"github.com/hms-proxy/hms-proxy/monitoring"
	"github.com/hms-proxy/hms-proxy/router/methods"
	"github.com/hms-proxy/hms-proxy/router/naming"
	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// The synthetic lock shim in the request path (issue 11).
//
// Transactions are the default catalog's: open_txns, commit_txn and abort_txn
// go there (they carry only ids). A lock request is split by catalog
// (locks.Split): the default catalog's components are that catalog's
// metastore's business; every other catalog's components are held by the
// shim, whose lock ids have bit 62 set (locks.IsShimLockID), so check_lock,
// unlock and heartbeat reach whoever issued the id and never another client's
// lock of a metastore whose counter happens to line up.
//
// A request naming the default catalog and others gets one lock id, the
// shim's: its record keeps the default catalog's part, which is taken at that
// metastore once the shim's part is granted (never before: see
// locks.Shim.LockLinked for why that cannot deadlock). check_lock answers
// ACQUIRED when both parts are granted, WAITING while either waits; unlock and
// heartbeat reach both parts.
//
// After the default catalog committed or aborted a transaction (or answered
// that it is gone), the shim releases its locks of that transaction. A failure
// of the store there, or in the shim's part of a transaction heartbeat, does
// not fail the client's call (its transaction did commit, or was heart-beaten,
// at the default catalog): it is logged and counted, and the shim's locks of
// that transaction expire after metastore.txn.timeout.

// shimBackend is the backend label of the calls the shim answers.
const shimBackend = "synthetic_lock"

// lockShim is the policy-chain middleware of the shim (after the access mode
// and the exposure rules, before Options.Inner).
func (r *Router) lockShim(next Handler) Handler {
	return func(ctx context.Context, x *Exchange) error {
		if x.Leg != nil {
			return next(ctx, x)
		}
		switch x.Method() {
		case "lock":
			if x.Cat.Default && !x.Plan().SplitLock {
				return next(ctx, x) // the default catalog's own lock: untouched
			}
			return r.shimLock(ctx, x, next)
		case "check_lock":
			return r.shimCheckLock(ctx, x, next)
		case "unlock":
			return r.shimUnlock(ctx, x, next)
		case "heartbeat":
			return r.shimHeartbeat(ctx, x, next)
		case "commit_txn", "abort_txn", "abort_txns":
			return r.shimEndTxn(ctx, x, next)
		}
		return next(ctx, x)
	}
}

// lockResolver maps a lock component's database (client name) to its catalog
// and backend name.
func (r *Router) lockResolver(db string) (string, string, bool) {
	c, name, _ := r.ns.SplitDB(db)
	return c.Name, name, true
}

// servedByShim labels the request for metrics and audit: the shim answered it
// (also when the default catalog held a linked part), for catalog.
func servedByShim(x *Exchange, catalog string) {
	x.req.backend = shimBackend
	x.req.defaultRouted = false
	if catalog != "" {
		x.req.catalog = catalog
	}
}

// shimLock serves a lock naming at least one non-default catalog.
func (r *Router) shimLock(ctx context.Context, x *Exchange, next Handler) error {
	var args thriftgen.LockArgs
	if err := decodeThrift(x.req.msg.Body(), &args); err != nil || args.Rqst == nil {
		return &planner.Refusal{Kind: planner.RefuseProtocol, Reason: "bad_arguments", Message: fmt.Sprintf("lock: cannot read arguments: %v", err)}
	}
	def := r.ns.Default()
	split, err := locks.Split(args.Rqst, def.Name, r.lockResolver)
	if err != nil {
		return &planner.Refusal{Kind: planner.RefuseMeta, Reason: "bad_lock", Message: "lock: " + err.Error()}
	}
	if len(split.Shim) == 0 { // the default catalog's components (and the placeholder) only
		body, err := encodeThrift(&thriftgen.LockArgs{Rqst: split.Default})
		if err != nil {
			return err
		}
		x.SetArgs(body)
		return next(ctx, x)
	}
	if x.Plan().SplitLock {
		// The planner left access modes to this split: each part is judged
		// by its own catalog's mode, whether or not it goes to a metastore.
		parts := split.Shim
		if split.Default != nil {
			parts = append([]locks.Request{{Catalog: def.Name, Lock: split.Default}}, parts...)
		}
		for _, p := range parts {
			cat := r.ns.Lookup(p.Catalog)
			if !lockWrites(p.Lock) {
				continue
			}
			if why := r.lane(cat).policy.writeRefusal(cat.Name, "lock", lockDBs(p.Lock)); why != "" {
				return &planner.Refusal{Kind: planner.RefuseMeta, Reason: "access_mode", Message: why}
			}
		}
	}
	if err := locks.Eligible(split.Shim...); err != nil {
		return &planner.Refusal{Kind: planner.RefuseMeta, Reason: "not_shim_eligible", Message: fmt.Sprintf(
			"lock refused: %v; the default catalog is %s (hms-proxy refuses transactional tables and write ids on the others)", err, def.Name)}
	}
	lockCat := split.LockCatalog(def.Name)
	servedByShim(x, lockCat)
	if split.Split {
		r.lockMetrics.LockRequestSplit(lockCat)
		r.log.Info("lock request split by catalog", "catalogs", strings.Join(split.Catalogs, ","),
			"lock_catalog", lockCat, "user", args.Rqst.User, "host", args.Rqst.Hostname)
	}
	var linked []byte
	if split.Default != nil {
		if linked, err = encodeThrift(&thriftgen.LockArgs{Rqst: split.Default}); err != nil {
			return err
		}
	}
	// Until its client has the answer, the lock is tied to this instance
	// (locks.AnswerMode): killed in between, the lock ends with this
	// instance's ZooKeeper session instead of stalling the table's writers
	// until the lock timeout. A combined lock's answer waits for the
	// default catalog's part; the proxy's own connections (REST commits)
	// never hand the lock to anyone.
	mode := locks.AnswerNow
	switch {
	case x.req.conn != nil && x.req.conn.Frontend != nil && x.req.conn.Frontend.Internal:
		mode = locks.AnswerNever
	case linked != nil:
		mode = locks.AnswerLater
	}
	resp, err := r.shim.LockAs(ctx, mode, linked, split.Shim...)
	if err != nil {
		return shimError("lock", err)
	}
	ans := lockAnswer{resp: resp}
	if linked != nil && resp.State == thriftgen.LockState_ACQUIRED {
		if ans, err = r.takeLinked(ctx, x, resp.Lockid, linked); err != nil {
			// The client gets this error, never the id: nobody could
			// release the shim part.
			r.discard(ctx, resp.Lockid, "the lock call failed before its answer")
			return err
		}
	}
	if mode == locks.AnswerLater && ans.resp != nil &&
		(ans.resp.State == thriftgen.LockState_ACQUIRED || ans.resp.State == thriftgen.LockState_WAITING) {
		if err := r.shim.Answered(ctx, resp.Lockid); err != nil {
			if ans.linkedID != 0 {
				r.releaseBackendLock(ctx, x, ans.linkedID, resp.Lockid)
			}
			return shimError("lock", err)
		}
	}
	return r.answerLocal(x, &thriftgen.LockResult{Success: ans.resp, O1: ans.noTxn, O2: ans.aborted})
}

// lockAnswer is the answer to a lock or check_lock of the shim: a response or
// one of the exceptions both RPCs declare (check_lock also NoSuchLock).
type lockAnswer struct {
	resp     *thriftgen.LockResponse
	noTxn    *thriftgen.NoSuchTxnException
	aborted  *thriftgen.TxnAbortedException
	noLock   *thriftgen.NoSuchLockException
	linkedID int64 // the default catalog's lock id this call took (takeLinked), 0 = none
}

// takeLinked takes the default catalog's part of combined lock shimID, whose
// shim part is granted, and records its lock id. A transport failure leaves
// the shim part as it is: the next check_lock tries again.
func (r *Router) takeLinked(ctx context.Context, x *Exchange, shimID int64, linked []byte) (lockAnswer, error) {
	var args thriftgen.LockArgs
	if err := decodeThrift(linked, &args); err != nil || args.Rqst == nil {
		return lockAnswer{}, fmt.Errorf("lockid:%d: the default catalog's part kept in the lock store cannot be read: %v", shimID, err)
	}
	def := r.ns.Default()
	var res thriftgen.LockResult
	if err := r.callCatalog(ctx, x, def, "lock", &args, &res); err != nil {
		return lockAnswer{}, err
	}
	if res.O1 != nil || res.O2 != nil || res.Success == nil {
		r.discard(ctx, shimID, "the default catalog refused its part")
		if res.Success == nil && res.O1 == nil && res.O2 == nil {
			return lockAnswer{}, &backendError{cat: def, err: errors.New("lock answered neither a response nor an exception")}
		}
		return lockAnswer{noTxn: res.O1, aborted: res.O2}, nil
	}
	b := res.Success
	if b.State != thriftgen.LockState_ACQUIRED && b.State != thriftgen.LockState_WAITING {
		r.discard(ctx, shimID, "the default catalog answered "+b.State.String())
		return lockAnswer{resp: &thriftgen.LockResponse{Lockid: shimID, State: b.State, ErrorMessage: b.ErrorMessage}}, nil
	}
	got, err := r.shim.Link(ctx, shimID, b.Lockid)
	if err != nil {
		r.releaseBackendLock(ctx, x, b.Lockid, shimID)
		var nsl *thriftgen.NoSuchLockException
		if errors.As(err, &nsl) {
			return lockAnswer{noLock: nsl}, nil
		}
		return lockAnswer{}, shimError(x.Method(), err)
	}
	if got != b.Lockid {
		// Another instance took the part first (two check_lock calls of one
		// lock at once): keep theirs.
		r.releaseBackendLock(ctx, x, b.Lockid, shimID)
		return r.checkLinked(ctx, x, shimID, got, args.Rqst.Txnid)
	}
	return lockAnswer{resp: &thriftgen.LockResponse{Lockid: shimID, State: b.State}, linkedID: b.Lockid}, nil
}

// checkLinked asks the default catalog about the linked part backendID of
// combined lock shimID (whose shim part is granted).
func (r *Router) checkLinked(ctx context.Context, x *Exchange, shimID, backendID int64, txn *int64) (lockAnswer, error) {
	var res thriftgen.CheckLockResult
	if err := r.callCatalog(ctx, x, r.ns.Default(), "check_lock",
		&thriftgen.CheckLockArgs{Rqst: &thriftgen.CheckLockRequest{Lockid: backendID, Txnid: txn}}, &res); err != nil {
		return lockAnswer{}, err
	}
	switch {
	case res.O3 != nil:
		r.discard(ctx, shimID, "the default catalog's part is gone")
		return lockAnswer{noLock: &thriftgen.NoSuchLockException{Message: fmt.Sprintf(
			"No such lock lockid:%d: its part on the default catalog %s (lockid:%d) is gone: %s", shimID, r.ns.Default().Name, backendID, res.O3.Message)}}, nil
	case res.O1 != nil || res.O2 != nil:
		r.discard(ctx, shimID, "the default catalog's transaction is gone")
		return lockAnswer{noTxn: res.O1, aborted: res.O2}, nil
	case res.Success == nil:
		return lockAnswer{}, &backendError{cat: r.ns.Default(), err: errors.New("check_lock answered neither a response nor an exception")}
	}
	b := res.Success
	if b.State != thriftgen.LockState_ACQUIRED && b.State != thriftgen.LockState_WAITING {
		r.discard(ctx, shimID, "the default catalog answered "+b.State.String())
	}
	return lockAnswer{resp: &thriftgen.LockResponse{Lockid: shimID, State: b.State, ErrorMessage: b.ErrorMessage}}, nil
}

// discard drops the shim part of a combined lock whose default-catalog part
// was refused or is gone; a failure only delays that to the expiry sweep.
func (r *Router) discard(ctx context.Context, shimID int64, why string) {
	if err := r.shim.Discard(ctx, shimID); err != nil {
		r.log.Warn("synthetic lock: could not drop the shim part of a combined lock; the expiry sweep removes it",
			"lockid", shimID, "why", why, "err", err)
	}
}

// releaseBackendLock unlocks a default-catalog lock the shim took but does not
// keep. In a transaction the metastore refuses (TxnOpenException): the lock
// goes with the transaction's end.
func (r *Router) releaseBackendLock(ctx context.Context, x *Exchange, backendID, shimID int64) {
	var res thriftgen.UnlockResult
	err := r.callCatalog(ctx, x, r.ns.Default(), "unlock", &thriftgen.UnlockArgs{Rqst: &thriftgen.UnlockRequest{Lockid: backendID}}, &res)
	if err == nil && res.O1 == nil && res.O2 == nil {
		return
	}
	if err == nil && res.O2 != nil {
		r.log.Info("synthetic lock: the default catalog keeps a lock of a transaction until it ends", "lockid", backendID, "combined_lockid", shimID)
		return
	}
	r.log.Warn("synthetic lock: could not release a default-catalog lock the shim does not keep; it expires after the metastore's txn timeout",
		"lockid", backendID, "combined_lockid", shimID, "err", err, "result", fmt.Sprintf("%+v", res))
}

// shimCheckLock serves check_lock of a shim id.
func (r *Router) shimCheckLock(ctx context.Context, x *Exchange, next Handler) error {
	var args thriftgen.CheckLockArgs
	if err := decodeThrift(x.Args(), &args); err != nil || args.Rqst == nil {
		return next(ctx, x) // the metastore judges what it cannot read either
	}
	id := args.Rqst.Lockid
	if !locks.IsShimLockID(id) {
		return next(ctx, x)
	}
	servedByShim(x, "")
	resp, held, err := r.shim.Check(ctx, id)
	var nsl *thriftgen.NoSuchLockException
	switch {
	case errors.As(err, &nsl):
		return r.answerLocal(x, &thriftgen.CheckLockResult{O3: nsl})
	case err != nil:
		return shimError("check_lock", err)
	}
	if len(held.Catalogs) > 0 {
		x.req.catalog = held.Catalogs[0]
	}
	ans := lockAnswer{resp: resp}
	if held.LinkedRequest != nil && resp.State == thriftgen.LockState_ACQUIRED {
		if held.LinkedLockID == 0 {
			ans, err = r.takeLinked(ctx, x, id, held.LinkedRequest)
		} else {
			var txn *int64
			if held.TxnID != 0 {
				txn = &held.TxnID
			}
			ans, err = r.checkLinked(ctx, x, id, held.LinkedLockID, txn)
		}
		if err != nil {
			return err
		}
	}
	return r.answerLocal(x, &thriftgen.CheckLockResult{Success: ans.resp, O1: ans.noTxn, O2: ans.aborted, O3: ans.noLock})
}

// shimUnlock serves unlock of a shim id (and of its linked part).
func (r *Router) shimUnlock(ctx context.Context, x *Exchange, next Handler) error {
	var args thriftgen.UnlockArgs
	if err := decodeThrift(x.Args(), &args); err != nil || args.Rqst == nil {
		return next(ctx, x)
	}
	id := args.Rqst.Lockid
	if !locks.IsShimLockID(id) {
		return next(ctx, x)
	}
	servedByShim(x, "")
	held, err := r.shim.UnlockLinked(ctx, id)
	var nsl *thriftgen.NoSuchLockException
	var open *thriftgen.TxnOpenException
	switch {
	case errors.As(err, &nsl):
		return r.answerLocal(x, &thriftgen.UnlockResult{O1: nsl})
	case errors.As(err, &open):
		return r.answerLocal(x, &thriftgen.UnlockResult{O2: open})
	case err != nil:
		return shimError("unlock", err)
	}
	if len(held.Catalogs) > 0 {
		x.req.catalog = held.Catalogs[0]
	}
	if held.LinkedLockID != 0 {
		var res thriftgen.UnlockResult
		if err := r.callCatalog(ctx, x, r.ns.Default(), "unlock",
			&thriftgen.UnlockArgs{Rqst: &thriftgen.UnlockRequest{Lockid: held.LinkedLockID}}, &res); err != nil {
			return err
		}
		if res.O1 != nil {
			res.O1 = &thriftgen.NoSuchLockException{Message: fmt.Sprintf(
				"lockid:%d released; its part on the default catalog %s (lockid:%d) was already gone: %s", id, r.ns.Default().Name, held.LinkedLockID, res.O1.Message)}
		}
		return r.answerLocal(x, &res)
	}
	return r.answerLocal(x, &thriftgen.UnlockResult{})
}

// shimHeartbeat: a shim lock id is heart-beaten in the shim, and its linked
// part and the transaction at the default catalog; a transaction heartbeat
// also extends the shim's locks of that transaction.
func (r *Router) shimHeartbeat(ctx context.Context, x *Exchange, next Handler) error {
	var args thriftgen.HeartbeatArgs
	if err := decodeThrift(x.Args(), &args); err != nil || args.Ids == nil {
		return next(ctx, x)
	}
	var lockID, txnID int64
	if args.Ids.Lockid != nil {
		lockID = *args.Ids.Lockid
	}
	if args.Ids.Txnid != nil {
		txnID = *args.Ids.Txnid
	}
	if locks.IsShimLockID(lockID) {
		servedByShim(x, "")
		held, err := r.shim.HeartbeatLinked(ctx, lockID, txnID)
		var nsl *thriftgen.NoSuchLockException
		switch {
		case errors.As(err, &nsl):
			return r.answerLocal(x, &thriftgen.HeartbeatResult{O1: nsl})
		case err != nil:
			return shimError("heartbeat", err)
		}
		if len(held.Catalogs) > 0 {
			x.req.catalog = held.Catalogs[0]
		}
		if txnID == 0 && held.LinkedLockID == 0 {
			return r.answerLocal(x, &thriftgen.HeartbeatResult{})
		}
		fwd := &thriftgen.HeartbeatRequest{Txnid: args.Ids.Txnid}
		if held.LinkedLockID != 0 {
			fwd.Lockid = &held.LinkedLockID
		}
		body, err := encodeThrift(&thriftgen.HeartbeatArgs{Ids: fwd})
		if err != nil {
			return err
		}
		x.SetArgs(body)
		return next(ctx, x)
	}
	if txnID != 0 {
		x.OnReply(func(body []byte) ([]byte, error) {
			if methods.ExceptionField(body) == 0 {
				if err := r.shim.Heartbeat(ctx, 0, txnID); err != nil {
					r.log.Warn("synthetic lock: the transaction was heart-beaten at the default catalog, but not its synthetic locks; they expire after metastore.txn.timeout unless a later heartbeat reaches the store",
						"txnid", txnID, "err", err)
				}
			}
			return body, nil
		})
	}
	return next(ctx, x)
}

// shimEndTxn releases the shim's locks of a transaction once the default
// catalog committed or aborted it, or answered that it is gone.
func (r *Router) shimEndTxn(ctx context.Context, x *Exchange, next Handler) error {
	var ids []int64
	switch x.Method() {
	case "commit_txn":
		var a thriftgen.CommitTxnArgs
		if decodeThrift(x.Args(), &a) == nil && a.Rqst != nil {
			ids = []int64{a.Rqst.Txnid}
		}
	case "abort_txn":
		var a thriftgen.AbortTxnArgs
		if decodeThrift(x.Args(), &a) == nil && a.Rqst != nil {
			ids = []int64{a.Rqst.Txnid}
		}
	case "abort_txns":
		var a thriftgen.AbortTxnsArgs
		if decodeThrift(x.Args(), &a) == nil && a.Rqst != nil {
			ids = a.Rqst.TxnIds
		}
	}
	if len(ids) == 0 {
		return next(ctx, x)
	}
	x.OnReply(func(body []byte) ([]byte, error) {
		// Success, NoSuchTxnException or TxnAbortedException (every exception
		// these RPCs declare): the transaction is over either way.
		for _, id := range ids {
			if err := r.shim.ReleaseTxn(ctx, id); err != nil {
				r.log.Warn("synthetic lock: "+x.Method()+" went through at the default catalog, but the transaction's synthetic locks could not be released; they expire after metastore.txn.timeout",
					"txnid", id, "err", err)
			}
		}
		return body, nil
	})
	return next(ctx, x)
}

// lockStoreState is what the last readiness probe found of the shim's store.
type lockStoreState struct {
	mu     sync.Mutex
	probed time.Time
	err    error
}

// probeLockStore pings the shim's store (part of ProbeBackends).
func (r *Router) probeLockStore(ctx context.Context) {
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := r.shim.Ping(pctx)
	r.lockStore.mu.Lock()
	r.lockStore.probed, r.lockStore.err = time.Now(), err
	r.lockStore.mu.Unlock()
}

// LockStoreStatus reports the synthetic lock store to /readyz
// (monitoring.LockStoreSource).
func (r *Router) LockStoreStatus() (monitoring.LockStoreStatus, bool) {
	if r.shim == nil {
		return monitoring.LockStoreStatus{}, false
	}
	r.lockStore.mu.Lock()
	defer r.lockStore.mu.Unlock()
	st := monitoring.LockStoreStatus{Mode: r.shim.StoreMode(), Store: r.shim.StoreName(),
		Reachable: !r.lockStore.probed.IsZero() && r.lockStore.err == nil, LastProbeEpochSecond: epoch(r.lockStore.probed)}
	if r.lockStore.err != nil {
		st.LastError = r.lockStore.err.Error()
	}
	return st, true
}

// shimError turns a shim failure into the client's answer: lock, check_lock,
// unlock and heartbeat declare no MetaException, so it is a
// TApplicationException (INTERNAL_ERROR) whose message names the store.
func shimError(method string, err error) error {
	var se *locks.StoreError
	var me *thriftgen.MetaException
	switch {
	case errors.As(err, &se):
		return &planner.Refusal{Kind: planner.RefuseMeta, Reason: "synthetic_lock_store", Message: fmt.Sprintf("hms-proxy: %s failed: %v", method, err)}
	case errors.As(err, &me):
		return &planner.Refusal{Kind: planner.RefuseMeta, Reason: "synthetic_lock", Message: fmt.Sprintf("hms-proxy: %s: %s", method, me.Message)}
	}
	return err
}

// callCatalog sends one call of the proxy's own to catalog cat (through the
// catalog's compat plan, as the executor would) and decodes its result. A
// declared exception is in res; a TApplicationException of the backend is
// answered as such; a transport failure is a backendError.
func (r *Router) callCatalog(ctx context.Context, x *Exchange, cat *naming.Catalog, method string, args, res thrift.TStruct) error {
	body, err := encodeThrift(args)
	if err != nil {
		return err
	}
	v, err := wire.DecodeStruct(body)
	if err != nil {
		return err
	}
	b, err := r.lane(cat).backendFor(ctx)
	if err != nil {
		return &backendError{cat: cat, err: err}
	}
	// The lossless guard as for any write: fields the runtime implies are
	// dropped (a Hive 4 client's zeroWaitReadEnabled=false), others refused.
	bc := &backendCaller{ctx: ctx, b: b, rt: r.lane(cat).runtime, dialect: r.lane(cat).dialect, trace: r.trace, id: x.req.info.ID,
		guard: r.lane(cat).guard, strict: true}
	var out wire.Value
	switch mode, ad := r.adapters.Plan(r.lane(cat).runtime, method); mode {
	case compat.Native:
		out, err = bc.Call(method, v)
	case compat.Adapted:
		out, err = ad.Run(bc, &v)
	default:
		return &planner.Refusal{Kind: planner.RefuseMeta, Reason: "unsupported", Message: compat.UnsupportedMessage(method, cat.Name, r.lane(cat).runtime)}
	}
	var app *compat.AppError
	var refused *compat.RefusedError
	switch {
	case errors.As(err, &app):
		if r.metrics != nil {
			r.metrics.BackendFailure(cat.Name, "TApplicationException")
		}
		return &planner.Refusal{Kind: planner.RefuseMeta, Reason: "backend_application_error",
			Message: fmt.Sprintf("catalog %s answered %s with TApplicationException: %s", cat.Name, method, app.Message)}
	case errors.As(err, &refused):
		return &planner.Refusal{Kind: planner.RefuseMeta, Reason: "adapter", Message: fmt.Sprintf("%s on catalog %s: %s", method, cat.Name, refused.Reason)}
	case err != nil:
		return &backendError{cat: cat, err: err}
	}
	return decodeThrift(out.Encode(), res)
}

// answerLocal writes the client's answer from a *_result struct the proxy
// built (the shim's answers: no names to rewrite).
func (r *Router) answerLocal(x *Exchange, res thrift.TStruct) error {
	body, err := encodeThrift(res)
	if err != nil {
		return err
	}
	req := x.req
	if exc := methods.ExceptionField(body); exc != 0 {
		req.status = "error"
		if r.metrics != nil {
			r.metrics.BackendFailure(shimBackend, req.plan.Spec.ExceptionName(exc))
		}
	}
	req.out = wire.AppendHeader(req.out, wire.Header{Name: req.msg.Name, Type: wire.Reply, SeqID: req.msg.SeqID})
	req.out = append(req.out, body...)
	return nil
}

// lockWrites says whether a lock request writes (the access modes' view; see
// writesData).
func lockWrites(req *thriftgen.LockRequest) bool {
	for _, c := range req.Component {
		if c.Type != thriftgen.LockType_SHARED_READ {
			return true
		}
		if op := c.OperationType; op != nil && (*op == thriftgen.DataOperationType_INSERT ||
			*op == thriftgen.DataOperationType_UPDATE || *op == thriftgen.DataOperationType_DELETE) {
			return true
		}
	}
	return false
}

// lockDBs lists the (backend) databases of a lock request, without Hive's placeholder.
func lockDBs(req *thriftgen.LockRequest) []string {
	var out []string
	for _, c := range req.Component {
		if !strings.EqualFold(c.Dbname, naming.DummyDatabase) {
			out = append(out, c.Dbname)
		}
	}
	return out
}

func decodeThrift(b []byte, s thrift.TStruct) error {
	buf := thrift.NewTMemoryBufferLen(len(b))
	if _, err := buf.Write(b); err != nil {
		return err
	}
	return s.Read(context.Background(), thrift.NewTBinaryProtocolConf(buf, &thrift.TConfiguration{}))
}

func encodeThrift(s thrift.TStruct) ([]byte, error) {
	buf := thrift.NewTMemoryBufferLen(256)
	p := thrift.NewTBinaryProtocolConf(buf, &thrift.TConfiguration{})
	if err := s.Write(context.Background(), p); err != nil {
		return nil, err
	}
	if err := p.Flush(context.Background()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
