# chromium.sh: sourced by the report's browser tests. Finds headless
# Chromium (exits 77, skipped, when it is not installed: apt-get install -y
# chromium) and defines
#   page_shot HTML[#HASH] WIDTH HEIGHT PNG   a screenshot of the page
#   page_dom HTML[#HASH] WIDTH OUT            the DOM after the page's scripts ran
# Each run gets its own profile under $tmp (the caller's scratch folder).
chromium=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$chromium" ] || { echo "chromium not installed: skipped"; exit 77; }

chromium_run() {
  profile=$(mktemp -d "$tmp/profile.XXXXXX")
  timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --hide-scrollbars \
    --virtual-time-budget=5000 --user-data-dir="$profile" "$@"
}

page_shot() {
  chromium_run --window-size="$2,$3" --screenshot="$4" "file://$1" > "$tmp/chromium.log" 2>&1 ||
    { cat "$tmp/chromium.log"; exit 1; }
  [ -s "$4" ] || { echo "no screenshot of $1"; cat "$tmp/chromium.log"; exit 1; }
}

page_dom() {
  chromium_run --window-size="$2,1000" --dump-dom "file://$1" > "$3" 2> "$tmp/chromium.log" ||
    { cat "$tmp/chromium.log"; exit 1; }
  grep -q '</html>' "$3" || { echo "no DOM of $1"; cat "$tmp/chromium.log"; exit 1; }
}
