package synthetic

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/thrift/lib/go/thrift"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// TestRefreshPrivilegesReplyReadsAsSuccess reads the synthetic reply with the
// thrift library and the result type generated from the real Hive jars'
// schema, as a Java HiveMetaStoreClient reads it.
func TestRefreshPrivilegesReplyReadsAsSuccess(t *testing.T) {
	msg := RefreshPrivilegesSuccess([]byte("keep"), 42)
	if string(msg[:4]) != "keep" {
		t.Fatal("dst not kept")
	}
	buf := thrift.NewTMemoryBuffer()
	buf.Write(msg[4:])
	p := thrift.NewTBinaryProtocolConf(buf, &thrift.TConfiguration{})
	ctx := context.Background()
	name, typ, seq, err := p.ReadMessageBegin(ctx)
	if err != nil || name != "refresh_privileges" || typ != thrift.REPLY || seq != 42 {
		t.Fatalf("header %q %v %d %v", name, typ, seq, err)
	}
	var res thriftgen.RefreshPrivilegesResult
	if err := res.Read(ctx, p); err != nil {
		t.Fatal(err)
	}
	if res.O1 != nil || res.Success == nil || res.Success.Success == nil || !*res.Success.Success {
		t.Fatalf("result %+v", res)
	}
	if buf.Len() != 0 {
		t.Fatalf("%d bytes after the message", buf.Len())
	}
}

func TestRefreshPrivilegesMode(t *testing.T) {
	yes, no := true, false
	for _, c := range []struct {
		flag *bool
		mode string
		want bool
		err  string
	}{
		{nil, "", false, ""}, {&yes, "", true, ""}, {&no, "", false, ""}, {nil, "synthetic_success", true, ""},
		{nil, "PASSTHROUGH", false, ""}, {&yes, "SYNTHETIC_SUCCESS", true, ""},
		{&no, "SYNTHETIC_SUCCESS", false, "contradicts"}, {&yes, "PASSTHROUGH", false, "contradicts"},
		{nil, "FAKE", false, "routing.refresh-privileges.mode=FAKE: unknown mode"},
	} {
		got, err := RefreshPrivilegesMode(c.flag, c.mode)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v %q: error %v, want %q", c.flag, c.mode, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%v %q: %v %v, want %v", c.flag, c.mode, got, err, c.want)
		}
	}
}
