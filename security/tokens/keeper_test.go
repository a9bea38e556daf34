package tokens

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// keeperService is a real Manager standing in for a backend metastore's
// token service, with a short renew interval and max lifetime.
func keeperService(t *testing.T, renew, maxLife time.Duration) (*Manager, KeeperOptions) {
	t.Helper()
	m, err := New(Options{Store: NewMemoryStore(), RenewInterval: renew, MaxLifetime: maxLife})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m, KeeperOptions{
		What:   "test token of alice",
		Obtain: func(context.Context) (string, error) { return m.Get("alice", "hmsproxy", "hmsproxy") },
		Renew:  func(_ context.Context, tok string) (time.Time, error) { return m.Renew(tok, "hmsproxy") },
		Cancel: func(_ context.Context, tok string) error { _, err := m.Cancel(tok, "hmsproxy"); return err },
	}
}

// A token kept past several renew intervals and past its max lifetime is
// valid whenever a session asks for it: each token is renewed once (its
// renew date learnt) and replaced before that date; Close cancels the last.
func TestKeeperKeepsTheTokenValid(t *testing.T) {
	const renew, maxLife = 400 * time.Millisecond, 1500 * time.Millisecond
	m, o := keeperService(t, renew, maxLife)
	k, err := NewKeeper(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	first := k.Token()
	seen := map[string]bool{}
	end := time.Now().Add(4 * time.Second) // 10 renew intervals, over 2 max lifetimes
	for time.Now().Before(end) {
		tok := k.Token()
		seen[tok] = true
		if _, err := m.Verify(tok); err != nil {
			t.Fatalf("after %v the kept token is refused: %v (state %+v)", time.Until(end), err, k.State())
		}
		time.Sleep(50 * time.Millisecond)
	}
	st := k.State()
	if st.Renewals < 8 || st.Replaced < 8 || len(seen) < 8 {
		t.Fatalf("in 4 s (renew interval %v, max lifetime %v): %d renewals, %d fresh tokens, %d tokens handed out; want at least 8 each",
			renew, maxLife, st.Renewals, st.Replaced, len(seen))
	}
	if _, err := m.Verify(first); err == nil || !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("the first token still verifies long after its renew date (err %v)", err)
	}
	cur := k.Token()
	k.Close()
	if _, err := m.Verify(cur); err == nil {
		t.Fatal("the current token still verifies after Close: Close should cancel it")
	}
}

// A refused renewal (the service lost the token) is answered with a fresh
// token; a service that refuses to issue is retried, and the error kept.
func TestKeeperRecovers(t *testing.T) {
	m, o := keeperService(t, time.Hour, 2*time.Hour)
	var refuseRenew, refuseObtain atomic.Bool
	renew, obtain := o.Renew, o.Obtain
	o.Renew = func(ctx context.Context, tok string) (time.Time, error) {
		if refuseRenew.Load() {
			return time.Time{}, errors.New("renewal refused (test)")
		}
		return renew(ctx, tok)
	}
	o.Obtain = func(ctx context.Context) (string, error) {
		if refuseObtain.Load() {
			return "", errors.New("issuing refused (test)")
		}
		return obtain(ctx)
	}
	o.RetryAfter = 100 * time.Millisecond
	refuseRenew.Store(true)
	k, err := NewKeeper(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	first := k.Token()
	waitFor(t, func() bool { return k.Token() != first }, "a fresh token after a refused renewal")
	if _, err := m.Verify(k.Token()); err != nil {
		t.Fatal(err)
	}
	// renewals and issuing both refused: the keeper keeps trying and says why
	refuseObtain.Store(true)
	waitFor(t, func() bool {
		st := k.State()
		return st.LastErr != nil && strings.Contains(st.LastErr.Error(), "issuing refused")
	}, "the failed attempt recorded")
	refuseRenew.Store(false)
	refuseObtain.Store(false)
	waitFor(t, func() bool { st := k.State(); return st.LastErr == nil && !st.Expiry.IsZero() }, "recovery once the service answers")

	o.Obtain = func(context.Context) (string, error) { return "", errors.New("no token for you") }
	if _, err := NewKeeper(context.Background(), o); err == nil || !strings.Contains(err.Error(), "no token for you") {
		t.Fatalf("NewKeeper with a refusing service: %v", err)
	}
	o.Obtain = func(context.Context) (string, error) { return "not-a-token", nil }
	if _, err := NewKeeper(context.Background(), o); err == nil || !strings.Contains(err.Error(), "test token of alice") {
		t.Fatalf("NewKeeper with an unreadable token: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Close does not wait for a service call that hangs: the call's context ends with it.
func TestKeeperCloseDoesNotWaitForAHungCall(t *testing.T) {
	_, o := keeperService(t, time.Hour, 2*time.Hour)
	entered := make(chan struct{})
	o.Renew = func(ctx context.Context, _ string) (time.Time, error) {
		close(entered)
		<-ctx.Done() // a metastore that never answers
		return time.Time{}, ctx.Err()
	}
	o.Cancel = nil
	k, err := NewKeeper(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	start := time.Now()
	k.Close()
	// Not the 30 s CallTimeout of the renewal that never answers.
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("Close waited %v for a hung renewal (CallTimeout %v)", d, 30*time.Second)
	}
}
