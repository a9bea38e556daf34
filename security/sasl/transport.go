package sasl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
	"unicode/utf8"
)

// Negotiation status bytes of a Thrift SASL frame (1-byte status, 4-byte
// big-endian length, payload).
const (
	statusStart    byte = 1
	statusOK       byte = 2
	statusBad      byte = 3
	statusError    byte = 4
	statusComplete byte = 5
)

func statusName(s byte) string {
	switch s {
	case statusStart:
		return "START"
	case statusOK:
		return "OK"
	case statusBad:
		return "BAD"
	case statusError:
		return "ERROR"
	case statusComplete:
		return "COMPLETE"
	}
	return fmt.Sprintf("%d", int8(s))
}

// Defaults of Server and Client.
const (
	// DefaultMaxToken bounds one negotiation payload. A Java GSSAPI AP-REQ is
	// under 1 KiB with an MIT KDC; tickets carrying an Active Directory PAC
	// reach tens of KiB.
	DefaultMaxToken = 1 << 20
	// DefaultMaxFrame bounds one data-phase frame: Thrift's own limit on a
	// SASL payload (104857600 bytes).
	DefaultMaxFrame = 100 << 20
	// DefaultHandshakeTimeout bounds the whole negotiation.
	DefaultHandshakeTimeout = 30 * time.Second
)

// Failure reasons of HandshakeError (the reason label of
// hms_proxy_authentication_failures_total).
const (
	ReasonTimeout        = "timeout"         // the peer did not finish the handshake before the deadline
	ReasonClosed         = "closed"          // the peer closed the connection mid-handshake
	ReasonNotSASL        = "not_sasl"        // the first byte is no SASL status (a plain Thrift call, HTTP, ...)
	ReasonMalformed      = "malformed"       // a frame out of sequence, a bad status or length
	ReasonOversized      = "oversized_token" // a negotiation payload over MaxToken
	ReasonUnknownMech    = "unknown_mechanism"
	ReasonPeerFailure    = "peer_failure" // the peer sent BAD or ERROR
	ReasonRejected       = "rejected"     // the mechanism refused the credentials (default of a mechanism error)
	ReasonIO             = "io"           // another I/O error
	ReasonInternal       = "internal"     // the mechanism could not be set up
	reasonUnknownDefault = ReasonRejected
)

// HandshakeError is the error of a failed negotiation: why (Reason, a fixed
// vocabulary for metrics), which mechanism (when known) and the cause.
type HandshakeError struct {
	Reason    string
	Mechanism string
	Remote    string
	Err       error
}

func (e *HandshakeError) Error() string {
	mech := e.Mechanism
	if mech == "" {
		mech = "-"
	}
	return fmt.Sprintf("sasl handshake with %s failed (mechanism %s, reason %s): %v", e.Remote, mech, e.Reason, e.Err)
}

func (e *HandshakeError) Unwrap() error { return e.Err }

// MechError is an error a mechanism returns to choose the failure reason and
// the text the peer sees (in the BAD frame) apart from the full cause that is
// logged. Mechanisms may return plain errors: their text is sent as is and the
// reason is "rejected".
type MechError struct {
	Reason string // e.g. "replay", "wrong_service"; "" = rejected
	Peer   string // text for the BAD frame; "" = Err.Error()
	Err    error
}

func (e *MechError) Error() string { return e.Err.Error() }
func (e *MechError) Unwrap() error { return e.Err }

// peerText and reason read a mechanism error.
func mechErrorParts(err error) (reason, peer string) {
	var me *MechError
	if errors.As(err, &me) {
		reason, peer = me.Reason, me.Peer
	}
	if reason == "" {
		reason = reasonUnknownDefault
	}
	if peer == "" {
		peer = err.Error()
	}
	return reason, peer
}

// frameError is a violation of the frame format (status or length).
type frameError struct {
	reason string
	msg    string
}

func (e *frameError) Error() string { return e.msg }

// readFrame reads one negotiation frame; payloads over max are refused before
// any allocation of their declared size.
func readFrame(r io.Reader, max int) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	st := hdr[0]
	if st < statusStart || st > statusComplete {
		reason := ReasonMalformed
		if st >= 0x80 || st == 0 {
			reason = ReasonNotSASL
		}
		return st, nil, &frameError{reason: reason, msg: fmt.Sprintf("Invalid status %d", int8(st))}
	}
	n := int64(int32(binary.BigEndian.Uint32(hdr[1:])))
	if n < 0 {
		return st, nil, &frameError{reason: ReasonMalformed, msg: fmt.Sprintf("Invalid payload header length: %d", n)}
	}
	if n > int64(max) {
		return st, nil, &frameError{reason: ReasonOversized,
			msg: fmt.Sprintf("SASL payload of %d bytes is over the limit of %d bytes", n, max)}
	}
	payload, err := readGrowing(r, int(n))
	if err != nil {
		return st, nil, err
	}
	return st, payload, nil
}

// readGrowing reads exactly n bytes, growing the buffer as bytes arrive, so a
// peer that declares a large length and sends nothing costs no memory.
func readGrowing(r io.Reader, n int) ([]byte, error) {
	const chunk = 64 << 10
	if n <= chunk {
		b := make([]byte, n)
		_, err := io.ReadFull(r, b)
		return b, err
	}
	b := make([]byte, 0, chunk)
	for len(b) < n {
		if len(b) == cap(b) {
			nb := make([]byte, len(b), min(n, 2*cap(b)))
			copy(nb, b)
			b = nb
		}
		m, err := io.ReadFull(r, b[len(b):min(n, cap(b))])
		b = b[:len(b)+m]
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return b, err
		}
	}
	return b, nil
}

func writeFrame(w io.Writer, st byte, payload []byte) error {
	b := make([]byte, 5+len(payload))
	b[0] = st
	binary.BigEndian.PutUint32(b[1:5], uint32(len(payload)))
	copy(b[5:], payload)
	_, err := w.Write(b)
	return err
}

// Server runs the server side of the negotiation on accepted connections.
// The zero value of the limits means their defaults.
type Server struct {
	// Mechs are the mechanisms offered, by SASL name ("GSSAPI", "DIGEST-MD5").
	Mechs map[string]ServerMechFactory
	// MaxToken bounds one negotiation payload (DefaultMaxToken).
	MaxToken int
	// MaxFrame bounds one data-phase frame (DefaultMaxFrame).
	MaxFrame int
	// HandshakeTimeout bounds the whole negotiation (DefaultHandshakeTimeout).
	HandshakeTimeout time.Duration
	// Listener labels the metrics (the listener's name).
	Listener string
	// Metrics records failures and handshake durations (nil: none).
	Metrics *Metrics
}

// Accept runs the negotiation on c. On success it returns a connection that
// speaks the data phase (see Conn) and what the mechanism established. On
// failure it has sent BAD or ERROR where the protocol allows, closed c,
// counted the failure in Metrics and returns a *HandshakeError; the caller
// logs it.
func (s *Server) Accept(c net.Conn) (net.Conn, Result, error) {
	start := time.Now()
	timeout := s.HandshakeTimeout
	if timeout <= 0 {
		timeout = DefaultHandshakeTimeout
	}
	_ = c.SetDeadline(start.Add(timeout))
	res, mech, herr := s.negotiate(c)
	if herr != nil {
		herr.Remote = remote(c)
		c.Close()
		s.Metrics.failure(s.Listener, herr.Mechanism, herr.Reason)
		return nil, Result{}, herr
	}
	if err := c.SetDeadline(time.Time{}); err != nil {
		c.Close()
		herr := &HandshakeError{Reason: ReasonIO, Mechanism: mech, Remote: remote(c), Err: err}
		s.Metrics.failure(s.Listener, mech, herr.Reason)
		return nil, Result{}, herr
	}
	s.Metrics.handshake(s.Listener, mech, time.Since(start))
	maxFrame := s.MaxFrame
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	return newConn(c, res.Layer, maxFrame), res, nil
}

func remote(c net.Conn) string {
	if a := c.RemoteAddr(); a != nil {
		return a.String()
	}
	return "?"
}

// ioReason classifies a read/write error of the negotiation.
func ioReason(err error) string {
	var fe *frameError
	switch {
	case errors.As(err, &fe):
		return fe.reason
	case errors.Is(err, os.ErrDeadlineExceeded):
		return ReasonTimeout
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return ReasonClosed
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return ReasonTimeout
	}
	return ReasonIO
}

func (s *Server) negotiate(c net.Conn) (Result, string, *HandshakeError) {
	maxTok := s.MaxToken
	if maxTok <= 0 {
		maxTok = DefaultMaxToken
	}
	mechName := ""
	fail := func(reason string, send byte, peer string, err error) (Result, string, *HandshakeError) {
		if send != 0 {
			_ = writeFrame(c, send, []byte(peer))
		}
		return Result{}, mechName, &HandshakeError{Reason: reason, Mechanism: mechName, Err: err}
	}
	recv := func() (byte, []byte, *HandshakeError) {
		st, p, err := readFrame(c, maxTok)
		if err == nil {
			return st, p, nil
		}
		reason := ioReason(err)
		var fe *frameError
		if errors.As(err, &fe) {
			// Thrift answers a bad status or length with ERROR and its text
			_, _, h := fail(reason, statusError, fe.msg, err)
			return 0, nil, h
		}
		_, _, h := fail(reason, 0, "", fmt.Errorf("reading a negotiation frame: %w", err))
		return 0, nil, h
	}
	st, payload, herr := recv()
	if herr != nil {
		return Result{}, mechName, herr
	}
	if st != statusStart {
		if st == statusBad || st == statusError {
			return fail(ReasonPeerFailure, 0, "", fmt.Errorf("peer indicated failure: %s", printable(payload)))
		}
		msg := "Expecting START status, received " + statusName(st)
		return fail(ReasonMalformed, statusError, msg, errors.New(msg))
	}
	name := string(payload)
	factory, ok := s.Mechs[name]
	if !ok {
		mechName = ""
		msg := "Unsupported mechanism type " + name
		return fail(ReasonUnknownMech, statusBad, msg, fmt.Errorf("unsupported mechanism %q", printable(payload)))
	}
	mechName = name
	mech, err := factory()
	if err != nil {
		return fail(ReasonInternal, statusError, "mechanism "+name+" is not available", err)
	}
	if pa, ok := mech.(PeerAware); ok {
		pa.SetPeer(remote(c))
	}
	for {
		st, payload, herr = recv()
		if herr != nil {
			return Result{}, mechName, herr
		}
		switch st {
		case statusOK, statusComplete:
		case statusBad, statusError:
			return fail(ReasonPeerFailure, 0, "", fmt.Errorf("peer indicated failure: %s", printable(payload)))
		default:
			msg := "Expected COMPLETE or OK, got " + statusName(st)
			return fail(ReasonMalformed, statusError, msg, errors.New(msg))
		}
		challenge, done, err := mech.Step(payload)
		if err != nil {
			reason, peer := mechErrorParts(err)
			return fail(reason, statusBad, peer, err)
		}
		out := statusOK
		if done {
			out = statusComplete
		}
		if err := writeFrame(c, out, challenge); err != nil {
			return fail(ioReason(err), 0, "", fmt.Errorf("writing a negotiation frame: %w", err))
		}
		if done {
			res := mech.Result()
			if res.Mechanism == "" {
				res.Mechanism = name
			}
			return res, mechName, nil
		}
	}
}

// printable shortens and sanitizes peer text for error messages.
func printable(b []byte) string {
	if len(b) > 200 {
		b = b[:200]
	}
	if !utf8.Valid(b) {
		return fmt.Sprintf("%q", b)
	}
	return string(b)
}

// PeerError is the failure a peer reported with a BAD or ERROR frame.
type PeerError struct {
	Status string // "BAD" or "ERROR"
	Msg    string
}

func (e *PeerError) Error() string { return "Peer indicated failure: " + e.Msg }

// ClientOptions tunes Client; the zero value means the defaults.
type ClientOptions struct {
	MaxToken int
	MaxFrame int
}

// Client runs the client side of the negotiation on c with mechanism m and
// returns the data-phase connection. It leaves deadlines to the caller (set
// one on c before). On failure c is not closed: the caller owns it.
func Client(c net.Conn, m ClientMech) (net.Conn, error) {
	return ClientWith(c, m, ClientOptions{})
}

// ClientWith is Client with explicit limits.
func ClientWith(c net.Conn, m ClientMech, o ClientOptions) (net.Conn, error) {
	maxTok, maxFrame := o.MaxToken, o.MaxFrame
	if maxTok <= 0 {
		maxTok = DefaultMaxToken
	}
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	initial, err := m.Start()
	if err != nil {
		return nil, fmt.Errorf("sasl %s: initial response: %w", m.Name(), err)
	}
	if err := writeFrame(c, statusStart, []byte(m.Name())); err != nil {
		return nil, fmt.Errorf("sasl %s: sending START: %w", m.Name(), err)
	}
	if err := writeFrame(c, statusOK, initial); err != nil {
		return nil, fmt.Errorf("sasl %s: sending the initial response: %w", m.Name(), err)
	}
	done := false
	var last byte
	for !done {
		st, payload, err := readFrame(c, maxTok)
		if err != nil {
			return nil, fmt.Errorf("sasl %s: reading a negotiation frame: %w", m.Name(), err)
		}
		last = st
		switch st {
		case statusOK, statusComplete:
		case statusBad, statusError:
			return nil, fmt.Errorf("sasl %s: %w", m.Name(), &PeerError{Status: statusName(st), Msg: printable(payload)})
		default:
			return nil, fmt.Errorf("sasl %s: expected COMPLETE or OK, got %s", m.Name(), statusName(st))
		}
		var resp []byte
		resp, done, err = m.Step(payload)
		if err != nil {
			_ = writeFrame(c, statusBad, []byte(err.Error()))
			return nil, fmt.Errorf("sasl %s: %w", m.Name(), err)
		}
		if st == statusComplete {
			if !done {
				return nil, fmt.Errorf("sasl %s: server sent COMPLETE before the mechanism finished", m.Name())
			}
			break
		}
		out := statusOK
		if done {
			out = statusComplete
		}
		if err := writeFrame(c, out, resp); err != nil {
			return nil, fmt.Errorf("sasl %s: sending a response: %w", m.Name(), err)
		}
	}
	if last == statusOK {
		st, payload, err := readFrame(c, maxTok)
		if err != nil {
			return nil, fmt.Errorf("sasl %s: reading the final frame: %w", m.Name(), err)
		}
		switch st {
		case statusComplete:
		case statusBad, statusError:
			return nil, fmt.Errorf("sasl %s: %w", m.Name(), &PeerError{Status: statusName(st), Msg: printable(payload)})
		default:
			return nil, fmt.Errorf("sasl %s: expected SASL COMPLETE, got %s", m.Name(), statusName(st))
		}
	}
	return newConn(c, m.Layer(), maxFrame), nil
}

// Conn is the data phase of a negotiated SASL connection: every Write sends
// one frame (4-byte big-endian length + payload, the payload wrapped by the
// Layer when the QOP is above auth); Read returns the bytes of whole frames,
// unwrapped, in order. Put a bufio.Writer sized for whole messages in front
// of it: each Write costs a frame (and, with a layer, a token).
//
// Read and Write may run on two goroutines at once (one each).
type Conn struct {
	net.Conn
	layer    Layer
	maxFrame int

	rmu  sync.Mutex
	rbuf []byte
	rerr error

	wmu sync.Mutex
}

func newConn(c net.Conn, l Layer, maxFrame int) *Conn {
	return &Conn{Conn: c, layer: l, maxFrame: maxFrame}
}

// Layer is the negotiated security layer (nil for auth).
func (c *Conn) Layer() Layer { return c.layer }

// ErrFrameTooLarge is returned by Read for a data frame over the limit; the
// connection is unusable afterwards.
var ErrFrameTooLarge = errors.New("sasl: data frame over the limit")

// ErrUnwrap is returned by Read for a data frame the security layer refused
// (tampered, replayed, reordered); the connection is unusable afterwards.
var ErrUnwrap = errors.New("sasl: unwrapping a data frame")

func (c *Conn) Read(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	for len(c.rbuf) == 0 {
		if c.rerr != nil {
			return 0, c.rerr
		}
		var hdr [4]byte
		if _, err := io.ReadFull(c.Conn, hdr[:]); err != nil {
			if err == io.ErrUnexpectedEOF {
				c.rerr = err
			}
			return 0, err
		}
		n := int64(int32(binary.BigEndian.Uint32(hdr[:])))
		if n < 0 || n > int64(c.maxFrame) {
			c.rerr = fmt.Errorf("%w: %d bytes declared, limit %d", ErrFrameTooLarge, n, c.maxFrame)
			return 0, c.rerr
		}
		b, err := readGrowing(c.Conn, int(n))
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			c.rerr = err
			return 0, err
		}
		if c.layer != nil {
			if b, err = c.layer.Unwrap(b); err != nil {
				c.rerr = fmt.Errorf("%w: %w", ErrUnwrap, err)
				return 0, c.rerr
			}
		}
		c.rbuf = b
	}
	n := copy(p, c.rbuf)
	c.rbuf = c.rbuf[n:]
	return n, nil
}

func (c *Conn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	payload := p
	if c.layer != nil {
		var err error
		if payload, err = c.layer.Wrap(p); err != nil {
			return 0, fmt.Errorf("sasl: wrapping a data frame: %w", err)
		}
	}
	b := make([]byte, 4+len(payload))
	binary.BigEndian.PutUint32(b, uint32(len(payload)))
	copy(b[4:], payload)
	if _, err := c.Conn.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
}
