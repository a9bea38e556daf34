package ranger

import (
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"
	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/router/dbcache/cachesync"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// The shared table caches of two replicas stay coherent through the
// catalogs' epochs in ZooKeeper: a table write through replica A (alice's
// alter of vis_a) bumps hx's epoch, replica B drops what it cached of hx
// when it sees the bump, and its next read is the altered table.
func TestRangerSharedTableCachesAcrossReplicas(t *testing.T) {
	zk := testbed.StartZooKeeperT(t)
	w := newWorld(t, "routing.database-list-cache.ttl-ms=600000", "routing.database-list-cache.shared-across-users=true",
		"routing.database-metadata-cache.ttl-ms=600000", "routing.database-metadata-cache.shared-across-users=true",
		"routing.database-cache.zookeeper.connect-string="+zk.Addr, "routing.database-cache.zookeeper.znode=/"+e2eutil.Uniq("rg"))
	b := proxytest.Start(t, w.withoutHive4Listener())
	ctx := e2eutil.Ctx(t)
	deadline := time.Now().Add(2 * time.Minute)
	for !b.CacheSync.Armed("hx") {
		if time.Now().After(deadline) {
			t.Fatal("replica B's epoch watch of hx is not armed after 2 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
	onB := proxytest.Client(t, b.URI("primary"))
	if _, err := onB.SetUgi(ctx, javaUser(t), nil); err != nil {
		t.Fatal(err)
	}
	db := "hx__" + w.pub
	read := func() *thriftgen.Table {
		res, err := onB.GetTableReq(ctx, &thriftgen.GetTableRequest{DbName: db, TblName: "vis_a"})
		if err != nil {
			t.Fatal(err)
		}
		return res.Table
	}
	read() // cached on B
	seen := b.Metric(t, cachesync.MetricInvalidationsTotal, "catalog", "hx", "reason", cachesync.ReasonEpochChanged)
	alice := w.as(t, "alice")
	tb := read()
	tb.Parameters["ranger_e2e"] = "through A"
	if err := alice.AlterTable(ctx, db, "vis_a", tb); err != nil {
		t.Fatalf("alice alters vis_a through A: %v", err)
	}
	b.AwaitMetric(t, seen+1, cachesync.MetricInvalidationsTotal, "catalog", "hx", "reason", cachesync.ReasonEpochChanged)
	if got := read().Parameters["ranger_e2e"]; got != "through A" {
		t.Fatalf("B answers vis_a with ranger_e2e=%q after A's write and the notification; want the altered table", got)
	}
}
