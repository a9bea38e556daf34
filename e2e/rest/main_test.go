// Package rest runs the Iceberg REST door against real metastores with real clients: PyIceberg, Spark, Trino, Iceberg's REST compatibility kit, OAuth2 with Keycloak. Its metastores are started once for the package
// (e2eutil.Main).
package rest

import (
	"os"
	"testing"

	"github.com/hms-proxy/hms-proxy/e2e/internal/e2eutil"
)

func TestMain(m *testing.M) { os.Exit(e2eutil.Main(m)) }
