-- steptrace summary's kernel table from `steptrace export --format sqlite`:
-- time per kernel name over the measured steps (warm-up left out).
SELECT ROUND(100.0 * SUM(k.end - k.start) / SUM(SUM(k.end - k.start)) OVER (), 1) AS "Time (%)",
       SUM(k.end - k.start) AS "Total Time (ns)",
       COUNT(*) AS "Instances",
       ROUND(AVG(k.end - k.start), 1) AS "Avg (ns)",
       MIN(k.end - k.start) AS "Min (ns)",
       MAX(k.end - k.start) AS "Max (ns)",
       s.value AS "Name"
FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
JOIN StringIds AS s ON s.id = k.demangledName
JOIN STEPS AS st ON st.id = k.stepId
WHERE st.warmup = 0
GROUP BY s.value
ORDER BY "Total Time (ns)" DESC, "Name";
