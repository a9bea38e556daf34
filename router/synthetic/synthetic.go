// Package synthetic holds answers the proxy gives without asking a backend
// because the specification says so. Today: refresh_privileges
// (routing.refresh-privileges.synthetic-success=true, or
// routing.refresh-privileges.mode=SYNTHETIC_SUCCESS), which HiveServer2's
// PrivilegeSynchronizer calls for every table on a timer; answering it
// locally takes that load off the metastores.
package synthetic

import (
	"fmt"
	"strings"

	"github.com/hms-proxy/hms-proxy/wire"
)

// The values of routing.refresh-privileges.mode.
const (
	ModePassthrough      = "PASSTHROUGH"       // the default: the call goes to its catalog's backend
	ModeSyntheticSuccess = "SYNTHETIC_SUCCESS" // answered by the proxy
)

// RefreshPrivilegesMode resolves the two keys into "answer synthetically":
// syntheticSuccess is routing.refresh-privileges.synthetic-success (nil when
// unset), mode is routing.refresh-privileges.mode ("" when unset,
// case-insensitive). Keys that contradict each other are an error.
func RefreshPrivilegesMode(syntheticSuccess *bool, mode string) (bool, error) {
	m := strings.ToUpper(strings.TrimSpace(mode))
	switch m {
	case "", ModePassthrough, ModeSyntheticSuccess:
	default:
		return false, fmt.Errorf("routing.refresh-privileges.mode=%s: unknown mode (one of %s, %s)", mode, ModePassthrough, ModeSyntheticSuccess)
	}
	if syntheticSuccess != nil && m != "" && *syntheticSuccess != (m == ModeSyntheticSuccess) {
		return false, fmt.Errorf("routing.refresh-privileges.synthetic-success=%v contradicts routing.refresh-privileges.mode=%s", *syntheticSuccess, mode)
	}
	if syntheticSuccess != nil {
		return *syntheticSuccess, nil
	}
	return m == ModeSyntheticSuccess, nil
}

// RefreshPrivilegesSuccess appends the whole reply message to
// refresh_privileges with sequence id seq: refresh_privileges_result
// { 0: success = GrantRevokePrivilegeResponse { 1: success = true } }, the
// answer a metastore gives when the refresh worked. It is the same for every
// Hive version (the struct has one field in 3.1.3, 4.1 and HDP).
func RefreshPrivilegesSuccess(dst []byte, seq int32) []byte {
	resp := wire.Struct(wire.Field{ID: 1, V: wire.Bool(true)})
	result := wire.Struct(wire.Field{ID: 0, V: resp})
	return wire.AppendMessage(dst, wire.Header{Name: "refresh_privileges", Type: wire.Reply, SeqID: seq}, &result)
}
