// Command hmscluster runs N hms-proxy replicas behind HAProxy over given
// metastores, sharing a real ZooKeeper it starts (make demo-ha uses it):
//
//	hmscluster --binary bin/hms-proxy --dir DIR --catalog NAME=thrift://H:P [--catalog ...]
//	           [--replicas 3] [--port 9083] [--print-env]
//
// It prints the endpoints (as KEY=VALUE lines with --print-env, the last
// being CLUSTER_READY=1) and stops everything on SIGINT/SIGTERM.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/testbed/cluster"
)

type catalogs []cluster.Catalog

func (c *catalogs) String() string { return fmt.Sprint(*c) }

func (c *catalogs) Set(v string) error {
	name, uri, ok := strings.Cut(v, "=")
	if !ok || name == "" || !strings.HasPrefix(uri, "thrift://") {
		return fmt.Errorf("--catalog %q: want NAME=thrift://HOST:PORT", v)
	}
	*c = append(*c, cluster.Catalog{Name: name, URI: uri})
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "hmscluster: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	var cats catalogs
	fs := flag.NewFlagSet("hmscluster", flag.ExitOnError)
	bin := fs.String("binary", "", "the hms-proxy binary (required)")
	dir := fs.String("dir", "", "working directory: configurations, logs, HAProxy (required)")
	n := fs.Int("replicas", 3, "number of replicas")
	port := fs.Int("port", 0, "port of the balancer's frontend on 127.0.0.1 (0: a free one)")
	env := fs.Bool("print-env", false, "print KEY=VALUE lines for scripts")
	fs.Var(&cats, "catalog", "NAME=thrift://HOST:PORT, once per catalog; the first is the default catalog")
	_ = fs.Parse(os.Args[1:])
	if *bin == "" || *dir == "" || len(cats) == 0 {
		fs.Usage()
		os.Exit(2)
	}
	zk, err := testbed.StartZooKeeper()
	if err != nil {
		return err
	}
	defer zk.Stop()
	c, err := cluster.Start(cluster.Options{Binary: *bin, Dir: *dir, Replicas: *n, Port: *port, Catalogs: cats, ZooKeeper: zk.Addr,
		Props: map[string]string{
			"routing.database-cache.zookeeper.connect-string": zk.Addr,
			"audit.file": *dir + "/@REPLICA@/audit.log",
		}, Log: os.Stderr})
	if err != nil {
		return err
	}
	defer c.Stop()
	if *env {
		fmt.Printf("CLUSTER_URI=%s\nCLUSTER_ZOOKEEPER=%s\nCLUSTER_HAPROXY_CONFIG=%s\nCLUSTER_HAPROXY_SOCKET=%s\n",
			c.URI(), zk.Addr, c.HAProxy.Config, c.HAProxy.Socket)
		for i, r := range c.Replicas {
			fmt.Printf("CLUSTER_R%d_URI=%s\nCLUSTER_R%d_MGMT=%s\nCLUSTER_R%d_PID=%d\nCLUSTER_R%d_CONF=%s\nCLUSTER_R%d_LOG=%s\n",
				i+1, r.URI(), i+1, r.ManagementURL(), i+1, r.Pid(), i+1, r.Conf, i+1, r.LogPath)
		}
		fmt.Println("CLUSTER_READY=1")
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	return nil
}
