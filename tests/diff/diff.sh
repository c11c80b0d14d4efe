#!/bin/sh
# diff.sh STEPTRACE GEN_PAIR EXPECTED_DIR: `steptrace diff` on the bundles of
# gen_pair.c, whose every number is worked out in that file's comment;
# outputs are compared byte for byte with EXPECTED_DIR (NAME: stdout,
# NAME.stderr: what goes to stderr, CSV's notes; none when absent).
set -u
st=$1
gen=$2
exp=$3
. "$(dirname "$0")/../lib/check.sh"

# same NAME ARGS...: `steptrace diff ARGS` must exit 0 and print exactly
# EXPECTED_DIR/NAME, and on stderr EXPECTED_DIR/NAME.stderr (or nothing)
same() {
	name=$1
	shift
	(cd "$tmp" && "$st" diff "$@") >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ "$rc" = 0 ] || fail "diff $*: exit $rc: $(cat "$tmp/err")"
	cmp -s "$tmp/out" "$exp/$name" || { fail "diff $*: output differs from $name"; diff "$exp/$name" "$tmp/out" >&2; }
	if [ -e "$exp/$name.stderr" ]; then
		cmp -s "$tmp/err" "$exp/$name.stderr" ||
			{ fail "diff $*: stderr differs from $name.stderr"; diff "$exp/$name.stderr" "$tmp/err" >&2; }
	else
		[ -s "$tmp/err" ] && fail "diff $*: stderr: $(cat "$tmp/err")"
	fi
}

(cd "$tmp" && "$gen" A.stb B.stb C.stb D.stb E.stb) || { echo "FAIL: gen_pair" >&2; exit 1; }

# an op on one side only (cast_weights in B, kernels of no op in A): 0 on the
# other side, its whole time as the delta, no ratio
same ab_op.csv A.stb B.stb --format csv
same ab_op.csv A.stb B.stb --by op --format csv
# CSV is one table; the others by --section
same ab_op.steps.csv A.stb B.stb --format csv --section steps
same ab_op.memory.csv A.stb B.stb --format csv --section memory
same ab_op.kernels.csv A.stb B.stb --format csv --section kernels
same ab_range.csv A.stb B.stb --by range --format csv
same ab_category.csv A.stb B.stb --by category --format csv
same ab_kernel_top7.csv A.stb B.stb --by kernel --top 7 --format csv
same ab_warmup.json A.stb B.stb --include-warmup --format json

# another shape on another device: the same rows, a warning naming the differences
(cd "$tmp" && "$st" diff A.stb C.stb --format csv) >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" = 0 ] || fail "diff A C: exit $rc"
# the warning, then (CSV) the tables left out and the notes, the last naming the differences
want="warning: bundles differ in ctx (128 -> 256), precision (fp32 -> bf16), kernels (plain -> fused), device (NVIDIA H100 80GB HBM3 -> NVIDIA H200): rows are matched by name where the structure matches
csv: one table, 'diff'; the report's others: steps, memory, comm, kernels (--section NAME prints one, --format json all)
A and B differ in ctx (128 -> 256), precision (fp32 -> bf16), kernels (plain -> fused), device (NVIDIA H100 80GB HBM3 -> NVIDIA H200)"
[ "$(cat "$tmp/err")" = "$want" ] || fail "diff A C: stderr '$(cat "$tmp/err")'"
cmp -s "$exp/ab_op.csv" "$tmp/out" || fail "diff A C: rows differ from A B"

# a bundle against itself: no deltas, no one-sided kernels, no header note
(cd "$tmp" && "$st" diff B.stb B.stb) >"$tmp/out" 2>"$tmp/err"
[ $? = 0 ] || fail "diff B B: exit"
grep -q 'both bundles ran the same kernels' "$tmp/out" || fail "diff B B: one-sided kernels reported"
grep -q 'differ in' "$tmp/out" && fail "diff B B: header difference reported"

# usage and bad input
(cd "$tmp" && "$st" diff A.stb B.stb --by nothing) >/dev/null 2>"$tmp/err"
[ $? = 129 ] || fail "--by nothing: want exit 129"
grep -q "^error: option '--by' expects op, range, category, kernel or phase, not 'nothing'" "$tmp/err" || fail "--by nothing: '$(cat "$tmp/err")'"
(cd "$tmp" && "$st" diff A.stb) >/dev/null 2>&1
[ $? = 129 ] || fail "one bundle: want exit 129"
(cd "$tmp" && "$st" diff A.stb missing.stb) >/dev/null 2>"$tmp/err"
[ $? = 1 ] || fail "missing bundle: want exit 1"
[ "$(wc -l <"$tmp/err" | tr -d ' ')" = 1 ] || fail "missing bundle: want one error line, got '$(cat "$tmp/err")'"

# across implementations: D (PyTorch's op names) against B, aligned by phase and category
same db_phase.csv D.stb B.stb --format csv
(cd "$tmp" && "$st" diff D.stb B.stb --by phase --format csv) >"$tmp/out" 2>"$tmp/err"
cmp -s "$exp/db_phase.csv" "$tmp/out" || fail "diff D B --by phase differs from the automatic alignment"
grep -v '^only 0% of the GPU time' "$exp/db_phase.csv.stderr" | cmp -s - "$tmp/err" ||
	fail "diff D B --by phase: its notes are not the automatic alignment's less its note"
same ab_phase.csv A.stb B.stb --by phase --format csv
# the phases a PyTorch loop adds (E): data and zero_grad rows and memory peaks on B's side only
same de_phase.csv D.stb E.stb --by phase --format csv
# and in the HTML report: E's time by phase and peaks by phase name them, the diff page's chart too
(cd "$tmp" && "$st" report E.stb -o E.html && "$st" report D.stb E.stb -o DE.html) >/dev/null 2>&1 ||
	fail "report E, report D E"
grep -q '<tr><td>zero_grad</td><td class="num">4 us</td>' "$tmp/E.html" || fail "report E: no zero_grad row in the phases"
grep -q '<tr><td>data</td><td class="num">8 us</td>' "$tmp/E.html" || fail "report E: no data row in the phases"
grep -q 'projected onto the forward, backward, optimizer, zero_grad and data NVTX ranges' "$tmp/E.html" ||
	fail "report E: the phases' lead does not name zero_grad and data"
grep -q '<dt>zero_grad</dt><dd>17 MiB</dd><dt>data</dt><dd>17 MiB</dd>' "$tmp/E.html" ||
	fail "report E: no memory peaks of zero_grad and data"
grep -q 'data-tip="zero_grad, B: 4 us"' "$tmp/DE.html" || fail "report D E: no zero_grad in the phase chart"

check_done diff.cli
