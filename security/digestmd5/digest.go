// Package digestmd5 is the SASL DIGEST-MD5 mechanism (RFC 2831) as Hive's
// metastore runs it for delegation tokens: a server (sasl.ServerMech) that
// authenticates a client holding a token, and a client (sasl.ClientMech) for
// the proxy's own connections with a backend token. Both speak to the JDK's
// com.sun.security.sasl.digest implementation: the same digest-uri
// ("null/default"), realm ("default"), qop and cipher negotiation, and the
// same integrity (HMAC-MD5) and confidentiality (3des, des, rc4, rc4-56,
// rc4-40) security layers with sequence numbers.
package digestmd5

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/hms-proxy/hms-proxy/security/sasl"
)

// Mechanism is the SASL mechanism name.
const Mechanism = "DIGEST-MD5"

// Hive's DIGEST-MD5 parameters (HadoopThriftAuthBridge): protocol null,
// server name and realm "default", so the digest-uri is "null/default".
const (
	HiveProtocol   = "null"
	HiveServerName = "default"
	HiveRealm      = "default"
)

// Ciphers for auth-conf, strongest first, as the JDK names them.
const (
	Cipher3DES  = "3des"
	CipherRC4   = "rc4"
	CipherDES   = "des"
	CipherRC456 = "rc4-56"
	CipherRC440 = "rc4-40"
)

// AllCiphers are the ciphers the JDK's DIGEST-MD5 server offers by default
// (all of them: its JCE has DESede, DES and RC4), in its order.
var AllCiphers = []string{Cipher3DES, CipherRC4, CipherDES, CipherRC456, CipherRC440}

// RFC 2831 limits the JDK enforces.
const (
	maxChallengeLength = 2048
	maxResponseLength  = 4096
	defaultMaxBuf      = 65536
	maxMaxBuf          = 16777215
)

const securityLayerMarker = ":00000000000000000000000000000000"

// wireText converts a value for hashing as the JDK does
// (stringToByte_8859_1): ISO-8859-1 when every character fits, else UTF-8.
func wireText(s string) []byte {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			return []byte(s)
		}
		out = append(out, byte(r))
	}
	return out
}

// decodeValue turns a directive value's bytes into text: UTF-8 when the
// peers agreed on charset=utf-8, else ISO-8859-1.
func decodeValue(v string, utf8Charset bool) string {
	if utf8Charset && utf8.ValidString(v) {
		return v
	}
	var sb strings.Builder
	for i := 0; i < len(v); i++ {
		sb.WriteRune(rune(v[i]))
	}
	return sb.String()
}

// digestInput is what both sides hash.
type digestInput struct {
	username, realm, password string
	nonce, cnonce             string
	authzid                   string // "" when absent
	hasAuthzID                bool
	digestURI                 string
	qop                       sasl.QOP
	nc                        int
}

// hA1 is the binary MD5 of A1, the session key the security layers derive
// their keys from.
func (in *digestInput) hA1() []byte {
	inner := md5.New()
	inner.Write(wireText(in.username))
	inner.Write([]byte{':'})
	inner.Write(wireText(in.realm))
	inner.Write([]byte{':'})
	inner.Write(wireText(in.password))
	a1 := md5.New()
	a1.Write(inner.Sum(nil))
	a1.Write([]byte(":" + in.nonce + ":" + in.cnonce))
	if in.hasAuthzID {
		a1.Write([]byte(":"))
		a1.Write([]byte(in.authzid))
	}
	return a1.Sum(nil)
}

// response is the response-value: method "AUTHENTICATE" for the client's
// response, "" for the server's rspauth.
func (in *digestInput) response(method string) string {
	a2 := method + ":" + in.digestURI
	if in.qop == sasl.QOPAuthInt || in.qop == sasl.QOPAuthConf {
		a2 += securityLayerMarker
	}
	ha2 := md5.Sum([]byte(a2))
	kd := md5.New()
	kd.Write([]byte(hex.EncodeToString(in.hA1())))
	kd.Write([]byte(fmt.Sprintf(":%s:%08x:%s:%s:", in.nonce, in.nc, in.cnonce, in.qop)))
	kd.Write([]byte(hex.EncodeToString(ha2[:])))
	return hex.EncodeToString(kd.Sum(nil))
}

func parseQOPList(s string) []sasl.QOP {
	var out []sasl.QOP
	for _, q := range strings.Split(s, ",") {
		if q = strings.TrimSpace(q); q != "" {
			out = append(out, sasl.QOP(q))
		}
	}
	return out
}

func validQOP(q sasl.QOP) bool {
	return q == sasl.QOPAuth || q == sasl.QOPAuthInt || q == sasl.QOPAuthConf
}

func validCipher(c string) bool { return contains(AllCiphers, c) }

func qopStrings(qs []sasl.QOP) string {
	s := make([]string, len(qs))
	for i, q := range qs {
		s[i] = string(q)
	}
	return strings.Join(s, ",")
}

// QOPsFromProtection maps hadoop.rpc.protection ("authentication",
// "integrity", "privacy", or a comma list of them) to the QOPs to offer, in
// its order, as Hadoop's SaslPropertiesResolver does. key names the setting
// in errors.
func QOPsFromProtection(key, value string) ([]sasl.QOP, error) {
	var out []sasl.QOP
	for _, p := range strings.Split(value, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		var q sasl.QOP
		switch strings.ToLower(p) {
		case "authentication":
			q = sasl.QOPAuth
		case "integrity":
			q = sasl.QOPAuthInt
		case "privacy":
			q = sasl.QOPAuthConf
		default:
			return nil, fmt.Errorf("%s: %q is not authentication, integrity or privacy", key, p)
		}
		if !containsQOP(out, q) {
			out = append(out, q)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: %q names no protection", key, value)
	}
	return out, nil
}

func containsQOP(qs []sasl.QOP, q sasl.QOP) bool {
	for _, v := range qs {
		if v == q {
			return true
		}
	}
	return false
}
