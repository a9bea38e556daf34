package tokens

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// ZooKeeper layout of Hive's ZooKeeperTokenStore, under Root (the configured
// znode followed by the server mode, "/hivedelegation" + "METASTORE"):
//
//	<root>/keys/<%010d sequence>   URL-safe Base64 of the DelegationKey bytes
//	<root>/tokens/<URL-safe Base64 of the identifier bytes>
//	                               TokenInfo bytes (password, renew date)
//
// Hive 3.1 writes Base64 without padding (commons-codec), Hive 4 with padding
// (java.util.Base64); this store writes Hive 3.1's form, reads keys in both
// and looks a token up under both names.
const (
	zkKeys   = "/keys"
	zkTokens = "/tokens"
	// ServerMode is the suffix Hive's metastore appends to the znode.
	ServerMode = "METASTORE"
	// DefaultZNode is hive.cluster.delegation.token.store.zookeeper.znode's
	// default.
	DefaultZNode = "/hivedelegation"
	// DefaultZKConnectTimeout is Curator's default connection timeout, which
	// Hive's store uses unless …zookeeper.connectTimeoutMillis is set.
	DefaultZKConnectTimeout = 15 * time.Second
	// DefaultZKSessionTimeout is Curator's default session timeout.
	DefaultZKSessionTimeout = 60 * time.Second
)

// ZKOptions configure a ZooKeeper token store.
type ZKOptions struct {
	// Servers are host:port pairs (the connect string split at commas).
	Servers []string
	// Root is the store's znode: the configured znode + ServerMode.
	Root string
	// ACL is applied to every znode the store creates (nil: world:anyone
	// with all permissions, Hive's default without Kerberos).
	ACL []zk.ACL
	// OpTimeout bounds each ZooKeeper operation, including waiting for a
	// connection (0: DefaultZKConnectTimeout).
	OpTimeout time.Duration
	// SessionTimeout is the ZooKeeper session timeout (0: 60 s).
	SessionTimeout time.Duration
	Logger         *slog.Logger
	// Dialer opens the connections to ZooKeeper (nil: plain TCP). With
	// security.mode=KERBEROS it is a zksasl.Authenticator's Dial: every
	// connection authenticates with SASL/Kerberos.
	Dialer zk.Dialer
	// AuthError, when set, reports the last failed SASL exchange; a call that
	// fails for want of a session names it.
	AuthError func() error
}

// ZKStore is the ZooKeeper token store. Every error names the store
// (connect string and root) and the znode.
type ZKStore struct {
	o    ZKOptions
	name string
	conn *zk.Conn
}

// NewZKStore connects to ZooKeeper and creates Root/keys and Root/tokens
// when missing. It fails when ZooKeeper cannot be reached within OpTimeout.
func NewZKStore(o ZKOptions) (*ZKStore, error) {
	if len(o.Servers) == 0 {
		return nil, errors.New("tokens: ZooKeeper token store: no servers")
	}
	if o.Root == "" || o.Root[0] != '/' || strings.HasSuffix(o.Root, "/") {
		return nil, fmt.Errorf("tokens: ZooKeeper token store: root znode %q must start with '/' and not end with it", o.Root)
	}
	if o.OpTimeout <= 0 {
		o.OpTimeout = DefaultZKConnectTimeout
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = DefaultZKSessionTimeout
	}
	if o.ACL == nil {
		o.ACL = zk.WorldACL(zk.PermAll)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &ZKStore{o: o, name: fmt.Sprintf("ZooKeeper token store %s %s", strings.Join(o.Servers, ","), o.Root)}
	dial := o.Dialer
	if dial == nil {
		dial = func(network, address string, timeout time.Duration) (net.Conn, error) {
			return net.DialTimeout(network, address, timeout)
		}
	}
	conn, _, err := zk.Connect(o.Servers, o.SessionTimeout, zk.WithLogger(zkLogger{o.Logger}), zk.WithDialer(dial))
	if err != nil {
		return nil, fmt.Errorf("%s: connecting: %w", s.name, err)
	}
	s.conn = conn
	for _, p := range []string{o.Root + zkKeys, o.Root + zkTokens} {
		if err := s.ensurePath(p); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return s, nil
}

type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) {
	z.l.Info("zookeeper client: "+fmt.Sprintf(format, args...), "component", "delegation-token-store")
}

// Name implements Store.
func (s *ZKStore) Name() string { return s.name }

// Close implements Store.
func (s *ZKStore) Close() error {
	s.conn.Close()
	return nil
}

// do runs one ZooKeeper call within the operation timeout. A request the
// client could not send (no server reachable yet: ErrNoServer) is retried
// until the timeout, as Curator's retry policy does for Hive; go-zookeeper
// itself would wait without bound on a hung server.
func (s *ZKStore) do(what, znode string, f func() error) error {
	deadline := time.Now().Add(s.o.OpTimeout)
	for {
		done := make(chan error, 1)
		go func() { done <- f() }()
		t := time.NewTimer(time.Until(deadline))
		var err error
		select {
		case err = <-done:
			t.Stop()
		case <-t.C:
			return &zkError{store: s.name, what: what, znode: znode,
				err: s.withAuth(fmt.Errorf("no answer within %v (connection state %s)", s.o.OpTimeout, s.conn.State()))}
		}
		if err == nil {
			return nil
		}
		if errors.Is(err, zk.ErrNoServer) && time.Until(deadline) > zkRetryPause {
			time.Sleep(zkRetryPause)
			continue
		}
		if errors.Is(err, zk.ErrNoServer) {
			err = s.withAuth(fmt.Errorf("%w within %v", err, s.o.OpTimeout))
		}
		return &zkError{store: s.name, what: what, znode: znode, err: err}
	}
}

const zkRetryPause = 250 * time.Millisecond

// withAuth adds the last failed SASL exchange to an error of a call that
// found no session.
func (s *ZKStore) withAuth(err error) error {
	if s.o.AuthError != nil {
		if aerr := s.o.AuthError(); aerr != nil {
			return fmt.Errorf("%w (last ZooKeeper SASL attempt: %v)", err, aerr)
		}
	}
	return err
}

type zkError struct {
	store, what, znode string
	err                error
}

func (e *zkError) Error() string {
	return fmt.Sprintf("%s: %s %s: %v", e.store, e.what, e.znode, e.err)
}

func (e *zkError) Unwrap() error { return e.err }

func (s *ZKStore) ensurePath(p string) error {
	var parts []string
	for dir := p; dir != "/"; dir = path.Dir(dir) {
		parts = append(parts, dir)
	}
	for i := len(parts) - 1; i >= 0; i-- {
		node := parts[i]
		err := s.do("creating", node, func() error {
			_, err := s.conn.Create(node, nil, 0, s.o.ACL)
			if errors.Is(err, zk.ErrNodeExists) {
				return nil
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *ZKStore) keyPath(id int32) string {
	return fmt.Sprintf("%s%s/%010d", s.o.Root, zkKeys, id)
}

func encodeKeyData(k DelegationKey) []byte {
	return []byte(base64.RawURLEncoding.EncodeToString(k.Encode()))
}

// AddKey implements Store: a PERSISTENT_SEQUENTIAL znode whose sequence
// number becomes the key id, written again with that id (as Hive does).
func (s *ZKStore) AddKey(k DelegationKey) (int32, error) {
	prefix := s.o.Root + zkKeys + "/"
	var created string
	err := s.do("creating key under", prefix, func() error {
		var err error
		created, err = s.conn.Create(prefix, encodeKeyData(k), zk.FlagSequence, s.o.ACL)
		return err
	})
	if err != nil {
		return 0, err
	}
	seq, err := strconv.ParseInt(path.Base(created), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%s: created key znode %s has no sequence number", s.name, created)
	}
	k.ID = int32(seq)
	if err := s.UpdateKey(k); err != nil {
		return 0, err
	}
	return k.ID, nil
}

// UpdateKey implements Store.
func (s *ZKStore) UpdateKey(k DelegationKey) error {
	p := s.keyPath(k.ID)
	return s.do("writing key", p, func() error {
		_, err := s.conn.Set(p, encodeKeyData(k), -1)
		return err
	})
}

// RemoveKey implements Store.
func (s *ZKStore) RemoveKey(id int32) error {
	p := s.keyPath(id)
	return s.do("deleting key", p, func() error {
		err := s.conn.Delete(p, -1)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	})
}

// Keys implements Store. A key znode that does not decode is logged and
// skipped, as Hive's reloadKeys does; it cannot sign or verify anything.
func (s *ZKStore) Keys() ([]DelegationKey, error) {
	dir := s.o.Root + zkKeys
	var names []string
	if err := s.do("listing keys", dir, func() error {
		var err error
		names, _, err = s.conn.Children(dir)
		return err
	}); err != nil {
		return nil, err
	}
	var keys []DelegationKey
	for _, n := range names {
		p := dir + "/" + n
		var data []byte
		err := s.do("reading key", p, func() error {
			var err error
			data, _, err = s.conn.Get(p)
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		raw, err := decodeBase64Any(string(data))
		var k *DelegationKey
		if err == nil {
			k, err = DecodeDelegationKey(raw)
		}
		if err != nil {
			s.o.Logger.Error("undecodable master key in the token store; skipped", "store", s.name, "znode", p, "err", err)
			continue
		}
		keys = append(keys, *k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].ID < keys[j].ID })
	return keys, nil
}

// tokenPaths are the znodes a token may live at: Hive 3.1's unpadded name
// first, then Hive 4's padded one (the same when no padding is needed).
func (s *ZKStore) tokenPaths(identifier []byte) []string {
	dir := s.o.Root + zkTokens + "/"
	raw := dir + base64.RawURLEncoding.EncodeToString(identifier)
	padded := dir + base64.URLEncoding.EncodeToString(identifier)
	if raw == padded {
		return []string{raw}
	}
	return []string{raw, padded}
}

// AddToken implements Store.
func (s *ZKStore) AddToken(identifier []byte, info TokenInfo) error {
	p := s.tokenPaths(identifier)[0]
	return s.do("creating token", p, func() error {
		_, err := s.conn.Create(p, info.Encode(), 0, s.o.ACL)
		return err
	})
}

// findToken returns the znode holding the token and its data ("" when none).
func (s *ZKStore) findToken(identifier []byte) (string, []byte, error) {
	for _, p := range s.tokenPaths(identifier) {
		var data []byte
		err := s.do("reading token", p, func() error {
			var err error
			data, _, err = s.conn.Get(p)
			return err
		})
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return "", nil, err
		}
		return p, data, nil
	}
	return "", nil, nil
}

// UpdateToken implements Store (one setData, so no reader sees the token
// missing during a renewal).
func (s *ZKStore) UpdateToken(identifier []byte, info TokenInfo) error {
	p, _, err := s.findToken(identifier)
	if err != nil {
		return err
	}
	if p == "" {
		return ErrNotFound
	}
	err = s.do("writing token", p, func() error {
		_, err := s.conn.Set(p, info.Encode(), -1)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return ErrNotFound
	}
	return err
}

// RemoveToken implements Store.
func (s *ZKStore) RemoveToken(identifier []byte) (bool, error) {
	existed := false
	for _, p := range s.tokenPaths(identifier) {
		err := s.do("deleting token", p, func() error { return s.conn.Delete(p, -1) })
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return existed, err
		}
		existed = true
	}
	return existed, nil
}

// Token implements Store.
func (s *ZKStore) Token(identifier []byte) (*TokenInfo, error) {
	p, data, err := s.findToken(identifier)
	if err != nil || p == "" {
		return nil, err
	}
	info, err := DecodeTokenInfo(data)
	if err != nil {
		return nil, fmt.Errorf("%s: token znode %s: %w", s.name, p, err)
	}
	return info, nil
}

// Tokens implements Store. A znode whose name is not Base64 is logged and
// skipped (Hive does the same); it names no token.
func (s *ZKStore) Tokens() ([][]byte, error) {
	dir := s.o.Root + zkTokens
	var names []string
	if err := s.do("listing tokens", dir, func() error {
		var err error
		names, _, err = s.conn.Children(dir)
		return err
	}); err != nil {
		return nil, err
	}
	out := make([][]byte, 0, len(names))
	for _, n := range names {
		raw, err := decodeBase64Any(n)
		if err != nil {
			s.o.Logger.Error("token znode name is not Base64; skipped", "store", s.name, "znode", dir+"/"+n, "err", err)
			continue
		}
		out = append(out, raw)
	}
	return out, nil
}

// ParseACL parses …zookeeper.acl ("scheme:id:perms,…", perms from "rwcda")
// as Hive's ZooKeeperTokenStore does, but refuses what this client cannot
// honour. saslSession says the store's session authenticates with
// SASL/Kerberos (security.mode=KERBEROS): then sasl and auth entries are
// accepted; without it they are refused, as the store could not read the
// znodes it creates. digest and x509 are always refused (the store has no
// such credentials). key names the configuration key for error texts.
func ParseACL(key, value string, saslSession bool) ([]zk.ACL, error) {
	var acls []zk.ACL
	for _, part := range strings.Split(value, ",") {
		a := strings.TrimSpace(part)
		if a == "" {
			continue
		}
		first, last := strings.Index(a, ":"), strings.LastIndex(a, ":")
		if first < 0 || first == last {
			return nil, fmt.Errorf("%s: ACL entry %q does not have the form scheme:id:perm", key, a)
		}
		scheme, id, perms := a[:first], a[first+1:last], a[last+1:]
		var p int32
		for _, c := range perms {
			switch c {
			case 'r':
				p |= zk.PermRead
			case 'w':
				p |= zk.PermWrite
			case 'c':
				p |= zk.PermCreate
			case 'd':
				p |= zk.PermDelete
			case 'a':
				p |= zk.PermAdmin
			default:
				return nil, fmt.Errorf("%s: ACL entry %q: unknown permission %q (use r, w, c, d, a)", key, a, c)
			}
		}
		if p == 0 {
			return nil, fmt.Errorf("%s: ACL entry %q grants no permission", key, a)
		}
		switch scheme {
		case "world", "ip":
		case "sasl", "auth":
			if !saslSession {
				return nil, fmt.Errorf("%s: ACL entry %q needs a SASL (Kerberos) authenticated ZooKeeper session, which the "+
					"token store has only with security.mode=KERBEROS and security.zookeeper.sasl.enabled=true: the proxy could "+
					"neither create nor read znodes as %q. Use world or ip ACLs with a network-restricted ZooKeeper", key, a, id)
			}
		case "digest", "x509":
			return nil, fmt.Errorf("%s: ACL entry %q: the token store does not authenticate its ZooKeeper session "+
				"(no %s credentials), so it could not read the znodes it creates; use world or ip ACLs", key, a, scheme)
		default:
			return nil, fmt.Errorf("%s: ACL entry %q: unknown scheme %q", key, a, scheme)
		}
		acls = append(acls, zk.ACL{Perms: p, Scheme: scheme, ID: id})
	}
	if len(acls) == 0 {
		return nil, fmt.Errorf("%s: %q holds no ACL entry", key, value)
	}
	return acls, nil
}
