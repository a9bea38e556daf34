package app

import (
	"io"
	"log/slog"
	"testing"
	"time"
)

// A burst followed by a quiet period is reclaimed once; steady allocation,
// however large, never is; the next burst waits for the interval.
func TestReclaimerActsOnceAfterABurst(t *testing.T) {
	var frees []int // indexes of the samples at which memory was returned
	var allocated uint64
	var script []sample
	at := time.Unix(1_000_000, 0)
	add := func(n int, perPeriod uint64) {
		for i := 0; i < n; i++ {
			at, allocated = at.Add(5*time.Second), allocated+perPeriod
			script = append(script, sample{at, allocated})
		}
	}
	add(20, 50) // 0-19: steady, far above quiet in every period: never
	add(1, 0)   // 20: quiet after the burst: reclaim
	add(4, 50)  // 21-24: a second burst within the interval
	add(1, 0)   // 25: quiet, but within the minute: no
	add(8, 0)   // 26-33: the minute passes (at 32, 60 s after 20): reclaim
	add(3, 3)   // 34-36: small allocations: no burst, no reclaim
	r := &reclaimer{burst: 100, quiet: 5, interval: time.Minute, free: func() {}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	st := reclaimState{}
	for i, s := range script {
		if r.step(&st, s) {
			frees = append(frees, i)
		}
	}
	if len(frees) != 2 || frees[0] != 20 || frees[1] != 32 {
		t.Fatalf("memory returned at samples %v, want [20 32]", frees)
	}
}
