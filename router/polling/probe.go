package polling

import (
	"fmt"

	"github.com/hms-proxy/hms-proxy/wire"
)

// ProbeCall is an RPC a probe sends to a metastore: Request builds the whole
// message, Check judges the reply. Measured on the test bed's real
// metastores (one connection, 200 calls after a warm-up):
//
//	                        Hive 3.1.3   Hive 4.1.0
//	getStatus                 0.07 ms      0.05 ms   answered by the Thrift layer alone
//	get_metastore_db_uuid     1.16 ms      1.13 ms   one read of the metastore's database
//	get_all_databases         0.80 ms      1.05 ms   grows with the number of databases
//
// DBUUID is the default: it proves that the metastore can still reach its
// database (a metastore whose RDBMS is gone still answers getStatus ALIVE),
// its answer has a constant size (a UUID), and Hive 3.1.3, Hive 4.1 and HDP
// 3.1.0.x all have it. Status is the lighter liveness-only choice.
type ProbeCall struct {
	Method string
	check  func(result *wire.Value) error // nil: any reply without an exception
}

// The probe calls.
var (
	DBUUID = ProbeCall{Method: "get_metastore_db_uuid", check: func(r *wire.Value) error {
		if v := r.Field(0); v != nil && v.Type == wire.TString {
			return nil
		}
		return fmt.Errorf("get_metastore_db_uuid answered without a UUID")
	}}
	Status = ProbeCall{Method: "getStatus", check: func(r *wire.Value) error {
		v := r.Field(0)
		if v == nil || v.Type != wire.TI32 {
			return fmt.Errorf("getStatus answered without a status")
		}
		// fb303 fb_status: DEAD 0, STARTING 1, ALIVE 2, STOPPING 3, STOPPED 4, WARNING 5.
		if v.Int == 2 || v.Int == 5 {
			return nil
		}
		names := map[int64]string{0: "DEAD", 1: "STARTING", 3: "STOPPING", 4: "STOPPED"}
		name := names[v.Int]
		if name == "" {
			name = fmt.Sprint(v.Int)
		}
		return fmt.Errorf("getStatus answered %s", name)
	}}
)

// Request returns the probe's call message (TBinaryProtocol, strict).
func (c ProbeCall) Request(seq int32) []byte {
	args := wire.Struct()
	return wire.AppendMessage(nil, wire.Header{Name: c.Method, Type: wire.Call, SeqID: seq}, &args)
}

// Check judges a reply to Request: a TApplicationException, a declared
// exception (a MetaException: the metastore cannot reach its database) or a
// reply without the expected result is an error naming what came back.
func (c ProbeCall) Check(m *wire.Message) error {
	if m == nil {
		return fmt.Errorf("%s: no reply", c.Method)
	}
	if m.Name != c.Method {
		return fmt.Errorf("%s: reply is for %q", c.Method, m.Name)
	}
	switch m.Type {
	case wire.Exception:
		_, msg, err := wire.ParseAppException(m.Body())
		if err != nil {
			return fmt.Errorf("%s: unreadable TApplicationException: %v", c.Method, err)
		}
		return fmt.Errorf("%s: TApplicationException: %s", c.Method, msg)
	case wire.Reply:
	default:
		return fmt.Errorf("%s: unexpected message type %d", c.Method, m.Type)
	}
	v, err := wire.DecodeStruct(m.Body())
	if err != nil {
		return fmt.Errorf("%s: unreadable reply: %v", c.Method, err)
	}
	for _, f := range v.Fields {
		if f.ID != 0 && f.V.Type == wire.TStruct {
			return fmt.Errorf("%s: the metastore answered an exception: %s", c.Method, f.V.Field(1).String())
		}
	}
	if c.check == nil {
		return nil
	}
	if err := c.check(&v); err != nil {
		return fmt.Errorf("%s: %v", c.Method, err)
	}
	return nil
}
