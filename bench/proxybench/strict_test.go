package proxybench

import (
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/bench/workload"
	"github.com/hms-proxy/hms-proxy/wire"
)

// cycle is an endless stream of one message, as a pipelining client sends it.
type cycle struct {
	msg []byte
	pos int
}

func (c *cycle) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		k := copy(p[n:], c.msg[c.pos:])
		n += k
		c.pos = (c.pos + k) % len(c.msg)
	}
	return n, nil
}

// strictFrames are the benchmark's own requests: get_table, add_partitions of 100 partitions (with the 20-column
// storage descriptor each) and get_partitions_by_names of 100 names.
func strictFrames(b *testing.B) map[string][]byte {
	d := workload.NewData("gobench")
	reqs, err := workload.Encode(d, []int{1})
	if err != nil {
		b.Fatal(err)
	}
	return map[string][]byte{
		workload.GetTable:             reqs.Static[workload.GetTable],
		workload.AddPartitions:        reqs.AddByConc[1].Fill(nil, []byte("0000000001")),
		workload.GetPartitionsByNames: reqs.Static[workload.GetPartitionsByNames],
	}
}

// BenchmarkStrictReading is the front door's hot-path cost of strict reading (wire.Reader.NextCall, what every
// client call goes through) against the lax walk it replaced (wire.Reader.Next: one generic skip of the body), on
// the same frames read from the same kind of lazy reader. The two alternate in blocks of 256 calls so drift of a
// shared machine lands on both; ns/op is one strict plus one lax reading, strict-ns/call and lax-ns/call each
// alone, strict/lax their ratio.
func BenchmarkStrictReading(b *testing.B) {
	strict, err := wire.NewStrictSchema(0)
	if err != nil {
		b.Fatal(err)
	}
	frames := strictFrames(b)
	for _, w := range []string{workload.GetTable, workload.AddPartitions, workload.GetPartitionsByNames} {
		frame := frames[w]
		b.Run(w, func(b *testing.B) {
			// The frames are what the proxy must accept: check once before timing.
			if _, err := strict.CheckCall(frame, 0); err != nil {
				b.Fatalf("%s refused: %v", w, err)
			}
			lax := wire.NewLazyReader(&cycle{msg: frame}, 100<<20, nil)
			str := wire.NewLazyReader(&cycle{msg: frame}, 100<<20, nil)
			var m wire.Message
			var laxT, strT time.Duration
			b.ReportAllocs()
			b.SetBytes(int64(len(frame)))
			b.ResetTimer()
			for done := 0; done < b.N; {
				n := min(256, b.N-done)
				t0 := time.Now()
				for i := 0; i < n; i++ {
					if err := lax.Next(&m); err != nil {
						b.Fatal(err)
					}
				}
				t1 := time.Now()
				for i := 0; i < n; i++ {
					if err := str.NextCall(&m, strict); err != nil {
						b.Fatal(err)
					}
				}
				t2 := time.Now()
				laxT += t1.Sub(t0)
				strT += t2.Sub(t1)
				done += n
			}
			b.StopTimer()
			b.ReportMetric(float64(strT.Nanoseconds())/float64(b.N), "strict-ns/call")
			b.ReportMetric(float64(laxT.Nanoseconds())/float64(b.N), "lax-ns/call")
			b.ReportMetric(float64(strT)/float64(laxT), "strict/lax")
		})
	}
}
