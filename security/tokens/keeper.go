package tokens

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// A Keeper holds a delegation token of another service (a backend
// metastore's) valid for as long as its user needs it. Hadoop tokens expire
// at their renew date (hive.cluster.delegation.token.renew-interval after
// issue or the last renewal, 1 day by default) and never live past their
// max date (…token.max-lifetime, 7 days).
//
// Renewing is not enough: Hive 3.1.3's TokenStoreDelegationTokenSecretManager
// answers renew_delegation_token with the new date but never writes it to
// its token store, so the token still expires at its first renew date (seen
// against the real metastore: DIGEST-MD5 then fails with "token ... is
// expired ... expected renewal time" = issue + interval). So the keeper
// renews each token once, right after obtaining it, only to learn its renew
// date (the token carries its max date, not that), and obtains a fresh token
// when three quarters of the time to that date have passed. This works the
// same on metastores whose renewal does persist, and never needs the max
// date handled apart (a renewal answers min(renew date, max date)). A
// session opened at any moment finds an unexpired token without waiting on
// the service. The replaced token is left to expire (sessions opened with it
// stay authenticated either way); the last one is cancelled at Close.
type Keeper struct {
	o    KeeperOptions
	log  *slog.Logger
	stop chan struct{}
	done chan struct{}
	// ctx ends at Close, so a call in flight does not hold Close up
	ctx       context.Context
	cancelCtx context.CancelFunc

	mu      sync.Mutex
	token   string
	maxDate time.Time
	expiry  time.Time // renew date as last reported (zero until the first renewal)
	gotAt   time.Time // when the current token was obtained
	renewed int       // renewals that succeeded
	fresh   int       // tokens obtained after the first
	lastErr error
}

// KeeperOptions say how a Keeper talks to the token's service.
type KeeperOptions struct {
	// What names the token in logs and errors ("catalog1 token of alice").
	What string
	// Obtain asks the service for a new token (its URL-safe string form).
	Obtain func(ctx context.Context) (string, error)
	// Renew renews a token and returns its new renew date.
	Renew func(ctx context.Context, token string) (time.Time, error)
	// Cancel, if set, cancels the current token at Close.
	Cancel func(ctx context.Context, token string) error
	// CallTimeout bounds one Obtain, Renew or Cancel (default 30 s).
	CallTimeout time.Duration
	// RetryAfter is the wait after a failed attempt (default 5 s; never
	// past half the time left to the renew date, never under 100 ms).
	RetryAfter time.Duration
	Log        *slog.Logger
}

// NewKeeper obtains the first token (its error is the caller's) and starts
// keeping it.
func NewKeeper(ctx context.Context, o KeeperOptions) (*Keeper, error) {
	if o.Obtain == nil || o.Renew == nil {
		return nil, errors.New("tokens: a Keeper needs Obtain and Renew")
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	if o.RetryAfter <= 0 {
		o.RetryAfter = 5 * time.Second
	}
	k := &Keeper{o: o, log: o.Log, stop: make(chan struct{}), done: make(chan struct{})}
	k.ctx, k.cancelCtx = context.WithCancel(context.Background())
	if k.log == nil {
		k.log = slog.Default()
	}
	tok, maxDate, err := k.obtain(ctx)
	if err != nil {
		k.cancelCtx()
		return nil, err
	}
	k.token, k.maxDate, k.gotAt = tok, maxDate, time.Now()
	go k.run()
	return k, nil
}

// Token is the token to open a new session with.
func (k *Keeper) Token() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.token
}

// KeeperState is what a Keeper has done so far (tests, diagnostics).
type KeeperState struct {
	Token    string
	MaxDate  time.Time
	Expiry   time.Time // zero until the first renewal answered
	Renewals int       // successful renewals
	Replaced int       // fresh tokens obtained after the first
	LastErr  error     // the last failed attempt, nil after a success
}

// State returns the keeper's state.
func (k *Keeper) State() KeeperState {
	k.mu.Lock()
	defer k.mu.Unlock()
	return KeeperState{Token: k.token, MaxDate: k.maxDate, Expiry: k.expiry, Renewals: k.renewed, Replaced: k.fresh, LastErr: k.lastErr}
}

// Close stops keeping the token and cancels it (Cancel set).
func (k *Keeper) Close() {
	select {
	case <-k.stop:
		return
	default:
	}
	close(k.stop)
	k.cancelCtx()
	<-k.done
	if k.o.Cancel != nil {
		k.cancel(k.Token())
	}
}

func (k *Keeper) obtain(ctx context.Context) (string, time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, k.o.CallTimeout)
	defer cancel()
	tok, err := k.o.Obtain(ctx)
	if err != nil {
		return "", time.Time{}, err
	}
	_, id, err := parse(tok)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%s: the service answered an unreadable token: %w", k.o.What, err)
	}
	return tok, fromMillis(id.MaxDate), nil
}

func (k *Keeper) cancel(tok string) {
	ctx, cancel := context.WithTimeout(context.Background(), k.o.CallTimeout)
	defer cancel()
	if err := k.o.Cancel(ctx, tok); err != nil {
		k.log.Warn("cancelling a delegation token no longer used failed; it expires by itself", "token", k.o.What, "err", err)
	}
}

// run learns the renew date of each token right after it is obtained, and
// replaces the token at three quarters of the time to that date.
func (k *Keeper) run() {
	defer close(k.done)
	wait := time.Duration(0)
	for {
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-k.stop:
				t.Stop()
				return
			case <-t.C:
			}
		} else {
			select {
			case <-k.stop:
				return
			default:
			}
		}
		wait = k.step()
	}
}

// step renews a new token (to learn its renew date) or replaces a due one,
// and returns the wait to the next step.
func (k *Keeper) step() time.Duration {
	k.mu.Lock()
	tok, maxDate, expiry, gotAt := k.token, k.maxDate, k.expiry, k.gotAt
	k.mu.Unlock()
	now := time.Now()
	if expiry.IsZero() {
		ctx, cancel := context.WithTimeout(k.ctx, k.o.CallTimeout)
		exp, err := k.o.Renew(ctx, tok)
		cancel()
		if err == nil {
			k.mu.Lock()
			k.expiry, k.lastErr = exp, nil
			k.renewed++
			k.mu.Unlock()
			k.log.Debug("delegation token renew date learnt", "token", k.o.What, "renewDate", exp, "maxDate", maxDate)
			return threeQuarters(now, exp)
		}
		if k.ctx.Err() != nil {
			return 0 // closing
		}
		k.mu.Lock()
		k.lastErr = err
		k.mu.Unlock()
		if wait := k.o.RetryAfter - time.Since(gotAt); wait > 0 {
			// a token just obtained that cannot be renewed: do not spin
			// obtaining more; try again a little later
			k.log.Warn("renewing a fresh delegation token failed; retrying", "token", k.o.What, "retryIn", wait, "err", err)
			return wait
		}
		k.log.Warn("renewing a delegation token failed; obtaining a fresh one", "token", k.o.What, "err", err)
	}
	fresh, freshMax, err := k.obtain(k.ctx)
	if err != nil {
		if k.ctx.Err() != nil {
			return 0 // closing
		}
		k.mu.Lock()
		k.lastErr = err
		exp := k.expiry
		k.mu.Unlock()
		wait := k.o.RetryAfter
		if left := time.Until(exp); left > 0 && left/2 < wait {
			wait = left / 2
		}
		wait = max(wait, 100*time.Millisecond)
		k.log.Warn("obtaining a fresh delegation token failed; new sessions fail once the current one expires",
			"token", k.o.What, "expires", exp, "retryIn", wait, "err", err)
		return wait
	}
	k.mu.Lock()
	k.token, k.maxDate, k.expiry, k.gotAt, k.lastErr = fresh, freshMax, time.Time{}, time.Now(), nil
	k.fresh++
	k.mu.Unlock()
	k.log.Debug("delegation token replaced by a fresh one before its renew date", "token", k.o.What, "maxDate", freshMax)
	return 0 // renew the fresh one at once, to learn its renew date
}

// threeQuarters is the wait until three quarters of now..exp (at least 50 ms).
func threeQuarters(now, exp time.Time) time.Duration {
	return max(exp.Sub(now)*3/4, 50*time.Millisecond)
}
