package app

import (
	"context"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The reclaimer returns the memory of a burst to the operating system once
// the burst is over. The Go runtime collects garbage only as the heap grows
// and gives freed pages back slowly, so after a storm of connections or
// large messages a quiet proxy would keep its peak RSS for minutes: what the
// storm allocated is garbage nobody collects while nothing allocates. Under
// steady load the reclaimer never acts (the allocation rate never drops), so
// it costs a metrics read per period.
type reclaimer struct {
	period   time.Duration // how often the allocation counter is read
	burst    uint64        // bytes allocated since the last reclaim that make a burst
	quiet    uint64        // at most this many bytes allocated in one period: the burst is over
	interval time.Duration // at least this long between two reclaims
	alloc    func() uint64 // cumulative bytes allocated by the process
	free     func()        // collect and return freed memory (debug.FreeOSMemory)
	log      *slog.Logger
}

func newReclaimer(log *slog.Logger) *reclaimer {
	return &reclaimer{period: 5 * time.Second, burst: 64 << 20, quiet: 4 << 20, interval: time.Minute,
		alloc: allocatedBytes, free: debug.FreeOSMemory, log: log}
}

// allocatedBytes reads the runtime's cumulative heap allocation counter
// (runtime/metrics: no stop of the world).
func allocatedBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// sample is the allocation counter at one tick.
type sample struct {
	at    time.Time
	alloc uint64
}

// run reclaims until ctx ends.
func (r *reclaimer) run(ctx context.Context) {
	t := time.NewTicker(r.period)
	defer t.Stop()
	samples := make(chan sample)
	go func() {
		defer close(samples)
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				select {
				case samples <- sample{now, r.alloc()}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	r.loop(r.alloc(), samples)
}

// loop decides at each sample; start is the counter at the beginning.
func (r *reclaimer) loop(start uint64, samples <-chan sample) {
	st := reclaimState{since: start, prev: start}
	for s := range samples {
		r.step(&st, s)
	}
}

// reclaimState is what loop remembers between samples.
type reclaimState struct {
	since, prev uint64    // the counter at the last reclaim, at the last sample
	last        time.Time // of the last reclaim
}

// step handles one sample and reports whether it returned memory. The
// counter after a reclaim is taken as the sample's (the collection itself
// allocates little).
func (r *reclaimer) step(st *reclaimState, s sample) bool {
	period := s.alloc - st.prev
	st.prev = s.alloc
	if s.alloc-st.since < r.burst || period > r.quiet || (!st.last.IsZero() && s.at.Sub(st.last) < r.interval) {
		return false
	}
	began := time.Now()
	r.free()
	r.log.Debug("returned the memory of an allocation burst to the OS", "allocatedMiB", (s.alloc-st.since)>>20, "took", time.Since(began))
	st.since, st.last = s.alloc, s.at
	return true
}
