#!/bin/sh
# whatif_check.sh STEPTRACE ROOT: scripts/whatif_check.py (ctest
# whatif.validation's judge) on planted CSVs: targets met -> 0; a mean or
# max error, a ranking or a count that misses them -> 1, saying which; no
# file or no measured row -> 77 "no validation data"; another CSV -> 2. And
# scripts/whatif_validate.py --dry-run (no GPU: shipped bundles, faked
# measurements) writes the CSV and table with every change, its argument
# errors refused.
set -u
st=$1
root=$2
. "$(dirname "$0")/../lib/check.sh"
check="python3 $root/scripts/whatif_check.py"

head='bundle,change,rule,predicted_ms,lo,hi,measured_ms,error_pct,noise_pct,in_interval,base_ms,recorded_ms,gpus,status'
# good N ERR: N rows on bases b0..b3, each predicted ERR% over its measurement, measured in base order
good() {
	echo "$head"
	i=0
	while [ $i -lt "$1" ]; do
		m=$((10 + i))
		awk -v i=$i -v m=$m -v e="$2" 'BEGIN { p = m * (1 + e / 100);
			printf "b%d,change %d,rule,%.3f,%.3f,%.3f,%.3f,%.2f,1.00,true,20,20,1,ok\n", i % 4, i, p, p * 0.97, p * 1.03, m, e }'
		i=$((i + 1))
	done
}
good 12 2 > "$tmp/ok.csv"
$check "$tmp/ok.csv" > "$tmp/out" 2>&1 || fail "targets met, yet: $(cat "$tmp/out")"
grep -q "intervals cover 12 of 12" "$tmp/out" || fail "no coverage: $(cat "$tmp/out")"

good 12 8 > "$tmp/mean.csv"
$check "$tmp/mean.csv" > "$tmp/out" 2>&1
[ $? = 1 ] && grep -q "MISSED: mean |error| 8.00%" "$tmp/out" || fail "mean error 8% passed: $(cat "$tmp/out")"

good 12 1 > "$tmp/max.csv"
echo "b0,outlier,rule,13.000,12,14,10.000,30.00,1.00,false,20,20,1,ok" >> "$tmp/max.csv"
$check "$tmp/max.csv" > "$tmp/out" 2>&1
[ $? = 1 ] && grep -q "MISSED: max |error| 30.00% over 10% (outlier" "$tmp/out" || fail "max error 30% passed: $(cat "$tmp/out")"

good 11 1 > "$tmp/few.csv"
$check "$tmp/few.csv" > "$tmp/out" 2>&1
[ $? = 1 ] && grep -q "11 changes measured, under 12" "$tmp/out" || fail "11 rows passed: $(cat "$tmp/out")"

# a ranking the other way round: predicted 10 < 12, measured 12.5 > 10.2 (noise 1%)
{ good 12 1; echo "b9,first,r,10.000,9,11,12.500,-20.00,1.00,false,20,20,1,ok";
  echo "b9,second,r,12.000,11,13,10.200,17.65,1.00,false,20,20,1,ok"; } > "$tmp/rank.csv"
$check "$tmp/rank.csv" > "$tmp/out" 2>&1
[ $? = 1 ] && grep -q "MISSED: b9: ranked first > second by prediction, second > first by measurement" "$tmp/out" ||
	fail "a wrong ranking passed: $(cat "$tmp/out")"

$check "$tmp/absent.csv" > "$tmp/out" 2>&1
[ $? = 77 ] && grep -q "no validation data" "$tmp/out" || fail "absent CSV: $(cat "$tmp/out")"
{ echo "$head"; echo "b0,x,r,,,,,,,,,,2,skipped: 1 GPU(s)"; } > "$tmp/none.csv"
$check "$tmp/none.csv" > "$tmp/out" 2>&1
[ $? = 77 ] && grep -q "no validation data" "$tmp/out" || fail "no measured row: $(cat "$tmp/out")"
printf 'a,b\n1,2\n' > "$tmp/other.csv"
$check "$tmp/other.csv" > "$tmp/out" 2>&1
[ $? = 2 ] || fail "another CSV: $(cat "$tmp/out")"

# the validation script without a GPU
python3 "$root/scripts/whatif_validate.py" --dry-run --steptrace "$st" --out "$tmp/v" --csv "$tmp/v/validation.csv" \
	--md "$tmp/v/validation.md" > "$tmp/out" 2>&1 || fail "whatif_validate --dry-run: $(tail -5 "$tmp/out")"
[ "$(head -1 "$tmp/v/validation.csv")" = "$head" ] || fail "dry run: header $(head -1 "$tmp/v/validation.csv")"
n=$(($(wc -l < "$tmp/v/validation.csv") - 1))
[ "$n" -ge 12 ] || fail "dry run: $n changes, under 12"
grep -q '^st-fp32,built-in FP32 -> BF16,precision=bf16,[0-9]' "$tmp/v/validation.csv" ||
	fail "dry run: no FP32 -> BF16 prediction: $(cat "$tmp/v/validation.csv")"
grep -q "^| pt-eager | eager -> torch.compile |" "$tmp/v/validation.md" || fail "dry run: no table row in the md"
grep -q "^Summary: " "$tmp/v/validation.md" || fail "dry run: no summary"
python3 "$root/scripts/whatif_validate.py" --steptrace "$st" --out "$tmp/w" --csv x.csv --md x.md --rounds 2 \
	> "$tmp/out" 2>&1
[ $? = 2 ] && grep -q "at least 3" "$tmp/out" || fail "--rounds 2 accepted: $(cat "$tmp/out")"
python3 "$root/scripts/whatif_validate.py" --steptrace "$tmp/nothing" --out "$tmp/w" --csv x.csv --md x.md \
	> "$tmp/out" 2>&1
[ $? = 2 ] && grep -q "no such program" "$tmp/out" || fail "a missing steptrace accepted: $(cat "$tmp/out")"

check_done whatif.check
