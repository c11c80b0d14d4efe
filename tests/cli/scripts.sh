#!/bin/sh
# scripts.sh: scripts/test ends with how long it took and how many GPU
# tests it left out and how to run them (with STEPTRACE_GPU=ON), or how to
# build the GPU part (by default), whether the CPU tests pass or not (their
# status is its own).
# cmake and ctest are stand-ins here: the script's own logic is what is tested.
set -u
. "$(dirname "$0")/../lib/check.sh"
export CMAKE_LOG="$tmp/cmake.log"
unset STEPTRACE_GPU   # the default is tested: not the one this test may run under (.ci/run sets it)
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$tmp/bin"
cat > "$tmp/bin/cmake" <<'STUB'
#!/bin/sh
echo "$*" >> "$CMAKE_LOG"
STUB
cat > "$tmp/bin/ctest" <<'STUB'
#!/bin/sh
case " $* " in
*" -N "*) echo "  Test #1: step"; echo; echo "Total Tests: 3" ;;
*) echo "100% tests passed"; exit "${CTEST_STATUS:-0}" ;;
esac
STUB
chmod +x "$tmp/bin/cmake" "$tmp/bin/ctest"

for want in 0 8; do
	PATH="$tmp/bin:$PATH" CTEST_STATUS=$want BUILD_DIR=build-x STEPTRACE_GPU=ON bash "$root/scripts/test" > "$tmp/out" 2>&1
	rc=$?
	[ "$rc" = "$want" ] || fail "scripts/test exit $rc, want ctest's $want"
	[ "$(tail -n 1 "$tmp/out")" = "scripts/test: 3 GPU tests (label gpu) not run here; on a machine with a GPU: ctest --test-dir build-x -L gpu --output-on-failure" ] ||
		fail "scripts/test does not end with the GPU tests it left out: $(tail -n 1 "$tmp/out")"
	tail -n 2 "$tmp/out" | head -n 1 | grep -Eq '^scripts/test: built in [0-9]+ s, tested in [0-9]+ s \(STEPTRACE_GPU=ON\)$' ||
		fail "scripts/test does not say how long it took: $(tail -n 2 "$tmp/out" | head -n 1)"

	grep -q -- '-S . -B build-x -DSTEPTRACE_SANITIZE=ON -DSTEPTRACE_GPU=ON$' "$CMAKE_LOG" ||
		fail "STEPTRACE_GPU=ON scripts/test does not configure the GPU part: $(cat "$CMAKE_LOG")"

	# by default the analysis part alone, and the last line says how to build the rest
	: > "$CMAKE_LOG"
	PATH="$tmp/bin:$PATH" CTEST_STATUS=$want BUILD_DIR=build-x bash "$root/scripts/test" > "$tmp/out" 2>&1
	rc=$?
	grep -q -- '-S . -B build-x -DSTEPTRACE_SANITIZE=ON -DSTEPTRACE_GPU=OFF$' "$CMAKE_LOG" ||
		fail "scripts/test configures more than the analysis part: $(cat "$CMAKE_LOG")"
	: > "$CMAKE_LOG"
	[ "$rc" = "$want" ] || fail "scripts/test (no GPU part) exit $rc, want ctest's $want"
	tail -n 1 "$tmp/out" | grep -q '^scripts/test: the analysis part only; STEPTRACE_GPU=ON scripts/test builds the GPU part' ||
		fail "scripts/test does not end with how to build the GPU part: $(tail -n 1 "$tmp/out")"
done
PATH="$tmp/bin:$PATH" STEPTRACE_GPU=maybe bash "$root/scripts/test" > "$tmp/out" 2>&1
[ $? = 2 ] || fail "STEPTRACE_GPU=maybe is not refused"
check_done cli.scripts
