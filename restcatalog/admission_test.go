package restcatalog

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// rest-catalog.max-worker-threads bounds the requests served at once: with
// one slot, a second request waits for it, a third (beyond the queue of the
// same size) answers 503 at once with Retry-After, and a waiter whose slot
// does not free up within the queue wait answers 503 too; every refusal is
// counted in hms_proxy_rest_requests_total.
func TestAdmissionBoundsRequestsServedAtOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	entered := make(chan string, 8)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- r.URL.Path
		<-release
		w.WriteHeader(http.StatusNoContent)
	})
	srv, err := Listen(h, ServerOptions{BindHost: "127.0.0.1", MaxInFlight: 1, QueueWait: 3 * time.Second, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	type result struct {
		status int
		retry  string
		body   map[string]map[string]any
	}
	get := func(path string) result {
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(srv.URL() + path)
		if err != nil {
			t.Error(err)
			return result{}
		}
		defer resp.Body.Close()
		var r result
		r.status, r.retry = resp.StatusCode, resp.Header.Get("Retry-After")
		_ = json.NewDecoder(resp.Body).Decode(&r.body)
		return r
	}
	var wg sync.WaitGroup
	results := make([]result, 2)
	wg.Add(1)
	go func() { defer wg.Done(); results[0] = get("/first") }()
	if p := <-entered; p != "/first" {
		t.Fatalf("served %s first", p)
	}
	wg.Add(1)
	go func() { defer wg.Done(); results[1] = get("/second") }()
	// The second request waits in the queue; a third finds the queue full.
	deadline := time.Now().Add(10 * time.Second)
	var third result
	for {
		third = get("/third")
		if third.status == http.StatusServiceUnavailable || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // the second had not queued yet and timed out in the queue itself
	}
	if third.status != http.StatusServiceUnavailable || third.retry == "" {
		t.Fatalf("beyond the queue: %d Retry-After %q, want 503 with Retry-After", third.status, third.retry)
	}
	e := third.body["error"]
	if e["type"] != typeUnavailable || !strings.Contains(e["message"].(string), "rest-catalog.max-worker-threads=1") {
		t.Fatalf("refusal body %v", third.body)
	}
	close(release)
	wg.Wait()
	if results[0].status != http.StatusNoContent {
		t.Fatalf("first request: %d", results[0].status)
	}
	// The second got the slot when the first finished (or timed out in the
	// queue while the third was retried: then it is a counted 503).
	if s := results[1].status; s != http.StatusNoContent && s != http.StatusServiceUnavailable {
		t.Fatalf("second request: %d", s)
	}
	refused := testutil.ToFloat64(m.requests.WithLabelValues("", routeUnmatched, "503"))
	if refused < 1 {
		t.Fatalf("refusals counted: %v", refused)
	}

	// A waiter whose slot does not free up within the queue wait. Its own
	// handler and channels: the first server's second request may still be
	// reported on entered.
	release2 := make(chan struct{})
	entered2 := make(chan string, 8)
	h2 := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered2 <- r.URL.Path
		<-release2
		w.WriteHeader(http.StatusNoContent)
	})
	srv2, err := Listen(h2, ServerOptions{BindHost: "127.0.0.1", MaxInFlight: 1, QueueWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv2.Shutdown(context.Background()) })
	client := &http.Client{Timeout: 30 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := client.Get(srv2.URL() + "/held")
		if err == nil {
			resp.Body.Close()
		}
	}()
	if p := <-entered2; p != "/held" {
		t.Fatalf("served %s first", p)
	}
	resp, err := client.Get(srv2.URL() + "/late")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a waiter past the queue wait: %d", resp.StatusCode)
	}
	close(release2)
	<-done
}
