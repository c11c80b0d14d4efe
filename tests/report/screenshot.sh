#!/bin/sh
# Renders the report in headless Chromium and checks the screenshot is a
# real picture. Exits 77 (skipped) when Chromium is not installed:
#   apt-get install -y chromium
# With REPORT_SHOT=FILE the screenshot is kept there (docs/report.png).
set -eu
steptrace=$1; gen=$2
chromium=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$chromium" ] || { echo "chromium not installed: skipped"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$gen" --precision bf16 -o "$tmp/small-bf16.stb"
"$steptrace" report "$tmp/small-bf16.stb" -o "$tmp/report.html" 2>/dev/null
timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --hide-scrollbars --user-data-dir="$tmp/profile" --screenshot="$tmp/shot.png" \
  --window-size="${REPORT_WIDTH:-1280},${REPORT_HEIGHT:-2400}" "file://$tmp/report.html" \
  > "$tmp/chromium.log" 2>&1 || { cat "$tmp/chromium.log"; exit 1; }
[ -s "$tmp/shot.png" ] || { echo "no screenshot"; cat "$tmp/chromium.log"; exit 1; }
size=$(wc -c < "$tmp/shot.png")
# a blank page compresses to a few KB; the report has charts and tables
[ "$size" -gt 60000 ] || { echo "screenshot is only $size bytes: blank page?"; exit 1; }
head -c 8 "$tmp/shot.png" | od -An -c | grep -q 'P   N   G' || { echo "not a PNG"; exit 1; }
if [ -n "${REPORT_SHOT:-}" ]; then cp "$tmp/shot.png" "$REPORT_SHOT"; fi
echo "screenshot: $size bytes"
