// Package alerts holds the tests of the Prometheus alerting rules in
// alerts.yml: promtool against the synthetic series of alerts_test.yml, and
// a real Prometheus evaluating the rules on a real proxy's /metrics.
package alerts

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

const (
	rulesFile     = "alerts.yml"
	rulesTestFile = "alerts_test.yml"
)

// ruleFile is the part of Prometheus' rule file format the tests look at;
// decoding is strict, so a misspelt key fails here as it would in promtool.
type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	} `yaml:"groups"`
}

type rule struct {
	Alert       string            `yaml:"alert"`
	Record      string            `yaml:"record"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

type unitTestFile struct {
	RuleFiles          []string `yaml:"rule_files"`
	EvaluationInterval string   `yaml:"evaluation_interval"`
	Tests              []struct {
		Name         string    `yaml:"name"`
		Interval     string    `yaml:"interval"`
		InputSeries  yaml.Node `yaml:"input_series"`
		AlertRuleTst []struct {
			EvalTime  string      `yaml:"eval_time"`
			AlertName string      `yaml:"alertname"`
			ExpAlerts []yaml.Node `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

func decodeStrict(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// alertRules returns the alerting rules of alerts.yml in file order.
func alertRules(t *testing.T) []rule {
	t.Helper()
	var f ruleFile
	decodeStrict(t, rulesFile, &f)
	var out []rule
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, r)
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s has no alerting rules", rulesFile)
	}
	return out
}

// promtool finds promtool (Debian package "prometheus"). Missing, it fails
// the test where it could be installed (root with apt-get: make test
// installs testbed/apt-packages.txt) and skips where it cannot.
func promtool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("promtool"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/promtool"); err == nil {
		return "/usr/bin/promtool"
	}
	_, aptErr := exec.LookPath("apt-get")
	if os.Geteuid() == 0 && aptErr == nil {
		t.Fatal("promtool not found; it comes with the Debian package prometheus (testbed/apt-packages.txt, installed by make test): apt-get install -y prometheus")
	}
	t.Skip("promtool not found and cannot be installed here (needs root and apt-get): install the Debian package prometheus to test the alerting rules")
	return ""
}

func runPromtool(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// The rules load in promtool, and every alert fires on the synthetic series
// meant to fire it (with the labels and rendered annotations expected) and
// stays quiet on the look-alikes.
func TestAlertRulesWithPromtool(t *testing.T) {
	out := runPromtool(t, "check", "rules", rulesFile)
	if !strings.Contains(out, "SUCCESS") {
		t.Fatalf("promtool check rules: %s", out)
	}
	start := time.Now()
	out = runPromtool(t, "test", "rules", rulesTestFile)
	if !strings.Contains(out, "SUCCESS") {
		t.Fatalf("promtool test rules: %s", out)
	}
	t.Logf("promtool test rules %s: SUCCESS in %s", rulesTestFile, time.Since(start).Round(time.Millisecond))
}

// Every rule says how urgent it is, how long the condition must hold, and
// what it means; and alerts_test.yml has, for each alert, a case where it
// fires and one where it must not.
func TestEveryAlertIsDocumentedAndTested(t *testing.T) {
	rules := alertRules(t)
	var ut unitTestFile
	decodeStrict(t, rulesTestFile, &ut)
	if len(ut.RuleFiles) != 1 || ut.RuleFiles[0] != rulesFile {
		t.Fatalf("%s tests %v, want [%s]", rulesTestFile, ut.RuleFiles, rulesFile)
	}
	fires, quiet := map[string]int{}, map[string]int{}
	for _, tc := range ut.Tests {
		for _, a := range tc.AlertRuleTst {
			if len(a.ExpAlerts) > 0 {
				fires[a.AlertName]++
			} else {
				quiet[a.AlertName]++
			}
		}
	}
	seen := map[string]bool{}
	for _, r := range rules {
		if seen[r.Alert] {
			t.Errorf("alert %s is defined twice", r.Alert)
		}
		seen[r.Alert] = true
		if d, err := time.ParseDuration(r.For); err != nil || d < time.Minute {
			t.Errorf("%s: for %q: every rule waits at least 1m before it fires (no page on one bad scrape)", r.Alert, r.For)
		}
		if s := r.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("%s: severity %q, want critical or warning", r.Alert, s)
		}
		if len(r.Annotations["summary"]) < 15 || len(r.Annotations["description"]) < 80 {
			t.Errorf("%s: summary and description must say what happened and what to check: %v", r.Alert, r.Annotations)
		}
		for k := range r.Annotations {
			if k != "summary" && k != "description" {
				t.Errorf("%s: unexpected annotation %q", r.Alert, k)
			}
		}
		if fires[r.Alert] == 0 {
			t.Errorf("%s: no case in %s where it fires", r.Alert, rulesTestFile)
		}
		if quiet[r.Alert] == 0 {
			t.Errorf("%s: no case in %s where it must stay quiet", r.Alert, rulesTestFile)
		}
	}
	for name := range fires {
		if !seen[name] {
			t.Errorf("%s tests alert %s, which %s does not define", rulesTestFile, name, rulesFile)
		}
	}
}
