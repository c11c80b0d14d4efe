-- Nsight Systems' cuda_gpu_trace report ("CUDA GPU Trace"), written for
-- steptrace's tests from NVIDIA's documentation, not copied:
--   columns: Post-Collection Analysis Guide, "Statistical Reports Shipped
--   With Nsight Systems", cuda_gpu_trace
--   (https://docs.nvidia.com/nsight-systems/AnalysisGuide/): one row per
--   kernel, memcpy and memset in time order: Start, Duration, CorrId, the
--   grid and block (GrdX ... BlkZ), Reg/Trd, StcSMem and DymSMem (MB),
--   Bytes (MB) and Throughput (MB/s) of a copy or memset, SrcMemKd and
--   DstMemKd, Device (the GPU's name and its CUDA index), Ctx, GreenCtx,
--   Strm and Name (a copy "[CUDA memcpy <kind>]", a memset "[CUDA memset]").
--   tables: CUPTI_ACTIVITY_KIND_KERNEL, _MEMCPY, _MEMSET, ENUM_CUDA_MEMCPY_OPER,
--   ENUM_CUDA_MEM_KIND, TARGET_INFO_CUDA_DEVICE(gpuId, cudaId, pid) and
--   TARGET_INFO_GPU(id, name) (User Guide, "SQLite Schema Reference").
--   MB here are 10^6 bytes.
WITH work AS (
    SELECT k.start, k.end, k.correlationId, k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ,
           k.registersPerThread AS regs, k.staticSharedMemory AS smem, k.dynamicSharedMemory AS dmem,
           NULL AS bytes, NULL AS src, NULL AS dst, k.deviceId, k.contextId, k.greenContextId, k.streamId,
           k.globalPid, s.value AS name
    FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN StringIds AS s ON s.id = k.demangledName
    UNION ALL
    SELECT c.start, c.end, c.correlationId, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
           c.bytes, c.srcKind, c.dstKind, c.deviceId, c.contextId, c.greenContextId, c.streamId,
           c.globalPid, '[CUDA memcpy ' || e.label || ']'
    FROM CUPTI_ACTIVITY_KIND_MEMCPY AS c JOIN ENUM_CUDA_MEMCPY_OPER AS e ON e.id = c.copyKind
    UNION ALL
    SELECT m.start, m.end, m.correlationId, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
           m.bytes, m.memKind, NULL, m.deviceId, m.contextId, m.greenContextId, m.streamId,
           m.globalPid, '[CUDA memset]'
    FROM CUPTI_ACTIVITY_KIND_MEMSET AS m
)
SELECT w.start AS "Start (ns)",
       w.end - w.start AS "Duration (ns)",
       w.correlationId AS "CorrId",
       w.gridX AS "GrdX", w.gridY AS "GrdY", w.gridZ AS "GrdZ",
       w.blockX AS "BlkX", w.blockY AS "BlkY", w.blockZ AS "BlkZ",
       w.regs AS "Reg/Trd",
       w.smem / 1e6 AS "StcSMem (MB)",
       w.dmem / 1e6 AS "DymSMem (MB)",
       w.bytes / 1e6 AS "Bytes (MB)",
       CASE WHEN w.bytes IS NOT NULL AND w.end > w.start THEN w.bytes / 1e6 / ((w.end - w.start) / 1e9) END
           AS "Throughput (MBps)",
       sk.label AS "SrcMemKd",
       dk.label AS "DstMemKd",
       g.name || ' (' || w.deviceId || ')' AS "Device",
       w.contextId AS "Ctx",
       w.greenContextId AS "GreenCtx",
       w.streamId AS "Strm",
       w.name AS "Name"
FROM work AS w
LEFT JOIN ENUM_CUDA_MEM_KIND AS sk ON sk.id = w.src
LEFT JOIN ENUM_CUDA_MEM_KIND AS dk ON dk.id = w.dst
LEFT JOIN TARGET_INFO_CUDA_DEVICE AS cd ON cd.cudaId = w.deviceId AND cd.pid = w.globalPid / 0x1000000 % 0x1000000
LEFT JOIN TARGET_INFO_GPU AS g ON g.id = cd.gpuId
ORDER BY w.start;
