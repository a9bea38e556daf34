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
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/hms-proxy/hms-proxy/bench/instant"
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
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hms-instant: -listen %s: %v\n", *listen, err)
		os.Exit(1)
	}
	fmt.Printf("listening %s\n", ln.Addr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-sig; srv.Close() }()
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "hms-instant:", err)
		os.Exit(1)
	}
}
