package e2eutil

import (
	"strconv"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/proxytest"
)

// WithHive4Frontend adds a second listener speaking APACHE_4_1_0.
func WithHive4Frontend(t *testing.T, p map[string]string) map[string]string {
	p["additional-frontends"] = "hive4"
	p["additional-frontends.hive4.port"] = strconv.Itoa(proxytest.FreePort(t))
	p["additional-frontends.hive4.bind-host"] = "127.0.0.1"
	p["additional-frontends.hive4.frontend-profile"] = "APACHE_4_1_0"
	return p
}
