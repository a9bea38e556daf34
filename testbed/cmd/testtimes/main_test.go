package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// A stream as go test -json writes it for two packages, one failing: the plain output keeps what go test without
// -v shows (package lines, TestMain's output, a failed test's output, non-JSON lines) and drops a passing test's.
func TestFilterKeepsThePlainOutputAndTheTimes(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"start","Package":"m/a"}`,
		`{"Action":"output","Package":"m/a","Output":"a: metastores up\n"}`,
		`{"Action":"run","Package":"m/a","Test":"TestOK"}`,
		`{"Action":"output","Package":"m/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}`,
		`{"Action":"output","Package":"m/a","Test":"TestOK","Output":"    a_test.go:9: quiet when passing\n"}`,
		`{"Action":"output","Package":"m/a","Test":"TestOK","Output":"--- PASS: TestOK (3.00s)\n"}`,
		`{"Action":"pass","Package":"m/a","Test":"TestOK","Elapsed":3}`,
		`{"Action":"output","Package":"m/a","Output":"PASS\n"}`,
		`{"Action":"output","Package":"m/a","Output":"ok  \tm/a\t5.000s\n"}`,
		`{"Action":"pass","Package":"m/a","Elapsed":5}`,
		`# m/b [m/b.test]`,
		`{"Action":"run","Package":"m/b","Test":"TestBad/sub"}`,
		`{"Action":"output","Package":"m/b","Test":"TestBad/sub","Output":"    b_test.go:3: want 2, got 1\n"}`,
		`{"Action":"output","Package":"m/b","Test":"TestBad/sub","Output":"    --- FAIL: TestBad/sub (1.50s)\n"}`,
		`{"Action":"fail","Package":"m/b","Test":"TestBad/sub","Elapsed":1.5}`,
		`{"Action":"output","Package":"m/b","Test":"TestBad","Output":"--- FAIL: TestBad (2.00s)\n"}`,
		`{"Action":"fail","Package":"m/b","Test":"TestBad","Elapsed":2}`,
		`{"Action":"output","Package":"m/b","Output":"FAIL\n"}`,
		`{"Action":"output","Package":"m/b","Output":"FAIL\tm/b\t2.500s\n"}`,
		`{"Action":"fail","Package":"m/b","Elapsed":2.5}`,
	}, "\n") + "\n"
	var out, raw bytes.Buffer
	ts, failed := filter(strings.NewReader(in), &out, &raw)
	want := "a: metastores up\nok  \tm/a\t5.000s\n# m/b [m/b.test]\n" +
		"    b_test.go:3: want 2, got 1\n    --- FAIL: TestBad/sub (1.50s)\n--- FAIL: TestBad (2.00s)\nFAIL\nFAIL\tm/b\t2.500s\n"
	if out.String() != want {
		t.Fatalf("plain output:\n%s\nwant:\n%s", out.String(), want)
	}
	if raw.String() != in {
		t.Fatalf("the raw stream was not kept whole:\n%s", raw.String())
	}
	var times bytes.Buffer
	writeTimes(&times, ts)
	wantTimes := "3.00\tpass\tm/a\tTestOK\n5.00\tpass\tm/a\t-\n1.50\tfail\tm/b\tTestBad/sub\n2.00\tfail\tm/b\tTestBad\n2.50\tfail\tm/b\t-\n"
	if times.String() != wantTimes {
		t.Fatalf("times:\n%s\nwant:\n%s", times.String(), wantTimes)
	}
	var rep bytes.Buffer
	report(&rep, ts, 16)
	for _, line := range []string{
		"5.0s pass m/a", "outside    2.0s", // 5 s wall, 3 s in its test: 2 s in TestMain
		"7.5s summed over 2 packages",
		"3.0s pass m/a TestOK", "2.0s fail m/b TestBad",
		"1.5s fail m/b TestBad/sub",
	} {
		if !strings.Contains(rep.String(), line) {
			t.Fatalf("the report has no %q:\n%s", line, rep.String())
		}
	}
	// The report ends with what failed and why: the failing subtest's message, its parent not repeated.
	var fails bytes.Buffer
	failures(&fails, failed)
	wantFails := "---- failed tests (each one's last 25 lines without JSON records; the whole output is above) ----\n" +
		"FAIL m/b TestBad/sub\n      b_test.go:3: want 2, got 1\n"
	if fails.String() != wantFails {
		t.Fatalf("failures:\n%s\nwant:\n%s", fails.String(), wantFails)
	}
}

// A failed test's closing summary drops the JSON records it dumped (a proxy's audit trail) and keeps its last lines,
// so the assertion's message is at the end of the log.
func TestFailuresKeepTheMessageNotTheDump(t *testing.T) {
	out := []string{"    x_test.go:7: on Hive 3.1.3 the step answered \"\", want \"1|a\"\n"}
	for i := 0; i < 60; i++ {
		out = append(out, `        {"event":"hms_proxy_audit","requestId":1}`+"\n")
	}
	out = append(out, "    proxytest.go:9: files kept in /tmp/x\n", "--- FAIL: TestX (1.00s)\n")
	var w bytes.Buffer
	failures(&w, []failure{{"m/x", "TestX", out}})
	if !strings.Contains(w.String(), `want "1|a"`) || strings.Contains(w.String(), "hms_proxy_audit") ||
		!strings.HasSuffix(w.String(), "files kept in /tmp/x\n") {
		t.Fatalf("failure summary:\n%s", w.String())
	}
}

// Two packages run at once: their events interleave, their output does not (each package prints as one block when
// it ends, as a plain run does).
func TestFilterKeepsEachPackagesOutputTogether(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"output","Package":"m/a","Output":"a: starting\n"}`,
		`{"Action":"output","Package":"m/b","Output":"b: starting\n"}`,
		`{"Action":"output","Package":"m/b","Test":"TestX","Output":"    b_test.go:1: boom\n"}`,
		`{"Action":"output","Package":"m/a","Output":"a: launched 3 HiveMetaStore\n"}`,
		`{"Action":"fail","Package":"m/b","Test":"TestX","Elapsed":1}`,
		`{"Action":"output","Package":"m/b","Output":"FAIL\tm/b\t1.0s\n"}`,
		`{"Action":"fail","Package":"m/b","Elapsed":1}`,
		`{"Action":"output","Package":"m/a","Output":"ok  \tm/a\t2.0s\n"}`,
		`{"Action":"pass","Package":"m/a","Elapsed":2}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	_, _ = filter(strings.NewReader(in), &out, io.Discard)
	want := "b: starting\n    b_test.go:1: boom\nFAIL\tm/b\t1.0s\n" + "a: starting\na: launched 3 HiveMetaStore\nok  \tm/a\t2.0s\n"
	if out.String() != want {
		t.Fatalf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}

// A test binary that dies mid-test (a panic, the -timeout) never reports the test's end: its output is printed.
func TestFilterPrintsAnUnfinishedTestsOutput(t *testing.T) {
	in := `{"Action":"output","Package":"m/a","Test":"TestHang","Output":"panic: test timed out after 25m0s\n"}` + "\n" +
		`{"Action":"output","Package":"m/a","Output":"FAIL\tm/a\t1500.1s\n"}` + "\n" +
		`{"Action":"fail","Package":"m/a","Elapsed":1500.1}` + "\n"
	var out bytes.Buffer
	_, _ = filter(strings.NewReader(in), &out, io.Discard)
	if out.String() != "panic: test timed out after 25m0s\nFAIL\tm/a\t1500.1s\n" {
		t.Fatalf("output: %q", out.String())
	}
}

// A test binary killed by -timeout reports no failed test: the summary names the package and starts at its panic,
// with the tests it was running.
func TestFailuresNameABinaryThatDied(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"m/c","Test":"TestSlow"}`,
		`{"Action":"output","Package":"m/c","Test":"TestSlow","Output":"    c_test.go:5: starting HiveServer2\n"}`,
		`{"Action":"output","Package":"m/c","Output":"panic: test timed out after 40m0s\n"}`,
		`{"Action":"output","Package":"m/c","Output":"\trunning tests:\n"}`,
		`{"Action":"output","Package":"m/c","Output":"\t\tTestSlow (39m59s)\n"}`,
		`{"Action":"output","Package":"m/c","Output":"FAIL\tm/c\t2400.0s\n"}`,
		`{"Action":"fail","Package":"m/c","Elapsed":2400}`,
	}, "\n") + "\n"
	_, failed := filter(strings.NewReader(in), io.Discard, io.Discard)
	var w bytes.Buffer
	failures(&w, failed)
	for _, want := range []string{"FAIL m/c -\n", "panic: test timed out after 40m0s", "TestSlow (39m59s)"} {
		if !strings.Contains(w.String(), want) {
			t.Fatalf("no %q in the failure summary:\n%s", want, w.String())
		}
	}
}
