package proxytest

import (
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Client opens a typed HMS client (TBinaryProtocol over a buffered socket,
// as Hive's own client speaks) to thrift://host:port; closed at test end.
func Client(t testing.TB, uri string) *thriftgen.Client {
	t.Helper()
	addr := strings.TrimPrefix(uri, "thrift://")
	cfg := &thrift.TConfiguration{ConnectTimeout: 10 * time.Second, SocketTimeout: 120 * time.Second}
	sock := thrift.NewTSocketConf(addr, cfg)
	trans := thrift.NewTBufferedTransport(sock, 64<<10)
	if err := trans.Open(); err != nil {
		t.Fatalf("connect %s: %v", uri, err)
	}
	t.Cleanup(func() { trans.Close() })
	proto := thrift.NewTBinaryProtocolConf(trans, cfg)
	return thriftgen.NewClient(thrift.NewTStandardClient(proto, proto))
}

// TLSClient opens a typed HMS client over TLS (cfg) to thrift://host:port,
// as Hive's client does with hive.metastore.use.SSL=true; closed at test
// end. A connection or handshake that fails is the error.
func TLSClient(t testing.TB, uri string, cfg *tls.Config) (*thriftgen.Client, error) {
	t.Helper()
	addr := strings.TrimPrefix(uri, "thrift://")
	conf := &thrift.TConfiguration{ConnectTimeout: 10 * time.Second, SocketTimeout: 120 * time.Second, TLSConfig: cfg}
	trans := thrift.NewTBufferedTransport(thrift.NewTSSLSocketConf(addr, conf), 64<<10)
	if err := trans.Open(); err != nil {
		return nil, err
	}
	t.Cleanup(func() { trans.Close() })
	proto := thrift.NewTBinaryProtocolConf(trans, conf)
	return thriftgen.NewClient(thrift.NewTStandardClient(proto, proto)), nil
}
