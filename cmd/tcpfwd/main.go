// Command tcpfwd is a plain TCP byte forwarder used by `make bench` as the
// floor cost of one extra network hop: every accepted connection is relayed
// to -to, bytes copied both ways, nothing parsed.
//
//	tcpfwd -listen 127.0.0.1:0 -to HOST:PORT
//
// The first stdout line is "listening HOST:PORT". SIGTERM/SIGINT stop it.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"

	"github.com/hms-proxy/hms-proxy/bench/fwd"
	"github.com/hms-proxy/hms-proxy/bench/proc"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "loopback address to listen on")
	to := flag.String("to", "", "HOST:PORT to forward to (required)")
	flag.Parse()
	if *to == "" {
		fmt.Fprintln(os.Stderr, "tcpfwd: -to HOST:PORT is required")
		os.Exit(2)
	}
	if _, _, err := net.SplitHostPort(*to); err != nil {
		fmt.Fprintf(os.Stderr, "tcpfwd: -to %q: %v\n", *to, err)
		os.Exit(2)
	}
	proc.ServeMain("tcpfwd", *listen, &fwd.Forwarder{Target: *to})
}
