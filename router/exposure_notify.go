package router

import (
	"context"
	"fmt"
	"strings"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// notifyCountPage is how many events one get_next_notification of the
// proxy's own count reads.
const notifyCountPage = 1000

// countVisibleEvents answers get_notification_events_count for a visible
// database whose tables the catalog's rules narrow. The metastore counts
// every event of the database, the hidden tables' included, while
// get_next_notification through the proxy carries none of those: the count
// would disagree with the events a client can read and tell how busy the
// hidden tables are. So the proxy counts itself, reading the notification log
// from fromEventId (exclusive) in pages up to toEventId (inclusive, when
// given) and counting the database's events on objects the rules show, up
// to limit (when given), as Hive's own count bounds them. handled is false
// when the metastore's count is already right (no table rules for the
// database); a hidden database was refused before this. narrowed says
// whether some tables of a database may be hidden, hidden what of an
// object is (exposure's rules, and Ranger's link with its own judge).
func (r *Router) countVisibleEvents(ctx context.Context, x *Exchange, narrowed func(db string) bool, hidden func(object) string) (handled bool, err error) {
	var args thriftgen.GetNotificationEventsCountArgs
	if err := decodeThrift(x.Args(), &args); err != nil || args.Rqst == nil {
		return false, nil // the metastore answers what it makes of it
	}
	rq := args.Rqst
	if !narrowed(rq.DbName) {
		return false, nil
	}
	cat := x.Cat.BackendName // the metastore's own catalog: Hive's default when the request names none
	if cat == "" {
		cat = "hive"
	}
	if rq.CatName != nil && *rq.CatName != "" {
		cat = *rq.CatName
	}
	var n int64
	last := rq.FromEventId
	page := r.notifyPage
	if page <= 0 {
		page = notifyCountPage
	}
	for {
		var res thriftgen.GetNextNotificationResult
		if err := r.callCatalog(ctx, x, x.Cat, "get_next_notification",
			&thriftgen.GetNextNotificationArgs{Rqst: &thriftgen.NotificationEventRequest{LastEvent: last, MaxEvents: &page}}, &res); err != nil {
			return true, err
		}
		if res.Success == nil {
			return true, fmt.Errorf("get_next_notification of catalog %s answered no events list while counting the events of %s", x.Cat.Name, rq.DbName)
		}
		for _, e := range res.Success.Events {
			if e.EventId <= last {
				return true, fmt.Errorf("get_next_notification of catalog %s answered event %d after %d while counting the events of %s",
					x.Cat.Name, e.EventId, last, rq.DbName)
			}
			last = e.EventId
			if rq.ToEventId != nil && e.EventId > *rq.ToEventId {
				return true, r.answerCount(x, n)
			}
			ec := cat
			if e.CatName != nil && *e.CatName != "" {
				ec = *e.CatName
			}
			if e.DbName == nil || !strings.EqualFold(*e.DbName, rq.DbName) || !strings.EqualFold(ec, cat) {
				continue
			}
			tbl := ""
			if e.TableName != nil {
				tbl = *e.TableName
			}
			if hidden(object{cat: x.Cat, db: *e.DbName, table: tbl}) == "" {
				n++
				if rq.Limit != nil && *rq.Limit > 0 && n >= *rq.Limit {
					return true, r.answerCount(x, n)
				}
			}
		}
		if len(res.Success.Events) < int(page) {
			return true, r.answerCount(x, n)
		}
		if err := ctx.Err(); err != nil {
			return true, err
		}
	}
}

// answerCount answers get_notification_events_count with n.
func (r *Router) answerCount(x *Exchange, n int64) error {
	return r.answerLocal(x, &thriftgen.GetNotificationEventsCountResult{Success: &thriftgen.NotificationEventsCountResponse{EventsCount: n}})
}
