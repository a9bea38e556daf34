// Package tokens is Hive's delegation tokens, byte for byte: the
// HIVE_DELEGATION_TOKEN identifier (Hadoop's AbstractDelegationTokenIdentifier
// layout), the token string of get_delegation_token (Token.encodeToUrlString),
// the HMAC-SHA1 password under a rolling master key, and a secret manager that
// issues, renews, cancels and verifies tokens the way Hive's
// TokenStoreDelegationTokenSecretManager does, over a store in memory or in
// ZooKeeper (Hive's ZooKeeperTokenStore znode layout, so several proxy
// replicas, or Hive itself, share the tokens).
package tokens

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"strings"
	"time"
)

// Kind is the token kind Hive's metastore issues.
const Kind = "HIVE_DELEGATION_TOKEN"

// identifierVersion is the only identifier layout Hadoop writes.
const identifierVersion = 0

// Identifier is a delegation token identifier: who the token is for (Owner),
// who may renew it (Renewer, a short name), who obtained it on the owner's
// behalf (RealUser, empty when the owner asked itself), its dates and the
// master key that signs it.
type Identifier struct {
	Owner          string
	Renewer        string
	RealUser       string
	IssueDate      int64 // ms since the epoch
	MaxDate        int64 // ms since the epoch: no renewal goes past it
	SequenceNumber int32
	MasterKeyID    int32
}

// Encode returns the identifier bytes (the HMAC input and the DIGEST-MD5
// user name's content).
func (id *Identifier) Encode() []byte {
	b := make([]byte, 0, 32+len(id.Owner)+len(id.Renewer)+len(id.RealUser))
	b = append(b, identifierVersion)
	b = appendText(b, id.Owner)
	b = appendText(b, id.Renewer)
	b = appendText(b, id.RealUser)
	b = appendVLong(b, id.IssueDate)
	b = appendVLong(b, id.MaxDate)
	b = appendVInt(b, id.SequenceNumber)
	return appendVInt(b, id.MasterKeyID)
}

// DecodeIdentifier parses identifier bytes. Trailing bytes are refused: the
// bytes are what the password signs, so they must mean exactly one thing.
func DecodeIdentifier(b []byte) (*Identifier, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("token identifier is empty")
	}
	r := &reader{b: b}
	v, _ := r.byte1("version")
	if v != identifierVersion {
		return nil, fmt.Errorf("unknown version of delegation token identifier: %d", v)
	}
	id := &Identifier{}
	var err error
	if id.Owner, err = r.text("owner"); err != nil {
		return nil, fmt.Errorf("token identifier: %w", err)
	}
	if id.Renewer, err = r.text("renewer"); err != nil {
		return nil, fmt.Errorf("token identifier: %w", err)
	}
	if id.RealUser, err = r.text("realUser"); err != nil {
		return nil, fmt.Errorf("token identifier: %w", err)
	}
	if id.IssueDate, err = r.vlong("issueDate"); err != nil {
		return nil, fmt.Errorf("token identifier: %w", err)
	}
	if id.MaxDate, err = r.vlong("maxDate"); err != nil {
		return nil, fmt.Errorf("token identifier: %w", err)
	}
	if id.SequenceNumber, err = r.vint("sequenceNumber"); err != nil {
		return nil, fmt.Errorf("token identifier: %w", err)
	}
	if id.MasterKeyID, err = r.vint("masterKeyId"); err != nil {
		return nil, fmt.Errorf("token identifier: %w", err)
	}
	if err := r.end("token identifier"); err != nil {
		return nil, err
	}
	return id, nil
}

// String formats the identifier as Hadoop's toString does, for logs and
// error texts (it holds no secret).
func (id *Identifier) String() string {
	return fmt.Sprintf("%s owner=%s, renewer=%s, realUser=%s, issueDate=%d, maxDate=%d, sequenceNumber=%d, masterKeyId=%d",
		Kind, id.Owner, id.Renewer, id.RealUser, id.IssueDate, id.MaxDate, id.SequenceNumber, id.MasterKeyID)
}

// User is the user a connection authenticated with this token runs as: the
// owner; RealUser (when set) is the service that impersonates it.
func (id *Identifier) User() string { return id.Owner }

// Token is a serialized delegation token: identifier bytes, password, kind
// and service (Hive's get_delegation_token leaves the service empty).
type Token struct {
	Identifier []byte
	Password   []byte
	Kind       string
	Service    string
}

// maxTokenField bounds identifier and password lengths when decoding a token
// string from a client.
const maxTokenField = 64 << 10

// Encode returns the token's Writable bytes (Hadoop Token.write).
func (t *Token) Encode() []byte {
	b := appendBytes(nil, t.Identifier)
	b = appendBytes(b, t.Password)
	b = appendText(b, t.Kind)
	return appendText(b, t.Service)
}

// String is the token's URL string as get_delegation_token returns it:
// URL-safe Base64 without padding (Token.encodeToUrlString).
func (t *Token) String() string { return base64.RawURLEncoding.EncodeToString(t.Encode()) }

// DecodeToken parses a token string as Token.decodeFromUrlString does: Base64
// in either alphabet, padded or not. Characters outside Base64 are refused
// (commons-codec would skip them silently).
func DecodeToken(s string) (*Token, error) {
	raw, err := decodeBase64Any(s)
	if err != nil {
		return nil, fmt.Errorf("delegation token string: %w", err)
	}
	r := &reader{b: raw}
	t := &Token{}
	if t.Identifier, err = r.bytes("identifier", maxTokenField); err != nil {
		return nil, fmt.Errorf("delegation token: %w", err)
	}
	if t.Password, err = r.bytes("password", maxTokenField); err != nil {
		return nil, fmt.Errorf("delegation token: %w", err)
	}
	if t.Kind, err = r.text("kind"); err != nil {
		return nil, fmt.Errorf("delegation token: %w", err)
	}
	if t.Service, err = r.text("service"); err != nil {
		return nil, fmt.Errorf("delegation token: %w", err)
	}
	if err := r.end("delegation token"); err != nil {
		return nil, err
	}
	if t.Kind != Kind {
		return nil, fmt.Errorf("delegation token: kind %q is not %s", t.Kind, Kind)
	}
	return t, nil
}

// decodeBase64Any decodes standard or URL-safe Base64, with or without
// padding; anything else is an error naming the offending character.
func decodeBase64Any(s string) ([]byte, error) {
	if s == "" {
		return nil, fmt.Errorf("empty")
	}
	t := strings.TrimRight(s, "=")
	if len(s)-len(t) > 2 {
		return nil, fmt.Errorf("too much padding")
	}
	var sb strings.Builder
	sb.Grow(len(t))
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
			sb.WriteByte(c)
		case c == '+':
			sb.WriteByte('-')
		case c == '/':
			sb.WriteByte('_')
		default:
			return nil, fmt.Errorf("character %q at offset %d is not Base64", c, i)
		}
	}
	b, err := base64.RawURLEncoding.DecodeString(sb.String())
	if err != nil {
		return nil, fmt.Errorf("not Base64: %v", err)
	}
	return b, nil
}

// EncodeIdentifierName is the DIGEST-MD5 user name for a token identifier:
// standard, padded Base64 (Hive's SaslClientCallbackHandler).
func EncodeIdentifierName(identifier []byte) string {
	return base64.StdEncoding.EncodeToString(identifier)
}

// DecodeIdentifierName reverses EncodeIdentifierName; either alphabet is
// accepted.
func DecodeIdentifierName(name string) ([]byte, error) { return decodeBase64Any(name) }

// EncodePassword is the DIGEST-MD5 password for a token password: standard
// Base64.
func EncodePassword(password []byte) string { return base64.StdEncoding.EncodeToString(password) }

// DelegationKey is a master key (Hadoop's DelegationKey): the HMAC key that
// signs tokens issued under it and the time it expires.
type DelegationKey struct {
	ID     int32
	Expiry int64 // ms since the epoch
	Key    []byte
}

// Encode returns the key's Writable bytes: vint id, vlong expiry, vint length
// (-1 for none) and the key.
func (k *DelegationKey) Encode() []byte {
	b := appendVInt(nil, k.ID)
	b = appendVLong(b, k.Expiry)
	if k.Key == nil {
		return appendVInt(b, -1)
	}
	return appendBytes(b, k.Key)
}

// DecodeDelegationKey parses DelegationKey bytes.
func DecodeDelegationKey(b []byte) (*DelegationKey, error) {
	r := &reader{b: b}
	k := &DelegationKey{}
	var err error
	if k.ID, err = r.vint("keyId"); err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	if k.Expiry, err = r.vlong("expiryDate"); err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	n, err := r.vint("key length")
	if err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	if n != -1 {
		if n < 0 || n > maxTokenField || r.off+int(n) > len(r.b) {
			return nil, fmt.Errorf("master key: key length %d out of range (%d bytes left)", n, len(r.b)-r.off)
		}
		k.Key = append([]byte(nil), r.b[r.off:r.off+int(n)]...)
		r.off += int(n)
	}
	if err := r.end("master key"); err != nil {
		return nil, err
	}
	return k, nil
}

// TokenInfo is what a store keeps per token: the password and the date the
// token expires unless renewed (Hadoop's DelegationTokenInformation).
type TokenInfo struct {
	RenewDate int64 // ms since the epoch
	Password  []byte
}

// Encode returns the bytes Hive's MetastoreDelegationTokenSupport writes:
// vint password length, password, big-endian int64 renew date.
func (ti *TokenInfo) Encode() []byte {
	b := appendBytes(nil, ti.Password)
	for i := 7; i >= 0; i-- {
		b = append(b, byte(ti.RenewDate>>(8*i)))
	}
	return b
}

// DecodeTokenInfo parses TokenInfo bytes.
func DecodeTokenInfo(b []byte) (*TokenInfo, error) {
	r := &reader{b: b}
	ti := &TokenInfo{}
	var err error
	if ti.Password, err = r.bytes("password", maxTokenField); err != nil {
		return nil, fmt.Errorf("token information: %w", err)
	}
	if ti.RenewDate, err = r.int64BE("renewDate"); err != nil {
		return nil, fmt.Errorf("token information: %w", err)
	}
	if err := r.end("token information"); err != nil {
		return nil, err
	}
	return ti, nil
}

// Password computes a token password: HMAC-SHA1 of the identifier bytes with
// the master key (Hadoop SecretManager.createPassword's default algorithm).
func Password(identifier, key []byte) []byte {
	m := hmac.New(sha1.New, key)
	m.Write(identifier)
	return m.Sum(nil)
}

// millis converts a time to Hadoop's ms timestamps.
func millis(t time.Time) int64 { return t.UnixMilli() }

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms) }
