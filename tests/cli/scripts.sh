#!/bin/sh
# scripts.sh: scripts/test ends with how many GPU tests it left out and how
# to run them, whether the CPU tests pass or not (their status is its own).
# cmake and ctest are stand-ins here: the script's own logic is what is tested.
set -u
. "$(dirname "$0")/../lib/check.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$tmp/bin"
cat > "$tmp/bin/cmake" <<'STUB'
#!/bin/sh
exit 0
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
	PATH="$tmp/bin:$PATH" CTEST_STATUS=$want BUILD_DIR=build-x bash "$root/scripts/test" > "$tmp/out" 2>&1
	rc=$?
	[ "$rc" = "$want" ] || fail "scripts/test exit $rc, want ctest's $want"
	[ "$(tail -n 1 "$tmp/out")" = "scripts/test: 3 GPU tests (label gpu) not run here; on a machine with a GPU: ctest --test-dir build-x -L gpu --output-on-failure" ] ||
		fail "scripts/test does not end with the GPU tests it left out: $(tail -n 1 "$tmp/out")"
done
check_done cli.scripts
