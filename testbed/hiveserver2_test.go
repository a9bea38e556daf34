package testbed

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Transcript keeps a statement, its transaction and write id, a read's
// write-id snapshot (without the rest of OrcInputFormat's context line), its
// splits and files and the errors, in order, and drops everything else; with
// more lines than asked it keeps the last ones and says how many it left out.
func TestHiveServer2TranscriptKeepsWhatAReadDependsOn(t *testing.T) {
	dir := t.TempDir()
	log := strings.Join([]string{
		"==== hmsbed: starting HiveServer2 on port 1 (metastore thrift://127.0.0.1:2) at 2026-12-02T05:44:34Z",
		"2026-12-02T05:44:41,320 INFO  [h Thread-970] session.HiveSessionImpl: executing INSERT INTO d.acid VALUES (1, 'a')",
		"2026-12-02T05:44:41,321 INFO  [h Thread-970] parse.CalcitePlanner: Starting Semantic Analysis",
		"2026-12-02T05:44:41,405 INFO  [h Thread-970] lockmgr.DbTxnManager: Opened txnid:5",
		"2026-12-02T05:44:41,420 INFO  [h Thread-970] lockmgr.DbTxnManager: Allocated write ID 1 for d.acid and txnid:5 (shouldReallocate: false)",
		"2026-12-02T05:44:52,717 INFO  [h Thread-970] session.HiveSessionImpl: executing SELECT id, v FROM d.acid",
		"2026-12-02T05:44:53,079 INFO  [b Thread-1404] orc.OrcInputFormat: Context:: isAcid: true writeIdList: d.acid:3:9223372036854775807::2,3 isTransactionalTable: true txnProperties: default",
		"2026-12-02T05:44:53,262 INFO  [b Thread-1404] orc.OrcInputFormat: getSplits finished (#splits: 0). duration: 183 ms",
		"2026-12-02T05:44:53,270 INFO  [b Thread-1404] exec.TableScanOperator: RECORDS_OUT_INTERMEDIATE:0, RECORDS_OUT_OPERATOR_TS_0:0, ",
		"2026-12-02T05:44:53,300 ERROR [b Thread-1404] ql.Driver: FAILED: something",
		"\tat org.apache.hadoop.hive.ql.Driver.run(Driver.java:1)",
	}, "\n")
	if err := os.WriteFile(filepath.Join(dir, "hiveserver2.log"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	h := &HiveServer2{Dir: dir}
	want := strings.Join([]string{
		"05:44:41,320 HiveSessionImpl: executing INSERT INTO d.acid VALUES (1, 'a')",
		"05:44:41,405 Opened txnid:5",
		"05:44:41,420 Allocated write ID 1 for d.acid and txnid:5 (shouldReallocate: false)",
		"05:44:52,717 HiveSessionImpl: executing SELECT id, v FROM d.acid",
		"05:44:53,079 writeIdList: d.acid:3:9223372036854775807::2,3",
		"05:44:53,262 getSplits finished (#splits: 0). duration: 183 ms",
		"05:44:53,270 RECORDS_OUT_OPERATOR_TS_0:0,",
		"05:44:53,300 ERROR [b Thread-1404] ql.Driver: FAILED: something",
	}, "\n")
	if got := h.Transcript(100); got != want {
		t.Fatalf("transcript:\n%s\nwant:\n%s", got, want)
	}
	if got := h.Transcript(2); got != "(6 earlier lines left out)\n05:44:53,270 RECORDS_OUT_OPERATOR_TS_0:0,\n05:44:53,300 ERROR [b Thread-1404] ql.Driver: FAILED: something" {
		t.Fatalf("last two lines: %q", got)
	}
	parts, err := h.StatementTranscripts()
	if err != nil || len(parts) != 2 || parts[0] != strings.Join(strings.Split(want, "\n")[:3], "\n") || parts[1] != strings.Join(strings.Split(want, "\n")[3:], "\n") {
		t.Fatalf("statements: %q %v", parts, err)
	}
	if _, err := (&HiveServer2{Dir: filepath.Join(dir, "none")}).StatementTranscripts(); err == nil || !strings.Contains(err.Error(), "cannot read") {
		t.Fatalf("statements of a missing log: %v", err)
	}
	if got := (&HiveServer2{Dir: filepath.Join(dir, "none")}).Transcript(10); !strings.Contains(got, "cannot read") {
		t.Fatalf("a missing log: %q", got)
	}
}
