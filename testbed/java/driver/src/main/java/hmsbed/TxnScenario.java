package hmsbed;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

import org.apache.hadoop.hive.common.ValidTxnList;
import org.apache.hadoop.hive.common.ValidWriteIdList;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
import org.apache.hadoop.hive.metastore.api.GetOpenTxnsInfoResponse;
import org.apache.hadoop.hive.metastore.api.OpenTxnsResponse;
import org.apache.hadoop.hive.metastore.api.TableValidWriteIds;
import org.apache.hadoop.hive.metastore.api.TxnInfo;
import org.apache.hadoop.hive.metastore.api.TxnState;
import org.apache.hadoop.hive.metastore.api.TxnToWriteId;

/**
 * txn --db NAME
 *
 * <p>The transaction calls of an ACID writer, through the real client: open transactions (one, then six in a
 * row, so that Hive 4 writes their ids as a range), list them (get_open_txns_info, valid transactions), allocate
 * write ids for a table (one, then a batch), read valid write ids (with a transaction list, and — Hive 4 — without
 * one, which 3.1.3 requires), heartbeat, commit one, abort the others, and check every state change through the
 * metastore's own answers. Table names are db.txn_RUNID; the database is created and dropped.
 */
final class TxnScenario implements Driver.Scenario {

  @Override
  public void run(Steps steps, Driver.Args args) throws Exception {
    final String db = args.require("db");
    final String table = "txn_" + Build.runId();
    final String full = db + "." + table;
    final IMetaStoreClient c = Hms.open(args.require("uri"));
    final long[] t = new long[7];
    final List<Long> open = new ArrayList<>();
    try {
      steps.run("createDatabase " + db, () -> {
        c.createDatabase(Build.database(db));
        return null;
      });
      steps.run("openTxn", () -> {
        t[0] = Hms.openTxnAsHiveServer2(c, "hmsbed");
        open.add(t[0]);
        return "txn " + t[0];
      });
      steps.run("openTxns 6", () -> {
        OpenTxnsResponse r = c.openTxns("hmsbed", 6);
        Steps.check(r.getTxn_idsSize() == 6, "openTxns(6) returned " + r.getTxn_ids());
        for (int i = 0; i < 6; i++) {
          t[i + 1] = r.getTxn_ids().get(i);
          open.add(t[i + 1]);
        }
        return String.valueOf(r.getTxn_ids());
      });
      steps.run("showTxns", () -> {
        GetOpenTxnsInfoResponse r = c.showTxns();
        for (long id : t) {
          TxnInfo found = null;
          for (TxnInfo i : r.getOpen_txns()) {
            if (i.getId() == id) {
              found = i;
            }
          }
          Steps.check(found != null && found.getState() == TxnState.OPEN, "txn " + id + " not listed as open: " + found);
        }
        Steps.check(r.getTxn_high_water_mark() >= t[6], "high water mark " + r.getTxn_high_water_mark() + " < " + t[6]);
        return r.getOpen_txnsSize() + " listed, hwm " + r.getTxn_high_water_mark();
      });
      steps.run("getValidTxns", () -> {
        ValidTxnList v = c.getValidTxns();
        for (long id : t) {
          Steps.check(!v.isTxnValid(id), "open txn " + id + " is valid in " + v.writeToString());
        }
        return v.writeToString();
      });
      steps.run("allocateTableWriteId", () -> {
        long w = c.allocateTableWriteId(t[0], db, table);
        Steps.check(w == 1, "first write id of a new table is " + w + ", want 1");
        return "write id " + w;
      });
      steps.run("allocateTableWriteIdsBatch", () -> {
        List<TxnToWriteId> ws = c.allocateTableWriteIdsBatch(Arrays.asList(t[1], t[2]), db, table);
        Steps.check(ws.size() == 2, "got " + ws);
        for (TxnToWriteId w : ws) {
          Steps.check(w.getWriteId() == 2 || w.getWriteId() == 3, "write ids " + ws);
        }
        return String.valueOf(ws);
      });
      steps.run("getValidWriteIds with a txn list", () -> {
        // Hive 4 writes five or more consecutive open txns as a range ("a-b"), which 3.1.3 cannot parse.
        String txns = c.getValidTxns(t[6]).writeToString();
        List<TableValidWriteIds> ids = c.getValidWriteIds(Collections.singletonList(full), txns);
        Steps.check(ids.size() == 1 && ids.get(0).getWriteIdHighWaterMark() >= 1
            && ids.get(0).getInvalidWriteIds().contains(1L),
            "write id 1 of the open txn must be invalid: " + ids + " for txn list " + txns);
        return txns + " -> " + ids.get(0);
      });
      if (Hms.isHive4()) {
        steps.run("getValidWriteIds without a txn list", () -> {
          ValidWriteIdList w = c.getValidWriteIds(full);
          Steps.check(!w.isWriteIdValid(1) && !w.isWriteIdValid(2), "write ids of open txns are valid: " + w);
          return w.writeToString();
        });
      }
      steps.run("heartbeat", () -> {
        c.heartbeat(t[0], 0);
        Steps.check(c.heartbeatTxnRange(t[1], t[6]).getAbortedSize() == 0, "txns aborted during heartbeat");
        return null;
      });
      steps.run("commitTxn", () -> {
        Hms.commitTxnAsHiveServer2(c, t[0], false);
        open.remove(Long.valueOf(t[0]));
        TableValidWriteIds w = c.getValidWriteIds(Collections.singletonList(full), c.getValidTxns().writeToString()).get(0);
        Steps.check(!w.getInvalidWriteIds().contains(1L) && w.getInvalidWriteIds().contains(2L),
            "after commit, write id 1 must be valid and 2 not: " + w);
        return String.valueOf(w);
      });
      steps.run("rollbackTxn and abortTxns", () -> {
        c.rollbackTxn(t[1]);
        c.abortTxns(Arrays.asList(t[2], t[3], t[4], t[5], t[6]));
        open.clear();
        GetOpenTxnsInfoResponse r = c.showTxns();
        for (TxnInfo i : r.getOpen_txns()) {
          if (i.getId() == t[0]) {
            throw new Steps.Check("committed txn " + t[0] + " still listed: " + i, null);
          }
          for (int k = 1; k < 7; k++) {
            if (i.getId() == t[k] && i.getState() != TxnState.ABORTED) {
              throw new Steps.Check("txn " + t[k] + " is " + i.getState() + " after abort", null);
            }
          }
        }
        return null;
      });
    } finally {
      if (!open.isEmpty()) {
        steps.attempt("abort left-over txns", () -> {
          c.abortTxns(open);
          return null;
        });
      }
      steps.attempt("dropDatabase " + db, () -> {
        c.dropDatabase(db, true, true, true);
        return null;
      });
      c.close();
    }
  }
}
