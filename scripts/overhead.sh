#!/usr/bin/env bash
# scripts/overhead.sh BUILD OUT [ROUNDS] [STEPS]: step time under `record`
# against `bench` (no CUPTI) for the same configurations, train, ctx 512.
#
# Runs alternate (bench, record, bench, record, ...) for ROUNDS rounds (3) of
# 3 warm-up + STEPS measured steps (30), so drift on the machine hits both
# alike. Each run gives a median and a mean step wall time; a configuration's
# figure is the median of its runs' medians (and the mean of their means).
# For small bf16 (the shortest step with the most launches per millisecond;
# OVERHEAD_VARIANT_MODELS names others), it also records with every API call
# (api=all: --api all) and with CUPTI loaded but nothing enabled (off=all:
# STEPTRACE_CUPTI_OFF, a diagnostic); OVERHEAD_VARIANTS picks others, e.g.
# "off=kernel off=marker off=runtime+driver".
#
# OVERHEAD_KERNELS=fused measures --kernels fused (its steps replayed as one
# CUDA graph, recorded as such) instead of plain.
#
# Writes OUT/overhead-runs.csv (one row per run) and OUT/overhead.csv (one
# row per configuration and variant) and prints the latter.
set -uo pipefail
build=$1; out=$2; rounds=${3:-3}; steps=${4:-30}
st=$build/steptrace
kernels="--kernels ${OVERHEAD_KERNELS:-plain}"
mkdir -p "$out"
runs=$out/overhead-runs.csv
echo "model,precision,variant,round,median_ms,mean_ms,gpu_busy_ms,launch_ms,events" > "$runs"

# column NAME of the row whose first field is KEY, in csv on stdin
col() { awk -F, -v k="$1" -v name="$2" '$1==k{for(i=1;i<=NF;i++) if($i==name) c=i} $1!=k && c && !done{print $c; done=1}'; }

bench() {   # model precision round
	local csv
	csv=$($st bench --model $1 --ctx 512 --precision $2 --mode train --warmup 3 --steps $steps \
		$kernels --format csv 2>/dev/null)
	echo "$1,$2,bench,$3,$(echo "$csv" | col model step_median_ms),$(echo "$csv" | col model step_ms),,$(echo "$csv" | col model launch_ms)," >> "$runs"
}

record() {  # model precision round variant [extra record flags...]
	local m=$1 p=$2 r=$3 v=$4 csv ev off=
	shift 4
	case $v in off=all) off=$all_off ;; off=*) off=${v#off=}; off=${off//+/,} ;; esac
	STEPTRACE_CUPTI_OFF=$off $st record --model $m --ctx 512 --precision $p --mode train \
		--warmup 3 --steps $steps --no-calibrate $kernels "$@" -o "$out/ovh.stb" >/dev/null 2>"$out/ovh.log" ||
		{ echo "record $m $p $v failed:"; cat "$out/ovh.log"; }
	csv=$($st steps "$out/ovh.stb" --format csv --section stats)
	ev=$($st info "$out/ovh.stb" | awk '$1=="events"{print $2; exit}')
	echo "$m,$p,$v,$r,$(echo "$csv" | col Steps "Wall Med (ms)"),$(echo "$csv" | col Steps "Wall Mean (ms)"),$(echo "$csv" | col Steps "GPU Busy Mean (ms)"),,$ev" >> "$runs"
}

# off=all: no callbacks and no activity kind (CUPTI loaded for NVTX, buffers registered)
variants=${OVERHEAD_VARIANTS-off=all api=all}
variant_models=${OVERHEAD_VARIANT_MODELS-small}   # which models (bf16) get the variants
all_off=kernel,memcpy,memset,runtime,driver,marker,memory2,overhead,sync,callbacks
for r in $(seq 1 "$rounds"); do
	for m in small large; do for p in fp32 bf16; do
		bench $m $p $r
		record $m $p $r record
	done; done
	for m in $variant_models; do for v in $variants; do
		case $v in
		api=all) record $m bf16 $r api=all --api all ;;
		*) record $m bf16 $r $v ;;
		esac
	done; done
done 2>&1 | grep -v '^$'
rm -f "$out/ovh.stb" "$out/ovh.log"

python3 - "$runs" "$out/overhead.csv" <<'EOF'
import csv, statistics, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["median_ms"]]
groups = {}
for r in rows:
    groups.setdefault((r["model"], r["precision"], r["variant"]), []).append(r)
def fig(rs, k):
    v = [float(r[k]) for r in rs if r[k]]
    return v
out = csv.writer(open(sys.argv[2], "w"))
out.writerow(["model", "precision", "variant", "runs", "median_ms", "mean_ms", "gpu_busy_ms",
              "launch_ms", "added_median_pct", "added_mean_pct"])
print(f"{'model':6} {'prec':5} {'variant':20} {'runs':>4} {'median':>9} {'mean':>9} {'busy':>8} {'launch':>8} {'+med%':>7} {'+mean%':>7}")
for (m, p, v), rs in groups.items():
    med = statistics.median(fig(rs, "median_ms"))
    mean = statistics.fmean(fig(rs, "mean_ms"))
    busy = fig(rs, "gpu_busy_ms"); busy = statistics.fmean(busy) if busy else None
    launch = fig(rs, "launch_ms"); launch = statistics.fmean(launch) if launch else None
    b = groups.get((m, p, "bench"))
    am = ae = None
    if b and v != "bench":
        am = (med / statistics.median(fig(b, "median_ms")) - 1) * 100
        ae = (mean / statistics.fmean(fig(b, "mean_ms")) - 1) * 100
    f = lambda x, w, d: f"{x:{w}.{d}f}" if x is not None else " " * w
    print(f"{m:6} {p:5} {v:20} {len(rs):4} {med:9.3f} {mean:9.3f} {f(busy,8,3)} {f(launch,8,3)} {f(am,7,2)} {f(ae,7,2)}")
    out.writerow([m, p, v, len(rs), f"{med:.3f}", f"{mean:.3f}",
                  f"{busy:.3f}" if busy is not None else "", f"{launch:.3f}" if launch is not None else "",
                  f"{am:.2f}" if am is not None else "", f"{ae:.2f}" if ae is not None else ""])
EOF
