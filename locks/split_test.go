package locks

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// resolver of a proxy with catalogs "hive" (default), "cat2" and "cat3", separator "__".
func testResolver(db string) (string, string, bool) {
	lower := strings.ToLower(db)
	for _, c := range []string{"cat2", "cat3"} {
		if strings.HasPrefix(lower, c+"__") {
			return c, db[len(c)+2:], true
		}
	}
	if strings.HasPrefix(lower, "gone__") {
		return "", "", false
	}
	return "hive", db, true
}

type wantPart struct {
	catalog string
	objects []string // type db[.table[/partition]] in order
}

func describeParts(r SplitResult) []wantPart {
	var out []wantPart
	objects := func(req *thriftgen.LockRequest) []string {
		var s []string
		for _, c := range req.Component {
			s = append(s, c.Type.String()+" "+objectName(c))
		}
		return s
	}
	if r.Default != nil {
		out = append(out, wantPart{"hive", objects(r.Default)})
	}
	for _, p := range r.Shim {
		out = append(out, wantPart{p.Catalog, objects(p.Lock)})
	}
	return out
}

// TestSplit uses the lock request shapes HiveServer2 sends (DbTxnManager /
// AcidUtils.makeLockComponents): one LockRequest per statement, every read and
// written object one component, external database names.
func TestSplit(t *testing.T) {
	dummy := comp(SR, opSelect, DummyDatabase, DummyTable, "")
	cases := []struct {
		name    string
		req     *thriftgen.LockRequest
		want    []wantPart
		split   bool
		lockCat string
	}{
		{
			name: "INSERT ... VALUES into a non-ACID table of cat2: the placeholder is no second namespace",
			req:  lockReq(5, dummy, comp(EX, opInsert, "cat2__sales", "orders", "")),
			want: []wantPart{{"cat2", []string{"EXCLUSIVE sales.orders"}}}, lockCat: "cat2",
		},
		{
			name: "INSERT ... VALUES into the default catalog: unchanged, placeholder kept",
			req:  lockReq(5, dummy, comp(EX, opInsert, "sales", "orders", "")),
			want: []wantPart{{"hive", []string{"SHARED_READ _dummy_database._dummy_table", "EXCLUSIVE sales.orders"}}}, lockCat: "hive",
		},
		{
			name: "SELECT without FROM: only the placeholder, which goes to the default catalog",
			req:  lockReq(6, dummy),
			want: []wantPart{{"hive", []string{"SHARED_READ _dummy_database._dummy_table"}}}, lockCat: "hive",
		},
		{
			name: "SELECT joining the default catalog and cat2",
			req: lockReq(7, comp(SR, opSelect, "cat2__sales", "orders", ""), comp(SR, opSelect, "crm", "customers", ""),
				comp(SR, opSelect, "cat2__sales", "orders", "d=2026-04-01")),
			want: []wantPart{{"hive", []string{"SHARED_READ crm.customers"}},
				{"cat2", []string{"SHARED_READ sales.orders", "SHARED_READ sales.orders/d=2026-04-01"}}},
			split: true, lockCat: "hive",
		},
		{
			name:  "SELECT over cat2 and cat3 only: one shim lock of two catalogs",
			req:   lockReq(8, comp(SR, opSelect, "cat3__hr", "staff", ""), comp(SR, opSelect, "cat2__sales", "orders", "")),
			want:  []wantPart{{"cat3", []string{"SHARED_READ hr.staff"}}, {"cat2", []string{"SHARED_READ sales.orders"}}},
			split: true, lockCat: "cat3",
		},
		{
			name: "CREATE TABLE in cat2: the database lock",
			req:  lockReq(9, comp(SR, opNoTxn, "cat2__sales", "", "")),
			want: []wantPart{{"cat2", []string{"SHARED_READ sales"}}}, lockCat: "cat2",
		},
		{
			name: "ALTER TABLE ... PARTITION RENAME in cat2",
			req: lockReq(10, comp(EX, opNoTxn, "cat2__sales", "orders", "d=1"),
				comp(SR, opNoTxn, "cat2__sales", "orders", "")),
			want: []wantPart{{"cat2", []string{"EXCLUSIVE sales.orders/d=1", "SHARED_READ sales.orders"}}}, lockCat: "cat2",
		},
		{
			name: "INSERT into cat2 selecting from the default catalog (the write lands in cat2)",
			req: lockReq(11, comp(SR, opSelect, "crm", "customers", ""),
				comp(EX, opInsert, "CAT2__Sales", "orders", "")),
			want:  []wantPart{{"hive", []string{"SHARED_READ crm.customers"}}, {"cat2", []string{"EXCLUSIVE Sales.orders"}}},
			split: true, lockCat: "hive",
		},
		{
			name: "two databases of one catalog are one namespace",
			req:  lockReq(12, comp(SR, opSelect, "cat2__a", "t", ""), comp(SR, opSelect, "cat2__b", "u", "")),
			want: []wantPart{{"cat2", []string{"SHARED_READ a.t", "SHARED_READ b.u"}}}, lockCat: "cat2",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := describeParts(SplitResult{Default: tc.req})
			res, err := Split(tc.req, "hive", testResolver)
			if err != nil {
				t.Fatal(err)
			}
			if got := describeParts(res); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("parts %v, want %v", got, tc.want)
			}
			if res.Split != tc.split {
				t.Fatalf("split %v, want %v", res.Split, tc.split)
			}
			if got := res.LockCatalog("hive"); got != tc.lockCat {
				t.Fatalf("lock catalog %s, want %s", got, tc.lockCat)
			}
			for _, p := range res.Shim {
				if p.Lock.Txnid == nil || *p.Lock.Txnid != *tc.req.Txnid || p.Lock.User != tc.req.User {
					t.Fatalf("part %s lost the request's txnid/user", p.Catalog)
				}
			}
			if after := describeParts(SplitResult{Default: tc.req}); !reflect.DeepEqual(before, after) {
				t.Fatalf("the request was modified: %v became %v", before, after)
			}
			if len(res.Shim) > 0 {
				if err := Eligible(res.Shim...); err != nil {
					t.Fatalf("the shim's parts are not eligible: %v", err)
				}
			}
		})
	}
	if _, err := Split(lockReq(1, comp(SR, opSelect, "gone__x", "t", "")), "hive", testResolver); err == nil ||
		!strings.Contains(err.Error(), `"gone__x"`) {
		t.Fatalf("unknown catalog: %v, want an error naming the database", err)
	}
	if _, err := Split(lockReq(1), "hive", testResolver); err == nil {
		t.Fatal("a request without components was split")
	}
}
