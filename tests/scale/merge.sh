#!/bin/sh
# merge.sh STEPTRACE ST_HOSTILE SQL: a run of 1,024 ranks reduced one rank at
# a time, as each node of a large job would (docs/scale.md): each rank's
# `comm --section instances` and `--section ranks` as CSV, merged by SQL
# (scripts/ranks.sql, SQLite's sqlite3). The merge of 32 of them gives what
# `steptrace comm` prints for those 32 at once, table for table; the merge
# of all 1,024 gives the run's known answers: rank r's kernels start r us
# after rank 0's, so each all-reduce's skew is 1,023 us, rank 1,023 always
# arrives last, a rank waits 512 us on average, and the transfer after the
# last arrival is 15 us; a kernel takes 526.5 us on average (rank r waits
# 1,023 - r us for the last), two in each of the 9 measured steps.
set -u
st=$1; h=$2; sql=$3
dir=$(mktemp -d /tmp/st-merge-XXXXXX)
trap 'rm -rf "$dir"' EXIT
failed=0
fail() {
	echo "merge: $*" >&2
	failed=1
}
command -v sqlite3 > /dev/null || { echo "merge: no sqlite3: skipped"; exit 77; }

n=1024
"$h" ranks "$dir" $n 30 20 || { echo "merge: cannot write the ranks" >&2; exit 1; }
# each rank on its own: what each node runs for its ranks
i=0
while [ $i -lt $n ]; do
	"$st" comm "$dir/r.rank$i.stb" --section instances --format csv > "$dir/$i.instances.csv" 2> "$dir/err" &&
		"$st" comm "$dir/r.rank$i.stb" --section ranks --format csv > "$dir/$i.ranks.csv" 2>> "$dir/err" ||
		{ fail "rank $i: $(head -2 "$dir/err")"; exit 1; }
	i=$((i + 1))
done

# merge the first `m` ranks' reductions into $dir/m.db
merge() {
	rm -f "$dir/m$1.db"
	sqlite3 "$dir/m$1.db" < "$sql" || fail "the schema"
	j=0
	while [ $j -lt "$1" ]; do
		echo ".import --csv --skip 1 $dir/$j.instances.csv instances"
		echo ".import --csv --skip 1 $dir/$j.ranks.csv ranks"
		j=$((j + 1))
	done | sqlite3 "$dir/m$1.db" || fail "the import of $1 ranks"
}

# 32 ranks: merged as comm prints them at once
merge 32
files=$(j=0; while [ $j -lt 32 ]; do printf '%s ' "$dir/r.rank$j.stb"; j=$((j + 1)); done)
for s in collectives skew ranks; do
	view=$s
	[ $s = ranks ] && view=ranks_merged
	# shellcheck disable=SC2086
	"$st" comm $files --section $s --format csv > "$dir/direct.$s" 2> /dev/null || fail "comm of 32 ranks"
	sqlite3 -csv -header "$dir/m32.db" "SELECT * FROM $view" | tr -d '"' > "$dir/merged.$s"
	cmp -s "$dir/direct.$s" "$dir/merged.$s" ||
		{ fail "32 ranks, $s: the merge differs from comm:"; diff "$dir/direct.$s" "$dir/merged.$s" | head -10 >&2; }
done

# all 1,024: the known answers
merge $n
got=$(sqlite3 -csv "$dir/m$n.db" "SELECT * FROM collectives" | tr -d '"')
want="allreduce (NCCL RING LL),2,4194304,1.053,15.0,279.62,558.69,0.0,100.0"
[ "$got" = "$want" ] || fail "1024 ranks, collectives: got '$got', want '$want'"
got=$(sqlite3 -csv "$dir/m$n.db" "SELECT * FROM skew" | tr -d '"')
want="allreduce (NCCL RING LL),18,1023.0,1023.0,1023,100.0,512.0,1023.0,0.0"
[ "$got" = "$want" ] || fail "1024 ranks, skew: got '$got', want '$want'"
[ "$(sqlite3 "$dir/m$n.db" "SELECT COUNT(*) FROM ranks_merged")" = $n ] || fail "1024 ranks: not 1024 rows of ranks"
[ "$(sqlite3 "$dir/m$n.db" "SELECT COUNT(*) FROM instances")" = $((n * 18)) ] || fail "1024 ranks: not 18 instances a rank (20, 2 in the warm-up step)"
[ $failed = 0 ] && echo "merge: 1024 ranks reduced one by one and merged; 32 of them as comm prints them"
exit $failed
