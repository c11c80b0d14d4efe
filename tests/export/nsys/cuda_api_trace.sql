-- Nsight Systems' cuda_api_trace report ("CUDA API Trace"), written for
-- steptrace's tests from NVIDIA's documentation, not copied:
--   columns: Post-Collection Analysis Guide, "Statistical Reports Shipped
--   With Nsight Systems", cuda_api_trace
--   (https://docs.nvidia.com/nsight-systems/AnalysisGuide/): one row per
--   CUDA API call in time order: Start, Duration, Name, Result, CorrID,
--   Pid, Tid, T-Pri (the thread's priority) and Thread Name.
--   tables: CUPTI_ACTIVITY_KIND_RUNTIME(start, end, nameId, returnValue,
--   correlationId, globalTid), ThreadNames(nameId REFERENCES
--   StringIds(id), priority, globalTid), and nsys' serialized thread id
--   (pid = globalTid / 0x1000000 % 0x1000000, tid = globalTid % 0x1000000)
--   (User Guide, "SQLite Schema Reference" and "Common SQLite examples").
SELECT r.start AS "Start (ns)",
       r.end - r.start AS "Duration (ns)",
       s.value AS "Name",
       r.returnValue AS "Result",
       r.correlationId AS "CorrID",
       r.globalTid / 0x1000000 % 0x1000000 AS "Pid",
       r.globalTid % 0x1000000 AS "Tid",
       t.priority AS "T-Pri",
       ts.value AS "Thread Name"
FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r
JOIN StringIds AS s ON s.id = r.nameId
LEFT JOIN ThreadNames AS t ON t.globalTid = r.globalTid
LEFT JOIN StringIds AS ts ON ts.id = t.nameId
ORDER BY r.start;
