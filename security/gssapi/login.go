package gssapi

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/iana/nametype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// LoginOptions configure a keytab login.
type LoginOptions struct {
	// Principal logs in (security.client-principal, or the server principal
	// for the front door), _HOST already expanded.
	Principal string
	// Keytab holds its keys (security.client-keytab / security.keytab).
	Keytab *keytab.Keytab
	// Config is the krb5.conf (LoadConfig): realms, KDCs, enctypes.
	Config *config.Config
	// RenewBefore: a TGT with less time than this left is replaced by a new
	// keytab login before it is used; service tickets likewise are fetched
	// anew. Zero: a fifth of the ticket's lifetime.
	RenewBefore time.Duration
	// Now is the clock (time.Now).
	Now func() time.Time
}

// LoadConfig reads a krb5.conf; the error names the file.
func LoadConfig(path string) (*config.Config, error) {
	c, err := config.Load(path)
	if err != nil {
		return nil, fmt.Errorf("gssapi: krb5.conf %s: %w", path, err)
	}
	return c, nil
}

// Login holds the credentials of one principal: a TGT from a keytab login
// and the service tickets got with it, renewed by a new keytab login when
// they run low. Safe for concurrent use. Its Status is what /readyz shows.
type Login struct {
	o     LoginOptions
	name  string
	realm string

	mu        sync.Mutex
	cl        *client.Client
	tgt       messages.Ticket
	tgtKey    types.EncryptionKey
	tgtStart  time.Time
	tgtEnd    time.Time
	attempted bool
	lastErr   error
	tickets   map[string]serviceTicket
	kick      chan struct{} // a login happened: the renewal loop looks again
}

type serviceTicket struct {
	tkt        messages.Ticket
	key        types.EncryptionKey
	start, end time.Time
}

// NewLogin checks the options (principal with realm, keytab with its keys,
// a krb5.conf) without contacting the KDC.
func NewLogin(o LoginOptions) (*Login, error) {
	name, realm, err := SplitPrincipal(o.Principal)
	if err != nil {
		return nil, fmt.Errorf("gssapi: login principal: %w", err)
	}
	if strings.Contains(name, "_HOST") {
		return nil, fmt.Errorf("gssapi: login principal %q still contains _HOST: expand it first", o.Principal)
	}
	if o.Keytab == nil {
		return nil, fmt.Errorf("gssapi: login of %s needs a keytab", o.Principal)
	}
	if !keytabHas(o.Keytab, types.NewPrincipalName(nametype.KRB_NT_PRINCIPAL, name), realm) {
		return nil, fmt.Errorf("gssapi: the keytab holds no key for %s; it has: %s", o.Principal, keytabPrincipals(o.Keytab))
	}
	if o.Config == nil {
		return nil, fmt.Errorf("gssapi: login of %s needs a krb5.conf", o.Principal)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Login{o: o, name: name, realm: realm, tickets: map[string]serviceTicket{}, kick: make(chan struct{}, 1)}, nil
}

// Principal is the principal this login is for.
func (l *Login) Principal() string { return l.o.Principal }

// Login performs a keytab login (AS exchange) now.
func (l *Login) Login() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.loginLocked()
}

func (l *Login) loginLocked() error {
	l.attempted = true
	cl := client.NewWithKeytab(l.name, l.realm, l.o.Keytab, l.o.Config, client.DisablePAFXFAST(true))
	req, err := messages.NewASReqForTGT(l.realm, l.o.Config, cl.Credentials.CName())
	if err == nil {
		var rep messages.ASRep
		if rep, err = cl.ASExchange(l.realm, req, 0); err == nil {
			l.cl, l.tgt, l.tgtKey = cl, rep.Ticket, rep.DecryptedEncPart.Key
			l.tgtStart, l.tgtEnd = rep.DecryptedEncPart.AuthTime, rep.DecryptedEncPart.EndTime
			if !rep.DecryptedEncPart.StartTime.IsZero() {
				l.tgtStart = rep.DecryptedEncPart.StartTime
			}
			l.tickets = map[string]serviceTicket{}
			l.lastErr = nil
			select {
			case l.kick <- struct{}{}:
			default:
			}
			return nil
		}
	}
	l.lastErr = fmt.Errorf("gssapi: keytab login of %s failed: %w", l.o.Principal, err)
	return l.lastErr
}

// low reports whether a ticket valid from start to end must be replaced now.
func (l *Login) low(start, end, now time.Time) bool {
	margin := l.o.RenewBefore
	if margin <= 0 {
		margin = end.Sub(start) / 5
	}
	return !now.Before(end.Add(-margin))
}

// ServiceTicket returns a ticket and session key for spn ("hive/host") in
// realm, logging in again first when the TGT runs low.
func (l *Login) ServiceTicket(spn, realm string) (messages.Ticket, types.EncryptionKey, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.o.Now()
	if l.cl == nil || l.low(l.tgtStart, l.tgtEnd, now) {
		if err := l.loginLocked(); err != nil {
			return messages.Ticket{}, types.EncryptionKey{}, err
		}
	}
	id := spn + "@" + realm
	if t, ok := l.tickets[id]; ok && !l.low(t.start, t.end, now) {
		return t.tkt, t.key, nil
	}
	if err := l.fetchLocked(id, spn, realm); err != nil {
		return messages.Ticket{}, types.EncryptionKey{}, err
	}
	t := l.tickets[id]
	return t.tkt, t.key, nil
}

// fetchLocked gets a service ticket for spn into the cache under id.
func (l *Login) fetchLocked(id, spn, realm string) error {
	pn := types.NewPrincipalName(nametype.KRB_NT_SRV_INST, spn)
	_, rep, err := l.cl.TGSREQGenerateAndExchange(pn, l.realm, l.tgt, l.tgtKey, false)
	if err != nil {
		l.lastErr = fmt.Errorf("gssapi: service ticket for %s (as %s): %w", id, l.o.Principal, err)
		return l.lastErr
	}
	t := serviceTicket{tkt: rep.Ticket, key: rep.DecryptedEncPart.Key, start: rep.DecryptedEncPart.AuthTime,
		end: rep.DecryptedEncPart.EndTime}
	if !rep.DecryptedEncPart.StartTime.IsZero() {
		t.start = rep.DecryptedEncPart.StartTime
	}
	l.tickets[id] = t
	return nil
}

// credentials returns the client's name and realm for authenticators.
func (l *Login) credentials() (types.PrincipalName, string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cl == nil {
		return types.PrincipalName{}, "", errors.New("gssapi: not logged in")
	}
	return l.cl.Credentials.CName(), l.cl.Credentials.Domain(), nil
}

// Login states, as /readyz shows them.
const (
	StateDisabled = "DISABLED" // no Kerberos on this side
	StatePending  = "PENDING"  // not logged in yet
	StateActive   = "ACTIVE"   // a TGT that has not expired
	StateStale    = "STALE"    // a TGT that has expired (the keytab still serves)
	StateFailed   = "FAILED"   // the last login failed and no TGT is held
)

// Status is a Kerberos login's state (the management's readiness report
// shows it as monitoring.KerberosStatus, the same fields).
type Status struct {
	State     string
	LoggedIn  bool
	Healthy   bool
	Principal string
	// TGT freshness, when known.
	TGTExpiresAtEpochSecond int64
	SecondsUntilExpiry      *int64
}

// Status is the login's state for /readyz, from what it holds now (it never
// contacts the KDC): PENDING before the first login, ACTIVE with a TGT that
// has not expired, STALE once it has, FAILED when the last login failed and
// no TGT is held. Healthy means credentials exist (ACTIVE or STALE: the
// acceptor keeps working from the keytab even with an expired TGT).
func (l *Login) Status() Status {
	if l == nil {
		return Status{State: StateDisabled, Healthy: true}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s := Status{Principal: l.o.Principal}
	switch {
	case l.cl != nil:
		s.LoggedIn = true
		s.Healthy = true
		s.TGTExpiresAtEpochSecond = l.tgtEnd.Unix()
		left := int64(l.tgtEnd.Sub(l.o.Now()) / time.Second)
		s.SecondsUntilExpiry = &left
		if left > 0 {
			s.State = StateActive
		} else {
			s.State = StateStale
		}
	case !l.attempted:
		s.State = StatePending
	default:
		s.State = StateFailed
	}
	return s
}

// LastError is the last login or ticket error (nil after a success).
func (l *Login) LastError() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastErr
}

// StartRenewal renews the credentials in the background until stop is
// called: when the TGT, or a service ticket in the cache, enters the last
// part of its life (RenewBefore, else its last fifth) the login is renewed
// by a new keytab login and the service tickets in use are fetched again,
// so a new session finds fresh tickets and never waits on the KDC at the
// moment they expire. Before the first login nothing is held and nothing
// is renewed. A failed renewal is retried (after a quarter of the time
// left, between 1 s and 30 s); the lazy renewal of ServiceTicket stays as a
// fallback.
func (l *Login) StartRenewal() (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			wait := l.renewDue()
			var t *time.Timer
			var tc <-chan time.Time
			if wait >= 0 {
				t = time.NewTimer(wait)
				tc = t.C
			}
			select {
			case <-quit:
			case <-l.kick:
			case <-tc:
			}
			if t != nil {
				t.Stop()
			}
			select {
			case <-quit:
				return
			default:
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(quit); <-done }) }
}

// renewDue renews what is due now and returns the wait until the next
// renewal (-1: nothing held, wait for a login).
func (l *Login) renewDue() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cl == nil {
		return -1
	}
	now := l.o.Now()
	if l.low(l.tgtStart, l.tgtEnd, now) {
		spns := make([]string, 0, len(l.tickets))
		for id := range l.tickets {
			spns = append(spns, id)
		}
		if err := l.loginLocked(); err != nil {
			return retryWait(l.tgtEnd.Sub(now))
		}
		// drain the kick of this login: the loop is already looking
		select {
		case <-l.kick:
		default:
		}
		for _, id := range spns {
			spn, realm, _ := strings.Cut(id, "@")
			if err := l.fetchLocked(id, spn, realm); err != nil {
				return retryWait(l.tgtEnd.Sub(now))
			}
		}
	}
	for id, t := range l.tickets {
		if l.low(t.start, t.end, now) {
			spn, realm, _ := strings.Cut(id, "@")
			if err := l.fetchLocked(id, spn, realm); err != nil {
				return retryWait(t.end.Sub(now))
			}
		}
	}
	next := l.renewAt(l.tgtStart, l.tgtEnd)
	for _, t := range l.tickets {
		if at := l.renewAt(t.start, t.end); at.Before(next) {
			next = at
		}
	}
	return max(next.Sub(now), 10*time.Millisecond)
}

// renewAt is when a ticket valid from start to end enters its renew window.
func (l *Login) renewAt(start, end time.Time) time.Time {
	margin := l.o.RenewBefore
	if margin <= 0 {
		margin = end.Sub(start) / 5
	}
	return end.Add(-margin)
}

func retryWait(left time.Duration) time.Duration {
	return min(max(left/4, time.Second), 30*time.Second)
}
