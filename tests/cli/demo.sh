#!/bin/sh
# demo.sh BUILD: scripts/demo without a GPU and without its sample falls
# back to the test generator's synthetic bundle and analyses it (exit 0,
# the three commands shown). Skipped (77) where a GPU would make it record.
set -u
build=$1
if nvidia-smi -L >/dev/null 2>&1; then
	echo "skip: a GPU is present"
	exit 77
fi
. "$(dirname "$0")/../lib/check.sh"
SAMPLE=/nonexistent.stb BUILD=$build SKIP_BUILD=1 SYNTHETIC="$tmp/synthetic.stb" \
	bash "$(dirname "$0")/../../scripts/demo" > "$tmp/out" 2> "$tmp/err" ||
	fail "scripts/demo: exit $?: $(grep -v '^warning: ' "$tmp/err")"
for c in info summary steps; do
	grep -q "^\$ steptrace $c $tmp/synthetic.stb" "$tmp/out" || fail "the demo did not show '$c'"
done
grep -q 'ampere_sgemm' "$tmp/out" || fail "the summary of the synthetic bundle has no sgemm row"
check_done cli.demo_fallback
