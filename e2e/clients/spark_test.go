package clients

import (
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"
)

// runSpark runs the phases in local SparkSessions with Hive support
// (spark.sql.catalogImplementation=hive), one after the other in one JVM
// (a Spark session's metastore is fixed), with a local warehouse in a temp
// dir; it returns each phase's results.
func runSpark(t *testing.T, phases ...e2eutil.SparkPhase) [][]e2eutil.SparkResult {
	t.Helper()
	return e2eutil.RunSparkEnv(t, nil, phases...)
}
