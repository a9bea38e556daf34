// Package policy runs the policies of the chain against real metastores: access modes, exposure, the table guards, and what the proxy shows of them (metrics, audit, dashboards). Its metastores are started once for the package
// (e2eutil.Main).
package policy

import (
	"os"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"
)

func TestMain(m *testing.M) { os.Exit(e2eutil.Main(m)) }
