-- Nsight Systems' cuda_gpu_mem_size_sum report ("CUDA GPU MemOps Summary
-- (by Size)"), written for steptrace's tests from NVIDIA's documentation,
-- not copied:
--   columns: Post-Collection Analysis Guide, "Statistical Reports Shipped
--   With Nsight Systems", cuda_gpu_mem_size_sum
--   (https://docs.nvidia.com/nsight-systems/AnalysisGuide/): Total, Count,
--   Avg, Med, Min, Max, StdDev of the bytes of each operation; Operation as
--   in cuda_gpu_mem_time_sum.sql.
--   tables: CUPTI_ACTIVITY_KIND_MEMCPY(bytes, copyKind REFERENCES
--   ENUM_CUDA_MEMCPY_OPER(id)), CUPTI_ACTIVITY_KIND_MEMSET(bytes) (User
--   Guide, "SQLite Schema Reference").
-- median() and stdev(): see cuda_gpu_kern_sum.sql.
WITH ops AS (
    SELECT '[CUDA memcpy ' || e.label || ']' AS name, c.bytes AS size
    FROM CUPTI_ACTIVITY_KIND_MEMCPY AS c
    JOIN ENUM_CUDA_MEMCPY_OPER AS e ON e.id = c.copyKind
    UNION ALL
    SELECT '[CUDA memset]', m.bytes
    FROM CUPTI_ACTIVITY_KIND_MEMSET AS m
)
SELECT SUM(size) AS "Total (B)",
       COUNT(*) AS "Count",
       AVG(size) AS "Avg (B)",
       median(size) AS "Med (B)",
       MIN(size) AS "Min (B)",
       MAX(size) AS "Max (B)",
       stdev(size) AS "StdDev (B)",
       name AS "Operation"
FROM ops
GROUP BY name
ORDER BY "Total (B)" DESC, "Operation";
