package sasl

import (
	"fmt"
	"strings"
)

// ParseProtection reads hadoop.rpc.protection: a comma list of
// authentication, integrity, privacy (or the SASL names auth, auth-int,
// auth-conf), in order of preference. An empty value means authentication.
// Unknown or repeated values are errors naming the value.
func ParseProtection(v string) ([]QOP, error) {
	if strings.TrimSpace(v) == "" {
		return []QOP{QOPAuth}, nil
	}
	var out []QOP
	seen := map[QOP]bool{}
	for _, p := range strings.Split(v, ",") {
		var q QOP
		switch strings.ToLower(strings.TrimSpace(p)) {
		case "authentication", "auth":
			q = QOPAuth
		case "integrity", "auth-int":
			q = QOPAuthInt
		case "privacy", "auth-conf":
			q = QOPAuthConf
		default:
			return nil, fmt.Errorf("hadoop.rpc.protection: unknown value %q in %q (allowed: authentication, integrity, privacy)", strings.TrimSpace(p), v)
		}
		if seen[q] {
			return nil, fmt.Errorf("hadoop.rpc.protection: %q is listed twice in %q", strings.TrimSpace(p), v)
		}
		seen[q] = true
		out = append(out, q)
	}
	return out, nil
}

// PeerAware is implemented by server mechanisms that check the peer's
// address (Kerberos tickets with client addresses). Server calls SetPeer
// with the connection's remote address before the first Step.
type PeerAware interface {
	SetPeer(remote string)
}
