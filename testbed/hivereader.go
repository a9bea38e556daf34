package testbed

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// HiveReader is Hive's own generated Thrift reader in a JVM of its own (testbed/java/hivereader): libthrift 0.9.3
// with Hive 3.1.3's ThriftHiveMetastore classes, or libthrift 0.16 with Hive 4.1.0's, reading byte streams the way
// the metastore's server reads a connection (TBinaryProtocol with strictRead and strictWrite, string and container
// limits of 100 MiB as HiveMetaStore configures them; readMessageBegin, the method's args.read, readMessageEnd).
// It is the oracle of the differential tests of the strict reader. One JVM serves any number of reads, one at a
// time; it is compiled with javac at first use (into the system temp directory, keyed by source and jars).
type HiveReader struct {
	Version Version

	mu     sync.Mutex
	proc   *jvm
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *tailBuffer
	schema *HiveSchema
	dead   error
}

// HiveRead is what Hive's reader made of one stream: the messages it read in order, and why it stopped.
type HiveRead struct {
	Messages []HiveMessage `json:"messages"`
	// Stop is "eof" when the whole stream was read as messages, else why the server would stop reading the
	// connection there ("incomplete: …" when it would wait for more bytes, "fatal: …" when it would close it).
	Stop string `json:"stop"`
}

// HiveMessage is one message as Hive's reader read it: bytes [Start, End) of the stream.
type HiveMessage struct {
	Start int    `json:"start"`
	End   int    `json:"end"`
	Name  string `json:"name"`
	Type  byte   `json:"type"`
	SeqID int32  `json:"seqid"`
	// Known: the method is in the processor's map (its arguments were read by the generated class); otherwise
	// they were skipped as a struct and the server answers UNKNOWN_METHOD.
	Known bool `json:"known"`
	// Outcome: "ok" (read completely; the server calls the handler, or answers UNKNOWN_METHOD), "protocol_error"
	// (the generated reader threw a TProtocolException at End: the server answers PROTOCOL_ERROR and reads the
	// next message from End), "incomplete" (the stream ended inside the message) or "fatal" (any other failure;
	// the server closes the connection).
	Outcome string `json:"outcome"`
	Error   string `json:"error"`
	// Fields is the canonical rendering of the decoded arguments when Outcome is "ok" and Known (see
	// testbed/java/hivereader/HiveReader.java for the notation).
	Fields string `json:"fields"`
}

// HiveSchema is the Thrift schema compiled into the reader's jars: every method's args struct and every struct
// reachable from one.
type HiveSchema struct {
	Methods map[string]string      `json:"methods"` // method name -> args struct name
	Structs map[string]*HiveStruct `json:"structs"`
	// UnknownEnumElements is what the generated code does with an enum value it does not know in a list: "null"
	// (Hive 3.1.3's Thrift 0.9 classes keep a null element) or "dropped" (4.1.0's leave it out); measured.
	UnknownEnumElements string `json:"unknownEnumElements"`
}

// HiveStruct is one struct or union of a HiveSchema.
type HiveStruct struct {
	Union  bool        `json:"union"`
	Fields []HiveField `json:"fields"`
	byID   map[int16]*HiveField
}

// Field returns the field with the wire id, or nil.
func (s *HiveStruct) Field(id int16) *HiveField { return s.byID[id] }

// HiveField is one field: Req is Thrift's requirement type (1 required, 2 optional, 3 default). Default is the
// rendering of the IDL's default value when a fresh instance has the field set ("" otherwise): a read that does
// not see the field leaves it so.
type HiveField struct {
	ID      int16     `json:"id"`
	Name    string    `json:"name"`
	Req     int       `json:"req"`
	Type    *HiveType `json:"type"`
	Default string    `json:"default,omitempty"`
}

// HiveType is a value type: T is the wire type (an enum is 8, i32; Enum lists the values the jars know).
type HiveType struct {
	T      byte      `json:"t"`
	Struct string    `json:"struct,omitempty"`
	Enum   []int32   `json:"enum,omitempty"`
	Binary bool      `json:"binary,omitempty"`
	Elem   *HiveType `json:"elem,omitempty"` // list/set element, map value
	Key    *HiveType `json:"key,omitempty"`
}

// hiveReaderJVM: a small heap (the reader holds one stream at a time) and C1 only (fast start).
var hiveReaderJVM = []string{"-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData"}

// hiveReaderTimeout bounds one request; a reader that takes longer is killed.
const hiveReaderTimeout = 60 * time.Second

// StartHiveReader compiles (once) and starts the reader for version v.
func StartHiveReader(v Version) (*HiveReader, error) {
	if err := v.valid(); err != nil {
		return nil, err
	}
	if err := Prepare(); err != nil {
		return nil, err
	}
	classes, err := compileHiveReader(v)
	if err != nil {
		return nil, err
	}
	java, err := javaBin()
	if err != nil {
		return nil, err
	}
	flags, err := jvmFlags(v)
	if err != nil {
		return nil, err
	}
	args := append([]string{}, hiveReaderJVM...)
	args = append(args, flags...)
	args = append(args, "-D"+RunProperty+"="+runID,
		"-cp", classes+string(filepath.ListSeparator)+filepath.Join(libDir(v), "*"), "HiveReader")
	cmd := exec.Command(java, args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	r := &HiveReader{Version: v, in: in, out: bufio.NewReaderSize(out, 1<<16), stderr: &tailBuffer{max: 16 << 10}}
	cmd.Stderr = r.stderr
	if r.proc, err = startJVM(cmd); err != nil {
		return nil, fmt.Errorf("testbed: starting the Hive %s reader: %w", v, err)
	}
	raw, err := r.request('S', nil)
	if err != nil {
		r.Close()
		return nil, err
	}
	var s HiveSchema
	if err := json.Unmarshal(raw, &s); err != nil {
		r.Close()
		return nil, fmt.Errorf("testbed: the Hive %s reader's schema: %w", v, err)
	}
	for _, st := range s.Structs {
		st.byID = map[int16]*HiveField{}
		for i := range st.Fields {
			st.byID[st.Fields[i].ID] = &st.Fields[i]
		}
	}
	if s.UnknownEnumElements != "null" && s.UnknownEnumElements != "dropped" {
		r.Close()
		return nil, fmt.Errorf("testbed: the Hive %s reader cannot tell what its classes do with unknown enum values: %s", v, s.UnknownEnumElements)
	}
	r.schema = &s
	return r, nil
}

// StartHiveReaderT starts a reader for a test; t.Cleanup stops it.
func StartHiveReaderT(t testing.TB, v Version) *HiveReader {
	t.Helper()
	skipIfRequested(t)
	r, err := StartHiveReader(v)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// Schema is the schema of the reader's jars.
func (r *HiveReader) Schema() *HiveSchema { return r.schema }

// Read hands stream to Hive's reader.
func (r *HiveReader) Read(stream []byte) (*HiveRead, error) {
	raw, err := r.request('R', stream)
	if err != nil {
		return nil, err
	}
	var out HiveRead
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("testbed: the Hive %s reader's answer %q: %w", r.Version, clip(raw), err)
	}
	return &out, nil
}

// UTF8 decodes b as Hive's reader decodes a string field (Java's UTF-8 decoder, malformed input replaced) and
// returns the string's UTF-8 encoding.
func (r *HiveReader) UTF8(b []byte) ([]byte, error) { return r.request('U', b) }

// Close stops the reader's JVM.
func (r *HiveReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil {
		return nil
	}
	r.in.Close()
	select {
	case <-r.proc.done:
	case <-time.After(5 * time.Second):
	}
	r.proc.stop(2 * time.Second)
	r.proc = nil
	if r.dead == nil {
		r.dead = errors.New("closed")
	}
	return nil
}

func (r *HiveReader) request(op byte, payload []byte) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dead != nil {
		return nil, fmt.Errorf("testbed: the Hive %s reader is not running: %w", r.Version, r.dead)
	}
	timer := time.AfterFunc(hiveReaderTimeout, func() { _ = syscall.Kill(-r.proc.cmd.Process.Pid, syscall.SIGKILL) })
	defer timer.Stop()
	var hdr [5]byte
	hdr[0] = op
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(payload)))
	err := func() error {
		if _, err := r.in.Write(hdr[:]); err != nil {
			return err
		}
		if _, err := r.in.Write(payload); err != nil {
			return err
		}
		return nil
	}()
	var answer []byte
	if err == nil {
		var n [4]byte
		if _, err = io.ReadFull(r.out, n[:]); err == nil {
			answer = make([]byte, binary.BigEndian.Uint32(n[:]))
			_, err = io.ReadFull(r.out, answer)
		}
	}
	if err != nil {
		r.dead = err
		return nil, fmt.Errorf("testbed: the Hive %s reader failed on a %d-byte request (%v); stderr:\n%s",
			r.Version, len(payload), err, r.stderr.String())
	}
	return answer, nil
}

func clip(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

// compileHiveReader compiles HiveReader.java against v's jars into a directory of the system temp directory named
// by a hash of the source and the jar directory, once for all processes (compiled elsewhere, then renamed).
func compileHiveReader(v Version) (string, error) {
	src := filepath.Join(repoRoot(), "testbed", "java", "hivereader", "HiveReader.java")
	code, err := os.ReadFile(src)
	if err != nil {
		return "", fmt.Errorf("testbed: the Hive reader's source: %w", err)
	}
	lib := libDir(v)
	h := sha256.New()
	h.Write(code)
	h.Write([]byte(lib))
	dir := filepath.Join(os.TempDir(), "hms-proxy-hivereader", string(v)+"-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(filepath.Join(dir, "HiveReader.class")); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	javac := "javac"
	if jh := os.Getenv("JAVA_HOME"); jh != "" {
		if p := filepath.Join(jh, "bin", "javac"); fileExists(p) {
			javac = p
		}
	}
	cmd := exec.Command(javac, "-nowarn", "-encoding", "UTF-8", "-d", tmp, "-cp", filepath.Join(lib, "*"), src)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("testbed: compiling %s against Hive %s's jars: %v\n%s", src, v, err, tail(string(out), 30))
	}
	if err := os.Rename(tmp, dir); err != nil && !fileExists(filepath.Join(dir, "HiveReader.class")) {
		return "", fmt.Errorf("testbed: %w", err)
	}
	return dir, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if extra := b.buf.Len() - b.max; extra > 0 {
		b.buf.Next(extra)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
