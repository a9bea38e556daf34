package e2eutil

import (
	"errors"
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

func Strp(s string) *string { return &s }

func MkDB(t *testing.T, c *thriftgen.Client, name string) {
	t.Helper()
	if err := c.CreateDatabase(Ctx(t), &thriftgen.Database{Name: name, Description: "e2e"}); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() { _ = c.DropDatabase(Ctx(t), name, true, true) })
}

func Table(db, name string) *thriftgen.Table {
	return &thriftgen.Table{TableName: name, DbName: db, Owner: "e2e", TableType: "EXTERNAL_TABLE",
		Parameters: map[string]string{"EXTERNAL": "TRUE"},
		Sd: &thriftgen.StorageDescriptor{Cols: []*thriftgen.FieldSchema{{Name: "id", Type: "bigint"}},
			InputFormat:  "org.apache.hadoop.mapred.TextInputFormat",
			OutputFormat: "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
			SerdeInfo:    &thriftgen.SerDeInfo{SerializationLib: "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"}}}
}

func MkTable(t *testing.T, c *thriftgen.Client, db, name string) {
	t.Helper()
	if err := c.CreateTable(Ctx(t), Table(db, name)); err != nil {
		t.Fatalf("create table %s.%s: %v", db, name, err)
	}
}

// MetaErr asserts a MetaException whose message contains every fragment.
func MetaErr(t *testing.T, err error, fragments ...string) {
	t.Helper()
	var me *thriftgen.MetaException
	if !errors.As(err, &me) {
		t.Fatalf("want MetaException containing %q, got %v", fragments, err)
	}
	for _, f := range fragments {
		if !strings.Contains(me.Message, f) {
			t.Fatalf("MetaException %q lacks %q", me.Message, f)
		}
	}
}
