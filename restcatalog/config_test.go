package restcatalog_test

import (
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/configs"
)

// The REST frontend's keys as the binary parses them.
func TestRESTCatalogKeys(t *testing.T) {
	base := func(extra map[string]string) map[string]string {
		p := map[string]string{
			"catalogs": "catalog1,catalog2", "routing.default-catalog": "catalog1",
			"catalog.catalog1.conf.hive.metastore.uris": "thrift://127.0.0.1:9083",
			"catalog.catalog2.conf.hive.metastore.uris": "thrift://127.0.0.1:9084",
			"synthetic-read-lock.store.mode":            "IN_MEMORY",
			"rest-catalog.enabled":                      "true", "rest-catalog.port": "9183",
		}
		for k, v := range extra {
			p[k] = v
		}
		return p
	}
	// Commits without the metastore lock on a Hive 3 catalog would lose
	// each other's snapshots: refused, naming the key and the runtime.
	_, err := configs.Parse(base(map[string]string{"catalog.catalog2.conf.iceberg.engine.hive.lock-enabled": "false"}))
	if err == nil || !strings.Contains(err.Error(), "catalog.catalog2.conf.iceberg.engine.hive.lock-enabled=false") ||
		!strings.Contains(err.Error(), "APACHE_3_1_3") {
		t.Fatalf("lock-enabled=false on a Hive 3.1.3 catalog: %v", err)
	}
	// On Hive 4 the metastore's compare-and-swap guards the commit.
	cfg, err := configs.Parse(base(map[string]string{"catalog.catalog2.conf.iceberg.engine.hive.lock-enabled": "false",
		"catalog.catalog2.runtime-profile": "APACHE_4_1_0"}))
	if err != nil {
		t.Fatal(err)
	}
	if v := cfg.Catalog("catalog2").IcebergEngineHiveLockEnabled; v == nil || *v {
		t.Fatalf("IcebergEngineHiveLockEnabled = %v", v)
	}
	if cfg.Catalog("catalog2").Conf["iceberg.engine.hive.lock-enabled"] != "false" {
		t.Fatalf("the catalog conf lost the key: %v", cfg.Catalog("catalog2").Conf)
	}
	if _, err := configs.Parse(base(map[string]string{"catalog.catalog2.conf.iceberg.engine.hive.lock-enabled": "maybe"})); err == nil ||
		!strings.Contains(err.Error(), "catalog.catalog2.conf.iceberg.engine.hive.lock-enabled=maybe") {
		t.Fatalf("a bad boolean: %v", err)
	}
	// min-worker-threads has nothing to pre-start: accepted with a warning.
	cfg, err = configs.Parse(base(map[string]string{"rest-catalog.min-worker-threads": "4", "rest-catalog.max-worker-threads": "2"}))
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(cfg.Warnings, "\n"); !strings.Contains(w, "rest-catalog.min-worker-threads=4") || !strings.Contains(w, "accepted and ignored") {
		t.Fatalf("warnings: %s", w)
	}
	if cfg.RESTCatalog.MaxWorkerThreads != 2 {
		t.Fatalf("max-worker-threads = %d", cfg.RESTCatalog.MaxWorkerThreads)
	}
}
