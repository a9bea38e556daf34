package e2eutil

import (
	"strings"
	"testing"

	"github.com/hms-proxy/hms-proxy/thriftgen"
)

// Rows of the adapter table (adapters_test.go) for the adapters added for
// HiveServer2 4.x on 3.1.3.
func HiveServer2AdapterRows() []AdapterRow {
	return []AdapterRow{
		{Name: "translate_table_dryrun", Method: "translate_table_dryrun", Run: func(t *testing.T, e *AdapterEnv) {
			in := Table(e.Ext(), "ctas")
			got, err := e.C4.TranslateTableDryrun(Ctx(t), &thriftgen.CreateTableRequest{Table: in})
			if err != nil || got.TableName != "ctas" || got.DbName != e.Ext() || got.Sd.Cols[0].Name != "id" || got.TableType != in.TableType {
				t.Fatalf("translate_table_dryrun must answer the table as sent: %+v %v", got, err)
			}
			e.NoBackendCall(t, "translate_table_dryrun")
			Counted(t, e.P, "method", "translate_table_dryrun", "to_api", "answered_by_proxy")
		}},
		{Name: "get_scheduled_query", Method: "get_scheduled_query", Run: func(t *testing.T, e *AdapterEnv) {
			_, err := e.C4.GetScheduledQuery(Ctx(t), &thriftgen.ScheduledQueryKey{ScheduleName: "q", ClusterNamespace: "e2e"})
			if !IsNotFound(err) || !strings.Contains(err.Error(), "has no scheduled queries") {
				t.Fatalf("get_scheduled_query: want NoSuchObjectException saying the runtime has no scheduled queries, got %v", err)
			}
			e.NoBackendCall(t, "get_scheduled_query")
		}},
		{Name: "scheduled_query_poll", Method: "scheduled_query_poll", Run: func(t *testing.T, e *AdapterEnv) {
			r, err := e.C4.ScheduledQueryPoll(Ctx(t), &thriftgen.ScheduledQueryPollRequest{ClusterNamespace: "e2e"})
			if err != nil || r.ScheduleKey != nil || r.ExecutionId != nil {
				t.Fatalf("scheduled_query_poll: want nothing due, got %+v %v", r, err)
			}
			e.NoBackendCall(t, "scheduled_query_poll")
		}},
		{Name: "set_aggr_stats_for merging on 3.1.3", Method: "set_aggr_stats_for", Run: func(t *testing.T, e *AdapterEnv) {
			// Column "id" has stored statistics, "name" none: a merge deletes the
			// stored ones (3.1.3 would die merging them) and writes the new ones
			// of "name" as sent.
			tb := Table(e.Db, "st")
			tb.Sd.Cols = append(tb.Sd.Cols, &thriftgen.FieldSchema{Name: "name", Type: "bigint"})
			if err := e.Direct.CreateTable(Ctx(t), tb); err != nil {
				t.Fatal(err)
			}
			long := func(col string, hi int64) *thriftgen.ColumnStatisticsObj {
				return &thriftgen.ColumnStatisticsObj{ColName: col, ColType: "bigint", StatsData: &thriftgen.ColumnStatisticsData{
					LongStats: &thriftgen.LongColumnStatsData{LowValue: AdI64(1), HighValue: AdI64(hi), NumNulls: 0, NumDVs: hi}}}
			}
			stats := func(db string, objs ...*thriftgen.ColumnStatisticsObj) *thriftgen.ColumnStatistics {
				return &thriftgen.ColumnStatistics{StatsDesc: &thriftgen.ColumnStatisticsDesc{IsTblLevel: true, DbName: db, TableName: "st"}, StatsObj: objs}
			}
			if _, err := e.Direct.UpdateTableColumnStatistics(Ctx(t), stats(e.Db, long("id", 3))); err != nil {
				t.Fatal(err)
			}
			tru := true
			ok, err := e.C4.SetAggrStatsFor(Ctx(t), &thriftgen.SetPartitionsStatsRequest{ColStats: []*thriftgen.ColumnStatistics{
				stats(e.Ext(), long("id", 9), long("name", 4))}, NeedMerge: &tru, WriteId: AdI64(0)})
			if err != nil || !ok {
				t.Fatalf("set_aggr_stats_for with needMerge: %v %v", ok, err)
			}
			e.BackendSaw(t, e.Tap2, "set_aggr_stats_for", e.Db, "get_table_statistics_req", "delete_table_column_statistics", "set_aggr_stats_for")
			got, err := e.Direct.GetTableStatisticsReq(Ctx(t), &thriftgen.TableStatsRequest{DbName: e.Db, TblName: "st", ColNames: []string{"id", "name"}})
			if err != nil || len(got.TableStats) != 1 || got.TableStats[0].ColName != "name" || *got.TableStats[0].StatsData.LongStats.HighValue != 4 {
				t.Fatalf("want only the new statistics of name (id's deleted), got %+v %v", got, err)
			}
		}},
	}
}
