#!/bin/sh
# Chrome JSON that DevTools binds: the test bundle and every sample through
# chrome_check.py (and DevTools' own trace engine when $4 names it).
set -eu
steptrace=$1; writer=$2; samples=$3; engine=${4:-}
here=$(dirname "$0")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$writer" --write "$tmp/x.stb"
check() {   # bundle, [chrome_check options]
	b=$1; shift
	"$steptrace" export "$b" --format chrome -o "$tmp/t.json" 2> "$tmp/log" || { cat "$tmp/log"; exit 1; }
	flows=$(sed -n 's/.* \([0-9][0-9]*\) launch flows.*/\1/p' "$tmp/log")
	python3 "$here/chrome_check.py" "$tmp/t.json" --flows "$flows" "$@" > "$tmp/out" ||
		{ cat "$tmp/out"; echo "in the export of $b"; exit 1; }
	if [ -n "$engine" ]; then
		node "$here/devtools_flows.mjs" "$engine" "$tmp/t.json" "$flows" || exit 1
	fi
}
check "$tmp/x.stb" --time-base 1795232136753811151
grep -q '^chrome_check: 7 flows' "$tmp/out" || { cat "$tmp/out"; echo "expected 7 flows"; exit 1; }
for f in "$samples"/*.stb; do
	[ -e "$f" ] || continue
	check "$f"
done
echo "chrome: flows bind in the test bundle and the samples"
