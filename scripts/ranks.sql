-- ranks.sql: the merge of a run's ranks reduced one by one (docs/scale.md).
--
-- Each rank's bundle reduces to two small CSV files, wherever its rank ran:
--   steptrace comm RANK.stb --section instances --format csv > RANK.instances.csv
--   steptrace comm RANK.stb --section ranks --format csv > RANK.ranks.csv
-- (a row per collective kernel, and the rank's line of communication and
-- computation). This file makes the tables they go into and the views
-- that merge them into what `steptrace comm` prints for the ranks at once:
--   sqlite3 run.db < scripts/ranks.sql
--   for f in *.instances.csv; do echo ".import --csv --skip 1 $f instances"; done | sqlite3 run.db
--   for f in *.ranks.csv; do echo ".import --csv --skip 1 $f ranks"; done | sqlite3 run.db
--   sqlite3 -csv -header run.db 'SELECT * FROM collectives'   -- also: skew, ranks_merged
-- The views give comm's columns, numbers formatted as comm prints them,
-- but for each type's "(total per step)" row. Times are ns on each rank's
-- clock from its time base: one host's ranks share it, ranks of several
-- hosts are as close as those hosts' clocks (comm itself aligns them by
-- their collectives). Any SQL engine reads the same CSV files (DuckDB's
-- read_csv('*.instances.csv'), a dataframe's concat); SQLite is the one
-- the tests run (tests/scale/merge.sh).

CREATE TABLE IF NOT EXISTS instances (
  Rank INTEGER, Collective TEXT, Bytes INTEGER, Comm TEXT, Instance INTEGER,
  "Start" INTEGER, "End" INTEGER, Launch INTEGER, Hidden INTEGER, Steps INTEGER, World INTEGER);
-- as printed: the merge passes them on
CREATE TABLE IF NOT EXISTS ranks (
  Rank INTEGER, "Comm (ms)" TEXT, "Hidden (ms)" TEXT, "Exposed (ms)" TEXT, "Hidden (%)" TEXT,
  "Exposed (%)" TEXT, "Compute (ms)" TEXT, "Step (ms)" TEXT, "Exposed of Step (%)" TEXT);
CREATE INDEX IF NOT EXISTS instances_key ON instances (Collective, Bytes, Comm, Instance);

-- per collective (name, size, communicator): counts and times over the ranks; its instances
-- matched across ranks (the k-th of each rank) while every rank given has a k-th
DROP VIEW IF EXISTS coll;
CREATE VIEW coll AS
WITH n AS (SELECT COUNT(*) AS n FROM ranks),
     per AS (SELECT (SELECT Steps FROM instances WHERE Rank = (SELECT MIN(Rank) FROM ranks) LIMIT 1) * n AS per FROM n),
     counts AS (SELECT Collective, Bytes, Comm, Rank, COUNT(*) AS c FROM instances GROUP BY 1, 2, 3, 4),
     matched AS (SELECT Collective, Bytes, Comm,
                        CASE WHEN COUNT(*) = (SELECT n FROM n) THEN MIN(c) ELSE 0 END AS m
                 FROM counts GROUP BY 1, 2, 3)
SELECT i.Collective, i.Bytes, i.Comm, COUNT(*) AS count, SUM(i."End" - i."Start") AS time, SUM(i.Hidden) AS hidden,
       MAX(i.World) AS world, m.m AS matched, (SELECT per FROM per) AS per, (SELECT n FROM n) AS n,
       CASE lower(substr(i.Collective, 1, min(coalesce(nullif(instr(i.Collective, ' '), 0), 999),
                                             coalesce(nullif(instr(i.Collective, '/'), 0), 999)) - 1))
            WHEN 'allreduce' THEN 2.0 * (MAX(i.World) - 1) / MAX(i.World)
            WHEN 'allgather' THEN 1.0 * (MAX(i.World) - 1) / MAX(i.World)
            WHEN 'reducescatter' THEN 1.0 * (MAX(i.World) - 1) / MAX(i.World)
            WHEN 'broadcast' THEN 1.0 WHEN 'reduce' THEN 1.0 WHEN 'sendrecv' THEN 1.0 END AS bus
FROM instances i JOIN matched m USING (Collective, Bytes, Comm)
GROUP BY i.Collective, i.Bytes, i.Comm;

-- each matched instance: the last rank to arrive and the first (the first of them in rank order)
DROP VIEW IF EXISTS meets;
CREATE VIEW meets AS
WITH ranked AS (
  SELECT i.*, c.matched,
         ROW_NUMBER() OVER (PARTITION BY i.Collective, i.Bytes, i.Comm, i.Instance ORDER BY i."Start" DESC, i.Rank) AS from_last,
         ROW_NUMBER() OVER (PARTITION BY i.Collective, i.Bytes, i.Comm, i.Instance ORDER BY i."Start", i.Rank) AS from_first
  FROM instances i JOIN coll c USING (Collective, Bytes, Comm) WHERE i.Instance < c.matched)
SELECT Collective, Bytes, Comm, Instance,
       MAX("Start") AS max_s, MIN("Start") AS min_s, MAX("End") AS max_e, COUNT(*) * MAX("Start") - SUM("Start") AS wait,
       MAX(CASE WHEN from_last = 1 THEN Rank END) AS last_rank,
       MAX(CASE WHEN from_last = 1 THEN Launch END) AS last_launch,
       MAX(CASE WHEN from_first = 1 THEN Launch END) AS first_launch
FROM ranked GROUP BY 1, 2, 3, 4;

DROP VIEW IF EXISTS coll_meets;
CREATE VIEW coll_meets AS
SELECT Collective, Bytes, Comm,
       SUM(CASE WHEN max_e > max_s THEN max_e - max_s ELSE 0 END) AS transfer,
       SUM(max_s - min_s) AS skew, MAX(max_s - min_s) AS skew_max, SUM(wait) AS wait,
       SUM(CASE WHEN last_launch > first_launch THEN min(last_launch - first_launch, max_s - min_s) ELSE 0 END) AS host
FROM meets GROUP BY 1, 2, 3;

-- a number as comm's CSV prints it: `d` decimals, a whole count without them
DROP VIEW IF EXISTS collectives;
CREATE VIEW collectives AS
SELECT c.Collective AS Collective,
       CASE WHEN c.count % c.per = 0 THEN printf('%d', c.count / c.per) ELSE printf('%.2f', 1.0 * c.count / c.per) END AS Count,
       CASE WHEN c.Bytes THEN printf('%d', c.Bytes) ELSE '' END AS Bytes,
       printf('%.3f', c.time / c.per / 1e6) AS "Time (ms)",
       CASE WHEN c.matched AND m.transfer > 0 THEN printf('%.1f', 1.0 * m.transfer / c.matched / 1e3) ELSE '' END AS "Transfer (us)",
       CASE WHEN c.matched AND m.transfer > 0 AND c.Bytes THEN printf('%.2f', c.Bytes / (1.0 * m.transfer / c.matched)) ELSE '' END AS "Algbw (GB/s)",
       CASE WHEN c.matched AND m.transfer > 0 AND c.Bytes AND c.bus IS NOT NULL
            THEN printf('%.2f', c.Bytes / (1.0 * m.transfer / c.matched) * c.bus) ELSE '' END AS "Busbw (GB/s)",
       printf('%.1f', CASE WHEN c.time THEN 100.0 * c.hidden / c.time ELSE 0 END) AS "Hidden (%)",
       printf('%.1f', CASE WHEN c.time THEN 100.0 - 100.0 * c.hidden / c.time ELSE 0 END) AS "Exposed (%)"
FROM coll c LEFT JOIN coll_meets m USING (Collective, Bytes, Comm)
ORDER BY c.time DESC, c.Collective;

-- arrival skew: only with two ranks or more, only collectives every rank ran
DROP VIEW IF EXISTS skew;
CREATE VIEW skew AS
WITH lasts AS (SELECT Collective, Bytes, Comm, last_rank, COUNT(*) AS times FROM meets GROUP BY 1, 2, 3, 4),
     most AS (SELECT Collective, Bytes, Comm, last_rank, times,
                     ROW_NUMBER() OVER (PARTITION BY Collective, Bytes, Comm ORDER BY times DESC, last_rank) AS k
              FROM lasts)
SELECT c.Collective AS Collective, c.matched AS Instances,
       printf('%.1f', 1.0 * m.skew / c.matched / 1e3) AS "Skew Mean (us)",
       printf('%.1f', m.skew_max / 1e3) AS "Skew Max (us)",
       t.last_rank AS "Last Rank",
       printf('%.1f', 100.0 * t.times / c.matched) AS "Last (%)",
       printf('%.1f', 1.0 * m.wait / (1.0 * c.matched * (c.n - 1)) / 1e3) AS "Wait Mean (us)",
       printf('%.1f', 1.0 * m.host / c.matched / 1e3) AS "Host Late (us)",
       printf('%.1f', 1.0 * (m.skew - m.host) / c.matched / 1e3) AS "GPU Late (us)"
FROM coll c JOIN coll_meets m USING (Collective, Bytes, Comm)
     JOIN most t ON t.Collective = c.Collective AND t.Bytes = c.Bytes AND t.Comm = c.Comm AND t.k = 1
WHERE c.matched > 0 AND c.n > 1
ORDER BY c.time DESC, c.Collective;

-- the ranks' own lines, as comm prints them for the ranks at once
DROP VIEW IF EXISTS ranks_merged;
CREATE VIEW ranks_merged AS SELECT * FROM ranks ORDER BY Rank;
