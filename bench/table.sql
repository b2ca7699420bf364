-- A real program's allocations for the C heap benchmarks: sqlite3 :memory: < bench/table.sql
-- (a 200,000-row table, its index, a scan and a sort; the same output every run).
CREATE TABLE t(a INTEGER, b TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 200000)
INSERT INTO t SELECT x, printf('row %d %d', x, (x * 7919) % 100003) FROM c;
CREATE INDEX ti ON t(b);
SELECT count(*), sum(length(b)) FROM t WHERE b LIKE 'row 1%';
SELECT b FROM t ORDER BY b DESC LIMIT 3;
