#!/bin/sh
# readable.sh STEPTRACE SOURCE_DIR: the reports a person reads at a glance,
# on the real bundles of samples/ and docs/: every text report of every
# command, with its default options, on every bundle (and on the ranks of
# each run together, and plan on each built-in model) fits in 160 columns
# (paths cut in the middle, formulas and lists wrapped onto more lines,
# columns a glance does without left out, each said in a closing note); kernel
# names print as base names, distinct, whole with
# --full-names and in csv and json; a --range that matches nothing fails in
# one line naming the nearest paths.
set -u
st=$1
samples=$2/samples
foreign=$2/docs/foreign
. "$(dirname "$0")/../lib/check.sh"

MAX=160

widest() {  # widest FILE: the longest line's length, in characters (not bytes: plan prints ⌈ and ×)
	LC_ALL=C.UTF-8 wc -L < "$1"
}

check_width() {  # check_width REPORT BUNDLE-NAME ARGS...
	report=$1 name=$2
	shift 2
	"$st" "$@" > "$tmp/out" 2> "$tmp/err" || fail "$*: exit $?: $(cat "$tmp/err")"
	w=$(widest "$tmp/out")
	[ "$w" -le "$MAX" ] || fail "$report on $name: $w columns wide, more than $MAX: $(LC_ALL=C.UTF-8 awk '{ print }' "$tmp/out" | while IFS= read -r line; do [ "$(printf '%s\n' "$line" | LC_ALL=C.UTF-8 wc -L)" -eq "$w" ] && { printf '%s\n' "$line" | cut -c1-200; break; }; done)..."
	widths=$((widths + 1))
	return 0
}

bundles=$(ls "$samples"/*.stb)
[ -n "$bundles" ] || fail "no bundle in $samples"
widths=0
# shellcheck disable=SC2046
for f in $bundles $(find "$2/docs" -name '*.stb' | sort); do
	name=${f#"$2"/}
	for report in info steps summary "summary --by op" "summary --by category" ranges memory replay flops \
	              "flops --by op" comm explain; do
		# shellcheck disable=SC2086
		check_width "$report" "$name" $report "$f"
	done
	# plan: a PyTorch recording has no model sizes (GPT-2 small's given), some not even a parameter count
	"$st" plan "$f" > /dev/null 2> "$tmp/err"
	if grep -q 'records no model sizes' "$tmp/err"; then
		check_width plan "$name" plan "$f" --d-model 768 --d-ff 3072 --blocks 12
	elif grep -q 'records no parameter count and no parameter bytes' "$tmp/err"; then
		[ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "plan $name: its refusal is not one line: $(cat "$tmp/err")"
	else
		check_width plan "$name" plan "$f"
	fi
	check_width diff "$name" diff "$samples/small-bf16-train.stb" "$f"
	# the ranks of a run together
	case $f in
	*.rank0.stb)
		g=${f%.rank0.stb}.rank1.stb
		[ -f "$g" ] || continue
		for report in info steps summary "summary --per-rank" ranges "ranges --per-rank" memory replay flops \
		              "flops --per-rank" "flops --by op" comm explain; do
			# shellcheck disable=SC2086
			check_width "$report" "$name and rank 1" $report "$f" "$g"
		done
		;;
	esac
done
for model in small medium large xl 2.7B; do
	check_width plan "--model $model" plan --model "$model"
done
[ "$widths" -ge 270 ] || fail "only $widths reports' widths checked"
echo "$widths text reports checked: none wider than $MAX columns"

# The kernel rows of summary print distinct names, none wider than 60
# columns, whole with --full-names, in csv and in json.
n=0
for f in $bundles "$foreign"/*.stb; do
	[ -f "$f" ] || continue
	n=$((n + 1))
	name=$(basename "$f" .stb)
	"$st" summary "$f" > "$tmp/sum" 2>/dev/null || { fail "summary $name failed"; continue; }
	col=$(awk '/^Time \(%\)/ { print index($0, "Name"); exit }' "$tmp/sum")
	awk -v c="$col" 'NR > 4 && /^ *[0-9]/ { print substr($0, c) }' "$tmp/sum" > "$tmp/names"
	[ -s "$tmp/names" ] || fail "$name: no kernel rows"
	dup=$(sort "$tmp/names" | uniq -d | head -n 1)
	[ -z "$dup" ] || fail "$name: two kernels print as '$dup'"
	long=$(awk 'length($0) > 60' "$tmp/names" | head -n 1)
	[ -z "$long" ] || fail "$name: a kernel name wider than 60 columns: '$long'"
	"$st" summary "$f" --format csv > "$tmp/csv" 2>/dev/null
	"$st" summary "$f" --full-names --format md > "$tmp/md" 2>/dev/null
	"$st" summary "$f" --format json > "$tmp/json" 2>/dev/null
	if grep -q ')"\?$' "$tmp/csv"; then
		grep -q '[a-z](' "$tmp/names" && fail "$name: a kernel signature printed whole by default"
		grep -q 'kernel names shortened' "$tmp/sum" || fail "$name: no note on shortened names"
		grep -q '(.*)' "$tmp/md" || fail "$name: --full-names prints no signature"
		grep -q 'kernel names shortened' "$tmp/md" && fail "$name: --full-names says names are shortened"
		grep -q '"Name": "[^"]*(' "$tmp/json" || fail "$name: json shortens kernel names"
	fi
done
"$st" summary "$samples/small-bf16-train.stb" --top 1 > "$tmp/top" 2>&1
grep -q '  adamw_kernel$' "$tmp/top" || fail "summary --top 1 does not name adamw_kernel: $(cat "$tmp/top")"
"$st" summary "$samples/small-bf16-train.stb" --top 1 --full-names > "$tmp/top" 2>&1
grep -q '  adamw_kernel(float\*, float const\*' "$tmp/top" || fail "--full-names: $(cat "$tmp/top")"
# FP32 against BF16: the template arguments tell a kernel's two instances apart
"$st" diff "$samples/small-fp32-train.stb" "$samples/small-bf16-train.stb" > "$tmp/diff" 2>&1
grep -q 'swiglu_forward_vec_kernel<float> .* swiglu_forward_vec_kernel<__nv_bfloat16> ' "$tmp/diff" ||
	fail "diff does not tell swiglu_forward_vec_kernel<float> from <__nv_bfloat16>"

[ "$n" -ge 9 ] || fail "the kernel names of $n bundles checked, not 9"

# The HTML diff keeps whole names: its cells ellipsize and show them on hover
"$st" report "$samples/small-fp32-train.stb" "$samples/small-bf16-train.stb" -o "$tmp/d.html" > /dev/null 2>&1 ||
	fail "report A B failed"
grep -q 'title="[^"]*void swiglu_forward_vec_kernel&lt;float&gt;(float\*' "$tmp/d.html" ||
	fail "the HTML diff does not keep whole kernel names"

# A --range that matches nothing: exit 1, one line naming the nearest paths, nothing printed
for c in summary ranges flops replay "diff $samples/small-fp32-train.stb"; do
	want="error: --range 'forwrd' matches no range path; the nearest: 'forward'"
	[ "${c%% *}" = diff ] &&
		want="error: --range 'forwrd' matches no range path in the bundles given; the nearest: 'forward'"
	# shellcheck disable=SC2086
	"$st" $c "$samples/small-bf16-train.stb" --range forwrd > "$tmp/out" 2> "$tmp/err"
	rc=$?
	[ "$rc" = 1 ] || fail "$c --range forwrd: exit $rc, want 1"
	[ -s "$tmp/out" ] && fail "$c --range forwrd printed a report"
	[ "$(cat "$tmp/err")" = "$want" ] || fail "$c --range forwrd: $(cat "$tmp/err")"
done

check_done "samples.readable"
