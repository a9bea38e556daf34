import sys
from pyspark.sql import SparkSession
uri = sys.argv[1]
spark = (SparkSession.builder.master("local[1]").appName("views")
         .config("spark.sql.catalogImplementation", "hive")
         .config("spark.hadoop.hive.metastore.uris", uri)
         .config("spark.sql.warehouse.dir", "/tmp/sparkviews/wh")
         .config("spark.ui.enabled", "false")
         .config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.driver.host", "127.0.0.1")
         .enableHiveSupport().getOrCreate())
s = spark.sql
s("CREATE DATABASE IF NOT EXISTS sales")
s("CREATE DATABASE IF NOT EXISTS dim")
s("CREATE TABLE IF NOT EXISTS sales.orders (id INT, cust INT, amount DOUBLE, note STRING) USING parquet")
s("CREATE TABLE IF NOT EXISTS sales.customers (id INT, name STRING) USING parquet")
s("CREATE TABLE IF NOT EXISTS dim.region (id INT, name STRING) USING parquet")
s("USE sales")
views = {
 "v_simple": "SELECT id, amount FROM orders WHERE amount > 10",
 "v_qualified": "SELECT o.id, c.name FROM sales.orders o JOIN sales.customers c ON o.cust = c.id",
 "v_backquoted": "SELECT `o`.`id` FROM `sales`.`orders` `o` LEFT OUTER JOIN `dim`.`region` r ON `o`.`cust` = r.id",
 "v_cte": "WITH big AS (SELECT * FROM orders WHERE amount > 100) SELECT big.id, 'from sales.orders' AS s FROM big",
 "v_comma": "SELECT o.id FROM orders o, dim.region r WHERE o.cust = r.id -- join by comma\n",
 "v_subq": "SELECT x.id FROM (SELECT id FROM sales.orders UNION ALL SELECT id FROM customers) x",
 "v_comment": "/* totals from sales.orders */ SELECT sum(amount) AS total, \"dim.region\" AS lbl FROM orders",
 "v_exists": "SELECT id FROM customers c WHERE EXISTS (SELECT 1 FROM sales.orders o WHERE o.cust = c.id)",
 "v_extract": "SELECT id, extract(year FROM current_date()) AS y, trim(BOTH ' ' FROM note) AS n FROM orders",
 "v_semi": "SELECT c.name FROM customers c LEFT SEMI JOIN orders o ON o.cust = c.id",
 "v_catalog": "SELECT id FROM spark_catalog.sales.orders",
 "v_tvf": "SELECT r.id FROM range(3) r CROSS JOIN dim.region",
}
for name, q in views.items():
    s(f"DROP VIEW IF EXISTS sales.{name}")
    s(f"CREATE VIEW sales.{name} AS {q}")
s("USE dim")
s("CREATE OR REPLACE VIEW sales.v_other_current AS SELECT id FROM region")
s("SET spark.sql.ansi.enabled=true")
s("CREATE OR REPLACE VIEW sales.v_ansi AS SELECT id FROM sales.orders")
print("OK", spark.version)
spark.stop()
