#!/bin/sh
# The report's script in headless Chromium, read back through --dump-dom
# (check_dom.py): it runs without an error, the timeline draws, zooms and
# pans (by the hook and by dispatched drag and wheel events), hovering shows
# a kernel and a click pins it, a header click sorts, nothing is wider than
# its card at 1280 and 1920 px (synthetic bundles and samples/, the diff
# with its folded reports open), a truncated bundle says so, and a run of
# two ranks (docs/multi) draws a lane group of each. At both
# widths the page's own geometry (the #layout hook) has no card title
# under the sticky bar after its link is followed, no axis label past the
# timeline's edge or text past an SVG chart's, the run's lists with their
# values in one column, no word of the command line split across lines;
# and every (ns) column shows one decimal. Skipped (77) without Chromium.
set -eu
steptrace=$1; gen=$2
here=$(dirname "$0")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. "$here/chromium.sh"
check() { python3 "$here/check_dom.py" "$@"; }
"$gen" --precision bf16 -o "$tmp/bf16.stb"
"$gen" --precision fp32 -o "$tmp/fp32.stb"
"$gen" --precision bf16 --truncated -o "$tmp/cut.stb"
"$steptrace" report "$tmp/bf16.stb" -o "$tmp/one.html" 2>/dev/null
"$steptrace" report "$tmp/fp32.stb" "$tmp/bf16.stb" -o "$tmp/diff.html" 2>/dev/null
"$steptrace" report "$tmp/cut.stb" -o "$tmp/cut.html" 2>/dev/null

page_dom "$tmp/one.html#check&sort=kernels-table:3:asc,ops-table:1:desc&probe=longest" 1280 "$tmp/one.dom"
check "$tmp/one.dom" --overflow --decimals --timelines 1 --drawn-min 300 --sorted kernels-table:3:asc \
  --sorted ops-table:1:desc --pinned
for width in 1280 1920; do   # (apart: following the links scrolls, which hides the pinned kernel's tooltip)
  page_dom "$tmp/one.html#layout" $width "$tmp/one-layout.dom"
  check "$tmp/one-layout.dom" --layout
done
# zoomed in 16 times, the view holds fewer slices
page_dom "$tmp/one.html#zoom=16&probe=gestures" 1280 "$tmp/zoom.dom"
all=$(check "$tmp/one.dom" --print-drawn); zoomed=$(check "$tmp/zoom.dom" --drawn-min 1 --gestures --print-drawn)
[ "$zoomed" -lt "$all" ] || { echo "zooming in drew $zoomed slices, the whole step $all"; exit 1; }
for width in 1280 1920; do
  page_dom "$tmp/diff.html#check&open&layout" $width "$tmp/diff.dom"
  check "$tmp/diff.dom" --overflow --layout --decimals --timelines 2 --drawn-min 300 --banner 'What changed'
done
# the real recordings in samples/, at both widths
samples="$here/../../samples"
"$steptrace" report "$samples/small-bf16-train.stb" -o "$tmp/real.html" 2>/dev/null
"$steptrace" report "$samples/small-fp32-train.stb" "$samples/small-bf16-train.stb" -o "$tmp/real-diff.html" 2>/dev/null
for width in 1280 1920; do
  page_dom "$tmp/real.html#check&layout" $width "$tmp/real.dom"
  check "$tmp/real.dom" --overflow --layout --decimals --timelines 1 --drawn-min 300
  page_dom "$tmp/real-diff.html#check&open&layout" $width "$tmp/real-diff.dom"
  check "$tmp/real-diff.dom" --overflow --layout --decimals --timelines 2 --drawn-min 300
done
# a run of two ranks: one lane group per rank, both drawn
"$steptrace" report "$here/../../docs/multi/ddp-bucket.rank0.stb" "$here/../../docs/multi/ddp-bucket.rank1.stb" \
  -o "$tmp/ranks.html" 2>/dev/null
page_dom "$tmp/ranks.html#check&probe=longest" 1280 "$tmp/ranks.dom"
check "$tmp/ranks.dom" --overflow --timelines 1 --drawn-min 300 --pinned --ranks 0,1
page_dom "$tmp/cut.html#check" 1280 "$tmp/cut.dom"
check "$tmp/cut.dom" --overflow --timelines 1 --drawn-min 100 --banner "Truncated bundle. 'cut.stb' is truncated"
echo "browser: $all slices drawn, $zoomed zoomed in"
