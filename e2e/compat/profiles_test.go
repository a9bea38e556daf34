package compat

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Every frontend profile is one listener that shows exactly its version's
// method set and identity, whatever the backends run.

// profListener names the listener of each profile in profProxy.
var profListener = map[string]string{
	"APACHE_3_1_3":                   "primary",
	"APACHE_4_1_0":                   "h4",
	"HORTONWORKS_3_1_0_3_1_0_78":     "hdp78",
	"HORTONWORKS_3_1_0_3_1_5_6150_1": "hdp315",
}

// profProxy starts a proxy whose only catalog (a real Hive 3.1.3, behind
// tap) is served by four listeners, one per frontend profile.
func profProxy(t *testing.T, tap *proxytest.Tap) *proxytest.Proxy {
	t.Helper()
	props := map[string]string{
		"catalogs": "catalog1", "routing.default-catalog": "catalog1",
		"catalog.catalog1.conf.hive.metastore.uris": tap.URI(),
		"compatibility.frontend-profile":            "APACHE_3_1_3",
	}
	var names []string
	for profile, name := range profListener {
		if name == "primary" {
			continue
		}
		names = append(names, name)
		pre := "additional-frontends." + name + "."
		props[pre+"port"] = strconv.Itoa(proxytest.FreePort(t))
		props[pre+"bind-host"] = "127.0.0.1"
		props[pre+"frontend-profile"] = profile
	}
	props["additional-frontends"] = strings.Join(names, ",")
	return proxytest.Start(t, props)
}

// profRaw is a raw Thrift connection for calls the typed client cannot
// make (any method, empty arguments).
type profRaw struct {
	t    *testing.T
	addr string
	c    net.Conn
	r    *bufio.Reader
	seq  int32
}

func newProfRaw(t *testing.T, uri string) *profRaw {
	rc := &profRaw{t: t, addr: strings.TrimPrefix(uri, "thrift://")}
	rc.dial()
	t.Cleanup(func() { rc.c.Close() })
	return rc
}

func (rc *profRaw) dial() {
	rc.t.Helper()
	c, err := net.DialTimeout("tcp", rc.addr, 10*time.Second)
	if err != nil {
		rc.t.Fatal(err)
	}
	if rc.c != nil {
		rc.c.Close()
	}
	rc.c, rc.r = c, bufio.NewReader(c)
}

// call sends method with empty arguments and returns the answer; a
// connection the listener closed is reported as an error and reopened.
func (rc *profRaw) call(method string) (*wire.Message, error) {
	rc.seq++
	args := wire.Struct()
	_ = rc.c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := rc.c.Write(wire.AppendMessage(nil, wire.Header{Name: method, Type: wire.Call, SeqID: rc.seq}, &args)); err != nil {
		rc.dial()
		return nil, err
	}
	m, err := wire.ReadMessage(rc.r, wire.Limits{}, nil)
	if err != nil {
		rc.dial()
		return nil, err
	}
	if m.Name != method || m.SeqID != rc.seq {
		return m, fmt.Errorf("answer %s/%d to call %s/%d", m.Name, m.SeqID, method, rc.seq)
	}
	return m, nil
}

// frontDoorRefusal reports whether an answer is the listener's own
// UNKNOWN_METHOD: the method is outside its profile. (A method inside the
// profile that the backend runtime cannot serve gets UNKNOWN_METHOD too,
// but naming the catalog and runtime.)
func frontDoorRefusal(m *wire.Message, method string) bool {
	if m == nil || m.Type != wire.Exception {
		return false
	}
	typ, msg, err := wire.ParseAppException(m.Body())
	return err == nil && typ == wire.AppUnknownMethod && strings.Contains(msg, "'"+method+"'") && !strings.Contains(msg, "catalog")
}

// Each listener admits exactly its profile's methods: every method of the
// canonical API outside the profile is answered UNKNOWN_METHOD by the proxy
// itself, without a byte reaching the backend; every method inside it is
// admitted (served or failed by the router and backend, never refused at
// the door). The backend is a black hole here (the tap hangs up on every
// call), so the sweep's empty-argument calls cannot change a metastore.
func TestProfileListenersAdmitExactlyTheirMethodSet(t *testing.T) {
	e2eutil.NeedHive(t)
	tap := proxytest.NewTap(t, e2eutil.HMS1.URI)
	tap.HangUp(true)
	p := profProxy(t, tap)
	for profile, listener := range profListener {
		t.Run(profile, func(t *testing.T) {
			bit, ok := thriftgen.ProfileByName(profile)
			if !ok {
				t.Fatalf("unknown profile %s", profile)
			}
			rc := newProfRaw(t, p.URI(listener))
			tap.Reset()
			outside, inside := 0, 0
			for _, m := range append(thriftgen.AllMethods(), &thriftgen.Method{Name: "no_such_method_in_any_profile"}) {
				if m.Profiles.Has(bit) {
					continue
				}
				outside++
				ans, err := rc.call(m.Name)
				if err != nil || !frontDoorRefusal(ans, m.Name) {
					t.Errorf("%s outside %s: want the listener's UNKNOWN_METHOD, got %v %v", m.Name, profile, describe(ans), err)
				}
			}
			if got := tap.Methods(); len(got) != 0 {
				t.Fatalf("methods outside %s reached the backend: %v", profile, got)
			}
			for _, m := range thriftgen.AllMethods() {
				if !m.Profiles.Has(bit) {
					continue
				}
				inside++
				ans, err := rc.call(m.Name)
				if err != nil {
					t.Errorf("%s inside %s: %v", m.Name, profile, err)
				} else if frontDoorRefusal(ans, m.Name) {
					t.Errorf("%s is in %s but the listener refused it: %s", m.Name, profile, describe(ans))
				}
			}
			reached := map[string]bool{}
			for _, m := range tap.Methods() {
				reached[m] = true
			}
			if len(reached) == 0 {
				t.Fatalf("no admitted call of %s reached the (black-hole) backend", profile)
			}
			t.Logf("%s: %d methods refused at the door, %d admitted (%d distinct backend methods called)", profile, outside, inside, len(reached))
		})
	}
}

func describe(m *wire.Message) string {
	if m == nil {
		return "no answer"
	}
	if m.Type == wire.Exception {
		typ, msg, _ := wire.ParseAppException(m.Body())
		return fmt.Sprintf("TApplicationException %d %q", typ, msg)
	}
	return fmt.Sprintf("message type %d", m.Type)
}

// With a real backend: each listener answers getVersion with its own
// profile's version (the backend is not asked), refuses a method outside
// its set that the backend could have served, and serves one inside it.
func TestProfileIdentityAndServiceAgainstARealMetastore(t *testing.T) {
	e2eutil.NeedHive(t)
	direct := proxytest.Client(t, e2eutil.HMS1.URI)
	db := e2eutil.Uniq("prof")
	e2eutil.MkDB(t, direct, db)
	e2eutil.MkTable(t, direct, db, "t1")
	tap := proxytest.NewTap(t, e2eutil.HMS1.URI)
	p := profProxy(t, tap)

	getTable := func(c *thriftgen.Client) error {
		tb, err := c.GetTable(e2eutil.Ctx(t), db, "t1")
		if err == nil && (tb.TableName != "t1" || tb.DbName != db) {
			err = fmt.Errorf("got table %s.%s", tb.DbName, tb.TableName)
		}
		return err
	}
	getDatabaseReq := func(c *thriftgen.Client) error {
		d, err := c.GetDatabaseReq(e2eutil.Ctx(t), &thriftgen.GetDatabaseRequest{Name: &db})
		if err == nil && d.Name != db {
			err = fmt.Errorf("got database %s", d.Name)
		}
		return err
	}
	getFunctionsReq := func(c *thriftgen.Client) error {
		_, err := c.GetFunctionsReq(e2eutil.Ctx(t), &thriftgen.GetFunctionsRequest{DbName: db})
		return err
	}
	cases := []struct {
		profile string
		// outside: a method the profile lacks but the backend could serve
		// (natively or adapted); inside: one the profile has, and what the
		// backend must have received for it.
		outsideName string
		outside     func(*thriftgen.Client) error
		insideName  string
		inside      func(*thriftgen.Client) error
		backend     []string
	}{
		{"APACHE_3_1_3", "get_database_req", getDatabaseReq, "get_table", getTable, []string{"get_table"}},
		{"APACHE_4_1_0", "get_table", getTable, "get_database_req", getDatabaseReq, []string{"get_database"}},
		{"HORTONWORKS_3_1_0_3_1_0_78", "get_database_req", getDatabaseReq, "get_table", getTable, []string{"get_table"}},
		{"HORTONWORKS_3_1_0_3_1_5_6150_1", "get_functions_req", getFunctionsReq, "get_database_req", getDatabaseReq, []string{"get_database"}},
	}
	for _, tc := range cases {
		t.Run(tc.profile, func(t *testing.T) {
			rt, err := compat.Lookup(tc.profile)
			if err != nil {
				t.Fatal(err)
			}
			bit, _ := thriftgen.ProfileByName(tc.profile)
			if m := thriftgen.LookupMethod(tc.outsideName); m.Profiles.Has(bit) {
				t.Fatalf("test table: %s is in %s", tc.outsideName, tc.profile)
			}
			if m := thriftgen.LookupMethod(tc.insideName); !m.Profiles.Has(bit) {
				t.Fatalf("test table: %s is not in %s", tc.insideName, tc.profile)
			}
			c := proxytest.Client(t, p.URI(profListener[tc.profile]))
			tap.Reset()

			v, err := c.GetVersion(e2eutil.Ctx(t))
			if err != nil || v != rt.Version {
				t.Fatalf("getVersion = %q %v, want %q", v, err, rt.Version)
			}
			err = tc.outside(c)
			var app thrift.TApplicationException
			if !errors.As(err, &app) || app.TypeId() != thrift.UNKNOWN_METHOD || !strings.Contains(app.Error(), tc.outsideName) {
				t.Fatalf("%s outside %s: want UNKNOWN_METHOD, got %v", tc.outsideName, tc.profile, err)
			}
			if m := tap.Methods(); len(m) != 0 {
				t.Fatalf("getVersion and a method outside the profile reached the backend: %v", m)
			}
			if err := tc.inside(c); err != nil {
				t.Fatalf("%s inside %s: %v", tc.insideName, tc.profile, err)
			}
			if m := tap.Methods(); strings.Join(m, ",") != strings.Join(tc.backend, ",") {
				t.Fatalf("%s: the backend received %v, want %v", tc.insideName, m, tc.backend)
			}
		})
	}
}
