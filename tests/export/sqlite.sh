#!/bin/sh
# `steptrace export --format sqlite`, read with the sqlite3 command-line tool:
# Nsight Systems' tables and columns, the values of a bundle with known
# contents, --step and --range, the output rules, and on every sample the
# docs/exports.md's query (kernel_summary.sql) against `steptrace summary --format csv`
# and Nsight Systems' own reports (nsys/*.sql, run by nsys_reports.py)
# against steptrace's summary, ranges, replay and Chrome export.
set -eu
steptrace=$1; writer=$2; samples=$3
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
q() { sqlite3 -batch "$db" "$1"; }
expect() {   # SQL, expected output, what
	got=$(q "$1") || fail "$3: the query failed"
	[ "$got" = "$2" ] || fail "$3: got '$got', expected '$2'"
}
"$writer" --write "$tmp/x.stb"
db=$tmp/x.sqlite
"$steptrace" export "$tmp/x.stb" --format sqlite -o "$db" 2> "$tmp/log" || { cat "$tmp/log"; fail "export"; }
grep -q "^wrote '$db' (.*): 5 kernels, 2 memcpys, 1 memsets, 7 API calls, 7 NVTX ranges, 4 allocations" "$tmp/log" ||
	fail "wrote line: $(cat "$tmp/log")"

# Nsight Systems' column names (a query written for nsys finds them)
cols() { q "SELECT group_concat(name, ' ') FROM pragma_table_info('$1')"; }
for c in start end deviceId contextId streamId correlationId globalPid demangledName shortName mangledName \
	 gridX gridY gridZ blockX blockY blockZ registersPerThread staticSharedMemory dynamicSharedMemory; do
	cols CUPTI_ACTIVITY_KIND_KERNEL | tr ' ' '\n' | grep -qx "$c" || fail "CUPTI_ACTIVITY_KIND_KERNEL has no $c"
done
for t in MEMCPY MEMSET; do
	for c in start end deviceId streamId correlationId globalPid bytes; do
		cols CUPTI_ACTIVITY_KIND_$t | tr ' ' '\n' | grep -qx "$c" || fail "CUPTI_ACTIVITY_KIND_$t has no $c"
	done
done
for c in start end eventClass globalTid correlationId nameId returnValue; do
	cols CUPTI_ACTIVITY_KIND_RUNTIME | tr ' ' '\n' | grep -qx "$c" || fail "CUPTI_ACTIVITY_KIND_RUNTIME has no $c"
done
for c in start end eventType rangeId category color text globalTid endGlobalTid textId domainId \
	 uint64Value int64Value doubleValue uint32Value int32Value floatValue jsonTextId jsonText binaryData; do
	cols NVTX_EVENTS | tr ' ' '\n' | grep -qx "$c" || fail "NVTX_EVENTS has no $c"
done
# the enum tables nsys' reports join (its schema 3.16: id, name, label)
for t in ENUM_CUDA_MEMCPY_OPER ENUM_CUDA_MEM_KIND ENUM_NSYS_EVENT_TYPE; do
	[ "$(cols $t)" = "id name label" ] || fail "$t: columns '$(cols $t)'"
done
expect "SELECT group_concat(id || ' ' || name || ' ' || label, ', ') FROM ENUM_CUDA_MEMCPY_OPER WHERE id IN (1, 2, 8)" \
       "1 CUDA_MEMCPY_KIND_HTOD Host-to-Device, 2 CUDA_MEMCPY_KIND_DTOH Device-to-Host, 8 CUDA_MEMCPY_KIND_DTOD Device-to-Device" \
       "ENUM_CUDA_MEMCPY_OPER"
expect "SELECT group_concat(id || ' ' || label, ', ') FROM ENUM_CUDA_MEM_KIND" \
       "0 Pageable, 1 Pinned, 2 Device, 3 Array, 4 Managed, 5 Device Static, 6 Managed Static, 7 Unknown" \
       "ENUM_CUDA_MEM_KIND (nsys' numbering, not CUPTI's)"
expect "SELECT group_concat(id || ' ' || name, ', ') FROM ENUM_NSYS_EVENT_TYPE WHERE id IN (34, 59, 60, 75)" \
       "34 NvtxMark, 59 NvtxPushPopRange, 60 NvtxStartEndRange, 75 NvtxDomainCreate" "ENUM_NSYS_EVENT_TYPE"
expect "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name LIKE '%correlationId'" 4 "correlation indexes"

# the test bundle's values (tests/export/test_export.c)
K=CUPTI_ACTIVITY_KIND_KERNEL
expect "SELECT s.value, k.start, k.end, k.streamId, k.gridX, k.blockX, k.registersPerThread
        FROM $K k JOIN StringIds s ON s.id = k.demangledName WHERE k.start = 1501" \
       "gemm_kernel|1501|2499|7|128|256|64" "gemm_kernel's row"
expect "SELECT o.path FROM $K k JOIN StringIds s ON s.id = k.demangledName JOIN OPS o ON o.id = k.opId
        WHERE s.value = 'gemm_kernel'" "step/forward/layer.0/attn/q_proj" "gemm_kernel's op"
expect "SELECT p.value FROM $K k JOIN StringIds p ON p.id = k.nvtxPathId WHERE k.start = 2499" \
       "step/forward/layer.0/attn/softmax" "softmax_kernel's NVTX path"
expect "SELECT count(*) FROM $K WHERE demangledName = shortName" 5 "short names of plain names"
expect "SELECT count(*), sum(correlationId IS NULL) FROM $K" "5|1" "the orphan kernel has no correlationId"
# each launch joins its call, as nsys users join them
expect "SELECT group_concat(s.value || '@' || r.start, ' ') FROM $K k
        JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId JOIN StringIds s ON s.id = r.nameId
        ORDER BY k.start" \
       "cudaLaunchKernel@1100 cudaLaunchKernel@2000 cudaLaunchKernel@7000 cudaLaunchKernel@7150" "kernel-to-call join"
expect "SELECT copyKind, bytes, streamId, srcKind, dstKind FROM CUPTI_ACTIVITY_KIND_MEMCPY ORDER BY start" "1|64|8|7|7
8|4096|8|7|7" "memcpys (memory kinds not recorded: nsys' Unknown)"
expect "SELECT value, bytes FROM CUPTI_ACTIVITY_KIND_MEMSET" "0|1024" "memset"
expect "SELECT DISTINCT globalPid FROM $K" $((4242 << 24)) "globalPid = pid << 24"
expect "SELECT globalTid / 16777216 % 16777216, globalTid % 16777216, count(*) FROM NVTX_EVENTS
        WHERE eventType = 59 GROUP BY globalTid ORDER BY 2" "4242|100|6
4242|200|1" "NVTX ranges per thread (nsys' PID/TID recipe)"
expect "SELECT s.value, n.text, n.end - n.start, n.eventType, n.depth FROM NVTX_EVENTS n JOIN StringIds s ON s.id = n.textId
        WHERE s.value IN ('attn', 'softmax') ORDER BY n.start" "attn|attn|2000|59|3
softmax|softmax|1000|59|4" "NVTX ranges: name as text and as textId"
expect "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 59 AND (text IS NULL OR text = '')" 0 "NVTX ranges without text"
# domains as nsys numbers them: 0 the default; "io" 1, named by a NvtxDomainCreate row on its thread
expect "SELECT domainId, text, start, end IS NULL, globalTid % 16777216 FROM NVTX_EVENTS WHERE eventType = 75" \
       "1|io|1500|1|200" "the domain row"
expect "SELECT text, domainId FROM NVTX_EVENTS WHERE eventType = 59 AND domainId <> 0" "loader|1" "the range in 'io'"
expect "SELECT count(*) FROM NVTX_EVENTS WHERE coalesce(uint64Value, int64Value, doubleValue, uint32Value, int32Value,
        floatValue, jsonTextId, jsonText, binaryData) IS NOT NULL" 0 "payloads (not recorded)"
# nsys' reports on it: Nsight's names, steptrace's numbers
python3 "$here/nsys_reports.py" "$steptrace" "$tmp/x.stb" "$db" "$here/nsys" --domains io > "$tmp/out" ||
	{ cat "$tmp/out"; fail "nsys' reports on the test bundle"; }
grep -q "nvtx_sum: 7 range names in domains io," "$tmp/out" || fail "nvtx_sum: $(cat "$tmp/out")"
expect "SELECT count(*) FROM NVTX_EVENTS WHERE text = 'io' AND eventType = 75" 1 "one row for the domain"
expect "SELECT source, category, bytes, end FROM ALLOCATIONS ORDER BY start" "driver|unknown|2097152|
model|parameter|1048576|
model|activation|4096|6000
model|temporary|2048|2100" "allocations, freed or not"
expect "SELECT id, stepIndex, warmup, start, end FROM STEPS" "0|0|0|1000|9000" "steps"
expect "SELECT value FROM RUN WHERE key IN ('pid', 'model', 'device') ORDER BY key" "Synthetic GPU
tiny
4242" "run facts"
expect "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME" 1767225600123456789 "session start"

# --step and --range keep what they keep in the traces
"$steptrace" export "$tmp/x.stb" --format sqlite --range attn -o "$tmp/attn.sqlite" 2> /dev/null || fail "--range attn"
db=$tmp/attn.sqlite
expect "SELECT group_concat(s.value, ' ') FROM $K k JOIN StringIds s ON s.id = k.demangledName" \
       "gemm_kernel softmax_kernel" "--range attn: kernels"
expect "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY" 0 "--range attn: memcpys"
expect "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME" 2 "--range attn: calls"
expect "SELECT value FROM RUN WHERE key = 'exported_range'" attn "--range recorded in RUN"

# output rules: a file, never standard output, never the bundle
! "$steptrace" export "$tmp/x.stb" --format sqlite -o - > /dev/null 2> "$tmp/log" || fail "-o - accepted"
grep -q "needs a regular file" "$tmp/log" || fail "-o -: $(cat "$tmp/log")"
! "$steptrace" export "$tmp/x.stb" --format sqlite -o "$tmp/x.stb" 2> /dev/null || fail "-o the bundle accepted"
printf 'keep me\n' > "$tmp/keep.sqlite"
! "$steptrace" export "$tmp/x.stb" --format sqlite --step 3 -o "$tmp/keep.sqlite" 2> /dev/null || fail "--step 3 accepted"
[ "$(cat "$tmp/keep.sqlite")" = "keep me" ] || fail "a failed export changed the existing file"
"$steptrace" export "$tmp/x.stb" --format sqlite -o "$tmp/keep.sqlite" 2> /dev/null || fail "export over a file"
db=$tmp/keep.sqlite
expect "SELECT count(*) FROM $K" 5 "an existing file replaced"
[ "$(ls -A "$tmp" | grep -c '^\.')" -eq 0 ] || fail "temporaries left: $(ls -A "$tmp")"

# docs/exports.md's query and nsys' reports on every sample, against steptrace's own numbers
n=0; reports=0
for f in "$samples"/*.stb; do
	[ -e "$f" ] || continue
	db=$tmp/s.sqlite
	"$steptrace" export "$f" --format sqlite -o "$db" 2> /dev/null || fail "export $f"
	sqlite3 -batch -csv "$db" < "$here/kernel_summary.sql" > "$tmp/sql.csv" || fail "query on $f"
	"$steptrace" summary "$f" --format csv > "$tmp/want.csv" || fail "summary $f"
	python3 "$here/sqlite_summary.py" "$f" "$tmp/sql.csv" "$tmp/want.csv" > "$tmp/out" || { cat "$tmp/out"; exit 1; }
	# nsys' cuda_gpu_kern_sum, cuda_gpu_mem_time_sum, cuda_gpu_mem_size_sum, cuda_api_sum, nvtx_sum,
	# cuda_gpu_trace and cuda_api_trace
	domains=""
	case $f in
	*pytorch-auto*) domains="steptrace.torch CCCL steptrace.mirror" ;;
	*pytorch-ddp*) domains="NCCL steptrace.mirror steptrace.torch" ;;
	esac
	python3 "$here/nsys_reports.py" "$steptrace" "$f" "$db" "$here/nsys" --domains "$domains" > "$tmp/out" ||
		{ cat "$tmp/out"; exit 1; }
	reports=$((reports + $(wc -l < "$tmp/out")))
	case $f in
	*bf16-train*)
		# nsys' short names: templates, parameters and return type gone
		expect "SELECT count(*) FROM $K k JOIN StringIds s ON s.id = k.shortName WHERE s.value = 'permute_heads_vec_kernel'" \
		       144 "short name of 'void permute_heads_vec_kernel<__nv_bfloat16>(...)'"
		# CUPTI's memory kinds (pageable 1, pinned 2, device 3) in nsys' numbering
		expect "SELECT o.label, s.label, d.label, count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY m
		        JOIN ENUM_CUDA_MEMCPY_OPER o ON o.id = m.copyKind JOIN ENUM_CUDA_MEM_KIND s ON s.id = m.srcKind
		        JOIN ENUM_CUDA_MEM_KIND d ON d.id = m.dstKind GROUP BY 1, 2, 3 ORDER BY 1" \
		       "Device-to-Host|Device|Pinned|3
Host-to-Device|Pageable|Device|3" "memcpy kinds" ;;
	*pytorch-ddp*)
		# NCCL's payload on its calls and their kernels: the all-reduces of the measured
		# steps move 5 x 84,520,960 bytes (steptrace comm's total per step), on one communicator
		expect "SELECT count(*), sum(k.ncclBytes), count(DISTINCT k.ncclComm) FROM $K k
		        JOIN StringIds s ON s.id = k.demangledName JOIN STEPS st ON st.id = k.stepId
		        WHERE st.warmup = 0 AND s.value LIKE 'ncclDevKernel_AllReduce%'" "15|422604800|1" "NCCL payload on kernels"
		# (its 16 all-reduces, 4 broadcasts and an all-gather: ncclCommDestroy's values are no
		# sizes, and the recorder has left them out since the sample of two H100s had them)
		expect "SELECT count(*), count(DISTINCT n.text) FROM NVTX_EVENTS n JOIN NVTX_EVENTS d
		        ON d.eventType = 75 AND d.domainId = n.domainId AND d.text = 'NCCL'
		        WHERE n.eventType = 59 AND n.ncclBytes IS NOT NULL AND n.ncclComm IS NOT NULL" "21|3" \
		       "NCCL payload on NCCL's ranges" ;;
	*pytorch-auto*)
		expect "SELECT n.text, n.domainId, d.text FROM NVTX_EVENTS n JOIN NVTX_EVENTS d
		        ON d.eventType = 75 AND d.domainId = n.domainId WHERE n.eventType = 59 ORDER BY n.start LIMIT 1" \
		       "step|1|steptrace.torch" "PyTorch's first range and its domain" ;;
	esac
	n=$((n + 1))
done
echo "sqlite: nsys' tables and the test bundle's values; kernel_summary.sql matches steptrace summary on $n samples;" \
     "$reports nsys report runs match steptrace's numbers"
