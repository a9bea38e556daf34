package gssapi

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jcmturner/gokrb5/v8/types"
)

// A javaVector is the first data-phase token a real Java HiveMetaStoreClient sent to the acceptor, with the
// context key it was made with (the client's subkey, from a throw-away test realm). TestJavaClientsAuthenticate
// checks each live token this way and, with HMS_PROXY_WRITE_VECTORS=1, stores them in testdata/java_vectors.json,
// so TestJavaVectors checks the token format against real Java output without a KDC or a JVM.
type javaVector struct {
	Client  string `json:"client"`
	QOP     string `json:"qop"`
	KeyType int32  `json:"keyType"`
	Key     string `json:"key"`
	Token   string `json:"token"`
}

const vectorsFile = "testdata/java_vectors.json"

var recorded struct {
	sync.Mutex
	vs []javaVector
}

func recordJavaVector(t *testing.T, v javaVector) {
	if os.Getenv("HMS_PROXY_WRITE_VECTORS") != "1" {
		return
	}
	recorded.Lock()
	defer recorded.Unlock()
	recorded.vs = append(recorded.vs, v)
	b, _ := json.MarshalIndent(recorded.vs, "", "  ")
	if err := os.MkdirAll(filepath.Dir(vectorsFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(vectorsFile, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkJavaVector opens the Java client's token with a fresh acceptor layer: it must be an initiator token of the
// expected protection whose payload is a Thrift call.
func checkJavaVector(t *testing.T, v javaVector) {
	t.Helper()
	key, err := hex.DecodeString(v.Key)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := hex.DecodeString(v.Token)
	if err != nil || len(tok) < 16 {
		t.Fatalf("vector token: %v", err)
	}
	seal := v.QOP == "auth-conf"
	seq := binary.BigEndian.Uint64(tok[8:16])
	l, err := NewLayer(types.EncryptionKey{KeyType: v.KeyType, KeyValue: key}, true, false, seal, 0, seq)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := l.Unwrap(tok)
	if err != nil {
		t.Fatalf("%s %s: the Java token does not unwrap: %v", v.Client, v.QOP, err)
	}
	// strict binary envelope: 80 01 00 01 (CALL), then the method name
	if len(plain) < 12 || plain[0] != 0x80 || plain[1] != 0x01 || !strings.Contains(string(plain), "get_") {
		t.Fatalf("%s %s: unwrapped payload is no Thrift call: % x", v.Client, v.QOP, plain[:min(len(plain), 32)])
	}
	// and a changed byte is caught
	tok[len(tok)-1] ^= 1
	l2, _ := NewLayer(types.EncryptionKey{KeyType: v.KeyType, KeyValue: key}, true, false, seal, 0, seq)
	if _, err := l2.Unwrap(tok); err == nil {
		t.Fatalf("%s %s: a tampered Java token unwrapped", v.Client, v.QOP)
	}
}

// TestJavaVectors: the stored tokens of real Java clients (3.1.3 and 4.1.0, integrity and privacy) open.
func TestJavaVectors(t *testing.T) {
	b, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatalf("%v (regenerate: HMS_PROXY_WRITE_VECTORS=1 go test ./security/gssapi -run TestJavaClientsAuthenticate)", err)
	}
	var vs []javaVector
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, v := range vs {
		checkJavaVector(t, v)
		seen[v.Client+"/"+v.QOP] = true
	}
	for _, want := range []string{"3.1.3/auth-int", "3.1.3/auth-conf", "4.1.0/auth-int", "4.1.0/auth-conf"} {
		if !seen[want] {
			t.Errorf("no stored vector for %s", want)
		}
	}
}
