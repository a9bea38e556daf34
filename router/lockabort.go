package router

import (
	"context"
	"errors"
	"fmt"

	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// abortRefusedLock: a lock of a transaction that a policy (an access mode,
// the exposure rules, Ranger, the lock shim, the lossless guard) refuses is
// answered with the TxnAbortedException lock declares, after the proxy has
// aborted the transaction on the default catalog, whose metastore holds the
// transactions. lock declares no MetaException: Hive's DbLockManager turns
// any other failure into "Error communicating with the metastore", and
// shows a TxnAbortedException as "Transaction manager has aborted the
// transaction txnid:N. Reason: <message>"; it then takes the transaction
// for ended and does not abort it itself, so the abort is the proxy's, and
// the answer is true. When the abort fails, the refusal is answered as
// before (a TApplicationException) and the client's own rollback still
// aborts the transaction.
func (r *Router) abortRefusedLock(next Handler) Handler {
	return func(ctx context.Context, x *Exchange) error {
		err := next(ctx, x)
		var ref *planner.Refusal
		if err == nil || x.Leg != nil || x.Method() != "lock" || !errors.As(err, &ref) || ref.Kind == planner.RefuseTxnAborted {
			return err
		}
		txn := lockTxnID(x.req.msg.Body())
		if txn <= 0 {
			return err
		}
		var res thriftgen.AbortTxnResult
		aerr := r.callCatalog(ctx, x, r.ns.Default(), "abort_txn", &thriftgen.AbortTxnArgs{Rqst: &thriftgen.AbortTxnRequest{Txnid: txn}}, &res)
		if aerr == nil && res.O1 != nil {
			aerr = errors.New(res.O1.Message)
		}
		if aerr != nil {
			r.log.Warn("a refused lock's transaction could not be aborted; the client's rollback aborts it", "txnid", txn, "err", aerr)
			return err
		}
		return &planner.Refusal{Kind: planner.RefuseTxnAborted, Reason: ref.Reason, Catalog: ref.Catalog, Status: ref.Status, Table: ref.Table,
			Message: fmt.Sprintf("hms-proxy refused the lock of transaction %d and aborted the transaction: %s", txn, ref.Message)}
	}
}

// lockTxnID is the transaction of a lock request (LockRequest.txnid), 0
// when it names none or cannot be read.
func lockTxnID(body []byte) int64 {
	v, err := wire.DecodeStruct(body)
	if err != nil {
		return 0
	}
	req := v.Field(1)
	if req == nil || req.Type != wire.TStruct {
		return 0
	}
	if id := req.Field(lockRequestTxnID); id != nil {
		return id.Int
	}
	return 0
}
