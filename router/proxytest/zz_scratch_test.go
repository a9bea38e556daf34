package proxytest

import (
	"fmt"
	"sort"
	"testing"

	"github.com/hms-proxy/hms-proxy/compat"
	"github.com/hms-proxy/hms-proxy/thriftgen"
)

func TestZZScratch(t *testing.T) {
	var rows []string
	for _, a := range compat.Adapters() {
		m := thriftgen.LookupMethod(a.Method)
		var plans []string
		for _, n := range []string{"APACHE_3_1_3", "APACHE_4_1_0", "HORTONWORKS_3_1_0_3_1_0_78", "HORTONWORKS_3_1_0_3_1_5_6150_1"} {
			r, _ := compat.Lookup(n)
			mode, _ := r.Plan(a.Method)
			plans = append(plans, fmt.Sprint(mode))
		}
		rows = append(rows, fmt.Sprintf("%-40s -> %-45s profiles=%s plans=%v", a.Method, a.To, m.Profiles, plans))
	}
	sort.Strings(rows)
	for _, r := range rows {
		fmt.Println(r)
	}
}
