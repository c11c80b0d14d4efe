#!/bin/sh
# demo.sh BUILD: scripts/demo without a GPU reads a bundle of samples/, and
# without its sample falls back to the test generator's synthetic bundle;
# either way it says so in one line first, analyses it (exit 0, the three
# commands shown as they can be typed) and ends with a line on where
# steptrace is and one on what to try next. With SKIP_BUILD it installs
# nothing. Skipped (77) where a GPU would make it record.
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
# steptrace as it can be typed: its full path here, nothing being installed
st="$build/steptrace"
for c in info summary steps; do
	grep -qF "\$ $st $c $tmp/synthetic.stb" "$tmp/out" || fail "the demo did not show '$c'"
done
grep -q 'ampere_sgemm' "$tmp/out" || fail "the summary of the synthetic bundle has no sgemm row"
[ "$(head -n 1 "$tmp/out")" = "scripts/demo: no GPU here and no /nonexistent.stb: reading a synthetic bundle from the test generator, $tmp/synthetic.stb" ] ||
	fail "the demo does not say first that it reads a synthetic bundle: $(head -n 1 "$tmp/out")"
tail -n 2 "$tmp/out" | head -n 1 | grep -qF "steptrace is $st (not installed)" ||
	fail "the demo does not say where steptrace is: $(tail -n 2 "$tmp/out" | head -n 1)"
tail -n 1 "$tmp/out" | grep -qF "Next: $st memory, flops or report -o demo.html on $tmp/synthetic.stb" ||
	fail "the demo does not end with what to try next: $(tail -n 1 "$tmp/out")"

sample=$(cd "$(dirname "$0")/../.." && pwd)/samples/small-bf16-train.stb
SAMPLE=$sample BUILD=$build SKIP_BUILD=1 bash "$(dirname "$0")/../../scripts/demo" > "$tmp/out" 2> "$tmp/err" ||
	fail "scripts/demo on samples/: exit $?: $(grep -v '^warning: ' "$tmp/err")"
[ "$(head -n 1 "$tmp/out")" = "scripts/demo: no GPU here, so no recording: reading $sample, a bundle recorded on a GPU elsewhere" ] ||
	fail "the demo does not say first that it reads a sample: $(head -n 1 "$tmp/out")"
grep -qF "\$ $st summary $sample --top 15" "$tmp/out" || fail "the demo did not summarise the sample"
tail -n 1 "$tmp/out" | grep -q '^Next: ' || fail "the demo on a sample does not end with what to try next"
check_done cli.demo_fallback
