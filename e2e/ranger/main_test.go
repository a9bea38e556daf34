// Package ranger runs the Ranger authorization link against real metastores:
// policies served by a loopback Ranger Admin stand-in in Ranger's own download
// format, the real Java HiveMetaStoreClient and the proxy's Go client as
// users with different policies, the backends read directly to show that a
// denied write changed nothing. Its metastores are started once for the
// package (e2eutil.Main).
package ranger

import (
	"os"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"
)

func TestMain(m *testing.M) { os.Exit(e2eutil.Main(m)) }
