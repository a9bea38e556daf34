// Command hms-instant is a benchmark LOAD FIXTURE: an "instant backend" that
// answers Hive Metastore Thrift calls from memory with replies recorded from a
// real metastore beforehand (one <method>.reply file per method). It stores
// nothing and checks nothing; it exists so that `make bench` can measure what
// hms-proxy itself costs per call, without a metastore's own time in the way.
//
//	hms-instant -listen 127.0.0.1:0 -replies DIR
//
// The first stdout line is "listening HOST:PORT". SIGTERM/SIGINT stop it.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/hms-proxy/hms-proxy/bench/instant"
	"github.com/hms-proxy/hms-proxy/bench/proc"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "loopback address to listen on")
	dir := flag.String("replies", "", "folder of <method>.reply files (required)")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "hms-instant: -replies DIR is required")
		os.Exit(2)
	}
	replies, err := instant.LoadDir(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hms-instant:", err)
		os.Exit(2)
	}
	srv, err := instant.New(replies)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hms-instant:", err)
		os.Exit(2)
	}
	proc.ServeMain("hms-instant", *listen, srv)
}
