package policy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/hms-proxy/hms-proxy/app"
	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Notifications through exposure rules, against a real Hive 3.1.3 metastore
// that records its events (DbNotificationListener): writes go straight to the
// metastore into a visible database (tables vis_a and hid_x) and a hidden
// one; read directly, the notification log names all of them; through the
// proxy, get_next_notification carries no event of the hidden database or
// the hidden table and every other event unchanged, the current event id is
// the metastore's, and get_notification_events_count of the visible database
// equals the events the proxy lists for it (from the start and from the
// middle of the log, read in one page and in pages of two), while the hidden
// database's count is refused as not found.
func TestExposureHidesNotificationEvents(t *testing.T) {
	e2eutil.NeedHive(t)
	ms := testbed.StartMetastoreWithT(t, testbed.Hive313, testbed.MetastoreOptions{Notifications: true})
	direct := proxytest.Client(t, ms.URI)
	id := e2eutil.Uniq("")
	pub, sec := "nt_pub"+id, "nt_secret"+id
	props := map[string]string{
		"catalogs": "catalog1", "routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris":     ms.URI,
		"catalog.catalog1.expose-mode":                  "DENY_BY_DEFAULT",
		"catalog.catalog1.expose-db-patterns":           pub,
		"catalog.catalog1.expose-table-patterns." + pub: "vis_.*",
	}
	p := proxytest.Start(t, props)
	c := proxytest.Client(t, p.URI("primary"))
	// The same proxy counting with pages of two events.
	paged := proxytest.Client(t, proxytest.StartWith(t, props, app.TestHooks{NotificationCountPage: 2}).URI("primary"))
	ctx := e2eutil.Ctx(t)

	base, err := direct.GetCurrentNotificationEventId(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, db := range []string{pub, sec} {
		e2eutil.MkDB(t, direct, db)
	}
	e2eutil.AdPartitioned(t, direct, pub, "vis_a", "1")
	e2eutil.AdPartitioned(t, direct, pub, "hid_x", "1")
	e2eutil.AdPartitioned(t, direct, sec, "t1", "1")
	for _, db := range []string{pub, sec} {
		tbl := map[string]string{pub: "hid_x", sec: "t1"}[db]
		if err := direct.DropTable(ctx, db, tbl, true); err != nil {
			t.Fatal(err)
		}
	}

	read := func(cl *thriftgen.Client) []*thriftgen.NotificationEvent {
		t.Helper()
		max := int32(1000)
		r, err := cl.GetNextNotification(ctx, &thriftgen.NotificationEventRequest{LastEvent: base.EventId, MaxEvents: &max})
		if err != nil {
			t.Fatal(err)
		}
		return r.Events
	}
	hidden := func(e *thriftgen.NotificationEvent) bool {
		db, tbl := deref(e.DbName), deref(e.TableName)
		return strings.EqualFold(db, sec) || strings.EqualFold(db, pub) && strings.EqualFold(tbl, "hid_x")
	}
	all, seen := read(direct), read(c)
	var want []string
	var hiddenDirect, pubVisible int64
	for _, e := range all {
		if hidden(e) {
			hiddenDirect++
			continue
		}
		want = append(want, eventText(e))
		if strings.EqualFold(deref(e.DbName), pub) {
			pubVisible++
		}
	}
	// The metastore records the hidden database's and table's events: the
	// test shows something.
	if hiddenDirect < 4 || pubVisible < 3 {
		t.Fatalf("read directly, %d events of hidden objects and %d of the visible ones in %s (want >= 4 and >= 3): %s",
			hiddenDirect, pubVisible, pub, eventsText(all))
	}
	var got []string
	for _, e := range seen {
		if hidden(e) || strings.Contains(e.Message, sec) || strings.Contains(e.Message, "hid_x") {
			t.Errorf("through the proxy, get_next_notification carries event %s", eventText(e))
		}
		got = append(got, eventText(e))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("through the proxy, events\n%s\nwant the metastore's without the hidden ones\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	cur, err := c.GetCurrentNotificationEventId(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if last := all[len(all)-1].EventId; cur.EventId != last {
		t.Errorf("get_current_notificationEventId through the proxy %d, the metastore's last event is %d", cur.EventId, last)
	}
	count := func(cl *thriftgen.Client, db string, from int64) (int64, error) {
		r, err := cl.GetNotificationEventsCount(ctx, &thriftgen.NotificationEventsCountRequest{FromEventId: from, DbName: db})
		if err != nil {
			return 0, err
		}
		return r.EventsCount, nil
	}
	if n, err := count(c, pub, base.EventId); err != nil || n != pubVisible {
		t.Errorf("get_notification_events_count(%s) through the proxy: %d, %v; the proxy lists %d events of it", pub, n, err, pubVisible)
	}
	if n, err := count(paged, pub, base.EventId); err != nil || n != pubVisible {
		t.Errorf("get_notification_events_count(%s) through the proxy in pages of 2: %d, %v; the proxy lists %d events of it", pub, n, err, pubVisible)
	}
	// From the middle of the log: the events after the visible database's
	// second one.
	var from int64
	var after int64
	k := 0
	for _, e := range seen {
		if strings.EqualFold(deref(e.DbName), pub) {
			if k++; k == 2 {
				from = e.EventId
			} else if k > 2 {
				after++
			}
		}
	}
	for name, cl := range map[string]*thriftgen.Client{"one page": c, "pages of 2": paged} {
		if n, err := count(cl, pub, from); err != nil || n != after {
			t.Errorf("get_notification_events_count(%s, from %d) through the proxy, %s: %d, %v; want %d", pub, from, name, n, err, after)
		}
	}
	if n, err := count(direct, sec, base.EventId); err != nil || n == 0 {
		t.Fatalf("get_notification_events_count(%s) directly: %d, %v", sec, n, err)
	}
	if n, err := count(c, sec, base.EventId); err == nil {
		t.Errorf("get_notification_events_count(%s) through the proxy answered %d; the database is hidden", sec, n)
	} else if !strings.Contains(err.Error(), sec) {
		t.Errorf("get_notification_events_count(%s) through the proxy: %v, want a refusal naming it", sec, err)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func eventText(e *thriftgen.NotificationEvent) string {
	return fmt.Sprintf("%d %s %s.%s", e.EventId, e.EventType, deref(e.DbName), deref(e.TableName))
}

func eventsText(es []*thriftgen.NotificationEvent) string {
	var b []string
	for _, e := range es {
		b = append(b, eventText(e))
	}
	return strings.Join(b, "; ")
}
