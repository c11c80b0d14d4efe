#!/bin/sh
# compile.sh STEPTRACE OUTDIR [PRESET-ARGS...]: torch.compile's kernels under
# their modules (issue 36; label gpu). Records scripts/gpt_train.py
# --compile (a GPT-2 style loop written as people write it, torch.compile's
# default mode; by default `--preset gpt2 --batch 8 --ctx 512 --steps 6`,
# else PRESET-ARGS) with the defaults, in an Inductor cache of its own
# (a graph an earlier run left in the cache was compiled without steptrace:
# it has no kernel table), and the same loop eager beside it. Checks, from
# `summary --by op --format csv` (measured steps), in the forward and in the
# backward, of the GPU time under the model ("GPT"; its ops, not the
# phase's own):
#  - >= 90% has a module's op, the model's own or one below it, not a
#    compiled region's (compiled_N): what the mapping placed;
#  - the share below the model (neither its own op nor compiled_N) is at
#    least the eager run's less 5 points: gpt_train.py computes its loss
#    (cross-entropy over 50,304 classes) in GPT.forward, so eager has about
#    a fifth of the forward at the model's own op too, and the compiled
#    run's kernels that fuse work of two layers (the residual stream) go to
#    their common ancestor, the model;
#  - the forward's and the backward's GEMMs of mlp.c_fc under
#    transformer.h.*/mlp/c_fc, as in the eager run;
#  - at most 1% of the GPU time without an op, and the shim said nothing
#    on stderr about the mapping (each "steptrace: torch.compile:" line is
#    a fallback);
#  - the kernels' total time is the same by op and by kernel (each once).
# Writes OUTDIR/compile.shares (phase; compiled: % with a module, % below
# the model; eager: the same) and OUTDIR/compile.kinds (each op kind's ns,
# compiled and eager side by side).
# Exit 77 (skipped) without python3 + torch + a CUDA GPU.
set -u
. "$(dirname "$0")/torch_prologue.sh"
train="$here/../../scripts/gpt_train.py"
shift 2
args=${*:---preset gpt2 --batch 8 --ctx 512 --steps 6}

# record NAME RECORD-ARGS... -- COMMAND...: the bundle is $out/NAME.stb, stderr in $out/NAME.err
record() {
	name=$1
	shift
	echo "+ steptrace record -o $name.stb $*"
	"$st" record -o "$out/$name.stb" "$@" >"$out/$name.out" 2>"$out/$name.err"
	rc=$?
	cat "$out/$name.err"
	[ "$rc" = 0 ] || fail "$name: exit $rc"
	grep -q "CUPTI DROPPED" "$out/$name.err" && fail "$name: CUPTI dropped records"
	grep -q "PyTorch annotation" "$out/$name.err" && fail "$name: the Python side turned itself off"
	[ -f "$out/$name.stb" ] || fail "$name: no bundle"
}

# shares BUNDLE: "PHASE MODULE% BELOW%" for forward and backward: of the GPU
# time under the model (the phase's ops but its own), the share with a
# module's op (not compiled_N) and the share below the model (not its own
# op "GPT" either)
shares() {
	"$st" summary "$1" --by op --format csv | awk -F, '
		NR > 1 {
			n = $NF; ns = $2; slash = index(n, "/")
			if (!slash) next
			phase = substr(n, 1, slash - 1); kind = substr(n, slash + 1)
			if (kind == phase) next
			all[phase] += ns
			if (kind !~ /^compiled_/) mod[phase] += ns
			if (kind != "GPT" && kind !~ /^compiled_/) below[phase] += ns
		}
		END {
			for (p in all)
				if (p == "forward" || p == "backward")
					printf "%s %.1f %.1f\n", p, 100 * mod[p] / all[p], 100 * below[p] / all[p]
		}' | sort
}

rm -rf "$out/inductor-cache"
TORCHINDUCTOR_CACHE_DIR=$out/inductor-cache
export TORCHINDUCTOR_CACHE_DIR
# shellcheck disable=SC2086
record compiled -- "$py" "$train" $args --compile
# shellcheck disable=SC2086
record eager -- "$py" "$train" $args
b=$out/compiled.stb
grep -q "steptrace: torch.compile:" "$out/compiled.err" &&
	fail "compiled: the shim fell back: $(grep 'steptrace: torch.compile:' "$out/compiled.err")"

shares "$b" >"$out/compiled.shares"
shares "$out/eager.stb" >"$out/eager.shares"
join "$out/compiled.shares" "$out/eager.shares" >"$out/compile.shares"
echo "of the GPU time under the model (phase; compiled: % with a module, % below the model; eager: the same):"
cat "$out/compile.shares"
while read -r phase mod below _ eager_below; do
	awk -v x="$mod" 'BEGIN { exit !(x >= 90.0) }' ||
		fail "compiled: $mod% of the $phase's GPU time under the model has a module, want >= 90%"
	awk -v x="$below" -v e="$eager_below" 'BEGIN { exit !(x >= e - 5.0) }' ||
		fail "compiled: $below% of the $phase's GPU time under the model is below it, eager $eager_below%"
done <"$out/compile.shares"
[ "$(wc -l <"$out/compile.shares")" = 2 ] || fail "compiled: no forward or no backward: $(cat "$out/compile.shares")"

"$st" summary "$b" --by op --format csv >"$out/compiled.byop" || fail "compiled: summary --by op"
"$st" summary "$out/eager.stb" --by op --format csv >"$out/eager.byop" || fail "eager: summary --by op"
awk -F, 'FNR == 1 { next } FILENAME == ARGV[1] { c[$NF] = $2; next } { e[$NF] = $2 }
	END { for (k in c) printf "%s %d %d\n", k, c[k], e[k] + 0; for (k in e) if (!(k in c)) printf "%s 0 %d\n", k, e[k] }' \
	"$out/compiled.byop" "$out/eager.byop" | sort -k2,2nr >"$out/compile.kinds"
for phase in forward backward; do
	awk -v k="$phase/transformer.h.*/mlp/c_fc" '$1 == k && $2 > 0 { found = 1 } END { exit !found }' \
		"$out/compile.kinds" || fail "compiled: no GPU time under $phase/transformer.h.*/mlp/c_fc: $(head -20 "$out/compile.kinds")"
done
noop=$(awk -F, '$NF == "(no op)" { print $1 }' "$out/compiled.byop")
awk -v x="${noop:-0}" 'BEGIN { exit !(x <= 1.0) }' || fail "compiled: ${noop}% of GPU time without an op"
by_op=$(awk -F, 'NR > 1 { s += $2 } END { print s + 0 }' "$out/compiled.byop")
by_kernel=$("$st" summary "$b" --by kernel --format csv | awk -F, 'NR > 1 { s += $2 } END { print s + 0 }')
[ "$by_op" = "$by_kernel" ] || fail "compiled: kernel time by op $by_op ns, by kernel $by_kernel ns"
for cmd in "steps" "ranges --depth 4" "summary --range forward" "flops" "diff $out/eager.stb --by op" \
	"report -o $out/compiled.html"; do
	# shellcheck disable=SC2086
	"$st" $cmd "$b" >/dev/null 2>"$out/cmd.err" || fail "compiled: '$cmd' failed: $(cat "$out/cmd.err")"
done

check_done foreign.compile
