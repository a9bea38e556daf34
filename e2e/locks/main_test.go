// Package locks runs transactions and locks through hms-proxy against real metastores: the synthetic lock shim, split locks, its stores. Its metastores are started once for the package
// (e2eutil.Main).
package locks

import (
	"os"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"
)

func TestMain(m *testing.M) { os.Exit(e2eutil.Main(m)) }
