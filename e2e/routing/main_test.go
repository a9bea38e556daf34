// Package routing runs hms-proxy's routing and federation against real Hive metastores (3.1.3 and 4.1.0): names both ways, renames, sessions, the lifecycle of a connection, the front door's hardening and storm, TLS, the database caches. Its metastores are started once for the package
// (e2eutil.Main).
package routing

import (
	"os"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"
)

func TestMain(m *testing.M) { os.Exit(e2eutil.Main(m)) }
