// Package guards holds the proxy's write guards over the Table struct, as
// the router holds it (a lossless wire.Value with thriftgen's canonical field
// ids): the transactional DDL guard (guard.transactional-ddl.*) and the
// Iceberg pointer guard (routing.iceberg-pointer-guard.*). The functions are
// pure; the one part that needs backend calls (Repairer) takes a small
// Backend interface the router implements.
package guards

import (
	"strings"

	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// Field ids of the canonical schema used here (checked against thriftgen by
// a test).
const (
	tblName       int16 = 1
	tblDB         int16 = 2
	tblSD         int16 = 7
	tblParams     int16 = 9
	tblType       int16 = 12
	sdInputFmt    int16 = 3
	sdOutputFmt   int16 = 4
	sdSerde       int16 = 7
	serdeLib      int16 = 2
	envProperties int16 = 1
)

// Table types.
const (
	ManagedTable  = "MANAGED_TABLE"
	ExternalTable = "EXTERNAL_TABLE"
)

// param returns the value of a parameter of a map<string,string> value
// (key compared exactly) and whether it is there.
func param(m *wire.Value, key string) (string, bool) {
	if m == nil {
		return "", false
	}
	for i := 0; i+1 < len(m.Elems); i += 2 {
		if string(m.Elems[i].Str) == key {
			return string(m.Elems[i+1].Str), true
		}
	}
	return "", false
}

// paramFold is param with the key compared ignoring case.
func paramFold(m *wire.Value, key string) (string, bool) {
	if m == nil {
		return "", false
	}
	for i := 0; i+1 < len(m.Elems); i += 2 {
		if strings.EqualFold(string(m.Elems[i].Str), key) {
			return string(m.Elems[i+1].Str), true
		}
	}
	return "", false
}

// setParam replaces or appends key=val.
func setParam(m *wire.Value, key, val string) { m.Put(key, val) }

// delParamFold removes every key equal to key ignoring case.
func delParamFold(m *wire.Value, key string) {
	out := m.Elems[:0]
	for i := 0; i+1 < len(m.Elems); i += 2 {
		if !strings.EqualFold(string(m.Elems[i].Str), key) {
			out = append(out, m.Elems[i], m.Elems[i+1])
		}
	}
	m.Elems = out
}

func newStringMap() wire.Value {
	return wire.Value{Type: wire.TMap, KeyType: wire.TString, ElemType: wire.TString}
}

// params returns the Table's parameters map, creating it if asked.
func params(tbl *wire.Value, create bool) *wire.Value {
	p := tbl.Field(tblParams)
	if p == nil && create {
		tbl.Set(tblParams, newStringMap())
		p = tbl.Field(tblParams)
	}
	if p != nil && (p.Type != wire.TMap || p.KeyType != wire.TString || p.ElemType != wire.TString) {
		return nil
	}
	return p
}

// qualified is "db.table" of a Table, for messages.
func qualified(tbl *wire.Value) string {
	return tbl.Field(tblDB).String() + "." + tbl.Field(tblName).String()
}

// TablePaths returns, for a method, the paths (field ids from the method's
// args struct) to every Table it carries: [3] for alter_table's new_tbl,
// [1 1] for create_table_req's request.table. They are derived from the
// schema: fields of struct type Table, directly or one struct deeper.
func TablePaths(method string) [][]int16 {
	m := thriftgen.LookupMethod(method)
	if m == nil || m.Args == nil {
		return nil
	}
	var out [][]int16
	for _, f := range m.Args.Fields {
		if f.Type.Kind != thriftgen.KindStruct {
			continue
		}
		if f.Type.Name == "Table" {
			out = append(out, []int16{f.ID})
			continue
		}
		if s := thriftgen.LookupStruct(f.Type.Name); s != nil {
			for _, g := range s.Fields {
				if g.Type.Kind == thriftgen.KindStruct && g.Type.Name == "Table" {
					out = append(out, []int16{f.ID, g.ID})
				}
			}
		}
	}
	return out
}

// DDLMethods lists the create_table* and alter_table* methods of the schema
// that carry a Table: the RPCs the transactional DDL guard applies to.
func DDLMethods() []string {
	var out []string
	for _, m := range thriftgen.AllMethods() {
		if (strings.HasPrefix(m.Name, "create_table") || strings.HasPrefix(m.Name, "alter_table")) && len(TablePaths(m.Name)) > 0 {
			out = append(out, m.Name)
		}
	}
	return out
}

// At follows a path of field ids from v; nil when a step is absent.
func At(v *wire.Value, path []int16) *wire.Value {
	for _, id := range path {
		if v == nil || v.Type != wire.TStruct {
			return nil
		}
		v = v.Field(id)
	}
	if v != nil && v.Type != wire.TStruct {
		return nil
	}
	return v
}
