package restcatalog_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// HMS_PROXY_REST_CAPTURE=<dir> records the metadata-changing requests the
// REST listener receives in these tests (creates, commits, transactions,
// view creates and replaces), each with the metadata file it applies to,
// one JSON file per table change. The records are the corpus of
// icemeta's differential test against iceberg-go
// (restcatalog/testdata/corpus, see restcatalog/icemeta/difftest).
const captureEnv = "HMS_PROXY_REST_CAPTURE"

// capturedChange is one recorded table or view change.
type capturedChange struct {
	Test   string `json:"test"`
	Client string `json:"client"` // pyiceberg, java, duckdb or go-test (the tests' own requests)
	Agent  string `json:"agent"`  // User-Agent and X-Client-Version as sent
	Kind   string `json:"kind"`   // create-table, commit-table, create-view, commit-view
	// Status is what the listener answered the whole request.
	Status int `json:"status"`
	// BaseLocation and Base are the metadata file the change applied to
	// (decompressed), read just before the request was forwarded; absent
	// for creates and for a commit that creates (assert-create).
	BaseLocation string          `json:"base-location,omitempty"`
	Base         json.RawMessage `json:"base,omitempty"`
	// Request is the change as sent: the create request, or one entry of a
	// commit ({"requirements","updates"}).
	Request json.RawMessage `json:"request"`
	// Namespace location, for creates without a location of their own.
	NamespaceLocation string `json:"namespace-location,omitempty"`
}

var (
	captureSeq   atomic.Int64
	captureTable = regexp.MustCompile(`^/v1/([^/]+)/namespaces/([^/]+)/(tables|views)(/([^/]+))?$`)
	captureTxn   = regexp.MustCompile(`^/v1/([^/]+)/transactions/commit$`)
)

// captureFront returns the URL to give clients: backend itself, or with
// HMS_PROXY_REST_CAPTURE set a recording reverse proxy in front of it.
func captureFront(t *testing.T, backend string) string {
	dir := os.Getenv(captureEnv)
	if dir == "" {
		return backend
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(backend)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex // one change recorded at a time: its base read matches its commit
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			rp.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		changes := captureChanges(t, backend, r, body)
		if changes == nil {
			rp.ServeHTTP(w, r)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		changes = captureChanges(t, backend, r, body) // bases read under the lock
		rec := &statusRecorder{ResponseWriter: w}
		rp.ServeHTTP(rec, r)
		for _, c := range changes {
			c.Status = rec.status
			b, err := json.MarshalIndent(c, "", " ")
			if err != nil {
				t.Errorf("capture: %v", err)
				continue
			}
			name := fmt.Sprintf("%05d-%s-%s.json", captureSeq.Add(1), c.Client, c.Kind)
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Errorf("capture: %v", err)
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func captureClient(r *http.Request) (string, string) {
	agent := strings.TrimSpace(r.Header.Get("User-Agent") + " " + r.Header.Get("X-Client-Version"))
	low := strings.ToLower(agent)
	switch {
	case strings.Contains(low, "pyiceberg"):
		return "pyiceberg", agent
	case strings.Contains(low, "duckdb"):
		return "duckdb", agent
	case strings.Contains(low, "iceberg"), strings.Contains(low, "java"):
		return "java", agent
	}
	return "go-test", agent
}

// captureChanges lists the changes of one POST (nil when it changes no
// table or view metadata), with their bases read through backend.
func captureChanges(t *testing.T, backend string, r *http.Request, body []byte) []*capturedChange {
	client, agent := captureClient(r)
	mk := func(kind string, req json.RawMessage) *capturedChange {
		return &capturedChange{Test: t.Name(), Client: client, Agent: agent, Kind: kind, Request: req}
	}
	p := r.URL.EscapedPath()
	if m := captureTxn.FindStringSubmatch(p); m != nil {
		var txn struct {
			Changes []json.RawMessage `json:"table-changes"`
		}
		if json.Unmarshal(body, &txn) != nil {
			return nil
		}
		var out []*capturedChange
		for _, raw := range txn.Changes {
			var id struct {
				Identifier struct {
					Namespace []string `json:"namespace"`
					Name      string   `json:"name"`
				} `json:"identifier"`
			}
			_ = json.Unmarshal(raw, &id)
			c := mk("commit-table", raw)
			c.BaseLocation, c.Base = captureBase(backend, "/v1/"+m[1]+"/namespaces/"+url.PathEscape(strings.Join(id.Identifier.Namespace, "\x1f"))+"/tables/"+url.PathEscape(id.Identifier.Name))
			out = append(out, c)
		}
		return out
	}
	m := captureTable.FindStringSubmatch(p)
	if m == nil || !json.Valid(body) {
		return nil
	}
	kind := map[string]string{"tables": "table", "views": "view"}[m[3]]
	if m[5] == "" {
		c := mk("create-"+kind, body)
		c.NamespaceLocation = captureNamespaceLocation(backend, "/v1/"+m[1]+"/namespaces/"+m[2])
		return []*capturedChange{c}
	}
	c := mk("commit-"+kind, body)
	c.BaseLocation, c.Base = captureBase(backend, p)
	if c.Base == nil {
		c.NamespaceLocation = captureNamespaceLocation(backend, "/v1/"+m[1]+"/namespaces/"+m[2])
	}
	return []*capturedChange{c}
}

// captureBase loads a table or view and reads its metadata file as stored.
func captureBase(backend, path string) (string, json.RawMessage) {
	resp, err := http.Get(backend + path)
	if err != nil {
		return "", nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", nil
	}
	var load struct {
		MetadataLocation string `json:"metadata-location"`
	}
	if json.NewDecoder(resp.Body).Decode(&load) != nil || load.MetadataLocation == "" {
		return "", nil
	}
	b, err := os.ReadFile(localPath(load.MetadataLocation))
	if err != nil {
		return load.MetadataLocation, nil
	}
	if len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return load.MetadataLocation, nil
		}
		if b, err = io.ReadAll(zr); err != nil {
			return load.MetadataLocation, nil
		}
	}
	return load.MetadataLocation, b
}

func captureNamespaceLocation(backend, path string) string {
	resp, err := http.Get(backend + path)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var ns struct {
		Properties map[string]string `json:"properties"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&ns)
	return ns.Properties["location"]
}
