package testbed

import (
	"testing"
)

func TestZooKeeperStartsStopsAndComesBack(t *testing.T) {
	z := StartZooKeeperT(t)
	if !ruok(z.Addr) {
		t.Fatalf("ZooKeeper on %s does not answer ruok after start", z.Addr)
	}
	if err := z.Pause(); err != nil {
		t.Fatal(err)
	}
	if ruok(z.Addr) {
		t.Fatal("a paused ZooKeeper still answered ruok")
	}
	if err := z.Resume(); err != nil {
		t.Fatal(err)
	}
	if !ruok(z.Addr) {
		t.Fatal("ZooKeeper did not answer after resume")
	}
	if err := z.Stop(); err != nil {
		t.Fatal(err)
	}
	if ruok(z.Addr) {
		t.Fatal("a stopped ZooKeeper still answered ruok")
	}
	if err := z.Start(); err != nil {
		t.Fatal(err)
	}
	if !ruok(z.Addr) {
		t.Fatal("ZooKeeper did not come back on its port")
	}
}
