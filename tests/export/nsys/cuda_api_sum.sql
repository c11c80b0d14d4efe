-- Nsight Systems' cuda_api_sum report ("CUDA API Summary"), written for
-- steptrace's tests from NVIDIA's documentation, not copied:
--   columns: Post-Collection Analysis Guide, "Statistical Reports Shipped
--   With Nsight Systems", cuda_api_sum
--   (https://docs.nvidia.com/nsight-systems/AnalysisGuide/): Time is the
--   function's share of the Total Time of the functions listed; Num Calls,
--   Avg, Med, Min, Max, StdDev of the calls' durations; Name the function.
--   tables: CUPTI_ACTIVITY_KIND_RUNTIME(start, end, nameId REFERENCES
--   StringIds(id)) (User Guide, "SQLite Schema Reference"). nsys stores the
--   runtime's versioned names (cudaLaunchKernel_v7000) and prints them
--   without the version; steptrace stores the plain name.
-- median() and stdev(): see cuda_gpu_kern_sum.sql.
SELECT 100.0 * SUM(r.end - r.start) / (SELECT SUM(end - start) FROM CUPTI_ACTIVITY_KIND_RUNTIME) AS "Time (%)",
       SUM(r.end - r.start) AS "Total Time (ns)",
       COUNT(*) AS "Num Calls",
       AVG(r.end - r.start) AS "Avg (ns)",
       median(r.end - r.start) AS "Med (ns)",
       MIN(r.end - r.start) AS "Min (ns)",
       MAX(r.end - r.start) AS "Max (ns)",
       stdev(r.end - r.start) AS "StdDev (ns)",
       s.value AS "Name"
FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r
JOIN StringIds AS s ON s.id = r.nameId
GROUP BY r.nameId
ORDER BY "Total Time (ns)" DESC, "Name";
