package ha

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/monitoring"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/testbed/cluster"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// replicaReadyz is the part of a replica's /readyz this file reads.
type replicaReadyz struct {
	code    int
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Summary struct {
		Disconnected []string `json:"disconnected"`
	} `json:"summary"`
}

func getReplicaReadyz(t *testing.T, r *cluster.Replica) replicaReadyz {
	t.Helper()
	cl := http.Client{Timeout: 20 * time.Second}
	resp, err := cl.Get(r.ManagementURL() + "/readyz")
	if err != nil {
		t.Fatalf("%s /readyz: %v", r.Name, err)
	}
	defer resp.Body.Close()
	out := replicaReadyz{code: resp.StatusCode}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s /readyz: %v", r.Name, err)
	}
	return out
}

// Issue 20, item 6: the metastore of one catalog out of three is SIGKILLed.
// Every replica goes on answering /readyz 200 (naming the catalog as
// disconnected in the body), so HAProxy, which health-checks /readyz as the
// docs/operations.md#the-balancer-haproxy-example does, keeps every replica UP; new connections through
// the balancer reach every replica and the other catalogs are served, while
// the dead catalog's calls fail with an error naming it. Before, every
// replica answered 503 and HAProxy took all three out: clients of the
// healthy catalogs got "TSocket read 0 bytes".
func TestOneMetastoreKilledKeepsEveryReplicaInTheBalancer(t *testing.T) {
	needHive(t)
	zk := zooKeeper(t)
	doomed := testbed.StartMetastoreT(t, testbed.Hive313) // killed below: its own
	c := startClusterOf(t, zk, nil, cluster.Catalog{Name: "catalog1", URI: hms1.URI},
		cluster.Catalog{Name: "catalog2", URI: hms2.URI}, cluster.Catalog{Name: "catalog3", URI: doomed.URI})
	bal := proxytest.Client(t, c.URI())
	if _, err := bal.GetDatabase(ctx(t), "catalog3__default"); err != nil {
		t.Fatalf("catalog3 before the kill: %v", err)
	}
	if err := doomed.Kill(); err != nil {
		t.Fatal(err)
	}
	// The event: each replica has seen catalog3 go (a call, or its probe).
	for _, r := range c.Replicas {
		deadline := time.Now().Add(90 * time.Second)
		for {
			rz := getReplicaReadyz(t, r)
			if rz.code != http.StatusOK || rz.Status != monitoring.StatusReady {
				t.Fatalf("%s /readyz with catalog3's metastore dead: %d %+v", r.Name, rz.code, rz)
			}
			if slices.Equal(rz.Summary.Disconnected, []string{"catalog3"}) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s does not report catalog3 disconnected 90 s after its metastore was killed: %+v", r.Name, rz)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// HAProxy has health-checked each replica several times since (each
	// check is a /readyz answer the replica counts): none went down.
	for _, r := range c.Replicas {
		base, err := r.Metric(monitoring.MetricReadinessChecksTotal, "result", monitoring.ReadinessReady)
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(90 * time.Second)
		for {
			n, err := r.Metric(monitoring.MetricReadinessChecksTotal, "result", monitoring.ReadinessReady)
			if err != nil {
				t.Fatal(err)
			}
			if n >= base+4 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s answered %v READY checks in 90 s, want 4 (HAProxy checks every 500 ms)", r.Name, n-base)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if n, _ := r.Metric(monitoring.MetricReadinessChecksTotal, "result", monitoring.ReadinessNotReady); n != 0 {
			t.Errorf("%s answered NOT_READY %v times", r.Name, n)
		}
	}
	before := map[string]int{}
	for _, r := range c.Replicas {
		s, err := c.HAProxy.State(r.Name)
		if err != nil {
			t.Fatal(err)
		}
		if s.Status != "UP" || s.WentDown != 0 || s.FailedChecks != 0 {
			t.Errorf("HAProxy's view of %s with catalog3 dead: %+v", r.Name, s)
		}
		before[r.Name] = s.TotalSessions
	}
	// New connections through the balancer: every replica gets some, the
	// healthy catalogs answer on each, the dead one fails naming catalog3.
	for i := range 9 {
		cl := proxytest.Client(t, c.URI())
		for _, db := range []string{"default", "catalog2__default"} {
			if _, err := cl.GetDatabase(ctx(t), db); err != nil {
				t.Fatalf("connection %d through the balancer: get_database(%s) with catalog3 dead: %v", i, db, err)
			}
		}
		_, err := cl.GetDatabase(ctx(t), "catalog3__default")
		var me *thriftgen.MetaException
		if !errors.As(err, &me) || !strings.Contains(me.Message, "catalog3") {
			t.Fatalf("connection %d: catalog3 with its metastore dead: %v, want a MetaException naming catalog3", i, err)
		}
	}
	for _, r := range c.Replicas {
		s, err := c.HAProxy.State(r.Name)
		if err != nil {
			t.Fatal(err)
		}
		if s.TotalSessions <= before[r.Name] {
			t.Errorf("HAProxy sent none of 9 new connections to %s: %+v", r.Name, s)
		}
	}
}
