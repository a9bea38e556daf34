package ha

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/configs"
	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/router/dbcache/cachesync"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Database writes through replica A bump the catalog's epoch in ZooKeeper
// before A answers, and replicas B and C see the bump (and drop the catalog
// from their database caches, when this build has them); a write refused
// by policy bumps nothing. With the caches built, a database dropped
// through A is never served by B or C from their caches once they had the
// notification. That is what the documentation promises
// (docs/operations.md#database-caches-across-replicas-routingdatabase-cachezookeeper):
// a notification, not a read barrier (a read on B that races the
// notification may still see the cached entry), so the test waits for the notification (the event), then
// reads; asserting the read at once measured a race that a loaded machine
// loses.
func TestDatabaseWritesThroughOneReplicaInvalidateTheOthers(t *testing.T) {
	needHive(t)
	zk := zooKeeper(t)
	znode := "/" + uniq("epochs")
	props := with(catalogProps("catalog1", "catalog2"),
		"routing.database-cache.zookeeper.connect-string", zk.Addr,
		"routing.database-cache.zookeeper.znode", znode,
		"catalog.catalog1.access-mode", "READ_ONLY")
	cachesBuilt := false
	if cfg, err := configs.Parse(props); err == nil {
		st, _ := cfg.FeatureStatus("database-metadata-cache")
		cachesBuilt = st == configs.StatusImplemented
	}
	if cachesBuilt {
		props = with(props, "routing.database-metadata-cache.ttl-ms", "600000", "routing.database-list-cache.ttl-ms", "600000")
	}
	a, b, c := proxytest.Start(t, props), proxytest.Start(t, props), proxytest.Start(t, props)
	ca, cb, cc := proxytest.Client(t, a.URI("primary")), proxytest.Client(t, b.URI("primary")), proxytest.Client(t, c.URI("primary"))
	db := "catalog2__" + uniq("coherent")
	// B and C watch catalog2's epoch before A writes (a replica whose watch
	// is not armed yet has cached nothing it could serve stale: its session's
	// arrival dropped everything).
	for _, r := range []*proxytest.Proxy{b, c} {
		deadline := time.Now().Add(2 * time.Minute)
		for !r.CacheSync.Armed("catalog2") {
			if time.Now().After(deadline) {
				t.Fatal("a replica's epoch watch of catalog2 is not armed after 2 minutes")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	if err := ca.CreateDatabase(ctx(t), &thriftgen.Database{Name: db}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ca.DropDatabase(context.Background(), db, true, true) })
	// The bump is made (written, or failed within its timeout and queued)
	// before the client has its answer. A ZooKeeper slower than the bump
	// timeout (fsync on a loaded machine) leaves it pending: it must then be
	// written by the retry, never lost.
	okBumps := metric(t, a, cachesync.MetricBumpsTotal, "catalog", "catalog2", "result", "ok")
	failedBumps := metric(t, a, cachesync.MetricBumpsTotal, "catalog", "catalog2", "result", "error")
	switch {
	case okBumps == 1:
	case okBumps == 0 && failedBumps > 0:
		t.Logf("ZooKeeper answered A's bump after its timeout (%v failed attempts); waiting for the retry", failedBumps)
		waitMetric(t, a, cachesync.MetricBumpsTotal, 1, "catalog", "catalog2", "result", "ok")
	default:
		t.Fatalf("A bumped catalog2's epoch %v times (%v failed) before answering create_database, want 1", okBumps, failedBumps)
	}
	for _, r := range []*proxytest.Proxy{b, c} {
		waitMetric(t, r, cachesync.MetricInvalidationsTotal, 1, "catalog", "catalog2", "reason", cachesync.ReasonEpochChanged)
	}
	// A refused write (catalog1 is READ_ONLY) is not a write: no bump.
	if err := ca.CreateDatabase(ctx(t), &thriftgen.Database{Name: uniq("refused")}); err == nil {
		t.Fatal("create_database on a READ_ONLY catalog succeeded")
	}
	if n := metric(t, a, cachesync.MetricBumpsTotal, "catalog", "catalog1"); n != 0 {
		t.Errorf("a refused create_database bumped catalog1's epoch (%v)", n)
	}
	if !cachesBuilt {
		t.Log("the database caches are refused-until-built in this build: the epochs are written and watched; the drop-and-read part runs once the caches are wired (app: CacheSync.SetTarget)")
		return
	}
	for _, cl := range []*thriftgen.Client{cb, cc} { // cached on B and C
		if _, err := cl.GetDatabase(ctx(t), db); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[*proxytest.Proxy]float64{}
	for _, r := range []*proxytest.Proxy{b, c} {
		seen[r] = metric(t, r, cachesync.MetricInvalidationsTotal, "catalog", "catalog2", "reason", cachesync.ReasonEpochChanged)
	}
	if err := ca.DropDatabase(ctx(t), db, true, true); err != nil {
		t.Fatal(err)
	}
	var nso *thriftgen.NoSuchObjectException
	for _, r := range []*proxytest.Proxy{b, c} {
		waitMetric(t, r, cachesync.MetricInvalidationsTotal, seen[r]+1, "catalog", "catalog2", "reason", cachesync.ReasonEpochChanged)
	}
	for _, cl := range []*thriftgen.Client{cb, cc} {
		if _, err := cl.GetDatabase(ctx(t), db); !errors.As(err, &nso) {
			t.Fatalf("get_database of a database dropped through A, on a replica that had the notification: %v, want NoSuchObjectException", err)
		}
	}
}

func waitMetric(t *testing.T, p *proxytest.Proxy, name string, atLeast float64, labels ...string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for metric(t, p, name, labels...) < atLeast {
		if time.Now().After(deadline) {
			t.Fatalf("%s%v stays below %v", name, labels, atLeast)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
