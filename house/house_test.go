package house

import (
	"path/filepath"
	"runtime"
	"testing"
)

// root is the repository root.
func root(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot find the repository")
	}
	return filepath.Dir(filepath.Dir(file))
}

const module = "github.com/hms-proxy/hms-proxy"
