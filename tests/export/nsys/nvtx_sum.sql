-- Nsight Systems' nvtx_sum report ("NVTX Range Summary"), written for
-- steptrace's tests from NVIDIA's documentation, not copied:
--   columns: Post-Collection Analysis Guide, "Statistical Reports Shipped
--   With Nsight Systems", nvtx_sum
--   (https://docs.nvidia.com/nsight-systems/AnalysisGuide/): Time is the
--   range's share of the Total Time of the ranges listed; Instances, Avg,
--   Med, Min, Max, StdDev of its durations; Style Start/End or Push/Pop;
--   Range its name, which nsys prefixes with the domain's name and a colon
--   for a range outside the default domain ("NCCL:ncclAllReduce").
--   tables: NVTX_EVENTS (User Guide, "SQLite Schema Reference"): eventType
--   REFERENCES ENUM_NSYS_EVENT_TYPE(id), 59 NvtxPushPopRange, 60
--   NvtxStartEndRange (70, 71: the same read from NVTXT files), 75
--   NvtxDomainCreate, whose row gives a domain's name (text) to its
--   domainId within its process (globalTid / 0x1000000 % 0x1000000); a
--   range's name is its registered string (textId REFERENCES StringIds(id))
--   or its text.
-- median() and stdev(): see cuda_gpu_kern_sum.sql.
WITH domains AS (
    SELECT domainId AS id, globalTid / 0x1000000 % 0x1000000 AS pid, text AS name
    FROM NVTX_EVENTS
    WHERE eventType = 75
),
ranges AS (
    SELECT COALESCE(d.name || ':', '') || COALESCE(s.value, r.text) AS name,
           CASE WHEN r.eventType IN (59, 70) THEN 'PushPop' ELSE 'StartEnd' END AS style,
           r.end - r.start AS dur
    FROM NVTX_EVENTS AS r
    LEFT JOIN domains AS d ON d.id = r.domainId AND d.pid = r.globalTid / 0x1000000 % 0x1000000
    LEFT JOIN StringIds AS s ON s.id = r.textId
    WHERE r.eventType IN (59, 60, 70, 71) AND r.end IS NOT NULL
)
SELECT 100.0 * SUM(dur) / (SELECT SUM(dur) FROM ranges) AS "Time (%)",
       SUM(dur) AS "Total Time (ns)",
       COUNT(*) AS "Instances",
       AVG(dur) AS "Avg (ns)",
       median(dur) AS "Med (ns)",
       MIN(dur) AS "Min (ns)",
       MAX(dur) AS "Max (ns)",
       stdev(dur) AS "StdDev (ns)",
       style AS "Style",
       name AS "Range"
FROM ranges
GROUP BY name, style
ORDER BY "Total Time (ns)" DESC, "Range";
