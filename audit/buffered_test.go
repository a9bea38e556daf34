package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// countingWriter keeps what it was given and counts its Write calls.
type countingWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	return w.buf.Write(p)
}

func (w *countingWriter) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// A buffered logger loses no record of concurrent callers, never splits or
// interleaves one, keeps each caller's records in the order it logged them,
// and writes them in far fewer Writes than records.
func TestBufferedLoggerKeepsEveryRecordInOrder(t *testing.T) {
	w := &countingWriter{}
	l := NewBufferedLogger(w, time.Hour) // only size and Close flush here
	const goroutines, per = 8, 2000
	logConcurrently(l, goroutines, per)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(w.text()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	last := make([]int, goroutines)
	for i := range last {
		last[i] = -1
	}
	n := 0
	for sc.Scan() {
		var r struct {
			RequestID uint64 `json:"requestId"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("interleaved or broken line %q: %v", sc.Text(), err)
		}
		g, i := int(r.RequestID)/per, int(r.RequestID)%per
		if i != last[g]+1 {
			t.Fatalf("caller %d: record %d after %d", g, i, last[g])
		}
		last[g] = i
		n++
	}
	if n != goroutines*per {
		t.Fatalf("want %d records, got %d", goroutines*per, n)
	}
	if w.writes >= n/10 {
		t.Fatalf("%d records took %d writes: not batched", n, w.writes)
	}
	l.Log(&Record{RequestID: 7}) // after Close: written at once
	if !strings.Contains(w.text(), `"requestId":7,`) {
		t.Fatal("a record logged after Close was not written")
	}
}

// A record logged into an idle buffered logger reaches the writer without
// any further record or a Close (its interval flushes it).
func TestBufferedLoggerWritesAnIdleRecord(t *testing.T) {
	w := &countingWriter{}
	l := NewBufferedLogger(w, 5*time.Millisecond)
	defer l.Close()
	for round := 0; round < 2; round++ {
		l.Log(&Record{RequestID: uint64(100 + round)})
		want := fmt.Sprintf(`"requestId":%d,`, 100+round)
		for deadline := time.Now().Add(30 * time.Second); !strings.Contains(w.text(), want); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the record was not written: %q", round, w.text())
			}
		}
	}
}

// A failed batch write counts every record it held.
func TestBufferedLoggerCountsLostRecords(t *testing.T) {
	l := NewBufferedLogger(failWriter{}, time.Hour)
	var got []error
	l.SetErrorHandler(func(err error) { got = append(got, err) })
	for i := 0; i < 3; i++ {
		l.Log(&Record{})
	}
	_ = l.Close()
	if l.WriteErrors() != 3 || len(got) != 1 || got[0] != io.ErrShortWrite {
		t.Fatalf("want 3 lost records in one reported error, got count=%d handler=%v", l.WriteErrors(), got)
	}
}

// logConcurrently logs per records from each of goroutines callers, caller
// g's record i with request id g*per+i and a user name of its own length.
func logConcurrently(l *Logger, goroutines, per int) {
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				l.Log(&Record{RequestID: uint64(g*per + i), Method: "get_table", AuthenticatedUser: strings.Repeat("u", g*37)})
			}
		}(g)
	}
	wg.Wait()
}
