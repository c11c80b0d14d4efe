#!/bin/sh
# The HTML report of one bundle and of two (a diff): every section is there,
# the page is one self-contained file (inline style and scripts, nothing
# fetched), the timeline's data is embedded, a truncated bundle gets a
# banner, the diff folds the two single reports, bad input fails.
set -eu
steptrace=$1; gen=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$gen" --precision fp32 -o "$tmp/small-fp32.stb"
"$gen" --precision bf16 -o "$tmp/small-bf16.stb"
"$gen" --precision bf16 --truncated -o "$tmp/cut.stb"
"$steptrace" report "$tmp/small-bf16.stb" -o "$tmp/one.html" 2> "$tmp/log" || { cat "$tmp/log"; exit 1; }
"$steptrace" report "$tmp/small-fp32.stb" "$tmp/small-bf16.stb" -o "$tmp/diff.html" 2>> "$tmp/log" ||
  { cat "$tmp/log"; exit 1; }
"$steptrace" report "$tmp/cut.stb" -o "$tmp/cut.html" 2>> "$tmp/log" || { cat "$tmp/log"; exit 1; }
fail() { echo "report: $*"; exit 1; }
sections='run timeline steps phases categories layers kernels ops ranges memory roofline'
for f in one diff cut; do
  page="$tmp/$f.html"
  prefix=; [ $f = diff ] && prefix=a-
  for id in $sections; do
    grep -q "<section class=\"card\" id=\"$prefix$id\">" "$page" || fail "$f.html has no section '$prefix$id'"
  done
  for h in 'Run' 'Timeline' 'Step time' 'Time by phase' 'Time by category' 'Per layer' 'Top kernels' 'Ops' \
           'Ranges' 'Memory' 'Roofline'; do
    grep -q "<h2>$h</h2>" "$page" || fail "$f.html has no heading '$h'"
  done
  # one file: inline scripts and style only, no URL anywhere it could load from
  grep -Eqi '<script[^>]* src=|<link|<iframe|<img' "$page" && fail "$f.html loads an element from elsewhere"
  grep -Eqi '(src|href)="(https?:)?//' "$page" && fail "$f.html links outside itself"
  grep -Eqi '@import|url\(|fetch\(|XMLHttpRequest|WebSocket|EventSource' "$page" && fail "$f.html fetches"
  grep -q '<script type="application/json" id="[a-z-]*timeline-data">{"t0":' "$page" || fail "$f.html has no timeline data"
  grep -q 'class="data sortable"' "$page" || fail "$f.html has no sortable table"
  grep -q '<svg' "$page" || fail "$f.html has no inline SVG"
  grep -q 'data-tip="' "$page" || fail "$f.html has no values on hover"
  grep -q '<div class="kpi"><div class="label">Step time</div>' "$page" || fail "$f.html has no key numbers"
  tail -c 20 "$page" | grep -q '</html>' || fail "$f.html is cut short"
done
# the calibration note is a footnote, not part of the bandwidth's cell
grep -q '<dt>Peak bandwidth</dt><dd>3.35 TB/s (datasheet\*)</dd>' "$tmp/one.html" ||
  fail "the peak bandwidth cell holds more than the bandwidth and its source"
grep -q '<p class="footnote">\* How the peaks were found (datasheet): H100 SXM datasheet' "$tmp/one.html" ||
  fail "the peaks' note is not a footnote"
# per layer: the synthetic model's 12 layers, split into attn and ffn
grep -q '<td>layer.11</td>' "$tmp/one.html" || fail "no per-layer row for layer.11"
grep -q '<th class="num">attn (us)</th>' "$tmp/one.html" || fail "no attn column per layer"
# the memory chart starts at the measured steps and says what it cut
grep -q 'Cut on the left: the first' "$tmp/one.html" || fail "the memory chart does not say the warm-up is cut"
grep -q 'Truncated bundle' "$tmp/one.html" && fail "a complete bundle is called truncated"
grep -q "<b>Truncated bundle.</b> &#39;cut.stb&#39; is truncated" "$tmp/cut.html" || fail "cut.html has no banner"
# the diff: charts of the changes, the two single reports folded below
grep -q '<h2>What changed</h2>' "$tmp/diff.html" || fail "diff.html has no charts of the changes"
grep -q '<h2>Diff</h2>' "$tmp/diff.html" || fail "diff.html has no Diff section"
[ "$(grep -c '<details class="bundle"' "$tmp/diff.html")" = 2 ] || fail "diff.html does not fold A and B"
grep -q 'id="b-timeline"' "$tmp/diff.html" || fail "diff.html's B has no timeline"
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

# the diff page's one-sided op (forward/cast_weights exists in the BF16 run
# only) is labelled as such, not as a change from 0 ns
samples="$(dirname "$0")/../../samples"
if [ -f "$samples/small-bf16-train.stb" ] && [ -f "$samples/small-fp32-train.stb" ]; then
  "$steptrace" report "$samples/small-bf16-train.stb" "$samples/small-fp32-train.stb" -o "$tmp/real-diff.html" 2>> "$tmp/log" ||
    { cat "$tmp/log"; exit 1; }
  grep -q 'only in A' "$tmp/real-diff.html" || fail "the diff page does not say cast_weights is only in A"
  if grep -q "0 ns →\|→ 0 ns" "$tmp/real-diff.html"; then
    fail "the diff page labels a one-sided op as a change from 0 ns"
  fi
fi

# a program recorded with --precision: the page shows that precision, not a
# built-in model of zero sizes ("program", "ctx 0")
ops="$(dirname "$0")/../../docs/foreign/pytorch-ops.stb"
if [ -f "$ops" ]; then
  "$steptrace" report "$ops" -o "$tmp/ops.html" 2>> "$tmp/log" || { cat "$tmp/log"; exit 1; }
  grep -q 'ctx 0\|>program<' "$tmp/ops.html" && fail "a program's page shows a built-in model of zero sizes"
  grep -q 'bf16 (as record --precision said)' "$tmp/ops.html" || fail "a program's page does not say its --precision"
fi

# per layer on a PyTorch model recorded with --torch auto (samples/pytorch-auto.stb,
# GPT-2 small): its transformer.h.N are the layers, split by the module under them
sample="$(dirname "$0")/../../samples/pytorch-auto.stb"
if [ -f "$sample" ]; then
  "$steptrace" report "$sample" -o "$tmp/torch.html" 2>> "$tmp/log" || { cat "$tmp/log"; exit 1; }
  grep -q '<td>layer.11</td>' "$tmp/torch.html" || fail "no per-layer row for GPT-2's transformer.h.11"
  for part in attn mlp norm; do
    grep -q "<th class=\"num\">$part (us)</th>" "$tmp/torch.html" || fail "no $part column per layer of GPT-2"
  done
  # the Explain card: in the navigation, its parts bar, its findings led by the launch-bound one
  grep -q '<a href="#explain">Explain</a>' "$tmp/torch.html" || fail "no Explain in the navigation"
  grep -q 'id="explain"' "$tmp/torch.html" || fail "no Explain card"
  grep -q 'aria-label="the step.s parts"' "$tmp/torch.html" || fail "no parts bar in the Explain card"
  grep -q 'First finding: launch-bound' "$tmp/torch.html" || fail "the Explain card does not lead with launch-bound"
  grep -q 'id="explain-findings' "$tmp/torch.html" || fail "no findings table in the Explain card"
fi
