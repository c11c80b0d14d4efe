#!/bin/sh
# scripts/golden.sh STEPTRACE OUTDIR: every report on every bundle in samples/,
# in every format and with the options that change what is computed, each
# output (stdout, stderr, exit status, written files) into OUTDIR. Run it
# before and after a change that must not change behaviour, then
# `diff -r BEFORE AFTER`.
set -u
st=$1; out=$2
cd "$(dirname "$0")/.."
mkdir -p "$out"
n=0
run() {  # run NAME ARGS...: one command's stdout, stderr and status
	name=$1; shift
	n=$((n + 1))
	"$st" "$@" > "$out/$name.out" 2> "$out/$name.err"
	echo $? > "$out/$name.rc"
	sed -i "s#$out#OUT#g" "$out/$name.out" "$out/$name.err"   # outputs compare across folders
}
for f in samples/*.stb; do
	b=$(basename "$f" .stb)
	for fmt in table csv json md; do
		run "$b.info.$fmt" info "$f" --format $fmt
		run "$b.steps.$fmt" steps "$f" --include-warmup --format $fmt
		run "$b.steps0.$fmt" steps "$f" --format $fmt
		for by in kernel op category; do
			run "$b.summary.$by.$fmt" summary "$f" --by $by --format $fmt
			run "$b.summary.$by.fwd.$fmt" summary "$f" --by $by --range forward --format $fmt
			run "$b.summary.$by.ps.$fmt" summary "$f" --by $by --per-step --all --include-warmup --top 7 --format $fmt
		done
		run "$b.ranges.$fmt" ranges "$f" --format $fmt
		run "$b.ranges.d2.$fmt" ranges "$f" --depth 2 --range 'layer.*' --format $fmt
		run "$b.memory.$fmt" memory "$f" --format $fmt
		run "$b.memory.top3.$fmt" memory "$f" --top 3 --format $fmt
		run "$b.flops.$fmt" flops "$f" --format $fmt
		run "$b.flops.op.$fmt" flops "$f" --by op --format $fmt
		run "$b.flops.fwd.$fmt" flops "$f" --phase forward --format $fmt
		run "$b.replay.$fmt" replay "$f" --kind kernel --range 'layer.0/attn/*' --format $fmt
		run "$b.explain.$fmt" explain "$f" --format $fmt
		run "$b.explain.wi.$fmt" explain "$f" --what-if graph --what-if 'kernels:*gemm*=0.5' --what-if no-sync --format $fmt
	done
	run "$b.replay.all" replay "$f" --from 0 --to 5
	run "$b.replay.cap" replay "$f" --capacity 512MiB
	run "$b.replay.cap2" replay "$f" --capacity 3GiB
	run "$b.memory.svg" memory "$f" --svg "$out/$b.memory.svg"
	run "$b.memory.svgstep" memory "$f" --svg "$out/$b.memory.step1.svg" --step 1
	run "$b.flops.svg" flops "$f" --svg "$out/$b.roofline.svg"
	run "$b.export.pf" export "$f" -o "$out/$b.pftrace"
	run "$b.export.chrome" export "$f" --format chrome -o "$out/$b.chrome.json"
	run "$b.export.noapi" export "$f" --no-api -o "$out/$b.noapi.pftrace"
	run "$b.report" report "$f" -o "$out/$b.report.html"
done
a=samples/small-fp32-train.stb b=samples/small-bf16-train.stb
for fmt in table csv json md; do
	run "diff.$fmt" diff "$a" "$b" --format $fmt
	run "diff.cat.$fmt" diff "$a" "$b" --by category --format $fmt
	run "diff.k.$fmt" diff "$a" "$b" --by kernel --top 5 --format $fmt
	run "diff.r.$fmt" diff "$a" "$b" --by range --format $fmt
done
run "diff.report" report "$a" "$b" -o "$out/diff.report.html"
# bad input
run bad.none summary /nonexistent.stb
run bad.text summary README.md
run bad.flag summary --bogus "$a"
run bad.by summary --by nothing "$a"
run bad.range summary --range '[' "$a"
run help.main help
# plan reads no bundle: the seeds' XXL, every table
run plan.xxl plan --d-model 16384 --d-ff 53248 --blocks 126 --ffn-only --chip tpu-v5p --fsdp 16 --tp 4 --mesh-x 2 --format json
for c in info steps summary ranges memory replay flops diff export report comm explain plan bench step record; do
	run "help.$c" $c --help
done
echo "golden: $n commands into $out"
