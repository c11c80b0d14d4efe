#!/bin/sh
# Renders the report of one bundle and of a diff in headless Chromium at
# 1280 px, of synthetic bundles (1280x2400) and of samples/ (the top of the
# page, 1280x1300: docs/report.png and docs/report-diff.png), and checks
# each screenshot is a real picture. Skipped (77) without Chromium. With
# REPORT_SHOT=DIR the screenshots are kept there (one, diff, real,
# real-diff .png).
set -eu
steptrace=$1; gen=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/chromium.sh"
samples="$(dirname "$0")/../../samples"
"$gen" --precision bf16 -o "$tmp/small-bf16.stb"
"$gen" --precision fp32 -o "$tmp/small-fp32.stb"
"$steptrace" report "$tmp/small-bf16.stb" -o "$tmp/one.html" 2>/dev/null
"$steptrace" report "$tmp/small-fp32.stb" "$tmp/small-bf16.stb" -o "$tmp/diff.html" 2>/dev/null
"$steptrace" report "$samples/small-bf16-train.stb" -o "$tmp/real.html" 2>/dev/null
"$steptrace" report "$samples/small-fp32-train.stb" "$samples/small-bf16-train.stb" -o "$tmp/real-diff.html" 2>/dev/null
for page in one diff real real-diff; do
  case $page in real*) height=1300 ;; *) height=2400 ;; esac
  page_shot "$tmp/$page.html" 1280 $height "$tmp/$page.png"
  size=$(wc -c < "$tmp/$page.png")
  # a blank page compresses to a few KB; the report has charts and tables
  [ "$size" -gt 60000 ] || { echo "$page.png is only $size bytes: blank page?"; exit 1; }
  head -c 8 "$tmp/$page.png" | od -An -c | grep -q 'P   N   G' || { echo "$page.png is not a PNG"; exit 1; }
  if [ -n "${REPORT_SHOT:-}" ]; then cp "$tmp/$page.png" "$REPORT_SHOT/$page.png"; fi
  echo "screenshot $page.png: $size bytes"
done
