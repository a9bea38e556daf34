package e2eutil

import (
	"strings"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// HiveView is a view as Hive itself stores it (CREATE VIEW in HiveServer2):
// the client's text, Hive's expanded text with backquoted qualified names,
// the view's columns in a storage descriptor.
func HiveView(db, name, original, expanded string, cols ...string) *thriftgen.Table {
	var fs []*thriftgen.FieldSchema
	for _, c := range cols {
		n, ty, _ := strings.Cut(c, " ")
		fs = append(fs, &thriftgen.FieldSchema{Name: n, Type: ty})
	}
	return &thriftgen.Table{TableName: name, DbName: db, Owner: "hive", TableType: "VIRTUAL_VIEW",
		ViewOriginalText: original, ViewExpandedText: expanded, Parameters: map[string]string{},
		PartitionKeys: []*thriftgen.FieldSchema{},
		Sd: &thriftgen.StorageDescriptor{Cols: fs, InputFormat: "org.apache.hadoop.mapred.SequenceFileInputFormat",
			OutputFormat: "org.apache.hadoop.hive.ql.io.HiveSequenceFileOutputFormat",
			SerdeInfo:    &thriftgen.SerDeInfo{SerializationLib: "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe", Parameters: map[string]string{}}}}
}
