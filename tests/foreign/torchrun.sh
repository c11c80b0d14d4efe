#!/bin/sh
# torchrun.sh STEPTRACE OUTDIR: PyTorch's data parallelism under torchrun,
# recorded with `steptrace record -- python3 -m torch.distributed.run
# --nproc_per_node 2 tests/foreign/ddp_train.py` (label gpu2; issue 23).
# ddp_train.py writes what it knows (--facts): the parameters' bytes,
# DDP's bucket sizes, FSDP's units. Checks, with steptrace's own reports:
#  - the two processes' bundles are one run (rank 0 and 1 of 2, one run id),
#    and every analysis command takes them together;
#  - DDP: the all-reduce bytes per step = the gradients' bytes (FP32, as
#    the parameters) exactly; one all-reduce per bucket, of DDP's own
#    bucket sizes (its logging data's rebuilt_bucket_sizes), in number and
#    in bytes;
#  - FSDP2 (fully_shard on each block and on the model, FP32 parameters,
#    reshard after forward): per step each block's parameters are
#    all-gathered twice (forward, backward) and the root's once, each
#    reduce-scattered once; NCCL's size of an all-gather or a
#    reduce-scatter is one rank's shard, unit bytes / world size; so
#    all-gather bytes per step = (2 sum(blocks) + root) / 2 and
#    reduce-scatter bytes = sum(units) / 2;
#  - hidden + exposed = the communication time, on every rank;
#  - NCCL's kernels are communication in summary --by category;
#  - two simulated nodes: torchrun --nnodes 2, one process per node, each
#    node under a `steptrace record` of its own with STEPTRACE_HOSTNAME
#    set, on a GPU of its own: the two bundles are one run of two hosts,
#    aligned by the ends of their collectives with a residual median under
#    50 us (NCCL's ends on two GPUs agree within microseconds);
#  - the same DDP program under mpirun (when Open MPI is there): its ranks
#    from Open MPI's variables, one run, the same all-reduce bytes.
# Exit 77 (skipped) without two GPUs, torch, or torch.distributed.
set -u
. "$(dirname "$0")/torch_prologue.sh"
if ! "$py" -c "import torch, sys, torch.distributed as d; sys.exit(0 if torch.cuda.device_count() >= 2 and d.is_nccl_available() else 1)" 2>/dev/null; then
	echo "skip: fewer than two GPUs, or no NCCL in torch"
	exit 77
fi
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

for m in ddp fsdp; do
	flag=""
	[ $m = fsdp ] && flag=--fsdp
	echo "+ steptrace record -o $m.stb -- $py -m torch.distributed.run --nproc_per_node 2 ddp_train.py $flag"
	"$st" record -o "$out/$m.stb" -- "$py" -m torch.distributed.run --nproc_per_node 2 "$here/ddp_train.py" \
		$flag --facts "$out/$m.json" > "$out/$m.log" 2>&1 || { tail -20 "$out/$m.log"; fail "record $m"; continue; }
	[ -f "$out/$m.0.stb" ] && [ -f "$out/$m.1.stb" ] || { fail "$m: no $m.0.stb and $m.1.stb"; continue; }
	for c in info steps summary ranges memory flops comm; do
		"$st" $c "$out/$m.0.stb" "$out/$m.1.stb" > "$out/$m-$c.txt" 2> "$out/$m-$c.err" ||
			fail "$m: steptrace $c of both ranks: $(cat "$out/$m-$c.err")"
		grep -q "not ranks of one run" "$out/$m-$c.err" && fail "$m: $c says the ranks are not of one run"
	done
	"$st" comm "$out/$m.0.stb" "$out/$m.1.stb" --format json > "$out/$m-comm.json" 2>/dev/null
	"$st" summary --by category "$out/$m.0.stb" --format csv > "$out/$m-cat.csv" 2>/dev/null
	grep -q ",communication$" "$out/$m-cat.csv" || fail "$m: no communication in summary --by category"
	"$py" - "$m" "$out/$m.json" "$out/$m-comm.json" "$out/$m.0.stb" "$out/$m.1.stb" <<'EOF' || fail "$m: comm disagrees with PyTorch"
import json, sys
mode, facts, comm = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
rows = [r for r in comm["collectives"] if "total per step" not in r["Collective"]]
def per_step(kind):
    return sum(r["Bytes"] * r["Count"] for r in rows if r["Collective"].startswith(kind) and r.get("Bytes"))
ok = True
def check(what, got, want):
    global ok
    print(f"{mode}: {what}: steptrace {got}, PyTorch {want}")
    if got != want:
        ok = False
if mode == "ddp":
    check("all-reduce bytes per step", round(per_step("allreduce")), facts["param_bytes"])
    ar = sorted(r["Bytes"] for r in rows if r["Collective"].startswith("allreduce") and r["Count"] >= 1)
    check("all-reduce sizes per step (DDP's buckets)", ar, sorted(facts["bucket_sizes"]))
else:
    units, world = facts["unit_bytes"], facts["world_size"]
    blocks, root = units[:-1], units[-1]
    check("all-gather bytes per step", round(per_step("allgather")), (2 * sum(blocks) + root) // world)
    check("reduce-scatter bytes per step", round(per_step("reducescatter")), sum(units) // world)
for r in comm["ranks"]:
    if abs(r["Hidden (ms)"] + r["Exposed (ms)"] - r["Comm (ms)"]) > 1e-6 * max(1, r["Comm (ms)"]):
        print(f"{mode}: rank {r['Rank']}: hidden + exposed != comm: {r}")
        ok = False
    if r["Comm (ms)"] <= 0:
        print(f"{mode}: rank {r['Rank']}: no communication")
        ok = False
sys.exit(0 if ok else 1)
EOF
	"$st" info "$out/$m.0.stb" 2>/dev/null | grep -Eq "^rank +0 of 2" ||
		fail "$m: info does not say rank 0 of 2: $(grep -E '^rank' "$out/$m-info.txt")"
done
# two nodes on one machine: the ranks' hosts differ, so only their collectives align them
port=$((29600 + $$ % 300))
for node in 0 1; do
	CUDA_VISIBLE_DEVICES=$node STEPTRACE_HOSTNAME=node$node "$st" record -o "$out/node$node.stb" -- \
		"$py" -m torch.distributed.run --nnodes 2 --node_rank $node --nproc_per_node 1 \
		--master_addr 127.0.0.1 --master_port $port "$here/ddp_train.py" > "$out/nodes$node.log" 2>&1 &
done
wait
# each record sees one process: its bundle is node0.stb (node0.0.stb were there two)
n0=$(ls "$out"/node0*.stb 2>/dev/null | head -1)
n1=$(ls "$out"/node1*.stb 2>/dev/null | head -1)
if [ -n "$n0" ] && [ -n "$n1" ]; then
	"$st" comm "$n0" "$n1" --format csv > /dev/null 2> "$out/nodes.err" ||
		fail "nodes: comm: $(cat "$out/nodes.err")"
	line=$(grep "time line:" "$out/nodes.err")
	echo "nodes: $line"
	echo "$line" | grep -q "ranks on 2 hosts aligned by the ends of" || fail "nodes: not aligned by collectives: $line"
	echo "$line" | "$py" -c '
import re, sys
m = re.search(r"residual median ([0-9.]+) (ns|us|ms)", sys.stdin.read())
scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3}
sys.exit(0 if m and float(m.group(1)) * scale[m.group(2)] < 50 else 1)' || fail "nodes: residual median not under 50 us: $line"
else
	tail -5 "$out/nodes0.log" "$out/nodes1.log"
	fail "nodes: no node0.stb and node1.stb"
fi
# Open MPI: the ranks are the launcher's (OMPI_COMM_WORLD_*), no torchrun variable set
if command -v mpirun > /dev/null 2>&1; then
	port=$((29900 + $$ % 90))
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "$st" record -o "$out/mpi.stb" -- \
		mpirun -np 2 -x PATH -x LD_LIBRARY_PATH -x PYTHONPATH -x NCCL_NVLS_ENABLE "$py" "$here/ddp_train.py" \
		--init tcp://127.0.0.1:$port --facts "$out/mpi.json" > "$out/mpi.log" 2>&1 ||
		{ tail -20 "$out/mpi.log"; fail "record mpirun"; }
	if [ -f "$out/mpi.0.stb" ] && [ -f "$out/mpi.1.stb" ]; then
		"$st" comm "$out/mpi.0.stb" "$out/mpi.1.stb" --format csv > "$out/mpi-comm.csv" 2> "$out/mpi-comm.err" ||
			fail "mpi: comm: $(cat "$out/mpi-comm.err")"
		want=$("$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["param_bytes"])' "$out/mpi.json")
		grep -q "^allreduce (total per step),3,$want," "$out/mpi-comm.csv" ||
			fail "mpi: all-reduce bytes per step are not $want: $(cat "$out/mpi-comm.csv")"
		echo "mpi: $(grep '^allreduce (total' "$out/mpi-comm.csv")"
	else
		tail -10 "$out/mpi.log"
		fail "mpi: no mpi.0.stb and mpi.1.stb"
	fi
else
	echo "mpi: no mpirun here: not tried"
fi
check_done foreign.torchrun
