-- Nsight Systems' cuda_gpu_mem_time_sum report ("CUDA GPU MemOps Summary
-- (by Time)"), written for steptrace's tests from NVIDIA's documentation,
-- not copied:
--   columns: Post-Collection Analysis Guide, "Statistical Reports Shipped
--   With Nsight Systems", cuda_gpu_mem_time_sum
--   (https://docs.nvidia.com/nsight-systems/AnalysisGuide/): Time is the
--   operation's share of the Total Time of the operations listed; Count,
--   Avg, Med, Min, Max, StdDev of its execution times; Operation its name,
--   as nsys prints it: "[CUDA memcpy <copy kind>]" or "[CUDA memset]".
--   tables: the SQLite export schema reference (User Guide, "SQLite Schema
--   Reference"): CUPTI_ACTIVITY_KIND_MEMCPY.copyKind REFERENCES
--   ENUM_CUDA_MEMCPY_OPER(id), whose label names the kind
--   ("Host-to-Device"); CUPTI_ACTIVITY_KIND_MEMSET.
-- median() and stdev(): see cuda_gpu_kern_sum.sql.
WITH ops AS (
    SELECT '[CUDA memcpy ' || e.label || ']' AS name, c.end - c.start AS dur
    FROM CUPTI_ACTIVITY_KIND_MEMCPY AS c
    JOIN ENUM_CUDA_MEMCPY_OPER AS e ON e.id = c.copyKind
    UNION ALL
    SELECT '[CUDA memset]', m.end - m.start
    FROM CUPTI_ACTIVITY_KIND_MEMSET AS m
)
SELECT 100.0 * SUM(dur) / (SELECT SUM(dur) FROM ops) AS "Time (%)",
       SUM(dur) AS "Total Time (ns)",
       COUNT(*) AS "Count",
       AVG(dur) AS "Avg (ns)",
       median(dur) AS "Med (ns)",
       MIN(dur) AS "Min (ns)",
       MAX(dur) AS "Max (ns)",
       stdev(dur) AS "StdDev (ns)",
       name AS "Operation"
FROM ops
GROUP BY name
ORDER BY "Total Time (ns)" DESC, "Operation";
