package router

import (
	"log/slog"
	"sync"
	"time"

	"github.com/hms-proxy/hms-proxy/audit"
	"github.com/hms-proxy/hms-proxy/router/planner"
)

// logLimiter writes refusals and backend failures to the main log at WARN,
// at most one line per kind of event per interval: a storm of bad calls
// cannot flood the disk, and the line after a quiet spell says how many were
// left out.
type logLimiter struct {
	log      *slog.Logger
	interval time.Duration
	mu       sync.Mutex
	last     map[string]*logState
}

type logState struct {
	at         time.Time
	suppressed int
}

// maxLogKeys bounds the limiter's memory; past it the table starts over.
const maxLogKeys = 4096

func newLogLimiter(log *slog.Logger, interval time.Duration) *logLimiter {
	return &logLimiter{log: log, interval: interval, last: map[string]*logState{}}
}

// allow reports whether an event of key may be logged now, and how many were
// suppressed since the last one that was.
func (l *logLimiter) allow(key string) (bool, int) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.last[key]
	if st == nil {
		if len(l.last) >= maxLogKeys {
			l.last = map[string]*logState{}
		}
		l.last[key] = &logState{at: now}
		return true, 0
	}
	if now.Sub(st.at) < l.interval {
		st.suppressed++
		return false, 0
	}
	n := st.suppressed
	st.at, st.suppressed = now, 0
	return true, n
}

func (l *logLimiter) refusal(method, catalog string, ref *planner.Refusal) {
	if l == nil {
		return
	}
	key := "refusal|" + ref.Reason + "|" + catalog
	if ref.Reason != "unknown_method" {
		key += "|" + method
	}
	ok, suppressed := l.allow(key)
	if !ok {
		return
	}
	attrs := []any{"method", audit.Clip(method, audit.MaxMethodLen), "reason", ref.Reason, "why", audit.Clip(ref.Message, audit.MaxValueLen)}
	if catalog != "" {
		attrs = append(attrs, "catalog", catalog)
	}
	if suppressed > 0 {
		attrs = append(attrs, "suppressedSinceLast", suppressed)
	}
	l.log.Warn("request refused", attrs...)
}

func (l *logLimiter) backendFailure(method, catalog, exception string, err error) {
	if l == nil {
		return
	}
	ok, suppressed := l.allow("backend|" + catalog + "|" + exception + "|" + method)
	if !ok {
		return
	}
	attrs := []any{"method", method, "catalog", catalog, "exception", exception, "err", err}
	if suppressed > 0 {
		attrs = append(attrs, "suppressedSinceLast", suppressed)
	}
	l.log.Warn("backend call failed", attrs...)
}
