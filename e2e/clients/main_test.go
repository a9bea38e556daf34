// Package clients runs real HiveServer2 and Spark sessions through hms-proxy against real metastores, views included. Its metastores are started once for the package
// (e2eutil.Main).
package clients

import (
	"os"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"
)

func TestMain(m *testing.M) { os.Exit(e2eutil.Main(m)) }
