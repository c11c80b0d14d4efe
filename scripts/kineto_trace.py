#!/usr/bin/env python3
"""Writes synthetic torch.profiler traces, as tensorboard_trace_handler does.

  kineto_trace.py [--steps N] [--layers L] [--ranks R] [--no-memory] [--gzip]
                  [--size BYTES] [--meta-last] OUT_DIR

One file per rank, OUT_DIR/HOST_PID.TIME.pt.trace.json[.gz], in Kineto's
Chrome trace layout and formatting (libkineto/src/output_json.cpp:
schemaVersion, deviceProperties, distributedInfo, baseTimeNanoseconds,
then traceEvents one per block, times in microseconds with three decimals
relative to baseTimeNanoseconds; "ac2g" flows; metadata events; a
"Record Window End" last). The events are those a GPT-like training step
makes under `profile(activities=[CPU, CUDA], schedule=..., record_shapes=True,
profile_memory=True)`, as the real traces of HolisticTraceAnalysis's
tests/data (github.com/facebookresearch/HolisticTraceAnalysis) show them:
ProfilerStep#N (user_annotation) on the main thread holding the DataLoader's
next, CPU ops (aten::linear > aten::addmm ...) with External id, Input Dims
and Input type, cudaLaunchKernel (cuda_runtime, correlation, cbid) and its
kernel (grid, block, registers per thread, shared memory, stream, device),
copies and memsets, the backward on the autograd engine's thread, the
all-reduces of data parallelism (record_param_comms and NCCL's kernel)
with several ranks, Optimizer.step#AdamW.step and zero_grad, and the
allocator's [memory] instants (Addr, Bytes, Total Allocated, Total
Reserved, Device Id, Device Type).

Prints one JSON line per file with what steptrace import must find in it:
steps, kernels, the kernels' summed duration in ns, the largest Total
Allocated. --size keeps adding steps until a file reaches BYTES (the
scale test, scripts/import_scale.sh); events are written as they are made,
so any size takes little memory here.
"""
import argparse
import gzip
import json
import os
import random

BASE_NS = 1764000000000000000
GEMM = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1_execute_segment_k_off_"
        "kernel__5x_cublas")
GELU = ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
        "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::"
        "{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::"
        "TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() "
        "const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)")
ADAM = ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
        "TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, "
        "(at::native::ADAM_MODE)1, false>, float*, float, float, float, float, float, bool, float*, float*>")
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def us(ns):
    return "%d.%03d" % divmod(ns, 1000)


class Trace:
    def __init__(self, f, rank, pid, device):
        self.f, self.rank, self.pid, self.device = f, rank, pid, device
        self.main, self.grad = pid, pid + 7
        self.ext = 0
        self.corr = 0
        self.gpu_free = {7: 0, 25: 0}
        self.kernels = 0
        self.kernel_ns = 0
        self.total = 512 << 20            # allocated before the trace: the parameters and optimizer state
        self.max_total = 0
        self.addr = 0x7f0000000000 + (rank << 36)
        self.first = True
        self.bytes = 0

    def put(self, text):
        text = ("\n  {\n" if self.first else ",\n  {\n") + text + "\n  }"
        self.first = False
        self.bytes += len(text)
        self.f.write(text)

    def x(self, cat, name, pid, tid, ts, dur, args=None):
        a = ""
        if args:
            a = ",\n    \"args\": {\n      " + ", ".join("%s: %s" % (json.dumps(k), json.dumps(v))
                                                  for k, v in args.items()) + "\n    }"
        self.put("    \"ph\": \"X\", \"cat\": \"%s\", \"name\": %s, \"pid\": %d, \"tid\": %d,\n"
                 "    \"ts\": %s, \"dur\": %s%s" % (cat, json.dumps(name), pid, tid, us(ts), us(dur), a))

    def cpu(self, cat, name, ts, dur, tid=None, **args):
        self.ext += 1
        a = {"External id": self.ext, "Record function id": 0, "Ev Idx": self.ext}
        a.update(args)
        self.x(cat, name, self.pid, tid or self.main, ts, dur, a)
        return self.ext

    def memory(self, ts, nbytes, addr, tid=None):
        self.total += nbytes
        self.max_total = max(self.max_total, self.total)
        self.put("    \"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\",\n"
                 "    \"pid\": %d, \"tid\": %d,\n    \"ts\": %s,\n    \"args\": {\n      \"Total Reserved\": %d, "
                 "\"Total Allocated\": %d, \"Bytes\": %d, \"Addr\": %d, \"Device Id\": %d, \"Device Type\": 1, "
                 "\"Ev Idx\": %d\n    }" % (self.pid, tid or self.main, us(ts), (self.total + (2 << 20)) & ~((2 << 20) - 1),
                                         self.total, nbytes, addr, self.device, self.ext))

    def launch(self, ext, ts, name, dur, kind="kernel", stream=7, tid=None, nbytes=0, **kargs):
        """A runtime call at ts (5 us) and its GPU work; the call's end."""
        self.corr += 1
        corr = self.corr
        api = {"kernel": "cudaLaunchKernel", "gpu_memcpy": "cudaMemcpyAsync", "gpu_memset": "cudaMemsetAsync"}[kind]
        cbid = {"kernel": 211, "gpu_memcpy": 41, "gpu_memset": 51}[kind]
        self.x("cuda_runtime", api, self.pid, tid or self.main, ts, 5000,
               {"External id": ext, "cbid": cbid, "correlation": corr})
        self.put("    \"ph\": \"s\", \"id\": %d, \"pid\": %d, \"tid\": %d, \"ts\": %s,\n    \"cat\": \"ac2g\", "
                 "\"name\": \"ac2g\"" % (corr, self.pid, tid or self.main, us(ts + 2000)))
        start = max(self.gpu_free[stream], ts + 8000)
        self.gpu_free[stream] = start + dur
        args = {"External id": ext, "queued": 0, "device": self.device, "context": 1, "stream": stream,
                "correlation": corr}
        if kind == "kernel":
            args.update({"registers per thread": 128, "shared memory": kargs.get("smem", 0), "blocks per SM": 1.5,
                         "warps per SM": 6.0, "grid": kargs.get("grid", [132, 1, 1]),
                         "block": kargs.get("block", [256, 1, 1]), "est. achieved occupancy %": 9})
            self.kernels += 1
            self.kernel_ns += dur
        else:
            args.update({"bytes": nbytes, "memory bandwidth (GB/s)": round(nbytes / max(dur, 1), 6)})
        self.x(kind, name, self.device, stream, start, dur, args)
        self.put("    \"ph\": \"f\", \"id\": %d, \"pid\": %d, \"tid\": %d, \"ts\": %s,\n    \"cat\": \"ac2g\", "
                 "\"name\": \"ac2g\", \"bp\": \"e\"" % (corr, self.device, stream, us(start)))
        return ts + 5000

    def alloc(self, nbytes):
        a = self.addr
        self.addr += (nbytes + 511) & ~511
        return a

    def step(self, k, t, layers, ranks, memory, rng):
        """ProfilerStep#k from t; its end."""
        B, T, D = 8, 1024, 768
        main_ext = None
        t0 = t
        events = []
        # the step's own range is written when we know its end: keep its place by writing it after
        t += 3000
        # data
        data_start = t
        d_ext = self.cpu("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t, 40000)
        t += 45000
        for name in ("x", "y"):
            nb = B * T * 8
            e1 = self.cpu("cpu_op", "aten::to", t, 30000, **{"Input Dims": [[B, T], [], [], [], [], [], []],
                                                              "Input type": ["long int", "", "", "", "", "", ""]})
            e2 = self.cpu("cpu_op", "aten::_to_copy", t + 1000, 28000, **{"Input Dims": [[B, T]], "Input type": ["long int"]})
            a = self.alloc(nb)
            if memory:
                self.memory(t + 2000, nb, a)
            e3 = self.cpu("cpu_op", "aten::copy_", t + 4000, 20000, **{"Input Dims": [[B, T], [B, T], []],
                                                                      "Input type": ["long int", "long int", "bool"]})
            self.launch(e3, t + 6000, "Memcpy HtoD (Pinned -> Device)", 3000 + rng.randrange(500),
                        kind="gpu_memcpy", nbytes=nb)
            t += 32000
        # forward
        acts = []
        for l in range(layers):
            for sub, (n_in, n_out) in enumerate(((D, 3 * D), (D, D), (D, 4 * D), (4 * D, D))):
                e1 = self.cpu("cpu_op", "aten::linear", t, 60000, **{
                    "Input Dims": [[B, T, n_in], [n_out, n_in], [n_out]],
                    "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"]})
                nb = B * T * n_out * 2
                a = self.alloc(nb)
                if memory:
                    self.memory(t + 3000, nb, a)
                acts.append((a, nb))
                e2 = self.cpu("cpu_op", "aten::addmm", t + 8000, 40000, **{
                    "Input Dims": [[n_out], [B * T, n_in], [n_in, n_out], [], []],
                    "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"]})
                self.launch(e2, t + 20000, GEMM, 20000 + rng.randrange(4000), grid=[24, 16, 1], block=[128, 1, 1],
                            smem=98304)
                t += 65000
                if sub == 2:
                    nb = B * T * n_out * 2
                    a = self.alloc(nb)
                    if memory:
                        self.memory(t + 1000, nb, a)
                    acts.append((a, nb))
                    e = self.cpu("cpu_op", "aten::gelu", t, 30000, **{"Input Dims": [[B, T, n_out], []],
                                                                     "Input type": ["c10::BFloat16", ""]})
                    self.launch(e, t + 10000, GELU, 9000 + rng.randrange(1000), grid=[4096, 1, 1], block=[128, 1, 1])
                    t += 35000
        # the loss's gradient seed, then the backward on the autograd thread
        e = self.cpu("cpu_op", "aten::ones_like", t, 20000, **{"Input Dims": [[], [], [], [], [], []],
                                                              "Input type": ["float", "", "", "", "", ""]})
        self.launch(e, t + 8000, "Memset (Device)", 1500, kind="gpu_memset", nbytes=4)
        t += 25000
        gt = t + 10000
        grads = []
        for l in reversed(range(layers)):
            for sub, (n_in, n_out) in reversed(list(enumerate(((D, 3 * D), (D, D), (D, 4 * D), (4 * D, D))))):
                self.cpu("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", gt, 110000, tid=self.grad,
                         **{"Sequence number": 100 + l * 4 + sub, "Fwd thread id": 1})
                self.cpu("cpu_op", "AddmmBackward0", gt + 3000, 100000, tid=self.grad,
                         **{"Sequence number": 100 + l * 4 + sub, "Fwd thread id": 1})
                for i in range(2):
                    e = self.cpu("cpu_op", "aten::mm", gt + 6000 + i * 45000, 40000, tid=self.grad, **{
                        "Input Dims": [[B * T, n_out], [n_out, n_in]] if i == 0 else [[n_out, B * T], [B * T, n_in]],
                        "Input type": ["c10::BFloat16", "c10::BFloat16"]})
                    self.launch(e, gt + 16000 + i * 45000, GEMM, 22000 + rng.randrange(4000), tid=self.grad,
                                grid=[24, 16, 1], block=[128, 1, 1], smem=98304)
                nb = n_in * n_out * 4
                a = self.alloc(nb)
                if memory:
                    self.memory(gt + 95000, nb, a, tid=self.grad)
                grads.append((a, nb))
                if acts and memory:
                    a2, nb2 = acts.pop()
                    self.memory(gt + 100000, -nb2, a2, tid=self.grad)
                gt += 115000
            if ranks > 1:
                # a bucket of gradients all-reduced (DistributedDataParallel's reducer)
                nel = 4 * D * D * 3
                e = self.cpu("cpu_op", "record_param_comms", gt, 30000, tid=self.grad, **{
                    "Collective name": "allreduce", "dtype": "Float", "In msg nelems": nel, "Out msg nelems": nel,
                    "Group size": ranks, "Process Group Name": "0", "Process Group Description": "default_pg",
                    "Process Group Ranks": "[%s]" % ", ".join(str(r) for r in range(ranks)), "Rank": self.rank,
                    "In split size": "[]", "Out split size": "[]", "Global rank start": 0, "Global rank stride": 1})
                self.launch(e, gt + 10000, NCCL, 150000 + rng.randrange(20000), stream=25, tid=self.grad,
                            grid=[2, 1, 1], block=[640, 1, 1])
                gt += 35000
        while acts and memory:
            a2, nb2 = acts.pop()
            self.memory(gt, -nb2, a2, tid=self.grad)
        t = max(t, gt) + 20000
        # the optimizer, then zero_grad(set_to_none=True)
        o = self.cpu("user_annotation", "Optimizer.step#AdamW.step", t, 200000)
        for i in range(3):
            e = self.cpu("cpu_op", "aten::_fused_adamw_", t + 10000 + i * 60000, 50000, **{
                "Input Dims": [[], [], [], [], [], [], [], [], [], [], [], [], [], []], "Input type": [""] * 14})
            self.launch(e, t + 20000 + i * 60000, ADAM, 30000 + rng.randrange(3000), grid=[320, 1, 1],
                        block=[512, 1, 1])
        t += 205000
        self.cpu("user_annotation", "Optimizer.zero_grad#AdamW.zero_grad", t, 30000)
        for a, nb in grads:
            if memory:
                self.memory(t + 5000, -nb, a)
        t += 35000
        # torch.cuda.synchronize(), as the loop does before prof.step()
        end = max(t, max(self.gpu_free.values())) + 2000
        self.corr += 1
        self.x("cuda_runtime", "cudaDeviceSynchronize", self.pid, self.main, t, end - t,
               {"External id": 0, "cbid": 165, "correlation": self.corr})
        self.x("cuda_sync", "Context Sync", self.device, 7, t + 1000, end - t - 1000,
               {"External id": 0, "cuda_sync_kind": "Context Sync", "stream": -1, "correlation": self.corr,
                "device": self.device, "context": 1})
        end += 3000
        self.ext += 1
        self.x("user_annotation", "ProfilerStep#%d" % k, self.pid, self.main, t0, end - t0,
               {"External id": self.ext, "Record function id": 0, "Ev Idx": self.ext})
        return end + 1000


def device_properties(n):
    return ",".join("""
      {
      "id": %d, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 84929216512,
      "computeMajor": 9, "computeMinor": 0,
      "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
      "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32,
      "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 233472,
      "numSms": 132, "sharedMemPerBlockOptin": 232448
    }""" % i for i in range(n))


def write_rank(out_dir, rank, a):
    pid = 4000 + rank
    host = "gpuhost"
    name = "%s_%d.%d.pt.trace.json" % (host, pid, 1764000000000 + rank)
    path = os.path.join(out_dir, name + (".gz" if a.gzip else ""))
    rng = random.Random(rank * 7919 + 1)
    opener = (lambda p: gzip.open(p, "wt", compresslevel=3)) if a.gzip else (lambda p: open(p, "w"))
    with opener(path) as f:
        dist = ""
        if a.ranks > 1:
            dist = ('\n  "distributedInfo": {"backend": "nccl", "rank": %d, "world_size": %d, "pg_count": 1, '
                    '"pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", '
                    '"pg_size": %d, "ranks": [%s]}], "nccl_version": "2.21.5"},'
                    % (rank, a.ranks, a.ranks, ", ".join(str(r) for r in range(a.ranks))))
        f.write('{\n  "schemaVersion": 1,\n  "deviceProperties": [%s\n  ],' % device_properties(max(a.ranks, 1)))
        if not a.meta_last:
            f.write(dist)
        f.write('\n  "record_shapes": 1,\n  "profile_memory": %d,\n  "trace_id": "%032X",'
                '\n  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": %d,\n  "traceEvents": ['
                % (0 if a.no_memory else 1, rank + 1, BASE_NS))
        tr = Trace(f, rank, pid, rank if a.ranks > 1 else 0)
        tr.put('    "name": "process_name", "ph": "M", "ts": 0.000, "pid": %d, "tid": 0,\n'
               '    "args": {\n      "name": "python3"\n    }' % pid)
        tr.put('    "name": "thread_name", "ph": "M", "ts": 0.000, "pid": %d, "tid": %d,\n'
               '    "args": {\n      "name": "thread %d (python3)"\n    }' % (pid, pid, pid))
        t = 1000000 + rank * 137000
        k = 2
        steps = 0
        while steps < a.steps or (a.size and tr.bytes < a.size):
            t = tr.step(k, t, a.layers, a.ranks, not a.no_memory, rng)
            k += 1
            steps += 1
        tr.put('    "ph": "X", "cat": "Trace", "ts": 0.000, "dur": %s,\n    "pid": "Spans", "tid": "PyTorch Profiler",\n'
               '    "name": "PyTorch Profiler (0)",\n    "args": {\n      "Op count": 0\n    }' % us(t))
        f.write(',\n  {\n    "name": "Record Window End", "ph": "i", "s": "g",\n    "pid": "", "tid": "", "ts": %s\n'
                '  }\n  ],' % us(t + 1000))
        if a.meta_last:
            f.write(dist)
        f.write('\n  "traceName": "%s"\n}' % name)
    print(json.dumps({"file": path, "rank": rank, "steps": steps, "kernels": tr.kernels, "kernel_ns": tr.kernel_ns,
                      "max_total_allocated": tr.max_total if not a.no_memory else 0}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--size", type=int, default=0, help="add steps until a file has this many bytes")
    ap.add_argument("--meta-last", action="store_true", help="distributedInfo after traceEvents")
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    for rank in range(a.ranks):
        write_rank(a.out_dir, rank, a)


if __name__ == "__main__":
    main()
