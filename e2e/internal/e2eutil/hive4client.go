package e2eutil

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Hive4Env is catalog1 (default) and catalog2, both real 3.1.3 metastores,
// each behind a Tap, with the primary APACHE_3_1_3 and an APACHE_4_1_0
// listener.
type Hive4Env struct {
	P          *proxytest.Proxy
	Tap1, Tap2 *proxytest.Tap
}

func NewHive4Env(t *testing.T) *Hive4Env {
	t.Helper()
	e := &Hive4Env{Tap1: proxytest.NewTap(t, HMS1.URI), Tap2: proxytest.NewTap(t, HMS2.URI)}
	e.P = proxytest.Start(t, WithHive4Frontend(t, TwoCatalogs(
		"catalog.catalog1.conf.hive.metastore.uris="+e.Tap1.URI(),
		"catalog.catalog2.conf.hive.metastore.uris="+e.Tap2.URI())))
	return e
}

// ForeignFields lists the fields of v (a value of struct name, nested
// structs, lists and maps included) that profile p does not have.
func ForeignFields(name string, v *wire.Value, p thriftgen.ProfileSet) []string {
	st := thriftgen.LookupStruct(name)
	if st == nil {
		return nil
	}
	var out []string
	var walk func(t *thriftgen.Type, v *wire.Value)
	walk = func(t *thriftgen.Type, v *wire.Value) {
		switch t.Kind {
		case thriftgen.KindStruct:
			out = append(out, ForeignFields(t.Name, v, p)...)
		case thriftgen.KindList, thriftgen.KindSet:
			for i := range v.Elems {
				walk(t.Elem, &v.Elems[i])
			}
		case thriftgen.KindMap:
			for i := 0; i+1 < len(v.Elems); i += 2 {
				walk(t.Key, &v.Elems[i])
				walk(t.Value, &v.Elems[i+1])
			}
		}
	}
	for i := range v.Fields {
		f := st.FieldByID(v.Fields[i].ID)
		if f == nil {
			continue
		}
		if !f.Profiles.Has(p) {
			out = append(out, fmt.Sprintf("%s.%s", name, f.Name))
			continue
		}
		walk(f.Type, &v.Fields[i].V)
	}
	return out
}

// Only313 fails the test if a tap saw a method or a field 3.1.3 lacks, or a
// TApplicationException answer.
func Only313(t *testing.T, taps ...*proxytest.Tap) {
	t.Helper()
	for _, tap := range taps {
		for _, c := range tap.Calls() {
			m := thriftgen.LookupMethod(c.Method)
			if m == nil || !m.Profiles.Has(thriftgen.ProfileApache313) {
				t.Errorf("the 3.1.3 backend received %s, a method it does not have", c.Method)
				continue
			}
			if f := ForeignFields(m.Args.Name, &c.Args, thriftgen.ProfileApache313); len(f) > 0 {
				t.Errorf("the 3.1.3 backend received %s with fields it does not have: %v", c.Method, f)
			}
			if typ, msg, ok := c.Reply.AppException(); ok {
				t.Errorf("the 3.1.3 backend answered %s with TApplicationException %d: %s", c.Method, typ, msg)
			}
		}
	}
}

// Counted fails unless hms_proxy_backend_fallback_total has the label pair.
func Counted(t *testing.T, p *proxytest.Proxy, labels ...string) {
	t.Helper()
	if n := p.Metric(t, "hms_proxy_backend_fallback_total", labels...); n < 1 {
		t.Errorf("hms_proxy_backend_fallback_total{%s} = %v", strings.Join(labels, ","), n)
	}
}
