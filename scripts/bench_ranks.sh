#!/bin/sh
# bench_ranks.sh STEPTRACE ST_HOSTILE [CSV [RANKS...]]: the many-ranks
# benchmark of issue 39. For each number of ranks (default 64 128 256 512
# 1024), tests/hostile/st-hostile writes the bundles of a synthetic data-
# parallel run, each rank 3,000 kernels and 1,000 all-reduces in 10 steps
# (`st-hostile ranks DIR N 3000 1000`), and five commands read them all:
# steps, comm, explain, export --format perfetto and report, each under
# --memory-limit "$LIMIT" (default 8GiB: the synthetic bundles compress a
# thousand times better than real ones, so the default limit, 1000 times
# the bundles' size, refuses the larger runs in one line; the default's
# line is checked too, at each size), the files written under --max-size 0
# (a trace of 1,024 ranks is 800 MB, past the default 512 MiB, which
# refuses it in one line). Wall time, CPU time (user + system)
# and peak RSS of each come from `st-hostile run` (wait4's rusage); one row
# each into CSV (default docs/ranks/ranks.csv):
#   ranks,command,wall_s,cpu_s,peak_mib,exit,bundle_kib
# and a Markdown table on stdout: each command's time and memory per rank at
# each size against the smallest size's (linear: within 20%). Scratch files
# go to a temporary folder, removed at the end. A command over MAX_S
# seconds of CPU (default 600) is stopped and shown as such.
set -u
st=$1; h=$2; csv=${3:-docs/ranks/ranks.csv}
[ $# -ge 3 ] && shift 3 || shift $#
sizes=${*:-64 128 256 512 1024}
limit=${LIMIT:-8GiB}
max_s=${MAX_S:-600}
dir=$(mktemp -d /tmp/st-bench-ranks-XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$(dirname "$csv")"
echo "ranks,command,wall_s,cpu_s,peak_mib,exit,bundle_kib" > "$csv"

for n in $sizes; do
	rm -rf "$dir/run" && mkdir "$dir/run"
	"$h" ranks "$dir/run" "$n" 3000 1000 || { echo "bench_ranks: cannot write $n ranks" >&2; exit 1; }
	files=$(i=0; while [ $i -lt "$n" ]; do printf '%s ' "$dir/run/r.rank$i.stb"; i=$((i + 1)); done)
	kib=$(du -sk "$dir/run" | cut -f1)
	for cmd in steps comm explain "export --format perfetto" report default; do
		rm -f "$dir/out.file"
		case $cmd in
		export*) args="$cmd -o $dir/out.file --memory-limit $limit --max-size 0" ;;
		report) args="report -o $dir/out.file --memory-limit $limit --max-size 0" ;;
		default) args="explain" ;;   # the default limit: analysed or refused in one line
		*) args="$cmd --memory-limit $limit" ;;
		esac
		# shellcheck disable=SC2086
		ST_HOSTILE_VERBOSE=1 "$h" run 100000000 "$max_s" "$st" $args $files > "$dir/out" 2> "$dir/err"
		rc=$?
		wall=$(sed -n 's/^st-hostile: [^:]*: \([0-9.]*\) s, [0-9]* KiB$/\1/p' "$dir/err" | tail -n 1)
		peak=$(sed -n 's/^st-hostile: [^:]*: [0-9.]* s, \([0-9]*\) KiB$/\1/p' "$dir/err" | tail -n 1)
		cpu=$(sed -n 's/^st-hostile: [^:]*: \([0-9.]*\) s of CPU$/\1/p' "$dir/err" | tail -n 1)
		if [ "$cmd" = default ] && [ $rc = 1 ]; then
			[ "$(grep -vc '^st-hostile' "$dir/err")" = 1 ] && grep -q 'raise it with --memory-limit' "$dir/err" ||
				{ echo "bench_ranks: $n ranks, the default limit: not one line naming the limit" >&2; cat "$dir/err" >&2; }
		elif [ $rc != 0 ]; then
			echo "bench_ranks: $n ranks, $cmd: exit $rc" >&2
			grep -v '^st-hostile' "$dir/err" | head -3 >&2
		fi
		echo "$n,${cmd%% *},${wall:-0},${cpu:-0},$(( ${peak:-0} / 1024 )),$rc,$kib" >> "$csv"
		echo "$n ranks, ${cmd%% *}: ${wall:-?} s wall, ${cpu:-?} s CPU, $(( ${peak:-0} / 1024 )) MiB, exit $rc" >&2
	done
done

# the table: a row per command, a column per size (CPU time, wall time, peak RSS), and the
# last size's time and memory per rank against the first size's (linear: 1.00)
awk -F, 'NR > 1 && $2 != "default" {
	k = $2; n = $1
	if (!(k in first)) { first[k] = n; ft[k] = $4 / n; fm[k] = $5 / n; order[++nk] = k }
	if (!(n in seen)) { seen[n] = 1; sizes[++ns] = n }
	cell[k, n] = sprintf("%.1f s (%.1f s), %.2f GB", $4, $3, $5 / 1024)
	lt[k] = ($4 / n) / ft[k]; lm[k] = ($5 / n) / fm[k]
} END {
	printf "| command |"
	for (j = 1; j <= ns; j++) printf " %s ranks |", sizes[j]
	printf " per rank, %s against %s ranks |\n|---|", sizes[ns], sizes[1]
	for (j = 1; j <= ns; j++) printf "---:|"
	print "---:|"
	for (i = 1; i <= nk; i++) {
		k = order[i]
		printf "| %s |", k
		for (j = 1; j <= ns; j++) printf " %s |", cell[k, sizes[j]]
		printf " time %.2f×, memory %.2f× |\n", lt[k], lm[k]
	}
}' "$csv"
