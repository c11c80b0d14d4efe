#!/bin/sh
# hostile.sh STEPTRACE ST_HOSTILE SAMPLE [FACTOR]: the hostile bundles of
# issue 12, each generated here, each of which must end in one line on
# stderr (or no line and a correct result) with the right exit status,
# within MAX_KIB of peak RSS and MAX_CPU_S seconds of CPU time (st-hostile
# run measures the child): 15 times FACTOR, 1 or 4 for a sanitizer build
# as CMake passes it (each takes at most 1.3 s of CPU in a Release build,
# 5.0 s under the sanitizers). SAMPLE is a real bundle to cut and extend.
# The last line of the output shows the most any command took.
set -u
st=$1; h=$2; sample=$3; factor=${4:-1}
dir=$(mktemp -d /tmp/st-hostile-XXXXXX)
trap 'rm -rf "$dir"' EXIT
MAX_KIB=${MAX_KIB:-1048576}   # 1 GiB: a budget of 256 MiB plus what a sanitizer adds
MAX_CPU_S=${MAX_CPU_S:-$((15 * factor))}
. "$(dirname "$0")/expect.sh"
# A bundle of at most 16 KB, at the default --memory-limit: 256 MiB (CMake
# passes 1 GiB for a sanitizer build, whose shadow memory and quarantine
# are not steptrace's).
SMALL_KIB=${SMALL_KIB:-262144}

# Events and strings without content are damage: refused at once.
gen empty-events "$dir/empty.stb"                       # 16.7 million empty events, 3.2 KB
expect empty-events 1 "is damaged: chunk 'events-000000.pb' holds an event with no content \(event 0\)" \
	summary "$dir/empty.stb"
gen empty-events "$dir/empty3.stb" 16777215 3           # three such chunks, 330 KB: the threaded reader
expect empty-events-3 1 "holds an event with no content" summary "$dir/empty3.stb"
gen kindless "$dir/kindless.stb" 100000
expect kindless 1 "is damaged: an event has no kind \(chunk 0, event 0\)" summary "$dir/kindless.stb"
gen empty-strings "$dir/strings.stb"                    # 2^26-1 empty strings, 12 KB
expect empty-strings 1 "string table 'strings-000000.pb' holds an empty string \(id 1\)" \
	summary "$dir/strings.stb" --memory-limit 1GiB    # the default refuses the claim first (below)
expect empty-strings-default 1 "needs at least 256 MiB of memory by 'strings-000000.pb' \(0 events\), over the limit of 128 MiB" \
	summary "$dir/strings.stb"

# Valid identical kernels, legitimately large: analysed within the budget,
# or refused by it in one line before memory runs out.
gen kernels "$dir/k2.stb" 2                             # 419,430 kernels
expect kernels-fit 0 "" summary "$dir/k2.stb" --memory-limit 256MiB
expect_out kernels-fit " 419,430 .*identical_kernel"
# replay names each kernel once (a byte's count of them wrapped at 256 and overran the list)
expect kernels-replay 0 "" replay "$dir/k2.stb" --kind kernel --memory-limit 256MiB
expect_out kernels-replay "^ +0\.000000 kernel +0\.001000 stream 7 .* identical_kernel$"
gen kernels "$dir/k160.stb" 160                         # 33.6 million kernels, 390 KB (threads)
expect kernels-budget 1 "bundle '.*k160.stb' needs at least .* of memory .*over the limit of 256 MiB: raise it with --memory-limit" \
	summary "$dir/k160.stb" --memory-limit 256MiB
expect kernels-diff 1 "k160.stb' needs at least .*over the limit of" diff "$dir/k2.stb" "$dir/k160.stb" \
	--memory-limit 256MiB

# Memory that runs out all the same (address space limited under the budget
# given) is reported as memory; a sanitizer build cannot run under ulimit -v.
gen kernels "$dir/k8.stb" 8
if (ulimit -v 400000 && "$st" --version) > /dev/null 2>&1; then
	for kib in 60000 100000 150000; do
		( ulimit -v $kib; exec "$st" summary "$dir/k8.stb" --memory-limit 100GiB ) > /dev/null 2> "$dir/err"
		got=$?
		{ [ $got = 1 ] && [ "$(wc -l < "$dir/err")" = 1 ] && grep -q "^error: .*out of memory" "$dir/err"; } ||
			{ fail "out of memory under ulimit -v $kib: status $got"; head -3 "$dir/err" >&2; }
	done
fi

# 4,096 nested ranges: paths stored once per node, projection linear.
for bytes in 64 1024; do
	gen nested "$dir/n$bytes.stb" $bytes 1
	expect nested-$bytes 0 "" summary "$dir/n$bytes.stb" --memory-limit 256MiB
	expect_out nested-$bytes "100.0 .* 1 .*nested_kernel"
	expect nested-$bytes-range 0 "" summary "$dir/n$bytes.stb" --range 'r4095*' --memory-limit 256MiB
	expect_out nested-$bytes-range " 1 .*nested_kernel"
	for cmd in memory steps flops info "ranges --depth 3"; do
		expect "nested-$bytes-$cmd" 0 "" $cmd "$dir/n$bytes.stb" --memory-limit 256MiB
	done
done
gen nested "$dir/launches.stb" 16 1000000              # and a million launches in the innermost
# 2 million events in 20 KB: more than the default gives so small a bundle
expect nested-launches 0 "" summary "$dir/launches.stb" --memory-limit 1GiB
expect_out nested-launches "5,000,000 +1,000,000 .*nested_kernel"
expect nested-launches-ranges 0 "" ranges "$dir/launches.stb" --depth 2 --memory-limit 1GiB
expect_out nested-launches-ranges "r0000x+[./01x]+ +[0-9,]+ +5,000,000"   # r0000x.../r0001x..., maybe cut in the middle

# At most 16 KB of bundle, the default limit: at most SMALL_KIB of memory
# for any command, whatever the bundle claims (issue 25).
small() {  # small FILE: FILE is a bundle of at most 16 KB
	[ "$(wc -c < "$1")" -le 16384 ] || fail "$1 is $(wc -c < "$1") bytes, not at most 16 KB"
}
small_kib=$SMALL_KIB
gen flood "$dir/flood.stb" 40                           # 8.4 million kernels in 15 KB
small "$dir/flood.stb"
for cmd in summary "report -o $dir/flood.out" "export --format sqlite -o $dir/flood.out" \
	   "export --format chrome -o $dir/flood.out" "memory --svg $dir/flood.out"; do
	expect "flood-${cmd%% *}" 1 \
		"needs at least .* over the limit of 128 MiB \(the default for a bundle of 14.[0-9] KiB: 1000 times its size, at least 128 MiB\): raise it with --memory-limit" \
		$cmd "$dir/flood.stb"
	[ ! -e "$dir/flood.out" ] || fail "flood-$cmd: left an output behind"
done
expect flood-given 1 "over the limit of 100 MiB: raise it" summary "$dir/flood.stb" --memory-limit 100MiB
gen flood "$dir/flood2.stb" 2                           # 419,430 kernels of one name: within it
small "$dir/flood2.stb"
expect flood-fits 0 "" summary "$dir/flood2.stb"
expect_out flood-fits " 419,430 .*identical_kernel"
gen nested "$dir/deep.stb" 1024 1 2500                  # 2,500 nested ranges, 1 KB names: 14 KB
small "$dir/deep.stb"
for cmd in "report -o" "export --format sqlite -o" "export --format chrome -o" "export -o"; do
	expect_wrote "deep-$cmd" "$dir/deep.out" $cmd "$dir/deep.out" "$dir/deep.stb"
	size=$(wc -c < "$dir/deep.out" 2>/dev/null || echo 0)
	[ "$size" -le $((64 << 20)) ] || fail "deep-$cmd: $size bytes written from 14 KB"
	rm -f "$dir/deep.out"
	# the estimate counts the paths: refused at half the size
	expect "deep-$cmd-max" 1 "would be about .*, more than --max-size" $cmd "$dir/deep.out" "$dir/deep.stb" \
		--max-size $((size / 2 + 1))
done
for cmd in summary "ranges --depth 3000" replay memory "diff $dir/deep.stb"; do
	expect "deep-${cmd%% *}" 0 "" $cmd "$dir/deep.stb"
done
gen mixed "$dir/mixed.stb" 70000                        # 350,000 events of every kind in 1.5 KB
small "$dir/mixed.stb"
for cmd in summary ranges steps info memory flops comm "replay --kind step" "diff $dir/mixed.stb"; do
	expect "mixed-${cmd%% *}" 0 "" $cmd "$dir/mixed.stb"
done
for cmd in "report -o" "export --format sqlite -o" "export --format chrome -o" "export -o" "memory --svg" \
	   "flops --svg"; do
	expect_wrote "mixed-$cmd" "$dir/mixed.out" $cmd "$dir/mixed.out" "$dir/mixed.stb"
	rm -f "$dir/mixed.out"
done
unset small_kib

# The zstd frame's end and what follows it: warnings, results for what was read.
size=$(wc -c < "$sample")
for cut in 1 2 3 4 5 6 7 8; do
	head -c $((size - cut)) "$sample" > "$dir/cut.stb"
	expect cut-$cut 0 "^warning: '.*cut.stb' is truncated \(its zstd frame has no end" summary "$dir/cut.stb"
	expect_out cut-$cut "Time \(%\)"
done
{ cat "$sample"; printf 'trailing garbage'; } > "$dir/trailing.stb"
expect trailing 0 "^warning: '.*trailing.stb' is truncated \(16 bytes of trailing data follow its end\)" \
	summary "$dir/trailing.stb"
expect_out trailing "Time \(%\)"
cat "$sample" "$sample" > "$dir/twice.stb"
expect concatenated 0 "is truncated \($size bytes of trailing data follow its end: another zstd frame" \
	summary "$dir/twice.stb"
expect_out concatenated "Time \(%\)"
expect clean 0 "" summary "$sample"

report_work hostile.sh
exit $failed
