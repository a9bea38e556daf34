package gssapi

import (
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/testbed"
)

// The background renewal replaces a short TGT and the service ticket in use inside their renew window, before
// they expire: after it, with the KDC stopped, a new session's ticket is still served from the cache, and it ends
// later than the first. (Without the background renewal the session would need the KDC at that moment.)
func TestBackgroundRenewalBeforeExpiry(t *testing.T) {
	r := newRealm(t, testbed.KDCOptions{})
	const life, before = 8 * time.Second, 4 * time.Second
	if err := r.kdc.AddPrincipalLife("shorty", life); err != nil {
		t.Fatal(err)
	}
	ktPath, err := r.kdc.Keytab("shorty.keytab", "shorty")
	if err != nil {
		t.Fatal(err)
	}
	kt, err := LoadKeytab(ktPath)
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLogin(LoginOptions{Principal: r.kdc.Principal("shorty"), Keytab: kt, Config: r.cfg, RenewBefore: before})
	if err != nil {
		t.Fatal(err)
	}
	stop := l.StartRenewal()
	defer stop()
	time.Sleep(200 * time.Millisecond) // nothing held yet: the loop waits for a login
	if st := l.Status(); st.LoggedIn {
		t.Fatalf("the renewal logged in by itself before any use: %+v", st)
	}
	_, _, err = l.ServiceTicket("hive/localhost", r.kdc.Realm)
	if err != nil {
		t.Fatal(err)
	}
	first := l.Status().TGTExpiresAtEpochSecond
	firstTicketEnd := l.tickets["hive/localhost@"+r.kdc.Realm].end
	// the window opens at end-4s; wait for the renewal, and check it came before the old expiry
	deadline := time.Unix(first, 0)
	for l.Status().TGTExpiresAtEpochSecond == first {
		if time.Now().After(deadline) {
			t.Fatalf("the TGT was not renewed before it expired at %v", deadline)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if time.Now().After(deadline) {
		t.Fatalf("renewed only at %v, after the old expiry %v", time.Now(), deadline)
	}
	// the service ticket in use is fetched again too (the loop does it right after the login)
	waitTicket := time.Now().Add(5 * time.Second)
	for {
		l.mu.Lock()
		end := l.tickets["hive/localhost@"+r.kdc.Realm].end
		l.mu.Unlock()
		if end.After(firstTicketEnd) {
			break
		}
		if time.Now().After(waitTicket) {
			t.Fatal("the cached service ticket was not renewed in the background")
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.kdc.Stop()
	if _, _, err := l.ServiceTicket("hive/localhost", r.kdc.Realm); err != nil {
		t.Fatalf("a session after the background renewal needed the (stopped) KDC: %v", err)
	}
	// with the KDC gone, the next window's renewal fails and is retried; the old credentials stay until then
	if st := l.Status(); !st.Healthy || st.State != "ACTIVE" {
		t.Fatalf("status after the renewal: %+v", st)
	}
}
