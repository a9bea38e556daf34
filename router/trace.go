package router

import (
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"unicode/utf8"

	"github.com/hms-proxy/hms-proxy/router/planner"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Debug tracing (logging.debug-tracing=true): LogTracer writes, at DEBUG and
// with the request id, one log record per stage of a request:
//
//	client-request    the method and arguments as the client sent them
//	plan              what the router decided: one catalog, a fan-out, a local answer or a refusal
//	backend-selected  the catalog the call is sent to
//	backend-request   the rewritten call as sent to that catalog's metastore
//	backend-response  the metastore's answer, or the transport error
//	client-response   what the client gets
//
// Values are rendered with the field names of the canonical schema and within
// bounds (TraceLimits), so that tracing a call that returns a hundred thousand
// partitions costs about as much as tracing one that returns ten. Rendering
// walks the encoded message with wire and skips what it does not show;
// it never decodes a whole answer. A message that cannot be read is rendered
// as a short note; tracing never fails, delays beyond rendering, or changes a
// request.

// Trace stage names (the "stage" attribute of every trace record).
const (
	StageClientRequest   = "client-request"
	StagePlan            = "plan"
	StageBackendSelected = "backend-selected"
	StageBackendRequest  = "backend-request"
	StageBackendResponse = "backend-response"
	StageClientResponse  = "client-response"
)

// TraceLimits bound the rendering of one value.
type TraceLimits struct {
	Elems  int // elements shown per list, set or map; the rest are counted ("… +N more")
	Depth  int // levels of structs and containers expanded, an argument or result value being level 1; deeper ones show as Name{…} or [… N elements]
	Chars  int // characters per rendered message; the rest is cut with a marker
	String int // bytes shown of one string value
}

// DefaultTraceLimits are the spec's bounds: 10 elements per collection,
// depth 3, about 4000 characters per record.
var DefaultTraceLimits = TraceLimits{Elems: 10, Depth: 3, Chars: 4000, String: 256}

// LogTracer is the Tracer of logging.debug-tracing: it logs every stage at
// DEBUG. When the logger does not have DEBUG enabled it does nothing beyond
// that check.
type LogTracer struct {
	log *slog.Logger
	lim TraceLimits
}

// NewTracer returns a tracer logging to log with DefaultTraceLimits.
func NewTracer(log *slog.Logger) *LogTracer {
	return NewTracerLimits(log, DefaultTraceLimits)
}

// NewTracerLimits returns a tracer with explicit bounds (non-positive fields
// take the default).
func NewTracerLimits(log *slog.Logger, lim TraceLimits) *LogTracer {
	if log == nil {
		log = slog.Default()
	}
	d := DefaultTraceLimits
	if lim.Elems <= 0 {
		lim.Elems = d.Elems
	}
	if lim.Depth <= 0 {
		lim.Depth = d.Depth
	}
	if lim.Chars <= 0 {
		lim.Chars = d.Chars
	}
	if lim.String <= 0 {
		lim.String = d.String
	}
	return &LogTracer{log: log, lim: lim}
}

var _ Tracer = (*LogTracer)(nil)

func (t *LogTracer) on() bool {
	return t.log.Enabled(context.Background(), slog.LevelDebug)
}

func (t *LogTracer) emit(stage string, id uint64, attrs ...slog.Attr) {
	all := make([]slog.Attr, 0, 2+len(attrs))
	all = append(all, slog.String("stage", stage), slog.Uint64("requestId", id))
	all = append(all, attrs...)
	t.log.LogAttrs(context.Background(), slog.LevelDebug, "trace", all...)
}

// Incoming logs the client's call as received.
func (t *LogTracer) Incoming(id uint64, conn *ConnInfo, m *wire.Message) {
	if !t.on() {
		return
	}
	attrs := []slog.Attr{slog.String("method", m.Name)}
	if conn != nil {
		attrs = append(attrs, slog.String("remote", conn.Remote), slog.String("user", conn.User()))
		if conn.Frontend != nil {
			attrs = append(attrs, slog.String("frontend", conn.Frontend.Name))
		}
	}
	attrs = append(attrs, slog.Int("bytes", len(m.Raw)), slog.String("call", RenderMessage(m, t.lim)))
	t.emit(StageClientRequest, id, attrs...)
}

// Backend logs the chosen catalog and the rewritten call sent to it.
func (t *LogTracer) Backend(id uint64, catalog string, req []byte) {
	if !t.on() {
		return
	}
	t.emit(StageBackendSelected, id, slog.String("catalog", catalog))
	t.emit(StageBackendRequest, id, slog.String("catalog", catalog), slog.Int("bytes", len(req)),
		slog.String("call", RenderRaw(req, t.lim)))
}

// BackendReply logs the backend's answer or error.
func (t *LogTracer) BackendReply(id uint64, catalog string, reply *wire.Message, err error) {
	if !t.on() {
		return
	}
	switch {
	case err != nil:
		t.emit(StageBackendResponse, id, slog.String("catalog", catalog), slog.String("error", err.Error()))
	case reply == nil:
		t.emit(StageBackendResponse, id, slog.String("catalog", catalog), slog.String("reply", "none (oneway call)"))
	default:
		t.emit(StageBackendResponse, id, slog.String("catalog", catalog), slog.Int("bytes", len(reply.Raw)),
			slog.String("reply", RenderMessage(reply, t.lim)))
	}
}

// Plan logs what the router decided to do with the request.
func (t *LogTracer) Plan(id uint64, p *planner.Plan) {
	if !t.on() {
		return
	}
	t.emit(StagePlan, id, slog.String("plan", p.String()))
}

// ClientReply logs what the client gets.
func (t *LogTracer) ClientReply(id uint64, reply []byte) {
	if !t.on() {
		return
	}
	if len(reply) == 0 {
		t.emit(StageClientResponse, id, slog.String("reply", "none (oneway call)"))
		return
	}
	t.emit(StageClientResponse, id, slog.Int("bytes", len(reply)), slog.String("reply", RenderRaw(reply, t.lim)))
}

// RenderRaw renders one whole encoded message (envelope and body).
func RenderRaw(raw []byte, lim TraceLimits) string {
	m, err := wire.ParseMessage(raw, 0)
	if err != nil {
		return fmt.Sprintf("<unreadable message of %d bytes: %v>", len(raw), err)
	}
	return RenderMessage(m, lim)
}

// RenderMessage renders a message within lim:
//
//	get_table(dbname='sales', tbl_name='orders')           a call
//	get_table -> success=Table{tableName='orders', …}       a reply
//	get_table -> o2=NoSuchObjectException{message='…'}      a declared exception
//	get_table -> TApplicationException{type=UNKNOWN_METHOD, message='…'}
//
// It never panics; what cannot be read is rendered as a short note.
func RenderMessage(m *wire.Message, lim TraceLimits) (out string) {
	r := &renderer{lim: lim, b: make([]byte, 0, 256)}
	defer func() {
		if p := recover(); p != nil {
			out = string(r.b) + fmt.Sprintf(" <rendering stopped: %v>", p)
		}
	}()
	method := thriftgen.LookupMethod(m.Name)
	buf := &wire.Buf{B: m.Body()}
	r.str(m.Name)
	var err error
	switch m.Type {
	case wire.Call, wire.Oneway:
		var args *thriftgen.Struct
		if method != nil {
			args = method.Args
		}
		r.byte('(')
		err = r.fields(buf, args, 0)
		if err == nil {
			r.byte(')')
		}
	case wire.Reply:
		var result *thriftgen.Struct
		if method != nil {
			result = method.Result
		}
		r.str(" -> ")
		mark := len(r.b)
		err = r.fields(buf, result, 0)
		if err == nil && len(r.b) == mark {
			r.str("void")
		}
	case wire.Exception:
		r.str(" -> ")
		typ, msg, perr := wire.ParseAppException(m.Body())
		if perr != nil {
			err = perr
			break
		}
		r.str("TApplicationException{type=")
		r.str(appExceptionName(typ))
		r.str(", message=")
		r.quote([]byte(msg))
		r.byte('}')
	default:
		r.str(fmt.Sprintf(" <message type %d>", m.Type))
	}
	return r.finish(err)
}

var appExceptionNames = map[int32]string{0: "UNKNOWN", 1: "UNKNOWN_METHOD", 2: "INVALID_MESSAGE_TYPE",
	3: "WRONG_METHOD_NAME", 4: "BAD_SEQUENCE_ID", 5: "MISSING_RESULT", 6: "INTERNAL_ERROR", 7: "PROTOCOL_ERROR",
	8: "INVALID_TRANSFORM", 9: "INVALID_PROTOCOL", 10: "UNSUPPORTED_CLIENT_TYPE"}

func appExceptionName(t int32) string {
	if n, ok := appExceptionNames[t]; ok {
		return n
	}
	return strconv.Itoa(int(t))
}

// renderer appends a bounded rendering to b.
type renderer struct {
	lim  TraceLimits
	b    []byte
	full bool // the character budget is spent
}

// errFull stops the walk once the budget is spent.
var errFull = fmt.Errorf("trace record budget spent")

func (r *renderer) finish(err error) string {
	switch {
	case r.full || err == errFull:
		if len(r.b) > r.lim.Chars {
			cut := r.lim.Chars
			for cut > 0 && !utf8.RuneStart(r.b[cut]) {
				cut--
			}
			r.b = r.b[:cut]
		}
		r.str(fmt.Sprintf(" … [truncated: trace record limit of %d characters]", r.lim.Chars))
	case err != nil:
		r.str(fmt.Sprintf(" <undecodable: %v>", err))
	}
	return string(r.b)
}

func (r *renderer) str(s string) { r.b = append(r.b, s...) }
func (r *renderer) byte(c byte)  { r.b = append(r.b, c) }

func (r *renderer) check() error {
	if len(r.b) > r.lim.Chars {
		r.full = true
		return errFull
	}
	return nil
}

// fields renders the fields of a struct body (up to and including TStop)
// as name=value pairs. s may be nil (unknown struct): fields are then named
// by id (#3).
func (r *renderer) fields(buf *wire.Buf, s *thriftgen.Struct, depth int) error {
	first := true
	for {
		if err := r.check(); err != nil {
			return err
		}
		wt, id, err := buf.FieldHeader()
		if err != nil {
			return err
		}
		if wt == wire.TStop {
			return nil
		}
		if !first {
			r.str(", ")
		}
		first = false
		var f *thriftgen.Field
		if s != nil {
			f = s.FieldByID(id)
		}
		var ft *thriftgen.Type
		if f != nil && wire.WireType(f.Type) == wt {
			r.str(f.Name)
			ft = f.Type
		} else {
			r.byte('#')
			r.str(strconv.Itoa(int(id)))
		}
		r.byte('=')
		if err := r.value(buf, wt, ft, depth); err != nil {
			return err
		}
	}
}

// value renders one value of wire type wt; st is its schema type when known
// (and consistent with wt). depth is the nesting level of the value: the
// arguments of a call and the fields of a result are at depth 0.
func (r *renderer) value(buf *wire.Buf, wt byte, st *thriftgen.Type, depth int) error {
	if err := r.check(); err != nil {
		return err
	}
	switch wt {
	case wire.TBool:
		v, err := buf.Byte()
		if err != nil {
			return err
		}
		r.str(strconv.FormatBool(v != 0))
	case wire.TByte:
		v, err := buf.Byte()
		if err != nil {
			return err
		}
		r.str(strconv.Itoa(int(int8(v))))
	case wire.TI16:
		v, err := buf.I16()
		if err != nil {
			return err
		}
		r.str(strconv.Itoa(int(v)))
	case wire.TI32:
		v, err := buf.I32()
		if err != nil {
			return err
		}
		r.i32(v, st)
	case wire.TI64:
		v, err := buf.I64()
		if err != nil {
			return err
		}
		r.str(strconv.FormatInt(v, 10))
	case wire.TDouble:
		v, err := buf.Double()
		if err != nil {
			return err
		}
		r.str(strconv.FormatFloat(v, 'g', -1, 64))
	case wire.TString:
		v, err := buf.Bytes()
		if err != nil {
			return err
		}
		if st != nil && st.Kind == thriftgen.KindBinary {
			r.str("<binary " + strconv.Itoa(len(v)) + " bytes>")
		} else {
			r.quote(v)
		}
	case wire.TUUID:
		start := buf.Pos
		if err := buf.Skip(wire.TUUID, 0); err != nil {
			return err
		}
		r.str("uuid:" + hex.EncodeToString(buf.B[start:buf.Pos]))
	case wire.TStruct:
		return r.structValue(buf, st, depth)
	case wire.TList, wire.TSet:
		return r.listValue(buf, wt, st, depth)
	case wire.TMap:
		return r.mapValue(buf, st, depth)
	default:
		return fmt.Errorf("unknown wire type %d", wt)
	}
	return nil
}

func (r *renderer) i32(v int32, st *thriftgen.Type) {
	if st != nil && st.Kind == thriftgen.KindEnum {
		if e := thriftgen.LookupEnum(st.Name); e != nil {
			if ev := e.ValueByNumber(v); ev != nil {
				r.str(ev.Name)
				return
			}
		}
	}
	r.str(strconv.Itoa(int(v)))
}

func (r *renderer) structValue(buf *wire.Buf, st *thriftgen.Type, depth int) error {
	var s *thriftgen.Struct
	name := "struct"
	if st != nil && st.Kind == thriftgen.KindStruct {
		name = st.Name
		s = thriftgen.LookupStruct(st.Name)
	}
	r.str(name)
	if depth >= r.lim.Depth {
		r.str("{…}")
		return buf.Skip(wire.TStruct, 0)
	}
	r.byte('{')
	if err := r.fields(buf, s, depth+1); err != nil {
		return err
	}
	r.byte('}')
	return nil
}

func elemType(st *thriftgen.Type, want thriftgen.Kind) *thriftgen.Type {
	if st != nil && st.Kind == want {
		return st
	}
	return nil
}

func (r *renderer) listValue(buf *wire.Buf, wt byte, st *thriftgen.Type, depth int) error {
	start := buf.Pos
	et, n, err := buf.ListHeader()
	if err != nil {
		return err
	}
	var elem *thriftgen.Type
	if lt := elemType(st, thriftgen.KindList); lt != nil {
		elem = lt.Elem
	} else if lt := elemType(st, thriftgen.KindSet); lt != nil {
		elem = lt.Elem
	}
	if elem != nil && wire.WireType(elem) != et {
		elem = nil
	}
	if depth >= r.lim.Depth && n > 0 {
		buf.Pos = start
		r.str("[… " + strconv.Itoa(n) + " elements]")
		return buf.Skip(wt, 0)
	}
	r.byte('[')
	for i := 0; i < n; i++ {
		if i == r.lim.Elems {
			r.str(", … +" + strconv.Itoa(n-i) + " more")
			for ; i < n; i++ {
				if err := buf.Skip(et, 0); err != nil {
					return err
				}
			}
			break
		}
		if i > 0 {
			r.str(", ")
		}
		if err := r.value(buf, et, elem, depth+1); err != nil {
			return err
		}
	}
	r.byte(']')
	return nil
}

func (r *renderer) mapValue(buf *wire.Buf, st *thriftgen.Type, depth int) error {
	start := buf.Pos
	kt, vt, n, err := buf.MapHeader()
	if err != nil {
		return err
	}
	var key, val *thriftgen.Type
	if mt := elemType(st, thriftgen.KindMap); mt != nil && wire.WireType(mt.Key) == kt && wire.WireType(mt.Value) == vt {
		key, val = mt.Key, mt.Value
	}
	if depth >= r.lim.Depth && n > 0 {
		buf.Pos = start
		r.str("{… " + strconv.Itoa(n) + " entries}")
		return buf.Skip(wire.TMap, 0)
	}
	r.byte('{')
	for i := 0; i < n; i++ {
		if i == r.lim.Elems {
			r.str(", … +" + strconv.Itoa(n-i) + " more")
			for ; i < n; i++ {
				if err := buf.Skip(kt, 0); err != nil {
					return err
				}
				if err := buf.Skip(vt, 0); err != nil {
					return err
				}
			}
			break
		}
		if i > 0 {
			r.str(", ")
		}
		if err := r.value(buf, kt, key, depth+1); err != nil {
			return err
		}
		r.str(": ")
		if err := r.value(buf, vt, val, depth+1); err != nil {
			return err
		}
	}
	r.byte('}')
	return nil
}

// quote appends s in single quotes, at most lim.String bytes of it. Quotes,
// backslashes, control characters and invalid UTF-8 are escaped, so a value
// can neither break the log line nor forge another; other text is kept.
func (r *renderer) quote(s []byte) {
	r.byte('\'')
	shown := s
	if len(shown) > r.lim.String {
		cut := r.lim.String
		for cut > 0 && !utf8.RuneStart(shown[cut]) {
			cut--
		}
		shown = shown[:cut]
	}
	shownLen := len(shown)
	for len(shown) > 0 {
		c, size := utf8.DecodeRune(shown)
		switch {
		case c == utf8.RuneError && size == 1:
			r.str(`\x`)
			r.b = append(r.b, "0123456789abcdef"[shown[0]>>4], "0123456789abcdef"[shown[0]&15])
		case c == '\'' || c == '\\':
			r.byte('\\')
			r.byte(byte(c))
		case c == '\n':
			r.str(`\n`)
		case c == '\r':
			r.str(`\r`)
		case c == '\t':
			r.str(`\t`)
		case c < 0x20 || c == 0x7f:
			r.str(`\x`)
			r.b = append(r.b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		case c >= 0x80 && c < 0xa0, c == 0x2028, c == 0x2029:
			r.str(`\u`)
			r.str(fmt.Sprintf("%04x", c))
		default:
			r.b = append(r.b, shown[:size]...)
		}
		shown = shown[size:]
	}
	r.byte('\'')
	if rest := len(s) - shownLen; rest > 0 {
		r.str("…(+" + strconv.Itoa(rest) + " bytes)")
	}
}
