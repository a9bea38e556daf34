package testbed

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/apache/thrift/lib/go/thrift"
)

// getAllDatabases performs one real ThriftHiveMetastore.get_all_databases call (TBinaryProtocol over a buffered
// socket, the transport a metastore without SASL speaks; over TLS when useTLS, the metastore's certificate taken
// as it is: this only asks whether it serves) and returns the database names.
func getAllDatabases(ctx context.Context, addr string, timeout time.Duration, useTLS bool) ([]string, error) {
	cfg := &thrift.TConfiguration{ConnectTimeout: timeout, SocketTimeout: timeout}
	var sock thrift.TTransport = thrift.NewTSocketConf(addr, cfg)
	if useTLS {
		cfg.TLSConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // a liveness probe of the test's own metastore
		sock = thrift.NewTSSLSocketConf(addr, cfg)
	}
	if err := sock.Open(); err != nil {
		return nil, err
	}
	defer sock.Close()
	trans := thrift.NewTBufferedTransport(sock, 8192)
	p := thrift.NewTBinaryProtocolConf(trans, cfg)

	const method = "get_all_databases"
	if err := p.WriteMessageBegin(ctx, method, thrift.CALL, 1); err != nil {
		return nil, err
	}
	if err := p.WriteStructBegin(ctx, method+"_args"); err != nil {
		return nil, err
	}
	if err := p.WriteFieldStop(ctx); err != nil {
		return nil, err
	}
	if err := p.WriteStructEnd(ctx); err != nil {
		return nil, err
	}
	if err := p.WriteMessageEnd(ctx); err != nil {
		return nil, err
	}
	if err := p.Flush(ctx); err != nil {
		return nil, err
	}

	name, typ, _, err := p.ReadMessageBegin(ctx)
	if err != nil {
		return nil, err
	}
	if typ == thrift.EXCEPTION {
		ex := thrift.NewTApplicationException(thrift.UNKNOWN_APPLICATION_EXCEPTION, "")
		if err := ex.Read(ctx, p); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s: application exception: %v", method, ex)
	}
	if typ != thrift.REPLY || name != method {
		return nil, fmt.Errorf("%s: unexpected reply %q type %d", method, name, typ)
	}
	if _, err := p.ReadStructBegin(ctx); err != nil {
		return nil, err
	}
	var dbs []string
	var failure error
	for {
		_, ft, id, err := p.ReadFieldBegin(ctx)
		if err != nil {
			return nil, err
		}
		if ft == thrift.STOP {
			break
		}
		switch {
		case id == 0 && ft == thrift.LIST:
			_, n, err := p.ReadListBegin(ctx)
			if err != nil {
				return nil, err
			}
			for i := 0; i < n; i++ {
				s, err := p.ReadString(ctx)
				if err != nil {
					return nil, err
				}
				dbs = append(dbs, s)
			}
			if err := p.ReadListEnd(ctx); err != nil {
				return nil, err
			}
		case id == 1 && ft == thrift.STRUCT: // MetaException{1: string message}
			msg, err := readMessageStruct(ctx, p)
			if err != nil {
				return nil, err
			}
			failure = fmt.Errorf("%s: MetaException: %s", method, msg)
		default:
			if err := p.Skip(ctx, ft); err != nil {
				return nil, err
			}
		}
		if err := p.ReadFieldEnd(ctx); err != nil {
			return nil, err
		}
	}
	if err := p.ReadStructEnd(ctx); err != nil {
		return nil, err
	}
	if err := p.ReadMessageEnd(ctx); err != nil {
		return nil, err
	}
	if failure != nil {
		return nil, failure
	}
	return dbs, nil
}

// readMessageStruct reads a Thrift exception struct whose field 1 is its message.
func readMessageStruct(ctx context.Context, p thrift.TProtocol) (string, error) {
	if _, err := p.ReadStructBegin(ctx); err != nil {
		return "", err
	}
	var msg string
	for {
		_, ft, id, err := p.ReadFieldBegin(ctx)
		if err != nil {
			return "", err
		}
		if ft == thrift.STOP {
			break
		}
		if id == 1 && ft == thrift.STRING {
			if msg, err = p.ReadString(ctx); err != nil {
				return "", err
			}
		} else if err := p.Skip(ctx, ft); err != nil {
			return "", err
		}
		if err := p.ReadFieldEnd(ctx); err != nil {
			return "", err
		}
	}
	return msg, p.ReadStructEnd(ctx)
}
