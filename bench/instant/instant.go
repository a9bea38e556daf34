// Package instant is a LOAD FIXTURE, not a metastore: a Thrift server that
// answers every call from memory with a reply recorded (or built) beforehand.
// It does no work per call beyond reading the request and copying the canned
// answer with the caller's sequence id, so that a benchmark through it
// measures only what sits between the client and it (hms-proxy, a TCP
// forwarder). It keeps no state: create_table "succeeds" without creating
// anything.
package instant

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/hms-proxy/hms-proxy/bench/msg"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Replies maps a method name to its whole canned reply message (any sequence
// id; it is replaced per call).
type Replies map[string][]byte

// ReplyExt is the file name suffix of a recorded reply in a replies folder:
// <method>.reply holds one whole reply message.
const ReplyExt = ".reply"

// LoadDir reads every <method>.reply file of dir.
func LoadDir(dir string) (Replies, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("instant backend: replies folder: %w", err)
	}
	r := Replies{}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ReplyExt)
		if !ok || e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("instant backend: %w", err)
		}
		m, err := wire.ParseMessage(b, 0)
		if err != nil {
			return nil, fmt.Errorf("instant backend: %s is not one whole Thrift message: %v", e.Name(), err)
		}
		if m.Name != name || (m.Type != wire.Reply && m.Type != wire.Exception) {
			return nil, fmt.Errorf("instant backend: %s holds a %q message of type %d, want a reply of %q", e.Name(), m.Name, m.Type, name)
		}
		r[name] = b
	}
	if len(r) == 0 {
		return nil, fmt.Errorf("instant backend: no *%s files in %s", ReplyExt, dir)
	}
	return r, nil
}

// SaveDir writes every reply as <method>.reply into dir.
func SaveDir(dir string, r Replies) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, b := range r {
		if err := os.WriteFile(filepath.Join(dir, name+ReplyExt), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

type canned struct {
	msg    []byte
	seqOff int
}

// Server answers calls from memory.
type Server struct {
	replies map[string]canned
	ln      net.Listener
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	closed  bool
}

// New checks the replies and builds a server.
func New(r Replies) (*Server, error) {
	s := &Server{replies: map[string]canned{}, conns: map[net.Conn]struct{}{}}
	for name, b := range r {
		off, err := msg.SeqOffset(b)
		if err != nil {
			return nil, fmt.Errorf("instant backend: reply of %s: %v", name, err)
		}
		s.replies[name] = canned{msg: b, seqOff: off}
	}
	return s, nil
}

// Serve accepts on ln until Close.
func (s *Server) Serve(ln net.Listener) error {
	s.ln = ln
	for {
		c, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			return err
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return nil
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c)
	}
}

// Close stops accepting and closes every connection.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	if s.ln != nil {
		s.ln.Close()
	}
	s.wg.Wait()
}

func (s *Server) serve(c net.Conn) {
	defer func() {
		c.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.wg.Done()
	}()
	rd := wire.NewReader(c, 256<<20)
	var out []byte
	var m wire.Message
	for {
		if err := rd.Next(&m); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				fmt.Fprintf(os.Stderr, "instant backend: %v\n", err)
			}
			return
		}
		if m.Type == wire.Oneway {
			continue
		}
		cr, ok := s.replies[m.Name]
		if ok {
			out = append(out[:0], cr.msg...)
			binary.BigEndian.PutUint32(out[cr.seqOff:], uint32(m.SeqID))
		} else {
			out = wire.AppException(m.Name, m.SeqID, wire.AppUnknownMethod,
				"instant backend (load fixture) has no canned reply for "+m.Name)
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}
