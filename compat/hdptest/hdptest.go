// Package hdptest is a TEST DOUBLE of a Hortonworks (HDP) Hive metastore, for
// tests only. No HDP runtime can be had from the public registries, so the
// proxy's HDP behaviour is exercised against this stand-in instead.
//
// What it reproduces, and what it does not:
//   - The wire: unframed TBinaryProtocol messages, decoded and encoded with the
//     generated thriftgen types under thriftgen.WithWireProfile(profile), so an
//     HDP 3.1.5 double reads and writes Table's accessType and capability lists
//     at HDP's own field ids 23/24/25, as the HDP IDL defines them.
//   - The method set: it answers only methods of its profile; any other gets a
//     TApplicationException UNKNOWN_METHOD "Invalid method name: 'x'", the
//     answer a real metastore gives.
//   - Unknown fields: like Java's generated code, it skips fields its profile
//     does not have (or that arrive with an unexpected wire type). Unlike Java
//     it records each skipped field in the Call, so tests can see exactly what
//     a real server of this profile would have dropped without a word.
//   - Behaviour: a small in-memory store of databases, tables and partitions,
//     enough for the proxy's end-to-end tests. Methods of the profile that it
//     does not implement answer a MetaException "test double does not
//     implement X" (never a made-up success). Its semantics (name matching,
//     error texts, defaults) are an approximation of HMS, not HDP's code.
//
// It listens on 127.0.0.1 only, bounds connections and message size, and stops
// when the test ends.
package hdptest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Bounds of the double: it is a loopback test fixture, not a server.
const (
	maxConns   = 32
	maxMessage = 16 << 20
)

// Call is one message the double received.
type Call struct {
	Method string
	// Args is the decoded *_args struct (a generated thriftgen type, e.g.
	// *thriftgen.CreateTableReqArgs) as a server of the profile understands
	// it; nil when the method is not the profile's or the body was unreadable.
	Args thrift.TStruct
	// Body is the argument struct exactly as it arrived (the profile's ids).
	Body []byte
	// Skipped lists the fields a server of this profile skips: "Table.22" for
	// a field id it does not have, "Table.25 (i64, expected list)" for a
	// known id arriving with another wire type. A real metastore drops these
	// silently.
	Skipped []string
}

// String shows the method and what was skipped (not the raw body).
func (c Call) String() string {
	if len(c.Skipped) == 0 {
		return c.Method
	}
	return c.Method + " skipped " + strings.Join(c.Skipped, ", ")
}

// SkippedIn returns the wire ids skipped in structs named structName.
func (c Call) SkippedIn(structName string) []int16 {
	var ids []int16
	for _, s := range c.Skipped {
		name, rest, _ := strings.Cut(s, ".")
		if name != structName {
			continue
		}
		var id int16
		if _, err := fmt.Sscanf(rest, "%d", &id); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// Server is a running test double.
type Server struct {
	profile thriftgen.ProfileSet
	runtime *compat.Runtime
	ctx     context.Context // wire profile of every Read/Write
	ln      net.Listener
	slots   chan struct{}
	wg      sync.WaitGroup

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]bool
	calls  []Call
	store  *store
}

// Start runs a test double speaking profile (one of thriftgen's single
// profiles, e.g. thriftgen.ProfileHDP315) on a loopback port; it stops when
// the test ends.
func Start(t testing.TB, profile thriftgen.ProfileSet) *Server {
	t.Helper()
	s, err := Listen(profile)
	if err != nil {
		t.Fatalf("hdptest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// Listen is Start without a testing.TB; the caller must Close it.
func Listen(profile thriftgen.ProfileSet) (*Server, error) {
	if !profile.Single() {
		return nil, fmt.Errorf("test double needs exactly one profile, got %s", profile)
	}
	rt, err := compat.Lookup(profile.String())
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{profile: profile, runtime: rt, ctx: thriftgen.WithWireProfile(context.Background(), profile),
		ln: ln, slots: make(chan struct{}, maxConns), conns: map[net.Conn]bool{}, store: newStore()}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// URI is the double's thrift:// address.
func (s *Server) URI() string { return "thrift://" + s.ln.Addr().String() }

// Profile is the profile the double speaks.
func (s *Server) Profile() thriftgen.ProfileSet { return s.profile }

// Version is what getVersion answers (the profile's release string).
func (s *Server) Version() string { return s.runtime.Version }

// Close stops the listener and every connection and waits for them.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	_ = s.ln.Close()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// Calls returns the calls received for method, in order ("" = every call).
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Methods returns the distinct method names received, sorted.
func (s *Server) Methods() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, c := range s.calls {
		if !seen[c.Method] {
			seen[c.Method] = true
			out = append(out, c.Method)
		}
	}
	sort.Strings(out)
	return out
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		select {
		case s.slots <- struct{}{}:
		default:
			_ = conn.Close() // over the bound: refuse rather than queue
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = conn.Close()
			<-s.slots
			return
		}
		s.conns[conn] = true
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(conn)
	}
}

func (s *Server) serve(conn net.Conn) {
	defer func() {
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
		_ = conn.Close()
		<-s.slots
		s.wg.Done()
	}()
	r := bufio.NewReaderSize(conn, 64<<10)
	for {
		m, err := wire.ReadMessage(r, wire.Limits{MaxMessage: maxMessage}, nil)
		if err != nil {
			return // EOF, a closed double, or bytes no metastore would read
		}
		out := s.handle(m)
		if out == nil {
			continue
		}
		if _, err := conn.Write(out); err != nil {
			return
		}
	}
}

// handle answers one message; nil for oneway calls.
func (s *Server) handle(m *wire.Message) []byte {
	body := append([]byte(nil), m.Body()...)
	call := Call{Method: m.Name, Body: body}
	method := thriftgen.LookupMethod(m.Name)
	if method == nil || !method.Profiles.Has(s.profile) {
		s.record(call)
		if m.Type == wire.Oneway {
			return nil
		}
		// What libthrift's TBaseProcessor answers for a method it lacks.
		return wire.AppException(m.Name, m.SeqID, wire.AppUnknownMethod, fmt.Sprintf("Invalid method name: '%s'", m.Name))
	}
	args, skipped, err := s.decodeArgs(method, body)
	call.Args, call.Skipped = args, skipped
	s.record(call)
	if err != nil {
		return wire.AppException(m.Name, m.SeqID, wire.AppProtocolError, fmt.Sprintf("test double cannot read %s arguments: %v", m.Name, err))
	}
	if m.Type == wire.Oneway {
		return nil
	}
	res, err := s.dispatch(method, args)
	if err != nil {
		return s.failure(method, m.SeqID, err)
	}
	buf := thrift.NewTMemoryBuffer()
	proto := thrift.NewTBinaryProtocolConf(buf, nil)
	err = res.Write(s.ctx, proto)
	if err == nil {
		err = proto.Flush(s.ctx)
	}
	if err != nil {
		return wire.AppException(m.Name, m.SeqID, wire.AppInternalError, fmt.Sprintf("test double cannot write %s result: %v", m.Name, err))
	}
	out := wire.AppendHeader(nil, wire.Header{Name: m.Name, Type: wire.Reply, SeqID: m.SeqID})
	return append(out, buf.Bytes()...)
}

func (s *Server) record(c Call) {
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
}

// decodeArgs reads the argument struct as a server of the profile does:
// fields the profile lacks are skipped (and listed), the rest is read with
// the generated type under the profile's wire ids.
func (s *Server) decodeArgs(method *thriftgen.Method, body []byte) (thrift.TStruct, []string, error) {
	v, err := wire.DecodeStruct(body)
	if err != nil {
		return nil, nil, err
	}
	var skipped []string
	s.prune(&v, method.Args, &skipped, 0)
	args := thriftgen.NewStruct(method.Args.Name)
	if args == nil {
		return nil, skipped, fmt.Errorf("no generated type for %s", method.Args.Name)
	}
	buf := thrift.NewTMemoryBuffer()
	if _, err := buf.Write(v.Encode()); err != nil {
		return nil, skipped, err
	}
	if err := args.Read(s.ctx, thrift.NewTBinaryProtocolConf(buf, nil)); err != nil {
		return nil, skipped, err
	}
	return args, skipped, nil
}

// prune drops, recursively, the fields of a struct value that the profile
// does not have or that carry a wire type other than the profile's.
func (s *Server) prune(v *wire.Value, st *thriftgen.Struct, skipped *[]string, depth int) {
	if st == nil || depth > wire.MaxDepth {
		return
	}
	dl := thriftgen.LookupDialect(s.profile, st.Name)
	kept := v.Fields[:0]
	for _, f := range v.Fields {
		id, ok := f.ID, true
		if dl != nil {
			id, ok = dl.CanonicalID(f.ID)
		}
		var fd *thriftgen.Field
		if ok {
			fd = st.FieldByID(id)
		}
		if fd == nil || !fd.Profiles.Has(s.profile) {
			*skipped = append(*skipped, fmt.Sprintf("%s.%d", st.Name, f.ID))
			continue
		}
		if want := wire.WireType(fd.Type); want != f.V.Type {
			*skipped = append(*skipped, fmt.Sprintf("%s.%d (%s, expected %s)", st.Name, f.ID, typeName(f.V.Type), typeName(want)))
			continue
		}
		s.pruneValue(&f.V, fd.Type, skipped, depth+1)
		kept = append(kept, f)
	}
	v.Fields = kept
}

func (s *Server) pruneValue(v *wire.Value, t *thriftgen.Type, skipped *[]string, depth int) {
	switch t.Kind {
	case thriftgen.KindStruct:
		s.prune(v, thriftgen.LookupStruct(t.Name), skipped, depth)
	case thriftgen.KindList, thriftgen.KindSet:
		for i := range v.Elems {
			s.pruneValue(&v.Elems[i], t.Elem, skipped, depth+1)
		}
	case thriftgen.KindMap:
		for i := 0; i+1 < len(v.Elems); i += 2 {
			s.pruneValue(&v.Elems[i], t.Key, skipped, depth+1)
			s.pruneValue(&v.Elems[i+1], t.Value, skipped, depth+1)
		}
	}
}

func typeName(t byte) string {
	switch t {
	case wire.TBool:
		return "bool"
	case wire.TByte:
		return "byte"
	case wire.TDouble:
		return "double"
	case wire.TI16:
		return "i16"
	case wire.TI32:
		return "i32"
	case wire.TI64:
		return "i64"
	case wire.TString:
		return "string"
	case wire.TStruct:
		return "struct"
	case wire.TMap:
		return "map"
	case wire.TSet:
		return "set"
	case wire.TList:
		return "list"
	}
	return fmt.Sprintf("type%d", t)
}

// hmsError is a declared exception of the method's result (MetaException,
// NoSuchObjectException, …); when the method does not declare that type the
// double answers a MetaException, and without any a TApplicationException.
type hmsError struct {
	typ string
	msg string
}

func (e *hmsError) Error() string { return e.typ + ": " + e.msg }

func metaErr(format string, a ...any) error {
	return &hmsError{typ: "MetaException", msg: fmt.Sprintf(format, a...)}
}
func noSuchObject(format string, a ...any) error {
	return &hmsError{typ: "NoSuchObjectException", msg: fmt.Sprintf(format, a...)}
}
func alreadyExists(format string, a ...any) error {
	return &hmsError{typ: "AlreadyExistsException", msg: fmt.Sprintf(format, a...)}
}
func invalidOperation(format string, a ...any) error {
	return &hmsError{typ: "InvalidOperationException", msg: fmt.Sprintf(format, a...)}
}

// failure encodes err as the method's declared exception.
func (s *Server) failure(method *thriftgen.Method, seq int32, err error) []byte {
	var he *hmsError
	if !errors.As(err, &he) {
		he = &hmsError{typ: "MetaException", msg: err.Error()}
	}
	var field int16 = -1
	for _, typ := range []string{he.typ, "MetaException"} {
		for _, f := range method.Result.Fields {
			if f.ID != 0 && f.Type.Kind == thriftgen.KindStruct && f.Type.Name == typ {
				field = f.ID
				break
			}
		}
		if field >= 0 {
			break
		}
	}
	if field < 0 {
		return wire.AppException(method.Name, seq, wire.AppInternalError, he.Error())
	}
	body := wire.Struct(wire.Field{ID: field, V: wire.Struct(wire.Field{ID: 1, V: wire.Str(he.msg)})})
	return wire.AppendMessage(nil, wire.Header{Name: method.Name, Type: wire.Reply, SeqID: seq}, &body)
}
