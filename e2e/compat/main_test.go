// Package compat runs the compatibility layer against real metastores and their real clients: the adapters between Hive 3, Hive 4 and HDP API forms, lossless writes, the profiles, and the strict reader against Hive's own. Its metastores are started once for the package
// (e2eutil.Main).
package compat

import (
	"os"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"
)

func TestMain(m *testing.M) { os.Exit(e2eutil.Main(m)) }
