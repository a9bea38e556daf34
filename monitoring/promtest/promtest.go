// Package promtest runs a real Prometheus server for tests: it scrapes one
// target on a short interval, answers PromQL queries through its HTTP API and
// is stopped together with its whole process group. It also extracts the
// PromQL expressions of a Grafana dashboard (DashboardExprs) and the metric
// names an expression uses (MetricNames), so tests can prove that every panel
// of the bundled dashboard returns data from what the proxy exports.
//
// It needs the prometheus binary (Debian package "prometheus",
// /usr/bin/prometheus). Every wait is bounded.
package promtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// DefaultBinary is where the Debian package installs Prometheus.
const DefaultBinary = "/usr/bin/prometheus"

// InstallHint tells how to get the binary on the test machines (Debian/Ubuntu).
const InstallHint = "install it with: sudo apt-get install -y prometheus (Debian package \"prometheus\", provides /usr/bin/prometheus)"

// Options configure Start. Zero values pick the defaults.
type Options struct {
	Binary         string        // default: $PATH "prometheus", else DefaultBinary
	Job            string        // scrape job name, default "hms-proxy"
	MetricsPath    string        // default "/metrics"
	ScrapeInterval time.Duration // default 1s
	StartTimeout   time.Duration // default 60s, bounds start-up and readiness
	Dir            string        // parent of the temp config/storage dir, default os.TempDir()
	LogOutput      io.Writer     // copy of Prometheus' own log (stderr), default discarded
	// RuleFiles are alerting or recording rule files to load, evaluated
	// every ScrapeInterval; Rules reports their state. A file Prometheus
	// cannot load fails Start.
	RuleFiles []string
}

// Server is a running Prometheus process.
type Server struct {
	url    string
	job    string
	target string
	dir    string
	cmd    *exec.Cmd
	exited chan struct{}
	logs   *tailBuffer

	stopOnce sync.Once
	stopErr  error
	client   *http.Client
}

// FindBinary returns the Prometheus binary to use, or an error with the
// apt-get hint.
func FindBinary(explicit string) (string, error) {
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return "", fmt.Errorf("prometheus binary %s: %w; %s", explicit, err, InstallHint)
		}
		return explicit, nil
	}
	if p, err := exec.LookPath("prometheus"); err == nil {
		return p, nil
	}
	if _, err := os.Stat(DefaultBinary); err == nil {
		return DefaultBinary, nil
	}
	return "", fmt.Errorf("prometheus binary not found on $PATH or at %s; %s", DefaultBinary, InstallHint)
}

// StartT starts a Prometheus scraping target ("host:port") and stops it when
// the test ends. It fails the test (never skips) if Prometheus is missing.
func StartT(t testing.TB, target string, opts Options) *Server {
	t.Helper()
	s, err := Start(target, opts)
	if err != nil {
		t.Fatalf("promtest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("promtest: stop: %v", err)
		}
	})
	return s
}

// Start launches Prometheus on a free loopback port with a fresh config and
// storage directory and waits until it reports ready.
func Start(target string, opts Options) (*Server, error) {
	bin, err := FindBinary(opts.Binary)
	if err != nil {
		return nil, err
	}
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, fmt.Errorf("scrape target %q is not host:port: %w", target, err)
	}
	if opts.Job == "" {
		opts.Job = "hms-proxy"
	}
	if opts.MetricsPath == "" {
		opts.MetricsPath = "/metrics"
	}
	if opts.ScrapeInterval <= 0 {
		opts.ScrapeInterval = time.Second
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 60 * time.Second
	}
	files := make([]string, len(opts.RuleFiles))
	for i, f := range opts.RuleFiles {
		abs, err := filepath.Abs(f)
		if err != nil {
			return nil, fmt.Errorf("rule file %s: %w", f, err)
		}
		if _, err := os.Stat(abs); err != nil {
			return nil, fmt.Errorf("rule file: %w", err)
		}
		files[i] = abs
	}
	opts.RuleFiles = files
	dir, err := os.MkdirTemp(opts.Dir, "promtest-")
	if err != nil {
		return nil, fmt.Errorf("create prometheus temp dir: %w", err)
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(config(opts, target)), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("write prometheus config: %w", err)
	}
	// The free port is found by binding :0 and releasing it; another process
	// may grab it in between, so retry a few times on a fresh port.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		s, err := launch(bin, dir, cfgPath, opts, target)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

func config(opts Options, target string) string {
	iv := opts.ScrapeInterval.String()
	var rules strings.Builder
	if len(opts.RuleFiles) > 0 {
		rules.WriteString("rule_files:\n")
		for _, f := range opts.RuleFiles {
			fmt.Fprintf(&rules, "  - %s\n", strconv.Quote(f))
		}
	}
	return fmt.Sprintf(`global:
  scrape_interval: %s
  scrape_timeout: %s
  evaluation_interval: %s
%sscrape_configs:
  - job_name: %s
    metrics_path: %s
    static_configs:
      - targets: [%s]
`, iv, iv, iv, rules.String(), strconv.Quote(opts.Job), strconv.Quote(opts.MetricsPath), strconv.Quote(target))
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func launch(bin, dir, cfgPath string, opts Options, target string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("find a free loopback port: %w", err)
	}
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	dataDir := filepath.Join(dir, "data-"+strconv.Itoa(port))
	logs := &tailBuffer{max: 64 << 10}
	var logw io.Writer = logs
	if opts.LogOutput != nil {
		logw = io.MultiWriter(logs, opts.LogOutput)
	}
	cmd := exec.Command(bin,
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+dataDir,
		"--storage.tsdb.retention.time=1d",
		"--web.listen-address="+listen,
		"--log.level=info",
	)
	cmd.Dir = dir
	cmd.Stdout = logw
	cmd.Stderr = logw
	// Own process group so Stop can signal everything it started; SIGKILL
	// if the test process dies without calling Stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &Server{
		url: "http://" + listen, job: opts.Job, target: target, dir: dir,
		cmd: cmd, exited: make(chan struct{}), logs: logs,
		client: &http.Client{Timeout: 10 * time.Second},
	}
	go func() { cmd.Wait(); close(s.exited) }()

	deadline := time.Now().Add(opts.StartTimeout)
	for {
		select {
		case <-s.exited:
			return nil, fmt.Errorf("prometheus exited during start-up (%s); log tail:\n%s", cmd.ProcessState, logs.String())
		default:
		}
		if resp, err := s.client.Get(s.url + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			s.kill()
			return nil, fmt.Errorf("prometheus on %s not ready within %s; log tail:\n%s", listen, opts.StartTimeout, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// URL is the base URL of the Prometheus HTTP API, e.g. http://127.0.0.1:40123.
func (s *Server) URL() string { return s.url }

// Job is the scrape job name (the "job" label of scraped series).
func (s *Server) Job() string { return s.job }

// Logs returns the tail of Prometheus' own log.
func (s *Server) Logs() string { return s.logs.String() }

// Sample is one element of a query result.
type Sample struct {
	Metric map[string]string `json:"metric"`
	Value  string            // last value as Prometheus prints it ("NaN", "1.5", ...)
}

type apiResponse struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

// QuerySamples evaluates an instant query now and returns its samples. A
// scalar or string result is returned as one sample without labels.
func (s *Server) QuerySamples(expr string) ([]Sample, error) {
	u := s.url + "/api/v1/query?" + url.Values{"query": {expr}}.Encode()
	resp, err := s.client.Get(u)
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", expr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return nil, fmt.Errorf("query %q: read answer: %w", expr, err)
	}
	var ar apiResponse
	if err := json.Unmarshal(body, &ar); err != nil {
		return nil, fmt.Errorf("query %q: HTTP %d, undecodable answer %.200q: %w", expr, resp.StatusCode, body, err)
	}
	if ar.Status != "success" {
		return nil, fmt.Errorf("query %q: %s: %s", expr, ar.ErrorType, ar.Error)
	}
	switch ar.Data.ResultType {
	case "vector", "matrix":
		var raw []struct {
			Metric map[string]string `json:"metric"`
			Value  []any             `json:"value"`
			Values [][]any           `json:"values"`
		}
		if err := json.Unmarshal(ar.Data.Result, &raw); err != nil {
			return nil, fmt.Errorf("query %q: decode %s: %w", expr, ar.Data.ResultType, err)
		}
		out := make([]Sample, 0, len(raw))
		for _, r := range raw {
			v := r.Value
			if len(r.Values) > 0 {
				v = r.Values[len(r.Values)-1]
			}
			out = append(out, Sample{Metric: r.Metric, Value: pointValue(v)})
		}
		return out, nil
	case "scalar", "string":
		var v []any
		if err := json.Unmarshal(ar.Data.Result, &v); err != nil {
			return nil, fmt.Errorf("query %q: decode %s: %w", expr, ar.Data.ResultType, err)
		}
		return []Sample{{Metric: map[string]string{}, Value: pointValue(v)}}, nil
	}
	return nil, fmt.Errorf("query %q: unexpected result type %q", expr, ar.Data.ResultType)
}

func pointValue(v []any) string {
	if len(v) == 2 {
		if s, ok := v[1].(string); ok {
			return s
		}
	}
	return ""
}

// Query evaluates an instant query and returns how many series (or 1 for a
// scalar/string) it returned.
func (s *Server) Query(expr string) (resultCount int, err error) {
	samples, err := s.QuerySamples(expr)
	return len(samples), err
}

// Rule is one loaded rule as Prometheus reports it (/api/v1/rules).
type Rule struct {
	Group     string
	Name      string
	Type      string // "alerting" or "recording"
	Query     string // the expression as Prometheus parsed and printed it
	Health    string // "ok", "err" or "unknown" (not evaluated yet)
	LastError string
	State     string // alerting rules: "inactive", "pending" or "firing"
	Evaluated time.Time
	Alerts    []Alert
}

// Alert is one active (pending or firing) alert of an alerting rule.
type Alert struct {
	Labels      map[string]string
	Annotations map[string]string
	State       string
	Value       string
}

// Rules returns every loaded rule with its health and active alerts.
func (s *Server) Rules() ([]Rule, error) {
	resp, err := s.client.Get(s.url + "/api/v1/rules")
	if err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	defer resp.Body.Close()
	var rr struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []struct {
					Name           string    `json:"name"`
					Type           string    `json:"type"`
					Query          string    `json:"query"`
					Health         string    `json:"health"`
					LastError      string    `json:"lastError"`
					State          string    `json:"state"`
					LastEvaluation time.Time `json:"lastEvaluation"`
					Alerts         []struct {
						Labels      map[string]string `json:"labels"`
						Annotations map[string]string `json:"annotations"`
						State       string            `json:"state"`
						Value       string            `json:"value"`
					} `json:"alerts"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 32<<20)).Decode(&rr); err != nil {
		return nil, fmt.Errorf("rules: HTTP %d, undecodable answer: %w", resp.StatusCode, err)
	}
	if rr.Status != "success" {
		return nil, fmt.Errorf("rules: %s", rr.Error)
	}
	var out []Rule
	for _, g := range rr.Data.Groups {
		for _, r := range g.Rules {
			rule := Rule{Group: g.Name, Name: r.Name, Type: r.Type, Query: r.Query, Health: r.Health,
				LastError: r.LastError, State: r.State, Evaluated: r.LastEvaluation}
			for _, a := range r.Alerts {
				rule.Alerts = append(rule.Alerts, Alert{Labels: a.Labels, Annotations: a.Annotations, State: a.State, Value: a.Value})
			}
			out = append(out, rule)
		}
	}
	return out, nil
}

// WaitForData polls expr until it returns at least one result or timeout
// passes; it returns the last query error or a timeout error.
func (s *Server) WaitForData(expr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		n, err := s.Query(expr)
		if err == nil && n > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return err
			}
			return fmt.Errorf("query %q returned no data within %s", expr, timeout)
		}
		select {
		case <-s.exited:
			return fmt.Errorf("prometheus exited; log tail:\n%s", s.logs.String())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// WaitForScrapes waits until the target has been scraped successfully at
// least n times (so rate() over a short window has data). On timeout the error
// carries the target's last scrape error.
func (s *Server) WaitForScrapes(n int, timeout time.Duration) error {
	expr := fmt.Sprintf(`sum_over_time(up{job=%q}[1h]) >= %d`, s.job, n)
	err := s.WaitForData(expr, timeout)
	if err != nil {
		return fmt.Errorf("target %s not scraped %d times: %w (target status: %s)", s.target, n, err, s.targetStatus())
	}
	return nil
}

func (s *Server) targetStatus() string {
	resp, err := s.client.Get(s.url + "/api/v1/targets")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	var tr struct {
		Data struct {
			ActiveTargets []struct {
				ScrapeURL string `json:"scrapeUrl"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil {
		return err.Error()
	}
	var parts []string
	for _, t := range tr.Data.ActiveTargets {
		parts = append(parts, fmt.Sprintf("%s health=%s lastError=%q", t.ScrapeURL, t.Health, t.LastError))
	}
	return strings.Join(parts, "; ")
}

// Stop terminates Prometheus (SIGTERM to its process group, SIGKILL after
// 10 s), waits for it and removes its temp directory. Safe to call twice.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		pgid := s.cmd.Process.Pid
		if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			s.stopErr = fmt.Errorf("signal prometheus: %w", err)
		}
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			s.kill()
		}
		if err := os.RemoveAll(s.dir); err != nil && s.stopErr == nil {
			s.stopErr = fmt.Errorf("remove prometheus temp dir: %w", err)
		}
	})
	return s.stopErr
}

func (s *Server) kill() {
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
