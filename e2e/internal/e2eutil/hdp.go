package e2eutil

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/thrift/lib/go/thrift"
)

func AppErr(t *testing.T, err error, typ int32, fragments ...string) {
	t.Helper()
	var app thrift.TApplicationException
	if !errors.As(err, &app) || app.TypeId() != typ {
		t.Fatalf("want TApplicationException type %d containing %q, got %v", typ, fragments, err)
	}
	for _, f := range fragments {
		if !strings.Contains(app.Error(), f) {
			t.Fatalf("TApplicationException %q lacks %q", app.Error(), f)
		}
	}
}
