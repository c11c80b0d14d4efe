-- trim.sql: what tests/import keeps of a public Nsight Systems export
-- (README.md): every row of the tables steptrace imports, none of the CPU
-- sampling, scheduling and OS runtime tables, which it does not read, and
-- of PROCESSES only the processes that ran GPU work. Run as
--   cp ORIGINAL.sqlite x.sqlite && sqlite3 x.sqlite < trim.sql
-- (a table a given export lacks is created empty: it is harmless there).
CREATE TABLE IF NOT EXISTS SCHED_EVENTS (x);
CREATE TABLE IF NOT EXISTS COMPOSITE_EVENTS (x);
CREATE TABLE IF NOT EXISTS SAMPLING_CALLCHAINS (x);
CREATE TABLE IF NOT EXISTS OSRT_API (x);
CREATE TABLE IF NOT EXISTS OSRT_CALLCHAINS (x);
CREATE TABLE IF NOT EXISTS CUDA_CALLCHAINS (x);
DELETE FROM SCHED_EVENTS;
DELETE FROM COMPOSITE_EVENTS;
DELETE FROM SAMPLING_CALLCHAINS;
DELETE FROM OSRT_API;
DELETE FROM OSRT_CALLCHAINS;
DELETE FROM CUDA_CALLCHAINS;
DELETE FROM PROCESSES WHERE globalPid NOT IN (SELECT DISTINCT globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL);
VACUUM;
