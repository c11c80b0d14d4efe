#!/bin/sh
# test_reports.sh STEPTRACE ST-GEN: every report on tests/gen's bundles,
# compared with values worked out by hand from the layout in tests/gen/gen.c.
# Measured steps 1 and 2 each launch: sgemm 80|100 (step 1|2) and 100,
# softmax 60, elementwise_add 40, vectorized 40 (+50 on thread 200),
# softmax_backward 100, adam 100, orphan 40, memcpy 20, memset 10.
set -u
ST=$1
GEN=$2
dir=$(mktemp -d /tmp/st-analyze-XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail=0

"$GEN" basic -o "$dir/basic.stb" || { echo "st-gen failed"; exit 1; }
"$GEN" nosteps -o "$dir/nosteps.stb" || exit 1
"$GEN" truncated -o "$dir/trunc.stb" || exit 1

# st-gen's bundles say they dropped 2 kernel records: every command that
# reads one warns about it, once
DROPPED="^warning: '[^']*': 2 kernel records were dropped while recording (CUPTI's buffers were full; \
it does not say of which kind: copies and memsets may be among them): kernel totals undercount\$"

# expect NAME EXPECTED-EXIT EXPECTED-OUTPUT -- ARGS...: the output is stdout,
# then, when anything went to stderr (CSV's notes, warnings) of a command
# that is to succeed, a line "--- stderr" and that; the dropped records'
# warning (DROPPED) aside, which one that succeeds must print once (none
# for the truncated bundle, which has no footer to count them)
expect() {
	name=$1 want_rc=$2 want=$3
	shift 4
	got=$("$ST" "$@" 2>"$dir/all")
	rc=$?
	grep -v "$DROPPED" "$dir/all" >"$dir/stderr"
	drops=1
	case "$*" in *trunc.stb*) drops=0 ;; esac   # no footer, no count of drops
	if [ "$want_rc" = 0 ] && [ "$(grep -c "$DROPPED" "$dir/all")" != $drops ]; then
		echo "FAIL $name: steptrace $*: want one warning of dropped records, got:"
		cat "$dir/all"
		fail=1
	fi
	[ "$want_rc" = 0 ] && [ -s "$dir/stderr" ] && got=$(printf '%s\n--- stderr\n%s' "$got" "$(cat "$dir/stderr")")
	if [ "$rc" != "$want_rc" ] || [ "$got" != "$want" ]; then
		echo "FAIL $name: steptrace $* (exit $rc, wanted $want_rc)"
		printf '%s\n' "$want" >"$dir/want"
		printf '%s\n' "$got" >"$dir/got"
		diff "$dir/want" "$dir/got"
		cat "$dir/stderr"
		fail=1
	fi
}

H='Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name'

# sgemm: 80,100,100,100 -> total 380, mean 95, median 100, sd sqrt(300/3) = 10
# vectorized: 40,50,40,50 -> mean 45, sd sqrt(100/3) = 5.77; total of all kernels 1240
expect summary 0 "$H
30.6,380,4,95.0,100.0,80,100,10.0,ampere_sgemm_128x64_nn
16.1,200,2,100.0,100.0,100,100,0.0,adam_kernel
16.1,200,2,100.0,100.0,100,100,0.0,softmax_backward_kernel
14.5,180,4,45.0,45.0,40,50,5.8,vectorized_elementwise_kernel
9.7,120,2,60.0,60.0,60,60,0.0,softmax_kernel
6.5,80,2,40.0,40.0,40,40,0.0,elementwise_add_kernel
6.5,80,2,40.0,40.0,40,40,0.0,nccl_kernel_orphan" -- summary "$dir/basic.stb" --format csv

expect summary-top 0 "$H
30.6,380,4,95.0,100.0,80,100,10.0,ampere_sgemm_128x64_nn
16.1,200,2,100.0,100.0,100,100,0.0,adam_kernel
--- stderr
2 of 7 rows shown (--top 2)" -- summary "$dir/basic.stb" --format csv --top 2

# warm-up adds step 0 (as step 1: 610) and the setup kernel init_kernel (30): total 1880
expect summary-warmup 0 "$H
29.8,560,6,93.3,100.0,80,100,10.3,ampere_sgemm_128x64_nn
16.0,300,3,100.0,100.0,100,100,0.0,adam_kernel
16.0,300,3,100.0,100.0,100,100,0.0,softmax_backward_kernel
14.4,270,6,45.0,45.0,40,50,5.5,vectorized_elementwise_kernel
9.6,180,3,60.0,60.0,60,60,0.0,softmax_kernel
6.4,120,3,40.0,40.0,40,40,0.0,elementwise_add_kernel
6.4,120,3,40.0,40.0,40,40,0.0,nccl_kernel_orphan
1.6,30,1,30.0,30.0,30,30,0.0,init_kernel" -- summary "$dir/basic.stb" --format csv --include-warmup

# forward: calls on thread 100 inside forward: sgemm x2, softmax, add, vectorized (not thread 200's)
expect summary-forward 0 "$H
57.6,380,4,95.0,100.0,80,100,10.0,ampere_sgemm_128x64_nn
18.2,120,2,60.0,60.0,60,60,0.0,softmax_kernel
12.1,80,2,40.0,40.0,40,40,0.0,elementwise_add_kernel
12.1,80,2,40.0,40.0,40,40,0.0,vectorized_elementwise_kernel" -- summary "$dir/basic.stb" --format csv --range forward

# softmax ranges of any layer, forward and backward; add's zero-length call sits on softmax's end
expect summary-softmax 0 "$H
50.0,200,2,100.0,100.0,100,100,0.0,softmax_backward_kernel
30.0,120,2,60.0,60.0,60,60,0.0,softmax_kernel
20.0,80,2,40.0,40.0,40,40,0.0,elementwise_add_kernel" -- summary "$dir/basic.stb" --format csv --range 'layer.*/attn/softmax'

# anchored at the root, where the ranges are step, setup and loader: nothing, an error naming them
expect summary-anchored 1 "" -- summary "$dir/basic.stb" --format csv --range /forward
grep -qxF "error: --range '/forward' matches no range path; the nearest: '/loader', '/setup', '/step'" "$dir/stderr" ||
	{ echo "FAIL summary-anchored: $(cat "$dir/stderr")"; fail=1; }

expect summary-op 0 "$H
30.6,380,4,95.0,100.0,80,100,10.0,forward/attn/q_proj
27.4,340,8,42.5,40.0,40,50,4.6,(no op)
16.1,200,2,100.0,100.0,100,100,0.0,backward/attn/softmax
16.1,200,2,100.0,100.0,100,100,0.0,optimizer/adamw
9.7,120,2,60.0,60.0,60,60,0.0,forward/attn/softmax" -- summary "$dir/basic.stb" --format csv --by op

# categories include copies: memcpy 20 x2 + memset 10 x2; total 1300
# Time (%) is a share of kernel time (1240) in every mode, so GEMM's share is
# the same 30.6 as by kernel, flops and diff; copies are measured against it
expect summary-category 0 "$H
30.6,380,4,95.0,100.0,80,100,10.0,GEMM
25.8,320,4,80.0,80.0,60,100,23.1,softmax
21.0,260,6,43.3,40.0,40,50,5.2,elementwise
16.1,200,2,100.0,100.0,100,100,0.0,optimizer
6.5,80,2,40.0,40.0,40,40,0.0,communication
4.8,60,4,15.0,15.0,10,20,5.8,memcpy/memset
--- stderr
Time (%) is a share of kernel time: memcpy and memset rows are measured against it, not part of it" -- summary "$dir/basic.stb" --format csv --by category

expect summary-forward-category 0 "$H
57.6,380,4,95.0,100.0,80,100,10.0,GEMM
24.2,160,4,40.0,40.0,40,40,0.0,elementwise
18.2,120,2,60.0,60.0,60,60,0.0,softmax" -- summary "$dir/basic.stb" --format csv --by category --range forward

expect summary-all 0 "$H
30.6,380,4,95.0,100.0,80,100,10.0,ampere_sgemm_128x64_nn
16.1,200,2,100.0,100.0,100,100,0.0,adam_kernel
16.1,200,2,100.0,100.0,100,100,0.0,softmax_backward_kernel
14.5,180,4,45.0,45.0,40,50,5.8,vectorized_elementwise_kernel
9.7,120,2,60.0,60.0,60,60,0.0,softmax_kernel
6.5,80,2,40.0,40.0,40,40,0.0,elementwise_add_kernel
6.5,80,2,40.0,40.0,40,40,0.0,nccl_kernel_orphan
3.2,40,2,20.0,20.0,20,20,0.0,[CUDA memcpy Device-to-Device]
1.6,20,2,10.0,10.0,10,10,0.0,[CUDA memset]
--- stderr
Time (%) is a share of kernel time: memcpy and memset rows are measured against it, not part of it" -- summary "$dir/basic.stb" --format csv --all

expect summary-per-step 0 "$H
30.6,190.0,2,95.0,100.0,80,100,10.0,ampere_sgemm_128x64_nn
16.1,100.0,1,100.0,100.0,100,100,0.0,adam_kernel
--- stderr
2 of 7 rows shown (--top 2)
totals and instances are per measured step: divided by 2 steps" -- summary "$dir/basic.stb" --format csv --per-step --top 2

# no steps: everything counts (3 copies of the step content plus the setup kernel)
expect summary-nosteps 0 "$H
29.8,560,6,93.3,100.0,80,100,10.3,forward/attn/q_proj
28.7,540,13,41.5,40.0,30,50,5.5,(no op)
16.0,300,3,100.0,100.0,100,100,0.0,backward/attn/softmax
16.0,300,3,100.0,100.0,100,100,0.0,optimizer/adamw
9.6,180,3,60.0,60.0,60,60,0.0,forward/attn/softmax" -- summary "$dir/nosteps.stb" --format csv --by op

# a truncated bundle still answers, with a warning on stderr
expect summary-truncated 0 "$H
30.6,380,4,95.0,100.0,80,100,10.0,ampere_sgemm_128x64_nn
--- stderr
warning: '$dir/trunc.stb' is truncated (it has no footer: the recording did not finish): read 1 chunks, 128 events; results cover only that part
1 of 7 rows shown (--top 1)" -- summary "$dir/trunc.stb" --format csv --top 1 --no-all

R='Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Style,Range,GPU Time (ns),GPU Busy (ns)'
# GPU time per instance: step [100,910] = 810; busy 470 (step 1) + 490 (step 2)
# forward: [100,420] = 320 x2, busy 260 + 280; layer.0: [100,260] = 160 x2, busy 140 + 160
# (sgemm [100,180] then softmax [200,260] and add [210,250]; in step 2 sgemm ends at 200)
expect ranges 0 "$R
24.7,2000,2,1000.0,1000.0,1000,1000,0.0,PushPop,step,1620,960
9.6,780,2,390.0,390.0,390,390,0.0,PushPop,step/forward,640,540
7.4,600,2,300.0,300.0,300,300,0.0,PushPop,step/backward,200,200
7.4,600,2,300.0,300.0,300,300,0.0,PushPop,step/backward/layer.0,200,200
7.4,600,2,300.0,300.0,300,300,0.0,PushPop,step/backward/layer.0/attn,200,200
7.4,600,2,300.0,300.0,300,300,0.0,PushPop,step/backward/layer.0/attn/softmax,200,200
7.4,600,2,300.0,300.0,300,300,0.0,PushPop,step/optimizer,220,220
6.2,500,2,250.0,250.0,250,250,0.0,PushPop,loader,100,100
4.9,400,2,200.0,200.0,200,200,0.0,PushPop,step/forward/layer.1,240,240
4.9,400,2,200.0,200.0,200,200,0.0,PushPop,step/forward/layer.1/attn,240,240
4.7,380,2,190.0,190.0,190,190,0.0,PushPop,step/forward/layer.0,320,300
4.7,380,2,190.0,190.0,190,190,0.0,PushPop,step/forward/layer.0/attn,320,300
1.2,100,2,50.0,50.0,50,50,0.0,PushPop,step/forward/layer.0/attn/q_proj,180,180
1.0,80,2,40.0,40.0,40,40,0.0,PushPop,step/forward/layer.0/attn/softmax,120,120
1.0,80,2,40.0,40.0,40,40,0.0,PushPop,step/forward/layer.1/attn/q_proj,200,200" -- ranges "$dir/basic.stb" --format csv

expect ranges-filter 0 "$R
43.5,600,2,300.0,300.0,300,300,0.0,PushPop,step/backward/layer.0/attn,200,200
29.0,400,2,200.0,200.0,200,200,0.0,PushPop,step/forward/layer.1/attn,240,240
27.5,380,2,190.0,190.0,190,190,0.0,PushPop,step/forward/layer.0/attn,320,300" -- ranges "$dir/basic.stb" --format csv --range 'layer.*/attn' --depth 4

# roots only, warm-up and setup included: step busy 470 + 470 + 490
expect ranges-depth 0 "$R
77.9,3000,3,1000.0,1000.0,1000,1000,0.0,PushPop,step,2430,1430
19.5,750,3,250.0,250.0,250,250,0.0,PushPop,loader,150,150
2.6,100,1,100.0,100.0,100,100,0.0,PushPop,setup,30,30" -- ranges "$dir/basic.stb" --format csv --depth 1 --include-warmup

# CSV is one table: the steps; the statistics with --section stats (std: the sample's, n - 1)
expect steps 0 "Step,Warm-up,Wall (ms),GPU Busy (ms),GPU Span (ms),Kernels
0,yes,5.000,0.001,0.001,9
1,no,2.000,0.001,0.001,9
2,no,2.400,0.001,0.001,9
--- stderr
csv: one table, 'steps'; the report's others: stats (--section NAME prints one, --format json all)
counting the 1 warm-up step(s) changes the mean wall time by +0.933 ms (+42.4%)" -- steps "$dir/basic.stb" --format csv --include-warmup
expect steps-stats 0 "Steps,N,Wall Mean (ms),Wall Std (ms),Wall Med (ms),Wall Min (ms),Wall Max (ms),Busy Mean (ms),Busy Std (ms),Span Mean (ms),Span Std (ms)
measured,2,2.200,0.283,2.200,2.000,2.400,0.001,0.000,0.001,0.000
with warm-up,3,3.133,1.629,2.400,2.000,5.000,0.001,0.000,0.001,0.000
warm-up only,1,5.000,0.000,5.000,5.000,5.000,0.001,0.000,0.001,0.000
--- stderr
counting the 1 warm-up step(s) changes the mean wall time by +0.933 ms (+42.4%)" -- steps "$dir/basic.stb" --format csv --include-warmup --section stats
# a table the report has not is a usage error, as --format's unknown value: exit 129, the line to --help
expect steps-section-bad 129 "" -- steps "$dir/basic.stb" --format csv --section footer
[ "$(cat "$dir/stderr")" = "error: option '--section' expects one of this report's tables (steps, stats), not 'footer'
See 'steptrace steps --help'." ] ||
	{ echo "FAIL --section footer: $(cat "$dir/stderr")"; fail=1; }
# replay's listing has one table: another name is refused before the listing starts, not ignored
expect replay-section-bad 129 "" -- replay "$dir/basic.stb" --section steps
[ "$(cat "$dir/stderr")" = "error: option '--section' expects the listing's one table (events), not 'steps'
See 'steptrace replay --help'." ] ||
	{ echo "FAIL replay --section steps: $(cat "$dir/stderr")"; fail=1; }

# info: counts from the footer and as read, the 2 dropped kernels loudly; each table a CSV of its own
got=$("$ST" info "$dir/basic.stb" --format csv --section counts 2>"$dir/stderr")
got="$got
$("$ST" info "$dir/basic.stb" --format csv --section footer 2>/dev/null)"
for line in 'kernel,28,28,2' 'memcpy,3,3,0' 'api,31,31,0' 'range,46,46,0' 'op,5,5,0' 'step,3,3,0' \
	    'oom,1,1,0' 'sync,1,1,0' 'complete,yes' 'end reason,ok' 'events,128' 'dropped,2'; do
	printf '%s\n' "$got" | grep -qxF "$line" || { echo "FAIL info: no line '$line'"; fail=1; }
done
for line in 'WARNING: 2 kernel records were dropped while recording (CUPTI'"'"'s buffers were full; it does not say of which kind: copies and memsets may be among them): kernel totals undercount' \
	    'complete: 128 events'; do
	grep -qxF "$line" "$dir/stderr" || { echo "FAIL info: no note '$line' on stderr"; fail=1; }
done
# once: the loader's warning, not a second one of info's own
[ "$(grep -c "$DROPPED" "$dir/stderr")" = 1 ] || { echo "FAIL info: want one dropped warning"; fail=1; }
got=$("$ST" info "$dir/trunc.stb" --format csv --section footer 2>/dev/null)
printf '%s\n' "$got" | grep -qxF 'complete,no (no footer)' || { echo "FAIL info truncated"; fail=1; }

# CUPTI's overhead kinds and synchronization types by name, not number
expect replay-names 0 "Time (ms),Kind,Duration (ms),Where,Live (bytes),Range,Name
29.900100,overhead,0.000100,thread 100,0,,driver compiler
29.900300,sync,0.000100,thread 100,0,,\"stream synchronize, stream 7\"" -- replay "$dir/basic.stb" --kind overhead,sync --format csv

# bad input and bad flags
expect bad-file 1 "" -- summary /etc/passwd
expect bad-flag 129 "" -- summary "$dir/basic.stb" --by nonsense
expect bad-range 129 "" -- summary "$dir/basic.stb" --range 'a//b'
expect no-file 129 "" -- ranges
expect bad-format 129 "" -- steps "$dir/basic.stb" --format xml

[ $fail = 0 ] && echo "test_reports: ok"
exit $fail
