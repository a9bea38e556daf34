// Package fwd is a plain TCP byte forwarder: for every accepted connection it
// opens one to the target and copies bytes both ways with a fixed buffer,
// reading and writing as they come. It understands nothing of Thrift; in the
// benchmark it is the floor cost of any extra hop on the machine.
package fwd

import (
	"net"
	"sync"
	"time"
)

// Forwarder relays every accepted connection to Target.
type Forwarder struct {
	Target string
	ln     net.Listener
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// Serve accepts on ln until Close.
func (f *Forwarder) Serve(ln net.Listener) error {
	f.mu.Lock()
	f.ln = ln
	f.conns = map[net.Conn]struct{}{}
	f.mu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			f.mu.Lock()
			closed := f.closed
			f.mu.Unlock()
			if closed {
				return nil
			}
			return err
		}
		f.wg.Add(1)
		go f.relay(c)
	}
}

func (f *Forwarder) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *Forwarder) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
	c.Close()
}

func (f *Forwarder) relay(client net.Conn) {
	defer f.wg.Done()
	if !f.track(client) {
		client.Close()
		return
	}
	defer f.untrack(client)
	up, err := net.DialTimeout("tcp", f.Target, 10*time.Second)
	if err != nil {
		return
	}
	if !f.track(up) {
		up.Close()
		return
	}
	defer f.untrack(up)
	done := make(chan struct{}, 2)
	go func() { pump(up, client); done <- struct{}{} }()
	go func() { pump(client, up); done <- struct{}{} }()
	<-done
	// one direction ended: end both
	client.Close()
	up.Close()
	<-done
}

// pump copies with an explicit read/write loop (no splice): the same
// user-space copy any proxy that looks at bytes has to make.
func pump(dst, src net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Close stops accepting and closes every relayed connection.
func (f *Forwarder) Close() {
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		c.Close()
	}
	ln := f.ln
	f.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	f.wg.Wait()
}
