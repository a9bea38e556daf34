package restcatalog

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/router"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// The router's failures arrive as MetaException texts over the in-process
// connection; each maps to the REST status a client acts on. (The e2e tests
// produce the real ones: a killed metastore, the access mode.)
func TestRouterMessagesMapToRESTStatus(t *testing.T) {
	for msg, want := range map[string]int{
		"get_all_databases: catalog c2 failed: circuit breaker OPEN after 5 consecutive failures (last error: refused); calls fail fast until 12:00:01 (in 9s)": http.StatusServiceUnavailable,
		"hms-proxy: catalog c2 backend failed for get_database: cannot connect to any metastore URI (thrift://h:1): refused":                                    http.StatusServiceUnavailable,
		"get_databases: catalog c2: catalog c2: cannot connect to any metastore URI (thrift://h:1): refused":                                                    http.StatusServiceUnavailable,
		fmt.Sprintf("hms-proxy: catalog c2 backend failed for get_table: %v", router.ErrPoolExhausted):                                                          http.StatusServiceUnavailable,
		fmt.Sprintf("hms-proxy: catalog c2 backend failed for get_table: %v", router.ErrBudgetExceeded):                                                         http.StatusServiceUnavailable,
		"catalog c2 is READ_ONLY (catalog.c2.access-mode): create_database is a write":                                                                          http.StatusForbidden,
		"The table has been modified. The parameter value for key 'metadata_location' is 'a'. The expected was value was 'b'":                                   http.StatusConflict,
		"rate limit exceeded for principal 'alice' while handling 'get_table': rate-limit.principal allows 1 requests/s, burst 1":                               http.StatusTooManyRequests,
		"ranger: drop access to table n.t (backend n.t) is " + router.RangerDenied + " for user bob (ranger service s for catalog c1: policy 12 decides)":       http.StatusForbidden,
		"catalog c1 is guarded by ranger service s for catalog c1: its " + router.RangerNotReady + ", so hms-proxy serves none of its calls: ranger: not ready": http.StatusServiceUnavailable,
		"some other metastore failure": http.StatusInternalServerError,
	} {
		e := metastoreError(&thriftgen.MetaException{Message: msg}, "table n.t", nil)
		if e.Code != want {
			t.Errorf("%q: %d %s, want %d", msg, e.Code, e.Type, want)
		}
		// The same refusal of an RPC that declares no MetaException (lock)
		// arrives as an application error: a policy refusal stays a 4xx.
		if want >= 400 && want < 500 && want != http.StatusConflict {
			e = metastoreError(thrift.NewTApplicationException(thrift.INTERNAL_ERROR, msg), "the lock of table n.t", nil)
		}
		if e.Code != want {
			t.Errorf("%q: %d %s, want %d", msg, e.Code, e.Type, want)
		}
		if want == http.StatusServiceUnavailable && e.Type != typeUnavailable {
			t.Errorf("%q: type %s", msg, e.Type)
		}
	}
}
