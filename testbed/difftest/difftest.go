// Package difftest is the differential harness of the proxy's strict reader: it hands what the front door accepts
// to Hive's own generated reader (testbed.HiveReader: libthrift 0.9.3 with Hive 3.1.3's classes, libthrift 0.16 with
// Hive 4.1.0's) and reports every call on which the two disagree.
//
// A client's byte stream is read with wire.Reader.NextCall, exactly as a front-door connection reads it. Every call
// it accepts is what the proxy would forward: a strict CALL header and the call's body. Hive's reader must read
// that as one complete call ending at the last byte, and see the same arguments: the proxy's view of the body (its
// fields as they are on the wire) is rendered through the reader's own schema (fields the jars do not know, or know
// with another wire type, are skipped as Hive skips them; enum values they do not know read as null; sets and maps
// as Java's collections hold them) and compared with the reader's rendering of the arguments it decoded. For a call
// the proxy refuses, Check records what Hive would have made of the same bytes, to show why.
package difftest

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Checker compares the strict reader with Hive's readers.
type Checker struct {
	strict  *wire.StrictSchema
	readers []*testbed.HiveReader
	max     int

	mu   sync.Mutex
	utf8 map[string]string // invalid UTF-8 -> Java's decoding, re-encoded
}

// Options build a Checker.
type Options struct {
	Strict  *wire.StrictSchema    // the front door's strict view (its profile)
	Readers []*testbed.HiveReader // Hive's readers to compare with (at least one)
	// MaxMessage is the front door's server.max-message-size (0: 100 MiB, the default, which is also the limit
	// Hive's server puts on strings and containers).
	MaxMessage int
}

// New builds a Checker.
func New(o Options) (*Checker, error) {
	if o.Strict == nil {
		return nil, errors.New("difftest: no strict schema")
	}
	if len(o.Readers) == 0 {
		return nil, errors.New("difftest: no Hive reader to compare with")
	}
	if o.MaxMessage <= 0 {
		o.MaxMessage = 100 << 20
	}
	return &Checker{strict: o.Strict, readers: o.Readers, max: o.MaxMessage, utf8: map[string]string{}}, nil
}

// Verdict is what Check found for one stream.
type Verdict struct {
	// Accepted are the calls the strict reader accepted, in order.
	Accepted []*wire.Message
	// Refused is the error that ended the proxy's reading: nil when the stream ended cleanly after a call.
	Refused error
	// RefusedAt is the offset in the stream of the refused call.
	RefusedAt int
	// Hive is, for a refused call, what each Hive reader made of the stream from RefusedAt on (only with record).
	Hive map[testbed.Version]*testbed.HiveRead
	// Disagreements are accepted calls Hive reads differently. Any is a defect of the strict reader.
	Disagreements []Disagreement
	// Notes are differences that do not change what is read (fields a version does not know and skips).
	Notes []string
	// Unread are accepted calls a Hive reader did not compare: it does not know the method (its server answers
	// UNKNOWN_METHOD). OwnUnread says which of them the version's own API has, which a reader must know.
	Unread []Unread
}

// Unread is one accepted call a Hive version's reader did not know the method of.
type Unread struct {
	Version testbed.Version
	Method  string
}

// String says what an own-API skip means (OwnUnread).
func (u Unread) String() string {
	return fmt.Sprintf("Hive %s's reader does not know %s, which its own API has: the call was not compared", u.Version, u.Method)
}

// runtimeOf is the Apache runtime a Hive reader's version is (nil when none is).
func runtimeOf(v testbed.Version) *compat.Runtime {
	for _, rt := range compat.Runtimes() {
		if !rt.Hortonworks && rt.Version == string(v) {
			return rt
		}
	}
	return nil
}

// OwnUnread are the unread calls whose method the reader's own Hive version has: a reader that skips them compares
// nothing, and every comparison of such a call would pass unseen.
func (v *Verdict) OwnUnread() []Unread {
	var out []Unread
	for _, u := range v.Unread {
		if rt := runtimeOf(u.Version); rt != nil && rt.Has(u.Method) {
			out = append(out, u)
		}
	}
	return out
}

// Disagreement is one accepted call that one Hive version reads differently.
type Disagreement struct {
	Version testbed.Version
	Call    int    // index in Verdict.Accepted
	Method  string // as the proxy read it
	Sent    []byte // the call as the proxy would forward it
	Detail  string
}

func (d Disagreement) String() string {
	return fmt.Sprintf("Hive %s reads call %d (%s, %d bytes as forwarded) differently: %s\nforwarded: %s",
		d.Version, d.Call, d.Method, len(d.Sent), d.Detail, hex.EncodeToString(d.Sent))
}

// Check reads stream as a front-door connection does and compares every accepted call with Hive's readers; with
// record it also asks them about the refused call.
func (c *Checker) Check(stream []byte, record bool) (*Verdict, error) {
	v := &Verdict{}
	rd := wire.NewLazyReader(bytes.NewReader(stream), c.max, nil)
	defer rd.Close()
	off := 0
	for {
		var m wire.Message
		err := rd.NextCall(&m, c.strict)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				v.Refused, v.RefusedAt = err, off
			}
			break
		}
		cp := &wire.Message{Header: m.Header, Raw: bytes.Clone(m.Raw), BodyOff: m.BodyOff}
		v.Accepted = append(v.Accepted, cp)
		off += len(m.Raw)
	}
	for i, m := range v.Accepted {
		sent := Forwarded(m)
		for _, r := range c.readers {
			if err := c.compare(v, i, m, sent, r); err != nil {
				return nil, err
			}
		}
	}
	if v.Refused != nil && record {
		v.Hive = map[testbed.Version]*testbed.HiveRead{}
		for _, r := range c.readers {
			hr, err := r.Read(stream[v.RefusedAt:])
			if err != nil {
				return nil, err
			}
			v.Hive[r.Version] = hr
		}
	}
	return v, nil
}

// Forwarded is the call as the proxy sends it to a backend: a strict CALL header (the proxy writes its own; the
// client's may have been the old non-strict form, or ONEWAY for a oneway method) and the body as it came.
func Forwarded(m *wire.Message) []byte {
	b := wire.AppendHeader(nil, wire.Header{Name: m.Name, Type: wire.Call, SeqID: m.SeqID})
	return append(b, m.Body()...)
}

func (c *Checker) compare(v *Verdict, i int, m *wire.Message, sent []byte, r *testbed.HiveReader) error {
	hr, err := r.Read(sent)
	if err != nil {
		return err
	}
	disagree := func(format string, args ...any) {
		v.Disagreements = append(v.Disagreements, Disagreement{Version: r.Version, Call: i, Method: m.Name, Sent: sent,
			Detail: fmt.Sprintf(format, args...)})
	}
	if len(hr.Messages) == 0 {
		disagree("it read no call at all (%s)", hr.Stop)
		return nil
	}
	h := hr.Messages[0]
	switch {
	case h.Outcome != "ok":
		disagree("its reading of the call ends at byte %d of %d with %s: %s", h.End, len(sent), h.Outcome, h.Error)
		return nil
	case h.End != len(sent) || len(hr.Messages) != 1:
		disagree("its call ends at byte %d of %d; after it: %s", h.End, len(sent), describeRest(hr))
		return nil
	}
	name, err := c.javaString(r, []byte(m.Name))
	if err != nil {
		return err
	}
	if h.Name != string(name) { // a name of invalid UTF-8 is one Java decodes with replacement characters
		disagree("it read method %q, the proxy %q", h.Name, m.Name)
		return nil
	}
	if !h.Known {
		// skipped as a struct, as the proxy walked it; the server answers UNKNOWN_METHOD
		v.Unread = append(v.Unread, Unread{Version: r.Version, Method: m.Name})
		return nil
	}
	want, notes, err := c.Expect(r, m.Name, m.Body())
	if err != nil {
		disagree("the proxy's view cannot be rendered: %v", err)
		return nil
	}
	for _, n := range notes {
		v.Notes = append(v.Notes, fmt.Sprintf("Hive %s, %s: %s", r.Version, m.Name, n))
	}
	if want != h.Fields {
		disagree("it decoded other arguments:\n  Hive:  %s\n  proxy: %s", clip(h.Fields), clip(want))
	}
	return nil
}

func describeRest(hr *testbed.HiveRead) string {
	var parts []string
	for _, m := range hr.Messages[1:] {
		parts = append(parts, fmt.Sprintf("a second message %q (type %d) at [%d,%d) %s %s", m.Name, m.Type, m.Start, m.End, m.Outcome, m.Error))
	}
	parts = append(parts, "then "+hr.Stop)
	return strings.Join(parts, "; ")
}

func clip(s string) string {
	if len(s) > 600 {
		return s[:600] + "..."
	}
	return s
}

// Expect renders the proxy's view of a call's body as Hive reader r would decode it (the notation of
// testbed/java/hivereader/HiveReader.java). notes name the fields r's version skips.
func (c *Checker) Expect(r *testbed.HiveReader, method string, body []byte) (string, []string, error) {
	s := r.Schema()
	args := s.Structs[s.Methods[method]]
	if args == nil {
		return "", nil, fmt.Errorf("method %s is not in Hive %s's schema", method, r.Version)
	}
	v, err := wire.DecodeStruct(body)
	if err != nil {
		return "", nil, err
	}
	e := expecter{c: c, r: r, s: s}
	out := e.structure(args, s.Methods[method], &v)
	return out, e.notes, e.err
}

type expecter struct {
	c     *Checker
	r     *testbed.HiveReader
	s     *testbed.HiveSchema
	notes []string
	err   error
}

func (e *expecter) structure(st *testbed.HiveStruct, name string, v *wire.Value) string {
	vals := map[int16]string{}
	for _, f := range st.Fields {
		if f.Default != "" {
			vals[f.ID] = f.Default
		}
	}
	fields := v.Fields
	if st.Union && len(fields) > 1 {
		fields = fields[:1] // a union's reader reads one field, then one more field header (its STOP)
	}
	for i := range fields {
		f := &fields[i]
		hf := st.Field(f.ID)
		switch {
		case hf == nil:
			e.notes = append(e.notes, fmt.Sprintf("%s field %d is not in its schema: skipped", name, f.ID))
			continue
		case hf.Type.T != f.V.Type:
			e.notes = append(e.notes, fmt.Sprintf("%s.%s (field %d) is a %d in its schema, wire type %d: skipped", name, hf.Name, f.ID, hf.Type.T, f.V.Type))
			continue
		}
		s, set := e.value(hf.Type, &f.V)
		if set {
			vals[f.ID] = s
		} else {
			delete(vals, f.ID) // an enum value the jars do not know: the field is null, unset
		}
	}
	ids := make([]int, 0, len(vals))
	for id := range vals {
		ids = append(ids, int(id))
	}
	sort.Ints(ids)
	var b strings.Builder
	b.WriteByte('{')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(id))
		b.WriteByte(':')
		b.WriteString(vals[int16(id)])
	}
	b.WriteByte('}')
	return b.String()
}

// value renders one value; set is false for a value Java reads as null (an unknown enum value).
func (e *expecter) value(t *testbed.HiveType, v *wire.Value) (string, bool) {
	if t.T != v.Type {
		return fmt.Sprintf("?wire type %d where the schema has %d", v.Type, t.T), true
	}
	switch v.Type {
	case wire.TBool:
		if byte(v.Int) == 1 {
			return "T", true
		}
		return "F", true
	case wire.TByte, wire.TI16, wire.TI64:
		return "i" + strconv.FormatInt(v.Int, 10), true
	case wire.TI32:
		if t.Enum != nil {
			for _, x := range t.Enum {
				if int64(x) == v.Int {
					return "e" + strconv.FormatInt(v.Int, 10), true
				}
			}
			return "n", false
		}
		return "i" + strconv.FormatInt(v.Int, 10), true
	case wire.TDouble:
		return fmt.Sprintf("d%016x", math.Float64bits(v.Dbl)), true
	case wire.TString:
		if t.Binary {
			return "b" + hex.EncodeToString(v.Str), true
		}
		return "s" + hex.EncodeToString(e.javaString(v.Str)), true
	case wire.TStruct:
		st := e.s.Structs[t.Struct]
		if st == nil {
			e.err = fmt.Errorf("struct %s is not in Hive %s's schema", t.Struct, e.r.Version)
			return "?", true
		}
		return e.structure(st, t.Struct, v), true
	case wire.TList, wire.TSet:
		if v.ElemType != t.Elem.T {
			return fmt.Sprintf("?elements of wire type %d where the schema has %d", v.ElemType, t.Elem.T), true
		}
		parts := make([]string, 0, len(v.Elems))
		for i := range v.Elems {
			s, set := e.value(t.Elem, &v.Elems[i])
			switch {
			case set:
				parts = append(parts, s)
			case e.s.UnknownEnumElements == "null":
				parts = append(parts, "n")
			} // else the generated code leaves the element out
		}
		if v.Type == wire.TList {
			return "[" + strings.Join(parts, ",") + "]", true
		}
		return "<" + strings.Join(uniqueSorted(parts), ",") + ">", true
	case wire.TMap:
		if v.KeyType != t.Key.T || v.ElemType != t.Elem.T {
			return fmt.Sprintf("?map<%d,%d> where the schema has map<%d,%d>", v.KeyType, v.ElemType, t.Key.T, t.Elem.T), true
		}
		m := map[string]string{}
		for i := 0; i+1 < len(v.Elems); i += 2 {
			m[e.elem(t.Key, &v.Elems[i])] = e.elem(t.Elem, &v.Elems[i+1]) // a later duplicate key wins, as HashMap.put
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		b.WriteByte('(')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(k)
			b.WriteByte('=')
			b.WriteString(m[k])
		}
		b.WriteByte(')')
		return b.String(), true
	}
	return fmt.Sprintf("?wire type %d", v.Type), true
}

func (e *expecter) elem(t *testbed.HiveType, v *wire.Value) string {
	s, set := e.value(t, v)
	if !set {
		return "n"
	}
	return s
}

func uniqueSorted(parts []string) []string {
	sort.Strings(parts)
	out := parts[:0]
	for i, p := range parts {
		if i == 0 || p != parts[i-1] {
			out = append(out, p)
		}
	}
	return out
}

// javaString is b as a Java String decoded from it, re-encoded: b itself when it is valid UTF-8, else Java's own
// decoding.
func (e *expecter) javaString(b []byte) []byte {
	out, err := e.c.javaString(e.r, b)
	if err != nil && e.err == nil {
		e.err = err
	}
	return out
}

// javaString asks r's JVM how Java decodes b when it is not valid UTF-8 (remembered).
func (c *Checker) javaString(r *testbed.HiveReader, b []byte) ([]byte, error) {
	if utf8.Valid(b) {
		return b, nil
	}
	c.mu.Lock()
	s, ok := c.utf8[string(b)]
	c.mu.Unlock()
	if ok {
		return []byte(s), nil
	}
	out, err := r.UTF8(b)
	if err != nil {
		return b, err
	}
	c.mu.Lock()
	if len(c.utf8) < 1<<16 {
		c.utf8[string(b)] = string(out)
	}
	c.mu.Unlock()
	return out, nil
}
