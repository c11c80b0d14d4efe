#!/bin/sh
# whatif_validation.sh STEPTRACE ROOT: issue 37's validation as a ratchet.
# The GPU runs kept in docs/whatif/runs/ (their bundles and what the changed
# programs measured) are predicted again by this build and compared with
# the committed docs/whatif/validation.csv (scripts/whatif_check.py
# --baseline): fewer changes, a larger mean or per-change error, or a
# ranking turned wrong fails; issue 37's targets are printed, met or not.
set -eu
st=$1; root=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
python3 "$root/scripts/whatif_validate.py" --steptrace "$st" --out "$tmp" --csv "$tmp/v.csv" --md "$tmp/v.md" \
	--predict-from "$root/docs/whatif/runs/h200,$root/docs/whatif/runs/h200x2" > "$tmp/log" 2>&1 ||
	{ cat "$tmp/log"; exit 1; }
python3 "$root/scripts/whatif_check.py" --baseline "$root/docs/whatif/validation.csv" "$tmp/v.csv"
