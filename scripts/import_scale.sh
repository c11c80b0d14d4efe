#!/bin/sh
# import_scale.sh STEPTRACE DIR [BYTES]: how `steptrace import` scales with
# a torch.profiler trace's size. Writes a synthetic trace of about BYTES
# (default 1 GB; scripts/kineto_trace.py --size: Kineto's layout, a GPT-like
# step of 12 layers repeated, profile_memory and record_shapes on) into
# DIR, imports it under /usr/bin/time -v, and prints one line: the trace's
# size, its events, the import's wall time and peak RSS, the bundle's size
# and its summary total against the trace's kernel time. Import reads the
# trace twice, one event at a time: memory grows with the CPU ops it keeps
# (~60 bytes each, for the range tree), not with the file.
set -eu
st=$1; dir=$2; bytes=${3:-1000000000}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
rm -f "$dir"/*.pt.trace.json "$dir/big.stb"
gen=$(python3 "$here/kineto_trace.py" --steps 1 --layers 12 --size "$bytes" "$dir")
trace=$(ls "$dir"/*.pt.trace.json)
/usr/bin/time -v "$st" import -o "$dir/big.stb" "$trace" 2> "$dir/time.txt" || { cat "$dir/time.txt"; exit 1; }
rss=$(sed -n 's/^[[:space:]]*Maximum resident set size (kbytes): //p' "$dir/time.txt")
wall=$(sed -n 's/^[[:space:]]*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$dir/time.txt")
total=$("$st" summary --format csv "$dir/big.stb" 2> /dev/null | awk -F, 'NR > 1 { s += $2 } END { printf "%.0f", s }')
want=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['kernel_ns'])" "$gen")
events=$(grep -c '"ph":' "$trace")
echo "trace $(wc -c < "$trace") bytes, $events events; import: $wall wall, peak RSS $rss KiB;" \
     "bundle $(wc -c < "$dir/big.stb") bytes; summary $total ns, the trace's kernels $want ns"
[ "$total" = "$want" ]
