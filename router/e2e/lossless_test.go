package e2e

import (
	"testing"

	"github.com/hms-proxy/hms-proxy/router/proxytest"
	"github.com/hms-proxy/hms-proxy/testbed"
)

// Skewed-location maps (a map keyed by lists), constraints, column
// statistics and partition parameters written through the proxy into a
// non-default catalog read back identical through the proxy and directly.
func TestNothingLostThroughTheProxy(t *testing.T) {
	needHive(t)
	p := proxytest.Start(t, twoCatalogs())
	db := uniq("lossless")
	testbed.RunScenarioT(t, testbed.Hive313, p.URI("primary"), "lossless",
		"--db", "catalog2__"+db, "--table", "t", "--direct-uri", hms2.URI, "--direct-db", db)
}

// The same through the default catalog, whose names are not prefixed.
func TestNothingLostInTheDefaultCatalog(t *testing.T) {
	needHive(t)
	p := proxytest.Start(t, twoCatalogs())
	db := uniq("lossless_d")
	testbed.RunScenarioT(t, testbed.Hive313, p.URI("primary"), "lossless",
		"--db", db, "--table", "t", "--direct-uri", hms1.URI, "--direct-db", db)
}
