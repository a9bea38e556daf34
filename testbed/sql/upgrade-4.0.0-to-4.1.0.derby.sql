-- hms-proxy test bed: the Derby schema change between Hive metastore schema 4.0.0 and 4.1.0.
-- The 4.1.0 scripts are not published on Maven Central (only the 4.0.1 bin tarball, schema 4.0.0, is), so the
-- test bed applies the one 4.1.0 change itself, through Hive's own schema tool (-upgradeSchemaFrom 4.0.0):
-- HIVE-27725 stopped storing catalog/database/table/partition names in the column statistics tables (stats rows
-- are found through TBL_ID / PART_ID), so the 4.1.0 ObjectStore no longer writes those NOT NULL columns.

-- table-level statistics: re-key the index on TBL_ID, then remove the name columns
DROP INDEX "APP"."TAB_COL_STATS_IDX";
CREATE INDEX "APP"."TAB_COL_STATS_IDX" ON "APP"."TAB_COL_STATS" ("TBL_ID", "COLUMN_NAME");
ALTER TABLE "APP"."TAB_COL_STATS" DROP COLUMN "CAT_NAME";
ALTER TABLE "APP"."TAB_COL_STATS" DROP COLUMN "DB_NAME";
ALTER TABLE "APP"."TAB_COL_STATS" DROP COLUMN "TABLE_NAME";

-- partition-level statistics: re-key the index on PART_ID, then remove the name columns
DROP INDEX "APP"."PCS_STATS_IDX";
CREATE INDEX "APP"."PCS_STATS_IDX" ON "APP"."PART_COL_STATS" ("PART_ID", "COLUMN_NAME");
ALTER TABLE "APP"."PART_COL_STATS" DROP COLUMN "CAT_NAME";
ALTER TABLE "APP"."PART_COL_STATS" DROP COLUMN "DB_NAME";
ALTER TABLE "APP"."PART_COL_STATS" DROP COLUMN "TABLE_NAME";
ALTER TABLE "APP"."PART_COL_STATS" DROP COLUMN "PARTITION_NAME";

-- record the schema version the 4.1.0 server expects; must stay last
UPDATE "APP".VERSION SET SCHEMA_VERSION='4.1.0', VERSION_COMMENT='Hive release version 4.1.0' WHERE VER_ID=1;
