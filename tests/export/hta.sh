#!/bin/sh
# `export --per-rank`: the files Holistic Trace Analysis's loader reads
# (hta_fields.py names its code), for the DDP sample's two ranks and one bundle alone.
set -eu
steptrace=$1; samples=$2
here=$(dirname "$0")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$steptrace" export --per-rank "$tmp/ddp" "$samples/pytorch-ddp.rank0.stb" "$samples/pytorch-ddp.rank1.stb" 2> "$tmp/log" ||
	{ cat "$tmp/log"; exit 1; }
python3 "$here/hta_fields.py" "$steptrace" "$tmp/ddp" "$samples/pytorch-ddp.rank0.stb" "$samples/pytorch-ddp.rank1.stb"
"$steptrace" export --per-rank "$tmp/one" "$samples/small-bf16-train.stb" 2> "$tmp/log" || { cat "$tmp/log"; exit 1; }
python3 "$here/hta_fields.py" "$steptrace" "$tmp/one" "$samples/small-bf16-train.stb"
# --per-rank writes Chrome JSON and names its own files
if "$steptrace" export --per-rank "$tmp/x" --format sqlite "$samples/small-bf16-train.stb" 2> /dev/null; then
	echo "--per-rank with --format sqlite accepted"; exit 1
fi
if "$steptrace" export --per-rank "$tmp/x" -o x.json "$samples/small-bf16-train.stb" 2> /dev/null; then
	echo "--per-rank with -o accepted"; exit 1
fi
echo "hta: --per-rank files have what HTA's loader reads"
