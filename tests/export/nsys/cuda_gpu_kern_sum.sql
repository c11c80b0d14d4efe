-- Nsight Systems' cuda_gpu_kern_sum report ("CUDA GPU Kernel Summary"),
-- written for steptrace's tests from NVIDIA's documentation, not copied:
--   columns and their meaning: Post-Collection Analysis Guide, "Statistical
--   Reports Shipped With Nsight Systems", cuda_gpu_kern_sum
--   (https://docs.nvidia.com/nsight-systems/AnalysisGuide/): Time is the
--   kernel's share of the Total Time of the kernels listed; Instances, Avg,
--   Med, Min, Max and StdDev of its execution times; Name its name with
--   templates (the report's default, demangled).
--   tables: the SQLite export schema reference (User Guide, "SQLite Schema
--   Reference"): CUPTI_ACTIVITY_KIND_KERNEL(start, end, demangledName
--   REFERENCES StringIds(id)).
-- median() and stdev() are the aggregates nsys' report scripts add to
-- SQLite; nsys_reports.py adds its own.
SELECT 100.0 * SUM(k.end - k.start) / (SELECT SUM(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL) AS "Time (%)",
       SUM(k.end - k.start) AS "Total Time (ns)",
       COUNT(*) AS "Instances",
       AVG(k.end - k.start) AS "Avg (ns)",
       median(k.end - k.start) AS "Med (ns)",
       MIN(k.end - k.start) AS "Min (ns)",
       MAX(k.end - k.start) AS "Max (ns)",
       stdev(k.end - k.start) AS "StdDev (ns)",
       s.value AS "Name"
FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
JOIN StringIds AS s ON s.id = k.demangledName
GROUP BY k.demangledName
ORDER BY "Total Time (ns)" DESC, "Name";
