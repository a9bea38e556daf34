-- Texts in the shape Hive 3.1/4.x stores as viewExpandedText (every column
-- and table backquoted and qualified; CTE references bare), written for this
-- corpus after reading the "Expanded Query" lines of Hive's own test outputs
-- (ql/src/test/results/clientpositive/llap/create_view*.q.out). One text per
-- block, blocks separated by a line "----". Backend names; the view is in
-- database sales.
----
SELECT `src`.`value` FROM `default`.`src` WHERE `src`.`key`=86
----
SELECT `src`.`key`, `src`.`value` FROM `default`.`src`
----
SELECT `_c0` AS `valoo` FROM (SELECT upper(`src`.`value`) FROM `default`.`src` WHERE `src`.`key`=86) `view3`
----
SELECT `o`.`id`, `c`.`name` FROM `sales`.`orders` `o` JOIN `sales`.`customers` `c` ON `o`.`cust` = `c`.`id`
----
SELECT `o`.`id` FROM `sales`.`orders` `o` LEFT OUTER JOIN `dim`.`region` `r` ON (`o`.`cust` = `r`.`id`) WHERE `r`.`name` LIKE 'FROM %'
----
with `q1` as ( select `src`.`key` from `default`.`src` where `src`.`key` = '5')
select `q1`.`key` from q1
----
SELECT `a`.`key`, `b`.`value` FROM `sales`.`orders` `a`, `sales`.`customers` `b` WHERE `a`.`key` = `b`.`key`
----
SELECT `t`.`k`, `e`.`v` FROM `sales`.`orders` `t` LATERAL VIEW explode(`t`.`arr`) `e` AS `v`
----
SELECT `s`.`key` FROM (SELECT `orders`.`key` FROM `sales`.`orders` UNION ALL SELECT `customers`.`key` FROM `sales`.`customers`) `s`
----
SELECT `c`.`id` FROM `sales`.`customers` `c` WHERE EXISTS (SELECT 1 FROM `sales`.`orders` `o` WHERE `o`.`cust` = `c`.`id`)
----
SELECT `c`.`id` FROM `sales`.`customers` `c` WHERE `c`.`id` IN (SELECT `o`.`cust` FROM `sales`.`orders` `o` WHERE `o`.`amount` > 1.5BD)
----
SELECT `src`.`key`, count(*) AS `cnt` FROM `default`.`src` GROUP BY `src`.`key` HAVING count(*) > 10L ORDER BY `cnt` DESC LIMIT 5
----
SELECT `t`.`a`, row_number() OVER (PARTITION BY `t`.`b` ORDER BY `t`.`c`) AS `rn` FROM `sales`.`orders` `t`
----
SELECT `t`.`ds`, CAST(`t`.`x` AS DECIMAL(10,2)) AS `x` FROM `sales`.`orders` `t` WHERE `t`.`ds` = '2024-01-01' /* daily */
----
SELECT `a`.`id` FROM `sales`.`orders` `a` LEFT SEMI JOIN `dim`.`region` `b` ON `a`.`cust` = `b`.`id`
----
SELECT `a`.`id`, `b`.`id` FROM `sales`.`orders` `a` FULL OUTER JOIN `dim`.`region` `b` ON `a`.`cust` = `b`.`id` CROSS JOIN `dim`.`calendar` `c`
----
SELECT `t`.`sales` AS `sales`, `t`.`dim` FROM `sales`.`sales` `t`
----
SELECT `src`.`key` FROM `default`.`src` TABLESAMPLE(BUCKET 1 OUT OF 4 ON `key`) `src`
----
SELECT extract(year from `t`.`dt`) AS `y`, trim(both ' ' from `t`.`n`) AS `n` FROM `sales`.`orders` `t`
----
SELECT `x`.`a` FROM (`sales`.`orders` `x` JOIN `sales`.`customers` `y` ON `x`.`c` = `y`.`id`)
----
SELECT `t`.`s` FROM `sales`.`orders` `t` WHERE `t`.`s` = "it's \"from sales.x\"" AND `t`.`r` RLIKE '^from\\s'
----
SELECT `t`.`id` FROM `hive`.`sales`.`orders` `t`
