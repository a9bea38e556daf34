package proc

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
)

// Server is a benchmark helper process's server (forwarder, instant backend).
type Server interface {
	Serve(ln net.Listener) error
	Close()
}

// ServeMain listens on addr, prints "listening HOST:PORT" as the first
// stdout line (the driver reads it), serves until SIGTERM/SIGINT, and exits
// with a message naming the program on any failure.
func ServeMain(prog, addr string, s Server) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: -listen %s: %v\n", prog, addr, err)
		os.Exit(1)
	}
	fmt.Printf("listening %s\n", ln.Addr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-sig; s.Close() }()
	if err := s.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, prog+":", err)
		os.Exit(1)
	}
}
