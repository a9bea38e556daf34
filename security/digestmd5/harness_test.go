package digestmd5

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/security/sasl"
)

// Thrift SASL framing for the tests (the real transport is another
// package's): negotiation frames are status byte + 4-byte length + payload,
// data frames 4-byte length + payload.
const (
	stStart    = 1
	stOK       = 2
	stBad      = 3
	stError    = 4
	stComplete = 5
)

func writeFrame(w io.Writer, status byte, payload []byte) error {
	b := make([]byte, 5, 5+len(payload))
	b[0] = status
	binary.BigEndian.PutUint32(b[1:], uint32(len(payload)))
	_, err := w.Write(append(b, payload...))
	return err
}

func readFrame(r io.Reader) (byte, []byte, error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > 1<<20 {
		return 0, nil, fmt.Errorf("frame of %d bytes", n)
	}
	p := make([]byte, n)
	_, err := io.ReadFull(r, p)
	return h[0], p, err
}

func writeData(w io.Writer, p []byte) error {
	var h [4]byte
	binary.BigEndian.PutUint32(h[:], uint32(len(p)))
	_, err := w.Write(append(h[:], p...))
	return err
}

func readData(r io.Reader) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if n > 1<<24 {
		return nil, fmt.Errorf("data frame of %d bytes", n)
	}
	p := make([]byte, n)
	_, err := io.ReadFull(r, p)
	return p, err
}

// serverOutcome is what the Go server side of one connection saw.
type serverOutcome struct {
	handshakeErr error
	dataErr      error
	result       sasl.Result
	rounds       int
	responses    [][]byte // the client's handshake frames, for replays
}

// serveOne runs a Go server mechanism on one accepted connection: the
// handshake, then an echo loop ("pong:" + message) until the client closes.
// tamper, when set, may change each received data frame before Unwrap.
func serveOne(conn net.Conn, mech sasl.ServerMech, tamper func(i int, frame []byte) []byte) (out serverOutcome) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	r := bufio.NewReader(conn)
	st, p, err := readFrame(r)
	if err != nil || st != stStart || string(p) != mech.Name() {
		out.handshakeErr = fmt.Errorf("bad START frame: status %d %q %v", st, p, err)
		return
	}
	if st, p, err = readFrame(r); err != nil || (st != stOK && st != stComplete) {
		out.handshakeErr = fmt.Errorf("bad initial response: status %d %v", st, err)
		return
	}
	for {
		out.responses = append(out.responses, p)
		ch, done, err := mech.Step(p)
		if err != nil {
			_ = writeFrame(conn, stBad, []byte(err.Error()))
			out.handshakeErr = err
			return
		}
		if done {
			_ = writeFrame(conn, stComplete, ch)
			break
		}
		_ = writeFrame(conn, stOK, ch)
		if st, p, err = readFrame(r); err != nil {
			out.handshakeErr = fmt.Errorf("reading the client's response: %w", err)
			return
		}
		if st == stBad || st == stError {
			out.handshakeErr = fmt.Errorf("client failed: %s", p)
			return
		}
	}
	out.result = mech.Result()
	for i := 0; ; i++ {
		frame, err := readData(r)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			out.dataErr = err
			return
		}
		if tamper != nil {
			frame = tamper(i, frame)
		}
		msg := frame
		if l := out.result.Layer; l != nil {
			if msg, err = l.Unwrap(frame); err != nil {
				out.dataErr = err
				return
			}
		}
		reply := append([]byte("pong:"), msg...)
		if l := out.result.Layer; l != nil {
			if reply, err = l.Wrap(reply); err != nil {
				out.dataErr = err
				return
			}
		}
		if err := writeData(conn, reply); err != nil {
			out.dataErr = err
			return
		}
		out.rounds++
	}
}

// clientOne runs a Go client mechanism against a server on addr, then
// rounds of data.
func clientOne(addr string, mech sasl.ClientMech, rounds int) (sasl.Layer, error) {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	r := bufio.NewReader(conn)
	if err := writeFrame(conn, stStart, []byte(mech.Name())); err != nil {
		return nil, err
	}
	init, err := mech.Start()
	if err != nil {
		return nil, err
	}
	if err := writeFrame(conn, stOK, init); err != nil {
		return nil, err
	}
	for {
		st, ch, err := readFrame(r)
		if err != nil {
			return nil, err
		}
		if st == stBad || st == stError {
			return nil, fmt.Errorf("server refused: %s", ch)
		}
		resp, done, err := mech.Step(ch)
		if err != nil {
			return nil, err
		}
		if st == stComplete {
			if !done {
				return nil, errors.New("server completed before the client")
			}
			break
		}
		status := byte(stOK)
		if done {
			status = stComplete
		}
		if err := writeFrame(conn, status, resp); err != nil {
			return nil, err
		}
	}
	l := mech.Layer()
	for i := 0; i < rounds; i++ {
		msg := message(i)
		out := msg
		if l != nil {
			if out, err = l.Wrap(msg); err != nil {
				return l, err
			}
		}
		if err := writeData(conn, out); err != nil {
			return l, err
		}
		reply, err := readData(r)
		if err != nil {
			return l, fmt.Errorf("round %d: %w", i, err)
		}
		if l != nil {
			if reply, err = l.Unwrap(reply); err != nil {
				return l, fmt.Errorf("round %d: %w", i, err)
			}
		}
		if want := "pong:" + string(msg); string(reply) != want {
			return l, fmt.Errorf("round %d: reply of %d bytes differs", i, len(reply))
		}
	}
	return l, nil
}

var sizes = []int{1, 7, 8, 9, 15, 16, 17, 100, 1000, 20000}

// message is the same pattern DigestPeer.java sends.
func message(round int) []byte {
	m := make([]byte, sizes[round%len(sizes)])
	for i := range m {
		m[i] = byte(i*31 + round)
	}
	return m
}

// The JDK peer, compiled once per test binary.
var peer struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if peer.dir != "" {
		_ = os.RemoveAll(peer.dir)
	}
	os.Exit(code)
}

func javaPeer(t *testing.T) string {
	t.Helper()
	peer.once.Do(func() {
		if peer.dir, peer.err = os.MkdirTemp("", "digestpeer-"); peer.err != nil {
			return
		}
		out, err := exec.Command("javac", "-nowarn", "-d", peer.dir, filepath.Join("testdata", "DigestPeer.java")).CombinedOutput()
		if err != nil {
			peer.err = fmt.Errorf("javac: %v\n%s", err, out)
		}
	})
	if peer.err != nil {
		t.Fatalf("JDK DIGEST-MD5 peer: %v", peer.err)
	}
	return peer.dir
}

func javaCmd(ctx context.Context, t *testing.T, args ...string) *exec.Cmd {
	dir := javaPeer(t)
	return exec.CommandContext(ctx, "java", append([]string{"-Xmx64m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
		"-cp", dir, "DigestPeer"}, args...)...)
}

// parseCases reads "case<i>=..." lines.
func parseCases(out string) map[int]string {
	res := map[int]string{}
	for _, line := range strings.Split(out, "\n") {
		var i int
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		if _, err := fmt.Sscanf(k, "case%d", &i); err == nil {
			res[i] = v
		}
	}
	return res
}
