package tokens

import (
	"crypto/hmac"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Hive's defaults (MetastoreDelegationTokenManager).
const (
	DefaultKeyUpdateInterval = 24 * time.Hour
	DefaultRenewInterval     = 24 * time.Hour
	DefaultMaxLifetime       = 7 * 24 * time.Hour
	DefaultGCInterval        = time.Hour
	// masterKeyLength is Hadoop SecretManager's HmacSHA1 key size (64 bits).
	masterKeyLength = 8
	// defaultTick is how often the background loop looks whether a key roll
	// or a GC pass is due (Hive's remover thread sleeps 5 s).
	defaultTick = 5 * time.Second
)

// Errors a Manager returns, to test with errors.Is. The wrapped text names the
// token (its identifier, never the password) and the reason.
var (
	// ErrInvalidToken: malformed, unknown, cancelled, expired or forged.
	ErrInvalidToken = errors.New("invalid delegation token")
	// ErrAccessDenied: the caller may not renew or cancel the token.
	ErrAccessDenied = errors.New("delegation token access denied")
)

// Options configure a Manager.
type Options struct {
	// Store holds keys and tokens; required. The Manager does not close it
	// (Config.Open returns a Manager that does).
	Store Store
	// KeyUpdateInterval is how often a new master key is made
	// (hive.cluster.delegation.key.update-interval; 0: 1 day).
	KeyUpdateInterval time.Duration
	// RenewInterval is how long a token lives without renewal
	// (hive.cluster.delegation.token.renew-interval; 0: 1 day).
	RenewInterval time.Duration
	// MaxLifetime is the longest a token lives with renewals
	// (hive.cluster.delegation.token.max-lifetime; 0: 7 days).
	MaxLifetime time.Duration
	// GCInterval is how often expired tokens are removed from the store
	// (hive.cluster.delegation.token.gc-interval; 0: 1 hour).
	GCInterval time.Duration
	// Now is the clock (nil: time.Now). Tests inject one.
	Now func() time.Time
	// Rand is the master key source (nil: crypto/rand).
	Rand io.Reader
	// ShortName maps a principal to the short name a token's renewer is
	// stored and compared as (nil: ShortName, the part before the first '/'
	// or '@', as Hadoop's DEFAULT auth_to_local rule gives for the local
	// realm).
	ShortName func(principal string) string
	// Tick is how often Start's loop checks whether a key roll or GC is due
	// (0: 5 s).
	Tick    time.Duration
	Metrics *Metrics
	Logger  *slog.Logger
}

// ShortName is the default principal → short name mapping: "hive/host@REALM"
// and "hive@REALM" become "hive".
func ShortName(principal string) string {
	if i := strings.IndexAny(principal, "/@"); i >= 0 {
		return principal[:i]
	}
	return principal
}

// Manager is a delegation token secret manager: it issues, renews, cancels
// and verifies tokens under rolling master keys, all kept in its Store.
// Tokens are read from the store on every use (not cached), as Hive's
// TokenStoreDelegationTokenSecretManager does, so replicas sharing a store
// see each other's renewals and cancellations at once. Safe for concurrent
// use.
type Manager struct {
	o         Options
	ownsStore bool

	mu       sync.Mutex
	keys     map[int32]DelegationKey // store keys as last loaded, plus our own
	current  DelegationKey
	seq      int32
	lastRoll time.Time
	lastGC   time.Time

	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
	started  bool
}

// New validates o, loads the store's keys and makes this manager's first
// master key (stored at once, so other replicas can verify its tokens).
func New(o Options) (*Manager, error) {
	if o.Store == nil {
		return nil, errors.New("tokens: Options.Store is required")
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"KeyUpdateInterval", &o.KeyUpdateInterval, DefaultKeyUpdateInterval},
		{"RenewInterval", &o.RenewInterval, DefaultRenewInterval},
		{"MaxLifetime", &o.MaxLifetime, DefaultMaxLifetime},
		{"GCInterval", &o.GCInterval, DefaultGCInterval},
		{"Tick", &o.Tick, defaultTick},
	} {
		if *d.v < 0 {
			return nil, fmt.Errorf("tokens: Options.%s is negative (%v)", d.name, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	if o.ShortName == nil {
		o.ShortName = ShortName
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{o: o, keys: map[int32]DelegationKey{}, stop: make(chan struct{}), done: make(chan struct{})}
	if err := m.reloadKeys(); err != nil {
		return nil, err
	}
	now := o.Now()
	if err := m.newCurrentKey(now); err != nil {
		return nil, err
	}
	m.lastRoll, m.lastGC = now, now
	return m, nil
}

// Store returns the manager's store.
func (m *Manager) Store() Store { return m.o.Store }

// Start runs key rolling and expired-token removal in the background until
// Close.
func (m *Manager) Start() {
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		return
	}
	m.started = true
	m.mu.Unlock()
	go func() {
		defer close(m.done)
		t := time.NewTicker(m.o.Tick)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
				if err := m.Maintain(); err != nil {
					m.o.Logger.Error("delegation token maintenance failed", "err", err)
				}
			}
		}
	}()
}

// Close stops the background loop and, for a manager made by Config.Open,
// closes its store.
func (m *Manager) Close() error {
	m.stopOnce.Do(func() { close(m.stop) })
	m.mu.Lock()
	started := m.started
	m.mu.Unlock()
	if started {
		<-m.done
	}
	if m.ownsStore {
		return m.o.Store.Close()
	}
	return nil
}

// Maintain rolls the master key and removes expired tokens when their
// intervals have passed. Start calls it; tests call it with a fake clock.
func (m *Manager) Maintain() error {
	now := m.o.Now()
	var errs []error
	m.mu.Lock()
	rollDue := now.Sub(m.lastRoll) >= m.o.KeyUpdateInterval
	gcDue := now.Sub(m.lastGC) >= m.o.GCInterval
	m.mu.Unlock()
	if rollDue {
		if err := m.RollMasterKey(); err != nil {
			errs = append(errs, err)
		}
	}
	if gcDue {
		if _, err := m.RemoveExpired(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (m *Manager) reloadKeys() error {
	keys, err := m.o.Store.Keys()
	if err != nil {
		return fmt.Errorf("loading master keys: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keys = make(map[int32]DelegationKey, len(keys)+1)
	for _, k := range keys {
		m.keys[k.ID] = k
	}
	if m.current.Key != nil {
		m.keys[m.current.ID] = m.current
	}
	return nil
}

// newCurrentKey makes a key, stores it (the store assigns its id) and makes
// it the signing key. Its expiry covers every token it can sign.
func (m *Manager) newCurrentKey(now time.Time) error {
	secret := make([]byte, masterKeyLength)
	if _, err := io.ReadFull(m.o.Rand, secret); err != nil {
		return fmt.Errorf("making a master key: %w", err)
	}
	k := DelegationKey{Expiry: millis(now.Add(m.o.KeyUpdateInterval + m.o.MaxLifetime)), Key: secret}
	id, err := m.o.Store.AddKey(k)
	if err != nil {
		return fmt.Errorf("storing a new master key: %w", err)
	}
	k.ID = id
	m.mu.Lock()
	m.current = k
	m.keys[id] = k
	m.mu.Unlock()
	m.o.Logger.Info("new delegation token master key", "keyId", id, "store", m.o.Store.Name())
	return nil
}

// RollMasterKey retires the signing key (it keeps verifying its tokens until
// their max lifetime) and makes a new one; expired keys leave the store.
func (m *Manager) RollMasterKey() error {
	now := m.o.Now()
	err := m.rollMasterKey(now)
	if err != nil {
		m.o.Metrics.roll(ResultStoreError)
		return err
	}
	m.o.Metrics.roll(ResultOK)
	return nil
}

func (m *Manager) rollMasterKey(now time.Time) error {
	if err := m.reloadKeys(); err != nil {
		return err
	}
	m.mu.Lock()
	old := m.current
	old.Expiry = millis(now.Add(m.o.MaxLifetime))
	var expired []int32
	for id, k := range m.keys {
		if id != old.ID && k.Expiry < millis(now) {
			expired = append(expired, id)
		}
	}
	m.mu.Unlock()
	if err := m.o.Store.UpdateKey(old); err != nil {
		return fmt.Errorf("shortening the expiry of master key %d: %w", old.ID, err)
	}
	var errs []error
	for _, id := range expired {
		if err := m.o.Store.RemoveKey(id); err != nil {
			errs = append(errs, fmt.Errorf("removing expired master key %d: %w", id, err))
			continue
		}
		m.mu.Lock()
		delete(m.keys, id)
		m.mu.Unlock()
	}
	m.mu.Lock()
	m.keys[old.ID] = old
	m.current = old
	m.lastRoll = now
	m.mu.Unlock()
	if err := m.newCurrentKey(now); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// RemoveExpired deletes every token past its max date or its renew date from
// the store and returns how many it removed. Entries the store holds that do
// not decode are reported in the error (and left alone).
func (m *Manager) RemoveExpired() (int, error) {
	now := millis(m.o.Now())
	ids, err := m.o.Store.Tokens()
	if err != nil {
		return 0, fmt.Errorf("listing tokens for expiry: %w", err)
	}
	removed := 0
	var errs []error
	for _, raw := range ids {
		id, err := DecodeIdentifier(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("store %s holds an undecodable token entry: %w", m.o.Store.Name(), err))
			continue
		}
		expired := now > id.MaxDate
		if !expired {
			info, err := m.o.Store.Token(raw)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			expired = info != nil && now > info.RenewDate
		}
		if !expired {
			continue
		}
		if _, err := m.o.Store.RemoveToken(raw); err != nil {
			errs = append(errs, fmt.Errorf("removing expired token %s: %w", id, err))
			continue
		}
		removed++
		m.o.Logger.Info("removed expired delegation token", "token", id.String())
	}
	m.mu.Lock()
	m.lastGC = fromMillis(now)
	m.mu.Unlock()
	m.o.Metrics.expired(removed)
	return removed, errors.Join(errs...)
}

// key returns master key id, reloading the store's keys once when this
// manager does not know it (another replica made it).
func (m *Manager) key(id int32) (DelegationKey, bool, error) {
	m.mu.Lock()
	k, ok := m.keys[id]
	m.mu.Unlock()
	if ok {
		return k, true, nil
	}
	if err := m.reloadKeys(); err != nil {
		return DelegationKey{}, false, err
	}
	m.mu.Lock()
	k, ok = m.keys[id]
	m.mu.Unlock()
	return k, ok, nil
}

// Get issues a token for owner, renewable by renewer (stored as its short
// name; "" makes a token nobody can renew), obtained by realUser ("" when
// the owner asks for itself). It returns the token string
// get_delegation_token answers with. The caller has authorized realUser to
// act for owner (proxyuser rules).
func (m *Manager) Get(owner, renewer, realUser string) (string, error) {
	if owner == "" {
		m.o.Metrics.op(OpIssue, ResultInvalid)
		return "", fmt.Errorf("%w: the token owner is empty", ErrInvalidToken)
	}
	now := m.o.Now()
	m.mu.Lock()
	m.seq++
	key := m.current
	id := &Identifier{
		Owner:          owner,
		RealUser:       realUser,
		IssueDate:      millis(now),
		MaxDate:        millis(now.Add(m.o.MaxLifetime)),
		SequenceNumber: m.seq,
		MasterKeyID:    key.ID,
	}
	m.mu.Unlock()
	if renewer != "" {
		id.Renewer = m.o.ShortName(renewer)
	}
	raw := id.Encode()
	pw := Password(raw, key.Key)
	info := TokenInfo{RenewDate: millis(now.Add(m.o.RenewInterval)), Password: pw}
	if err := m.o.Store.AddToken(raw, info); err != nil {
		m.o.Metrics.op(OpIssue, ResultStoreError)
		return "", fmt.Errorf("storing new token %s: %w", id, err)
	}
	m.o.Metrics.op(OpIssue, ResultOK)
	t := Token{Identifier: raw, Password: pw, Kind: Kind}
	return t.String(), nil
}

// Renew extends a token by the renew interval (never past its max date) and
// returns its new expiry. renewer is the authenticated caller; its short
// name must be the token's renewer.
func (m *Manager) Renew(token, renewer string) (time.Time, error) {
	exp, result, err := m.renew(token, renewer)
	m.o.Metrics.op(OpRenew, result)
	return exp, err
}

func (m *Manager) renew(token, renewer string) (time.Time, string, error) {
	t, id, err := parse(token)
	if err != nil {
		return time.Time{}, ResultInvalid, err
	}
	now := m.o.Now()
	if id.MaxDate < millis(now) {
		return time.Time{}, ResultInvalid, fmt.Errorf("%w: %s tried to renew an expired token %s (max date %s, now %s)",
			ErrInvalidToken, renewer, id, fmtMillis(id.MaxDate), now.UTC().Format(time.RFC3339))
	}
	if id.Renewer == "" {
		return time.Time{}, ResultDenied, fmt.Errorf("%w: %s tried to renew a token %s without a renewer", ErrAccessDenied, renewer, id)
	}
	if short := m.o.ShortName(renewer); short != id.Renewer {
		return time.Time{}, ResultDenied, fmt.Errorf("%w: %s tries to renew a token %s with non-matching renewer %s",
			ErrAccessDenied, renewer, id, id.Renewer)
	}
	info, err := m.o.Store.Token(t.Identifier)
	if err != nil {
		return time.Time{}, ResultStoreError, err
	}
	if info == nil {
		return time.Time{}, ResultInvalid, fmt.Errorf("%w: renewal request for unknown token %s (cancelled or expired)", ErrInvalidToken, id)
	}
	key, ok, err := m.key(id.MasterKeyID)
	if err != nil {
		return time.Time{}, ResultStoreError, err
	}
	if !ok {
		return time.Time{}, ResultInvalid, fmt.Errorf("%w: unable to find master key for keyId=%d; failed to renew an unexpired token %s",
			ErrInvalidToken, id.MasterKeyID, id)
	}
	if pw := Password(t.Identifier, key.Key); !hmac.Equal(pw, t.Password) {
		return time.Time{}, ResultDenied, fmt.Errorf("%w: %s is trying to renew a token %s with wrong password", ErrAccessDenied, renewer, id)
	}
	renewDate := min(id.MaxDate, millis(now.Add(m.o.RenewInterval)))
	if err := m.o.Store.UpdateToken(t.Identifier, TokenInfo{RenewDate: renewDate, Password: info.Password}); err != nil {
		if errors.Is(err, ErrNotFound) {
			return time.Time{}, ResultInvalid, fmt.Errorf("%w: token %s was cancelled while being renewed", ErrInvalidToken, id)
		}
		return time.Time{}, ResultStoreError, err
	}
	return fromMillis(renewDate), ResultOK, nil
}

// Cancel removes a token. canceller is the authenticated caller: the owner,
// or the renewer (by short name), may cancel, as Hadoop's
// AbstractDelegationTokenSecretManager allows. (Hive's token-store secret
// manager skips this check; the proxy keeps it.)
func (m *Manager) Cancel(token, canceller string) (*Identifier, error) {
	id, result, err := m.cancel(token, canceller)
	m.o.Metrics.op(OpCancel, result)
	return id, err
}

func (m *Manager) cancel(token, canceller string) (*Identifier, string, error) {
	t, id, err := parse(token)
	if err != nil {
		return nil, ResultInvalid, err
	}
	if canceller != id.Owner && (id.Renewer == "" || m.o.ShortName(canceller) != id.Renewer) {
		return nil, ResultDenied, fmt.Errorf("%w: %s is not authorized to cancel the token %s", ErrAccessDenied, canceller, id)
	}
	existed, err := m.o.Store.RemoveToken(t.Identifier)
	if err != nil {
		return nil, ResultStoreError, err
	}
	if !existed {
		return nil, ResultInvalid, fmt.Errorf("%w: token not found %s", ErrInvalidToken, id)
	}
	m.o.Logger.Info("cancelled delegation token", "token", id.String(), "by", canceller)
	return id, ResultOK, nil
}

// Password returns the password of the token with these identifier bytes,
// for the DIGEST-MD5 server: the token must be stored (not cancelled), not
// past its renew date or max date, and signed by a master key the store
// still holds.
func (m *Manager) Password(identifier []byte) ([]byte, *Identifier, error) {
	pw, id, result, err := m.password(identifier)
	m.o.Metrics.op(OpVerify, result)
	return pw, id, err
}

func (m *Manager) password(identifier []byte) ([]byte, *Identifier, string, error) {
	id, err := DecodeIdentifier(identifier)
	if err != nil {
		return nil, nil, ResultInvalid, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	info, err := m.o.Store.Token(identifier)
	if err != nil {
		return nil, id, ResultStoreError, err
	}
	if info == nil {
		return nil, id, ResultInvalid, fmt.Errorf("%w: token expired or does not exist: %s", ErrInvalidToken, id)
	}
	now := millis(m.o.Now())
	if info.RenewDate < now {
		return nil, id, ResultInvalid, fmt.Errorf("%w: token %s is expired, current time: %s expected renewal time: %s",
			ErrInvalidToken, id, fmtMillis(now), fmtMillis(info.RenewDate))
	}
	if id.MaxDate < now {
		return nil, id, ResultInvalid, fmt.Errorf("%w: token %s is past its max date %s", ErrInvalidToken, id, fmtMillis(id.MaxDate))
	}
	key, ok, err := m.key(id.MasterKeyID)
	if err != nil {
		return nil, id, ResultStoreError, err
	}
	if !ok {
		return nil, id, ResultInvalid, fmt.Errorf("%w: unable to find master key for keyId=%d of token %s", ErrInvalidToken, id.MasterKeyID, id)
	}
	if !hmac.Equal(Password(identifier, key.Key), info.Password) {
		return nil, id, ResultInvalid, fmt.Errorf("%w: the stored password of token %s was not made with master key %d",
			ErrInvalidToken, id, id.MasterKeyID)
	}
	return info.Password, id, ResultOK, nil
}

// Verify checks a whole token string (identifier and password) as Hive's
// verifyDelegationToken does and returns its identifier.
func (m *Manager) Verify(token string) (*Identifier, error) {
	t, _, err := parse(token)
	if err != nil {
		m.o.Metrics.op(OpVerify, ResultInvalid)
		return nil, err
	}
	pw, id, result, err := m.password(t.Identifier)
	if err == nil && !hmac.Equal(pw, t.Password) {
		result, err = ResultInvalid, fmt.Errorf("%w: wrong password for token %s", ErrInvalidToken, id)
	}
	m.o.Metrics.op(OpVerify, result)
	if err != nil {
		return nil, err
	}
	return id, nil
}

func parse(token string) (*Token, *Identifier, error) {
	t, err := DecodeToken(token)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	id, err := DecodeIdentifier(t.Identifier)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	return t, id, nil
}

func fmtMillis(ms int64) string { return fromMillis(ms).UTC().Format("2006-01-02T15:04:05.000Z") }
