#!/bin/sh
# nsys_hostile.sh STEPTRACE ST-IMPORT-NSYS DIR: hand-made hostile SQLite
# databases imported as Nsight Systems exports. Each ends in one error line
# and exit status 1, or in a bundle (warnings allowed) that the analyses
# read; never a crash, never a hang. DIR holds the real exports (a damaged
# copy of one is among the cases).
set -u
. "$(dirname "$0")/../lib/check.sh"
st=$1 imp=$2 dir=$3

# The tables of an export, as nsys 2024.5 makes them (the columns steptrace reads).
schema="
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER,
  streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER,
  registersPerThread INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER,
  blockZ INTEGER, staticSharedMemory INTEGER, dynamicSharedMemory INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, globalTid INTEGER,
  correlationId INTEGER, nameId INTEGER, returnValue INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER, text TEXT, textId INTEGER,
  domainId INTEGER, globalTid INTEGER, jsonText TEXT);
INSERT INTO StringIds VALUES (1, 'gemm_kernel'), (2, 'cudaLaunchKernel_v7000');
"
pid=$((1234 << 24))
tid=$((pid + 1234))

# case NAME EXPECT SQL...: a database of SQL imported; EXPECT ok (a bundle, then read) or fail (one error line)
case_db() {
	name=$1 expect=$2
	shift 2
	db=$tmp/$name.sqlite
	rm -f "$db"
	printf '%s\n' "$@" | sqlite3 "$db" 2>"$tmp/sqlerr" || { fail "$name: sqlite3: $(cat "$tmp/sqlerr")"; return; }
	run_import "$name" "$expect" "$db"
}

run_import() {
	name=$1 expect=$2 db=$3
	b=$tmp/$name.stb
	rm -f "$b"
	"$imp" "$db" "$b" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	lines=$(wc -l <"$tmp/err")
	case $expect in
	fail)
		[ "$rc" = 1 ] || fail "$name: exit $rc, not 1: $(cat "$tmp/err")"
		[ "$lines" = 1 ] && grep -q '^error: ' "$tmp/err" || fail "$name: not one error line: $(cat "$tmp/err")"
		[ -e "$b" ] && fail "$name: a bundle was left after the error"
		;;
	ok)
		[ "$rc" = 0 ] || { fail "$name: exit $rc: $(cat "$tmp/err")"; return; }
		grep -qv '^warning: ' "$tmp/err" && fail "$name: more than warnings: $(cat "$tmp/err")"
		for c in info "steps --include-warmup" "summary --include-warmup" memory explain \
			 "ranges --include-warmup"; do
			# shellcheck disable=SC2086
			"$st" $c "$b" >/dev/null 2>"$tmp/err2" || fail "$name: $c failed: $(cat "$tmp/err2")"
		done
		;;
	esac
}

printf 'not a database at all\n' >"$tmp/text.sqlite"
run_import text fail "$tmp/text.sqlite"
case_db plain fail "CREATE TABLE people (name TEXT, age INTEGER);" "INSERT INTO people VALUES ('a', 1);"
case_db empty_export fail "$schema"
case_db no_start fail "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (begin INTEGER, finish INTEGER);" \
	"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1, 2);"
case_db view_only fail "CREATE TABLE k (start INTEGER, end INTEGER);" \
	"CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT x AS start, x AS end FROM r;"

case_db good ok "$schema" \
	"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100, 200, 0, 7, 5, $pid, 1, 1, 32, 1, 1, 1, 128, 1, 1, 0, 0);" \
	"INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (90, 95, $tid, 5, 2, 0);"
"$st" summary --include-warmup "$tmp/good.stb" | grep -q gemm_kernel || fail "good: no gemm_kernel in summary"
"$st" replay "$tmp/good.stb" | grep -q 'cudaLaunchKernel$' || fail "good: the API call keeps its _v7000"

# wrong types, NULLs, 2^63 - 1, end before start, negative sizes, ids StringIds lacks
case_db types ok "$schema" \
	"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ('abc', 200, 0, 7, 5, $pid, 1, 1, 32, 1, 1, 1, 128, 1, 1, 0, 0);" \
	"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100.5, 200, 0, 7, 5, $pid, 1, 1, 32, 1, 1, 1, 128, 1, 1, 0, 0);" \
	"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (300, 200, 0, 7, 5, $pid, 1, 1, 32, 1, 1, 1, 128, 1, 1, 0, 0);" \
	"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (9223372036854775807, 9223372036854775807, 0, 7, 5, $pid, 1, 1, 32, 1, 1, 1, 128, 1, 1, 0, 0);" \
	"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (-50, 10, 0, 7, 5, $pid, 1, 1, 32, 1, 1, 1, 128, 1, 1, 0, 0);" \
	"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (400, 500, -1, 'x', 9223372036854775807, $pid, NULL, NULL, -5, 4294967296, X'00', 1, 128, 1, 1, -1, 9223372036854775807);" \
	"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (600, 700, 0, 7, 6, $pid, 999, 998, 32, 1, 1, 1, 128, 1, 1, 0, 0);" \
	"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (800, 900, 0, 7, 7, $pid, X'6b00ff', NULL, 32, 1, 1, 1, 128, 1, 1, 0, 0);" \
	"INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (90, 95, NULL, NULL, NULL, 9223372036854775807);" \
	"INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (96, 97, 'tid', -3, 12345, 'x');"
grep -q 'rows of CUPTI_ACTIVITY_KIND_KERNEL skipped' "$tmp/err" || fail "types: no warning for the skipped kernels"
"$st" summary --include-warmup "$tmp/types.stb" | grep -q 'without a name' || fail "types: no unnamed kernel"
"$st" summary --include-warmup "$tmp/types.stb" | grep -q 'nsys string 998' || fail "types: no [nsys string 998]"
case_db all_bad fail "$schema" \
	"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (300, 200, 0, 7, 5, $pid, 1, 1, 32, 1, 1, 1, 128, 1, 1, 0, 0);"

# StringIds without its primary key (ids as text too), and a string of 20 MB
case_db strings_nopk ok \
	"CREATE TABLE StringIds (id, value);" \
	"INSERT INTO StringIds VALUES (1, 'k1'), ('2', 'k2'), (1, 'dup'), (NULL, NULL);" \
	"CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start, end, demangledName);" \
	"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1, 2, 1), (3, 4, 2), (5, 6, '2');"
case_db huge_string fail "$schema" \
	"INSERT INTO StringIds VALUES (3, printf('%.*c', 20000000, 'x'));" \
	"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100, 200, 0, 7, 5, $pid, 3, 3, 32, 1, 1, 1, 128, 1, 1, 0, 0);"

# NVTX: 2,000 nested ranges, ranges without an end, unknown domains, NCCL's payload, ProfilerStep#N steps
case_db nvtx ok "$schema" \
	"INSERT INTO NVTX_EVENTS (start, end, eventType, text, domainId, globalTid)
	 WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i < 1999)
	 SELECT 1000 + i, 900000 - i, 59, 'level' || i, 0, $tid FROM r;" \
	"INSERT INTO NVTX_EVENTS VALUES (5, NULL, 59, 'open', NULL, 0, $tid, NULL);" \
	"INSERT INTO NVTX_EVENTS VALUES (6, 7, 59, NULL, 424242, 77, $tid, NULL);" \
	"INSERT INTO NVTX_EVENTS VALUES (0, NULL, 75, 'NCCL', NULL, 9, $tid, NULL);" \
	"INSERT INTO NVTX_EVENTS VALUES (2000, 3000, 59, 'ncclAllReduce', NULL, 9, $tid, '{\"NCCL communicator ID\": 77, \"Message size [bytes]\": 4096}');" \
	"INSERT INTO NVTX_EVENTS VALUES (4000, 5000, 59, 'ncclAllReduce', NULL, 9, $tid, '{not json');" \
	"INSERT INTO NVTX_EVENTS VALUES (4000, 5000, 'push', 'x', NULL, 0, 'tid', NULL);" \
	"INSERT INTO NVTX_EVENTS (start, end, eventType, text, domainId, globalTid)
	 WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 5)
	 SELECT 1000000 * i, 1000000 * i + 900000, 59, 'ProfilerStep#' || i, 0, $tid FROM r;" \
	"INSERT INTO NVTX_EVENTS VALUES (1000100, 1000200, 59, 'step', NULL, 0, $tid, NULL);" \
	"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (2000100, 2000200, 0, 7, 5, $pid, 1, 1, 32, 1, 1, 1, 128, 1, 1, 0, 0);" \
	"INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (2000050, 2000060, $tid, 5, 2, 0);"
grep -q 'NVTX ranges without an end left out' "$tmp/err" || fail "nvtx: no warning for the open range"
"$st" info "$tmp/nvtx.stb" 2>&1 | grep -q "NVTX range 'profilerstep'" || fail "nvtx: steps not from ProfilerStep#N"
[ "$("$st" steps --format csv "$tmp/nvtx.stb" 2>/dev/null | tail -n +2 | wc -l)" = 4 ] || fail "nvtx: not 4 measured steps"
# NCCL's payload read from the JSON text: communicator 77, 4096 bytes (FORMAT.md, Range fields 5 and 6)
bsdtar -xOf "$tmp/nvtx.stb" events-000000.pb |
	protoc --decode=steptrace.EventChunk -I "$(dirname "$0")/../../proto" steptrace.proto >"$tmp/events.txt" 2>&1
grep -A8 'range {' "$tmp/events.txt" | grep -q 'comm: 77' || fail "nvtx: no NCCL communicator 77"
grep -A8 'range {' "$tmp/events.txt" | grep -q 'bytes: 4096' || fail "nvtx: no NCCL message size 4096"
"$st" export --format sqlite -o "$tmp/nvtx.export.sqlite" "$tmp/nvtx.stb" >/dev/null 2>&1 || fail "nvtx: export failed"

# a real export, damaged: pages overwritten in its middle, then cut short
cp "$dir/cloverleaf-cuda.sqlite" "$tmp/damaged.sqlite"
dd if=/dev/urandom of="$tmp/damaged.sqlite" bs=4096 seek=40 count=30 conv=notrunc 2>/dev/null
"$imp" "$tmp/damaged.sqlite" "$tmp/damaged.stb" >/dev/null 2>"$tmp/err"
rc=$?
{ [ "$rc" = 0 ] || { [ "$rc" = 1 ] && [ "$(wc -l <"$tmp/err")" = 1 ]; }; } || fail "damaged: exit $rc: $(cat "$tmp/err")"
head -c 300000 "$dir/cloverleaf-cuda.sqlite" >"$tmp/cut.sqlite"
"$imp" "$tmp/cut.sqlite" "$tmp/cut.stb" >/dev/null 2>"$tmp/err"
rc=$?
{ [ "$rc" = 0 ] || { [ "$rc" = 1 ] && [ "$(wc -l <"$tmp/err")" = 1 ]; }; } || fail "cut: exit $rc: $(cat "$tmp/err")"

# 60 copies of the SAXPY export with bytes overwritten at random (seeded: the same copies every run)
python3 - "$dir/saxpy-mpi-cuda.sqlite" "$tmp" <<'PY'
import random, sys
data = open(sys.argv[1], "rb").read()
for i in range(60):
    r = random.Random(i)
    b = bytearray(data)
    for _ in range(1 + i % 40):
        b[r.randrange(len(b))] = r.randrange(256)
    open(f"{sys.argv[2]}/mut{i}.sqlite", "wb").write(b)
PY
for i in $(seq 0 59); do
	"$imp" "$tmp/mut$i.sqlite" "$tmp/mut.stb" >/dev/null 2>"$tmp/err"
	rc=$?
	if [ "$rc" = 0 ]; then
		grep -qv '^warning: ' "$tmp/err" && fail "mutation $i: more than warnings: $(cat "$tmp/err")"
		"$st" summary --include-warmup "$tmp/mut.stb" >/dev/null 2>&1 || fail "mutation $i: summary failed"
		"$st" explain "$tmp/mut.stb" >/dev/null 2>&1 || fail "mutation $i: explain failed"
	elif [ "$rc" != 1 ] || [ "$(wc -l <"$tmp/err")" != 1 ]; then
		fail "mutation $i: exit $rc: $(head -5 "$tmp/err")"
	fi
	rm -f "$tmp/mut.stb"
done

# 300,000 kernels: streamed, in bounded time
case_db many ok "$schema" \
	"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i < 299999)
	 SELECT 1000 * i, 1000 * i + 500, 0, 7, i, $pid, 1 + (i % 2), 1, 32, 1, 1, 1, 128, 1, 1, 0, 0 FROM r;"

check_done import.nsys_hostile
