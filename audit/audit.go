// Package audit writes one structured record per proxied request.
//
// A record is a single line of JSON (JSON Lines), written to its own
// destination apart from the main log so that a log collector can parse it
// without a layout prefix. Values that a client controls (principal, remote
// address, and the method name read off the wire) are escaped so that no input
// can break a record or forge a second one.
//
// Audit is optional. A nil *Logger means "audit off": Enabled reports false and
// Log does nothing, so callers test Enabled first and build no Record at all
// when nobody reads it.
package audit

import (
	"bytes"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// EventName is the value of the "event" field of every audit record.
const EventName = "hms_proxy_audit"

// Record is one audited request. Field names in the output follow the
// operator-facing vocabulary of the specification.
type Record struct {
	RequestID            uint64
	Method               string // Thrift method as the client called it
	OperationClass       string // method family, e.g. metadata_read
	Catalog              string // resolved catalog, "all" for fan-out
	Backend              string // backend that served it, "fanout" for fan-out
	Status               string // ok | error | fallback | throttled
	DurationMs           int64
	RemoteAddress        string // client supplied (network peer), escaped
	AuthenticatedUser    string // client supplied (principal), escaped
	Routed               bool
	Fanout               bool
	Fallback             bool
	DefaultCatalogRouted bool
	// OmittedCatalogs: catalogs a fan-out read left out because they were
	// degraded (routing.degraded-routing-policy=SAFE_FANOUT_READS); the
	// omittedCatalogs field is written only when there are some.
	OmittedCatalogs []string
	// RangerDecision is what the Ranger authorization link decided
	// ("allowed" or "denied"; "" when no catalog of the call is guarded by
	// Ranger): rangerDecision, rangerPolicyId (the policy that decided, nil
	// when none is named: a denial for lack of an allowing policy, an
	// answer filtered object by object) and rangerFiltered (objects the
	// answer lost) are written only then.
	RangerDecision string
	RangerPolicyID *int64
	RangerFiltered int
}

// Logger encodes Records and writes each as one line to its writer.
// It is safe for concurrent use; records from concurrent Log calls never
// interleave because each record reaches the writer in a single Write call
// made under the logger's lock.
type Logger struct {
	mu sync.Mutex
	w  io.Writer

	bufs sync.Pool // *[]byte

	// Buffered mode (NewBufferedLogger): records collect in pend under mu
	// and are written together by flush, under wmu, which keeps the
	// batches in order; spare is the other buffer (wmu's).
	every  time.Duration
	pend   []byte
	spare  []byte
	armed  bool // a flush is due (timer set); mu's
	timer  *time.Timer
	wmu    sync.Mutex
	closed bool // mu's

	writeErrors atomic.Uint64
	onError     atomic.Pointer[func(error)]
}

// NewLogger returns a Logger writing to w. A nil w returns a nil Logger, which
// is the disabled logger.
func NewLogger(w io.Writer) *Logger {
	if w == nil {
		return nil
	}
	l := &Logger{w: w}
	l.bufs.New = func() any {
		b := make([]byte, 0, 512)
		return &b
	}
	return l
}

// Enabled reports whether records are written. Callers build no Record when it
// returns false.
func (l *Logger) Enabled() bool { return l != nil }

// SetErrorHandler installs f to be called with every write error (the audit
// path has no caller to return errors to). Without a handler, errors are only
// counted; see WriteErrors.
func (l *Logger) SetErrorHandler(f func(error)) {
	if l == nil {
		return
	}
	if f == nil {
		l.onError.Store(nil)
		return
	}
	l.onError.Store(&f)
}

// WriteErrors returns how many records could not be written.
func (l *Logger) WriteErrors() uint64 {
	if l == nil {
		return 0
	}
	return l.writeErrors.Load()
}

// FlushAt is the size at which a buffered logger writes its records
// without waiting for its interval.
const FlushAt = 64 << 10

// NewBufferedLogger returns a Logger that writes records to w in batches:
// a record is appended to memory, and the records of up to every (or
// FlushAt bytes, whichever comes first) reach w in one Write, in the order
// they were logged. A record is never split and never reordered; a crash
// loses what was logged in the last interval, a Close writes it. every <= 0
// is NewLogger: one Write per record.
func NewBufferedLogger(w io.Writer, every time.Duration) *Logger {
	l := NewLogger(w)
	if l == nil || every <= 0 {
		return l
	}
	l.every = every
	l.pend = make([]byte, 0, 4<<10)
	l.spare = make([]byte, 0, 4<<10)
	l.timer = time.AfterFunc(time.Hour, func() { l.flush() })
	l.timer.Stop()
	return l
}

// logBuffered appends r to the pending batch; the first record of a batch
// arms the flush, a full batch is written at once.
func (l *Logger) logBuffered(r *Record) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		l.logNow(r)
		return
	}
	l.pend = append(AppendRecord(l.pend, r), '\n')
	full := len(l.pend) >= FlushAt
	arm := !l.armed && !full
	l.armed = l.armed || arm
	l.mu.Unlock()
	switch {
	case full:
		l.flush()
	case arm:
		l.timer.Reset(l.every)
	}
}

// flush writes the pending batch.
func (l *Logger) flush() {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.mu.Lock()
	b := l.pend
	l.pend, l.armed = l.spare[:0], false
	l.mu.Unlock()
	if len(b) > 0 {
		_, err := l.w.Write(b)
		if err != nil {
			l.failed(err, uint64(bytes.Count(b, []byte{'\n'})))
		}
	}
	if cap(b) <= 4*FlushAt {
		l.spare = b[:0]
	} else {
		l.spare = nil
	}
}

// Close writes what a buffered logger holds; records logged after it are
// written one by one. It does not close the writer.
func (l *Logger) Close() error {
	if l == nil || l.every <= 0 {
		return nil
	}
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.timer.Stop()
	l.flush()
	return nil
}

// failed counts n records lost to err and reports it.
func (l *Logger) failed(err error, n uint64) {
	l.writeErrors.Add(n)
	if f := l.onError.Load(); f != nil {
		(*f)(err)
	}
}

// Log writes r as one JSON line. It does nothing on a nil Logger or a nil r.
func (l *Logger) Log(r *Record) {
	if l == nil || r == nil {
		return
	}
	if l.every > 0 {
		l.logBuffered(r)
		return
	}
	l.logNow(r)
}

// logNow writes r with a Write of its own.
func (l *Logger) logNow(r *Record) {
	bp := l.bufs.Get().(*[]byte)
	b := AppendRecord((*bp)[:0], r)
	b = append(b, '\n')

	l.mu.Lock()
	_, err := l.w.Write(b)
	l.mu.Unlock()

	// Do not keep pathologically large buffers in the pool.
	if cap(b) <= 64<<10 {
		*bp = b
		l.bufs.Put(bp)
	}
	if err != nil {
		l.failed(err, 1)
	}
}

// AppendRecord appends the JSON encoding of r (without a trailing newline) to
// dst and returns the extended buffer. It allocates only when dst must grow.
func AppendRecord(dst []byte, r *Record) []byte {
	dst = append(dst, `{"event":"`...)
	dst = append(dst, EventName...)
	dst = append(dst, `","requestId":`...)
	dst = strconv.AppendUint(dst, r.RequestID, 10)
	dst = append(dst, `,"method":`...)
	dst = AppendString(dst, Clip(r.Method, MaxMethodLen))
	dst = append(dst, `,"operationClass":`...)
	dst = AppendString(dst, r.OperationClass)
	dst = append(dst, `,"catalog":`...)
	dst = AppendString(dst, r.Catalog)
	dst = append(dst, `,"backend":`...)
	dst = AppendString(dst, r.Backend)
	dst = append(dst, `,"status":`...)
	dst = AppendString(dst, r.Status)
	dst = append(dst, `,"durationMs":`...)
	dst = strconv.AppendInt(dst, r.DurationMs, 10)
	dst = append(dst, `,"routed":`...)
	dst = strconv.AppendBool(dst, r.Routed)
	dst = append(dst, `,"fanout":`...)
	dst = strconv.AppendBool(dst, r.Fanout)
	dst = append(dst, `,"fallback":`...)
	dst = strconv.AppendBool(dst, r.Fallback)
	dst = append(dst, `,"defaultCatalogRouted":`...)
	dst = strconv.AppendBool(dst, r.DefaultCatalogRouted)
	dst = append(dst, `,"remoteAddress":`...)
	dst = AppendString(dst, Clip(r.RemoteAddress, MaxValueLen))
	dst = append(dst, `,"authenticatedUser":`...)
	dst = AppendString(dst, Clip(r.AuthenticatedUser, MaxValueLen))
	if len(r.OmittedCatalogs) > 0 {
		dst = append(dst, `,"omittedCatalogs":[`...)
		for i, c := range r.OmittedCatalogs {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, Clip(c, MaxValueLen))
		}
		dst = append(dst, ']')
	}
	if r.RangerDecision != "" {
		dst = append(dst, `,"rangerDecision":`...)
		dst = AppendString(dst, r.RangerDecision)
		if r.RangerPolicyID != nil {
			dst = append(dst, `,"rangerPolicyId":`...)
			dst = strconv.AppendInt(dst, *r.RangerPolicyID, 10)
		}
		dst = append(dst, `,"rangerFiltered":`...)
		dst = strconv.AppendInt(dst, int64(r.RangerFiltered), 10)
	}
	dst = append(dst, '}')
	return dst
}

// Bounds of client-controlled values in a record (and in log lines): a
// client can send a method name or a principal of megabytes; the record keeps
// the start and says how much was left out.
const (
	MaxMethodLen = 256
	MaxValueLen  = 1024
)

// Clip returns s when it is at most max bytes, else its first max bytes (cut
// at a character boundary) followed by "…(+N bytes)".
func Clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…(+" + strconv.Itoa(len(s)-cut) + " bytes)"
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a quoted JSON string. Quotes and backslashes are
// escaped, every byte below 0x20 and DEL (0x7f) is written as \u00XX, valid
// UTF-8 is kept as is and every invalid byte becomes U+FFFD. The result never
// contains a raw line break, so a record stays on one line whatever s holds.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0 // s[start:i] is pending verbatim output
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != 0x7f {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"':
				dst = append(dst, '\\', '"')
			case '\\':
				dst = append(dst, '\\', '\\')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
