#!/bin/sh
# The HTML report of one bundle and of two (a diff): every section is there,
# the page is self-contained (no scripts, no external URLs), bad input fails.
set -eu
steptrace=$1; gen=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$gen" --precision fp32 -o "$tmp/small-fp32.stb"
"$gen" --precision bf16 -o "$tmp/small-bf16.stb"
"$steptrace" report "$tmp/small-bf16.stb" -o "$tmp/one.html" 2> "$tmp/log" || { cat "$tmp/log"; exit 1; }
"$steptrace" report "$tmp/small-fp32.stb" "$tmp/small-bf16.stb" -o "$tmp/diff.html" 2>> "$tmp/log" ||
  { cat "$tmp/log"; exit 1; }
fail() { echo "report: $*"; exit 1; }
for f in one diff; do
  page="$tmp/$f.html"
  for id in run steps phases categories kernels memory roofline; do
    grep -q "<section class=\"card\" id=\"$id\">" "$page" || fail "$f.html has no section '$id'"
  done
  for h in 'Run' 'Step time' 'Time by phase' 'Time by category' 'Top kernels' 'Memory' 'Roofline'; do
    grep -q "<h2>$h</h2>" "$page" || fail "$f.html has no heading '$h'"
  done
  grep -qi '<script' "$page" && fail "$f.html has a script"
  grep -Eqi '(src|href)="(https?:)?//' "$page" && fail "$f.html links outside itself"
  grep -Eqi '@import|url\(' "$page" && fail "$f.html loads CSS resources"
  grep -q '<svg' "$page" || fail "$f.html has no inline SVG"
  tail -c 20 "$page" | grep -q '</html>' || fail "$f.html is cut short"
done
grep -q '<h2>Diff</h2>' "$tmp/diff.html" || fail "diff.html has no Diff section"
grep -q 'ampere_sgemm' "$tmp/diff.html" || fail "diff.html does not name the fp32 kernels"
grep -q 'Time (%)' "$tmp/one.html" || fail "top kernels lack Nsight's columns"
grep -q 'sm90_xmma_gemm' "$tmp/one.html" || fail "top kernels lack the GEMM"
# the same numbers as the text reports: the summary's top kernel name is on the page
top=$("$steptrace" summary "$tmp/small-bf16.stb" --top 1 --format csv | sed -n 2p | sed 's/.*,//')
[ -n "$top" ] && grep -qF "$top" "$tmp/one.html" || fail "summary's top kernel '$top' is not on the page"
# bad input: a usage error, a missing file; neither leaves a page behind
if "$steptrace" report 2>/dev/null; then fail "no argument accepted"; fi
if "$steptrace" report "$tmp/none.stb" -o "$tmp/none.html" 2>/dev/null; then fail "missing file accepted"; fi
[ ! -e "$tmp/none.html" ] || fail "a failed report left its page"
echo "report: one.html $(wc -c < "$tmp/one.html") bytes, diff.html $(wc -c < "$tmp/diff.html") bytes"
