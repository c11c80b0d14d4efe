#!/bin/sh
# graph.sh STEPTRACE OUTDIR: `record --kernels fused` records the step's CUDA
# graph replays with exact attribution. A tiny BF16 model, one warm-up and
# three measured steps (the first eager, the second captured and launched,
# the rest replayed), recorded twice: with graphs, and eagerly
# (STEPTRACE_RECORD_EAGER=1). The graph bundle must launch its steps with
# cudaGraphLaunch, leave no kernel without an op, have three measured steps,
# and show the same ops with the same kernels per step as the eager one, in
# total and under each phase's NVTX path (`--range forward` and so on).
# Exit 77 (skipped) where there is no GPU.
set -u
st=$1 dir=$2
mkdir -p "$dir"
set -- --d-model 128 --layers 2 --heads 4 --d-ff 256 --vocab 512 --ctx 32 --batch 2 \
	--mode train --precision bf16 --kernels fused --warmup 1 --steps 3 --no-calibrate
fail=0
bad() { echo "FAIL: $*"; fail=1; }

for mode in graph eager; do
	rm -f "$dir/$mode.stb"
	if [ $mode = eager ]; then
		STEPTRACE_RECORD_EAGER=1 "$st" record "$@" -o "$dir/$mode.stb" 2>"$dir/$mode.stderr"
	else
		"$st" record "$@" -o "$dir/$mode.stb" 2>"$dir/$mode.stderr"
	fi
	rc=$?
	cat "$dir/$mode.stderr"
	if grep -qi "no CUDA GPU\|needs a GPU build" "$dir/$mode.stderr"; then
		echo "skip: no GPU here"
		exit 77
	fi
	[ $rc = 0 ] || { echo "FAIL: record ($mode) exited $rc"; exit 1; }
	grep -q "outside any op\|CUPTI DROPPED" "$dir/$mode.stderr" && bad "$mode: unattributed or dropped records"
done

launches=$("$st" replay "$dir/graph.stb" | grep -c cudaGraphLaunch)
[ "$launches" -ge 3 ] || bad "the graph bundle has $launches cudaGraphLaunch calls, want 3 or more"
launches=$("$st" replay "$dir/eager.stb" | grep -c cudaGraphLaunch)
[ "$launches" = 0 ] || bad "the eager bundle has $launches cudaGraphLaunch calls, want none"

measured=$("$st" steps --format csv "$dir/graph.stb" | grep -c '^[0-9]*,no,')
[ "$measured" = 3 ] || bad "the graph bundle has $measured measured steps, want 3"
kernels=$("$st" steps --format csv "$dir/graph.stb" | awk -F, '/^[0-9]+,no,/ { print $6 }' | sort -u)
[ "$(echo "$kernels" | wc -l)" = 1 ] && [ "$kernels" -gt 50 ] ||
	bad "measured steps of the graph bundle hold $kernels kernels, want one count over 50"

# op name and kernels per step, for the whole step and under each phase's range
for range in "" forward backward optimizer; do
	for mode in graph eager; do
		if [ -n "$range" ]; then r="--range $range"; else r=""; fi
		"$st" summary --by op --all --per-step --format csv $r "$dir/$mode.stb" |
			awk -F, 'NR > 1 { print $NF "," $3 }' | sort >"$dir/$mode.ops$range"
	done
	grep -q "(no op)" "$dir/graph.ops$range" && bad "graph bundle ($range): kernels with no op"
	least=4; [ "$range" = optimizer ] && least=1   # the fused step's optimizer is one or two ops
	[ "$(wc -l <"$dir/graph.ops$range")" -ge $least ] || bad "graph bundle ($range): too few ops"
	if ! cmp -s "$dir/graph.ops$range" "$dir/eager.ops$range"; then
		bad "ops and kernels per step differ from the eager recording (range '$range'):"
		diff "$dir/eager.ops$range" "$dir/graph.ops$range"
	fi
done
[ $fail = 0 ] && echo "ok   graph replays recorded with every kernel in its op and range"
exit $fail
