package compat

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/hms-proxy/hms-proxy/thriftgen"
	"github.com/hms-proxy/hms-proxy/wire"
)

// A field a runtime lacks may also carry something the runtime keeps in
// another form: what a client of that runtime sends in its place. Such a
// field is translated, not refused: the guard rewrites the struct that
// holds it into the older form (translate.go), then checks the rewritten
// call like any other. One entry per field; the translation reads the
// method, since the same struct means different things in different calls.

// translation rewrites parent (a struct holding Field) so that it carries
// v, the field's value, the way the older runtime keeps it; the guard then
// removes the field. An error refuses the call.
type translation struct {
	Struct, Field string
	Why           string
	apply         func(method string, parent, v *wire.Value) error
}

var translations = []translation{
	{"Table", "dictionary", "Table.dictionary carries HiveServer2 4.x's statistics state for a new table, which an older client writes into the table's parameters", tableDictionary},
	{"Table", "txnId", "Table.txnId names the transaction that creates a transactional table; a Hive 4.1 metastore reads it only to suffix the directory of a soft-delete table", tableTxnID},
}

// tableTxnID: HiveServer2 4.x sends the creating transaction with a
// transactional table. A Hive 4.1 metastore reads it for one thing
// (HMSHandler.getTableSuffix): with the table parameter soft_delete=true
// the table's directory is suffixed with it, so that a dropped and
// re-created table never shares a directory with readers of the old one.
// Without soft_delete it changes nothing a Hive 4.1 metastore does, and it
// is left out; with it, the older runtime cannot make that directory.
func tableTxnID(_ string, tbl, v *wire.Value) error {
	if params := tbl.Field(fid("Table", "parameters")); params != nil {
		for i := 0; i+1 < len(params.Elems); i += 2 {
			if strings.EqualFold(string(params.Elems[i].Str), "soft_delete") && strings.EqualFold(strings.TrimSpace(string(params.Elems[i+1].Str)), "true") {
				return fmt.Errorf("the table's Table.txnId = %d with soft_delete=true asks for a table directory suffixed with the creating transaction, which the backend runtime cannot make (set hive.acid.createtable.softdelete=false and hive.acid.locklessreads.enabled=false on HiveServer2 for this catalog)", v.Int)
			}
		}
	}
	return nil
}

func translationOf(st *thriftgen.Struct, f *thriftgen.Field) *translation {
	for i := range translations {
		if translations[i].Struct == st.Name && translations[i].Field == f.Name {
			return &translations[i]
		}
	}
	return nil
}

// dictStatsKey is the one entry HiveServer2 4.x puts into Table.dictionary
// (CreateTableDesc): the JSON of StatsSetupConst.ColumnStatsSetup.
const dictStatsKey = "setStatsStateForCreateTable"

// statsSetup is StatsSetupConst.ColumnStatsSetup as Hive 4 writes it.
type statsSetup struct {
	Enabled        bool     `json:"enabled"`
	IsIcebergTable bool     `json:"isIcebergTable"`
	ColumnNames    []string `json:"columnNames"`
}

// basicStats are the statistics Hive 3.1.3's client sets to 0 for a new
// empty table (StatsSetupConst.supportedStats of 3.1.3).
var basicStats = []string{"numFiles", "numRows", "totalSize", "rawDataSize"}

// tableDictionary translates Table.dictionary. A Hive 4.1 metastore reads
// it only when it creates a table (HMSHandler.create_table_core →
// MetaStoreServerUtils.updateTableStatsForCreateTable) and ignores it
// elsewhere. There, an enabled statistics setup marks the new table's
// statistics accurate when its directory is new or empty: every basic
// statistic 0 and each named column's statistics accurate. HiveServer2
// 3.1.3 writes exactly that into the table's parameters itself
// (CreateTableDesc.toTable, StatsSetupConst.setStatsStateForCreateTable),
// for a table without a location. A table given a location is left as it
// is: whether that directory is empty, only the backend can see, and
// statistics left unset are never wrong (the older metastore counts the
// files itself and Hive does not answer from unmarked statistics).
func tableDictionary(method string, tbl, dict *wire.Value) error {
	values := dict.Field(fid("ObjectDictionary", "values"))
	if values == nil {
		return nil
	}
	var setup *statsSetup
	for i := 0; i+1 < len(values.Elems); i += 2 {
		key := string(values.Elems[i].Str)
		if key != dictStatsKey {
			return fmt.Errorf("the entry %q of Table.dictionary has no equivalent in the backend runtime", key)
		}
		list := values.Elems[i+1].Elems
		if len(list) == 0 {
			continue
		}
		setup = &statsSetup{}
		if err := json.Unmarshal(list[0].Str, setup); err != nil {
			return fmt.Errorf("the entry %s of Table.dictionary is not the statistics setup Hive writes (%q): %v", dictStatsKey, list[0].Str, err)
		}
	}
	if !strings.HasPrefix(method, "create_table") || setup == nil || !setup.Enabled {
		return nil // read by a Hive 4 metastore on create only; a disabled setup asks for nothing
	}
	sd := tbl.Field(fid("Table", "sd"))
	if !setup.IsIcebergTable && isSet(sd.Field(fid("StorageDescriptor", "location"))) {
		return nil
	}
	cols := setup.ColumnNames
	if len(cols) == 0 && sd != nil {
		if l := sd.Field(fid("StorageDescriptor", "cols")); l != nil {
			for _, c := range l.Elems {
				cols = append(cols, c.Field(fid("FieldSchema", "name")).String())
			}
		}
	}
	params := tbl.Field(fid("Table", "parameters"))
	if params == nil {
		tbl.Set(fid("Table", "parameters"), wire.Value{Type: wire.TMap, KeyType: wire.TString, ElemType: wire.TString})
		params = tbl.Field(fid("Table", "parameters"))
	}
	for _, k := range basicStats {
		params.Put(k, "0")
	}
	params.Put("COLUMN_STATS_ACCURATE", columnStatsAccurate(cols))
	return nil
}

// columnStatsAccurate renders COLUMN_STATS_ACCURATE as Hive's Jackson
// writer does: basic statistics true and the columns, sorted, true.
func columnStatsAccurate(cols []string) string {
	var b strings.Builder
	b.WriteString(`{"BASIC_STATS":"true"`)
	if len(cols) > 0 {
		sorted := append([]string(nil), cols...)
		sort.Strings(sorted)
		b.WriteString(`,"COLUMN_STATS":{`)
		for i, c := range sorted {
			if i > 0 {
				b.WriteByte(',')
			}
			name, _ := json.Marshal(c)
			b.Write(name)
			b.WriteString(`:"true"`)
		}
		b.WriteByte('}')
	}
	b.WriteByte('}')
	return b.String()
}

// translate rewrites the arguments of method (args: its *_args struct)
// with every translation that applies, removing the translated fields, and
// reports each as a Drop (Translated).
func translate(method string, args *wire.Value, r *Runtime) ([]Drop, error) {
	m := thriftgen.LookupMethod(method)
	if m == nil || m.Args == nil {
		return nil, nil
	}
	var out Verdict
	var walk func(st *thriftgen.Struct, v *wire.Value) error
	var walkType func(t *thriftgen.Type, v *wire.Value) error
	walkType = func(t *thriftgen.Type, v *wire.Value) error {
		switch t.Kind {
		case thriftgen.KindStruct:
			if st := thriftgen.LookupStruct(t.Name); st != nil && v.Type == wire.TStruct {
				return walk(st, v)
			}
		case thriftgen.KindList, thriftgen.KindSet:
			for i := range v.Elems {
				if err := walkType(t.Elem, &v.Elems[i]); err != nil {
					return err
				}
			}
		case thriftgen.KindMap:
			for i := 0; i+1 < len(v.Elems); i += 2 {
				if err := walkType(t.Key, &v.Elems[i]); err != nil {
					return err
				}
				if err := walkType(t.Value, &v.Elems[i+1]); err != nil {
					return err
				}
			}
		}
		return nil
	}
	walk = func(st *thriftgen.Struct, v *wire.Value) error {
		var gone []int16
		for i := 0; i < len(v.Fields); i++ { // apply may add fields to v
			f := st.FieldByID(v.Fields[i].ID)
			if f == nil || f.Profiles.Has(r.Bit) {
				continue
			}
			if tr := translationOf(st, f); tr != nil {
				fv := v.Fields[i].V
				if err := tr.apply(method, v, &fv); err != nil {
					return refused("%v; hms-proxy does not drop data silently", err)
				}
				out.drop(Drop{Struct: st.Name, Field: f.Name, Value: renderValue(f.Type, &fv), Why: tr.Why, Translated: true})
				gone = append(gone, f.ID)
			}
		}
		kept := v.Fields[:0]
		for _, fld := range v.Fields {
			if !containsID(gone, fld.ID) {
				kept = append(kept, fld)
			}
		}
		v.Fields = kept
		for i := range v.Fields {
			if f := st.FieldByID(v.Fields[i].ID); f != nil {
				if err := walkType(f.Type, &v.Fields[i].V); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(m.Args, args); err != nil {
		return nil, err
	}
	return out.Dropped, nil
}

func containsID(ids []int16, id int16) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
