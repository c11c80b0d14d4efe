#!/usr/bin/env python3
"""whatif_validate.py: `explain --what-if` predictions against the changed programs measured in the same run (GPU).

Issue 37's validation set. For each change: the base program is recorded
with steptrace, the change predicted from that bundle with `steptrace
explain --what-if unrecorded --what-if RULE...` (the step as it would run
unrecorded, under the rule), and the changed program measured by its own
timer with nothing recording, base and changed programs alternating over
--rounds rounds (the median of each run's steps; the median over rounds;
noise: the spread of the rounds' medians over their median). The interval
of a prediction: the base bundle's step-to-step spread (its fastest and
slowest measured steps against their mean) around it, or explain's own
interval columns where the what_if table has them. With --record-rounds K
the base is recorded K times, in K processes (NAME.stb, NAME.r2.stb, ...):
the prediction is the median of the K bundles' predictions, its interval
from the lowest of their lows to the highest of their highs (a host's
speed moves from process to process by more than some predictions'
errors: docs/whatif.md, data=K).

Built-in step (`steptrace record` / `steptrace bench` of --model small --ctx 512):
  plain -> fused (bf16 and fp32), fp32 -> bf16, fp32 plain -> bf16 fused, batch x2 (bf16, fp32),
  1 -> 2 and 1 -> 4 GPUs, bucket 25 -> 100 MB, naive -> bucketed (several GPUs)
PyTorch, scripts/gpt_train.py --preset gpt2 --batch 8 --ctx 512 (scripts/whatif_torch.py
runs the variants in one process, alternating):
  eager -> torch.compile(mode="reduce-overhead"), eager -> torch.compile, fp32 -> bf16,
  batch x2, removing a per-step .item(), data loading halved; DDP 1 -> 2, 1 -> 4 GPUs,
  bucket 25 -> 100 MB (torchrun, several GPUs)
Rows that need more GPUs than there are are written with status "skipped: N GPU(s)".

Writes --csv (bundle, change, rule, predicted_ms, lo, hi, measured_ms, error_pct,
noise_pct, in_interval, base_ms, recorded_ms, gpus, status) and --md (the
table, each bundle's ranking, the summary), and OUT/whatif.json (every run).

  python3 scripts/whatif_validate.py --steptrace build-rel/steptrace --out OUT \\
      --csv docs/whatif/validation.csv --md docs/whatif/validation.md [--rounds 3] [--budget-s 540]
  python3 scripts/whatif_validate.py --dry-run ...   (no GPU: shipped bundles, faked measurements)
  python3 scripts/whatif_validate.py --predict-from OUT ...   (no GPU: a GPU run's bundles and
      measurements, kept in OUT, predicted again by this steptrace: the model can change, the
      measurements stay what the GPU measured)

With --in-process (one GPU, the PyTorch bases) each PyTorch base and the
programs changed from it run in one process under `steptrace record
--armed` (scripts/whatif_torch.py --windows-of BASE): each round the base
runs once more while `steptrace trigger` records a window of its steps,
then every variant's measured round. The predictions come from those
windows (their median), the measurements from the same process, so a
host whose speed moves from process to process moves both alike.

Exit 0 when the CSV was written (scripts/whatif_check.py judges it), 2 on usage errors.
"""
import argparse
import csv
import io
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TRAIN = os.path.join(HERE, "gpt_train.py")
HARNESS = os.path.join(HERE, "whatif_torch.py")

ST = ["--model", "small", "--ctx", "512", "--mode", "train"]
PT = ["--preset", "gpt2", "--batch", "8", "--ctx", "512"]

# the programs: name -> (kind, options, GPUs)
PROGRAMS = {
    "st-bf16": ("builtin", ST + ["--precision", "bf16", "--batch", "4"], 1),
    "st-bf16-fused": ("builtin", ST + ["--precision", "bf16", "--batch", "4", "--kernels", "fused"], 1),
    "st-bf16-b8": ("builtin", ST + ["--precision", "bf16", "--batch", "8"], 1),
    "st-fp32": ("builtin", ST + ["--precision", "fp32", "--batch", "4"], 1),
    "st-fp32-fused": ("builtin", ST + ["--precision", "fp32", "--batch", "4", "--kernels", "fused"], 1),
    "st-fp32-b8": ("builtin", ST + ["--precision", "fp32", "--batch", "8"], 1),
    "st-bf16-x2": ("builtin", ST + ["--precision", "bf16", "--batch", "4", "--nproc", "2", "--ddp", "bucket"], 2),
    "st-bf16-x4": ("builtin", ST + ["--precision", "bf16", "--batch", "4", "--nproc", "4", "--ddp", "bucket"], 4),
    "st-bucket25": ("builtin", ST + ["--precision", "bf16", "--batch", "4", "--nproc", "2", "--ddp", "bucket",
                                     "--bucket-mb", "25"], 2),
    "st-bucket100": ("builtin", ST + ["--precision", "bf16", "--batch", "4", "--nproc", "2", "--ddp", "bucket",
                                      "--bucket-mb", "100"], 2),
    "st-naive": ("builtin", ST + ["--precision", "bf16", "--batch", "4", "--nproc", "2", "--ddp", "naive"], 2),
    "pt-eager": ("torch", PT, 1),
    "pt-ro": ("torch", PT + ["--compile", "reduce-overhead"], 1),
    "pt-compile": ("torch", PT + ["--compile", "default"], 1),
    "pt-fp32": ("torch", PT + ["--dtype", "fp32"], 1),
    "pt-b16": ("torch", ["--preset", "gpt2", "--batch", "16", "--ctx", "512"], 1),
    "pt-item": ("torch", PT + ["--item"], 1),
    "pt-load20": ("torch", PT + ["--load-ms", "20"], 1),
    "pt-load10": ("torch", PT + ["--load-ms", "10"], 1),
    "pt-ddp2": ("torchrun", PT, 2),
    "pt-ddp4": ("torchrun", PT, 4),
    "pt-ddp2-b100": ("torchrun", PT + ["--bucket-mb", "100"], 2),
}

# the changes: (base program, changed program, change, rules, extra explain options)
CHANGES = [
    ("st-bf16", "st-bf16-fused", "built-in BF16 plain -> fused", ["graph", "fuse=elementwise"], []),
    ("st-fp32", "st-fp32-fused", "built-in FP32 plain -> fused", ["graph", "fuse=elementwise"], []),
    ("st-fp32", "st-bf16", "built-in FP32 -> BF16", ["precision=bf16"], []),
    ("st-fp32", "st-bf16-fused", "built-in FP32 plain -> BF16 fused", ["precision=bf16", "graph", "fuse=elementwise"],
     []),
    ("st-bf16", "st-bf16-b8", "built-in BF16 batch x2", ["batch=x2"], []),
    ("st-fp32", "st-fp32-b8", "built-in FP32 batch x2", ["batch=x2"], []),
    ("st-bf16", "st-bf16-x2", "built-in 1 -> 2 GPUs", ["ranks=2"], ["ranks"]),
    ("st-bf16", "st-bf16-x4", "built-in 1 -> 4 GPUs", ["ranks=4"], ["ranks"]),
    ("st-bucket25", "st-bucket100", "built-in DDP bucket 25 -> 100 MB", ["bucket-mb=100"], []),
    ("st-naive", "st-bucket25", "built-in DDP naive -> bucketed", ["bucket-mb=25"], []),
    ("pt-eager", "pt-ro", 'eager -> torch.compile(mode="reduce-overhead")', ["graph", "fuse=elementwise"], []),
    ("pt-eager", "pt-compile", "eager -> torch.compile", ["fuse=compile"], []),
    ("pt-fp32", "pt-eager", "PyTorch FP32 -> BF16", ["precision=bf16"], []),
    ("pt-eager", "pt-b16", "PyTorch batch x2", ["batch=x2"], []),
    ("pt-item", "pt-eager", "removing a per-step .item()", ["no-sync"], []),
    ("pt-load20", "pt-load10", "data loading halved", ["data=0.5"], []),
    ("pt-eager", "pt-ddp2", "PyTorch 1 -> 2 GPUs (DDP)", ["ranks=2"], ["ranks"]),
    ("pt-eager", "pt-ddp4", "PyTorch 1 -> 4 GPUs (DDP)", ["ranks=4"], ["ranks"]),
    ("pt-ddp2", "pt-ddp2-b100", "PyTorch DDP bucket 25 -> 100 MB", ["bucket-mb=100"], []),
]

FIELDS = ["bundle", "change", "rule", "predicted_ms", "lo", "hi", "measured_ms", "error_pct", "noise_pct",
          "in_interval", "base_ms", "recorded_ms", "gpus", "status"]


def sh(cmd, timeout=None, **kw):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(cmd, 124, e.stdout or "", "timed out after %ss" % timeout)


def csv_rows(text):
    return list(csv.DictReader(io.StringIO(text)))


def gpu_count():
    p = sh(["sh", "-c", "nvidia-smi -L"])
    return sum(1 for line in p.stdout.splitlines() if line.startswith("GPU")) if p.returncode == 0 else 0


class Run:
    def __init__(self, a):
        self.a = a
        self.t0 = time.time()
        self.log = []
        self.errors = {}   # program -> why it was not measured

    def left(self):
        return self.a.budget_s - (time.time() - self.t0)

    def note(self, **kw):
        self.log.append(kw)
        print(json.dumps(kw), flush=True)

    # ---- recording ----
    def record(self, name, k=0):
        """The base program's bundle (or bundles of its ranks), its k-th recording: a list of paths, or an error string."""
        kind, opts, gpus = PROGRAMS[name]
        out = os.path.join(self.a.out, name + (".r%d" % (k + 1) if k else "") + ".stb")
        if self.a.dry_run:
            shipped = {"st-fp32": "samples/small-fp32-train.stb", "pt-fp32": "samples/small-fp32-train.stb"}
            if kind == "builtin" and gpus > 1:
                return [os.path.join(ROOT, "docs/multi/ddp-%s.rank%d.stb" % ("naive" if "naive" in name else "bucket",
                                                                            r)) for r in range(2)]
            if kind == "torchrun":
                return [os.path.join(ROOT, "samples/pytorch-ddp.rank%d.stb" % r) for r in range(2)]
            return [os.path.join(ROOT, shipped.get(name, "samples/small-bf16-train.stb" if kind == "builtin"
                                                   else "samples/pytorch-auto.stb"))]
        if kind == "builtin":
            cmd = [self.a.steptrace, "record"] + opts + ["--warmup", str(self.a.warmup), "--steps",
                                                         str(self.a.steps), "--no-calibrate", "-o", out]
        elif kind == "torch":
            cmd = [self.a.steptrace, "record", "--warmup", str(self.a.warmup), "-o", out, "--", sys.executable,
                   TRAIN] + opts + ["--steps", str(self.a.steps + self.a.warmup)]
        else:
            cmd = [self.a.steptrace, "record", "--warmup", str(self.a.warmup), "-o", out, "--", "torchrun",
                   "--standalone", "--nproc_per_node", str(gpus), TRAIN] + opts + [
                       "--steps", str(self.a.steps + self.a.warmup)]
        p = sh(cmd, timeout=max(30, self.left()))
        self.note(step="record", program=name, round=k, rc=p.returncode, seconds=round(time.time() - self.t0, 1))
        if p.returncode:
            return "record: " + (p.stderr or p.stdout).strip()[-300:]
        if gpus > 1:   # the built-in's --nproc writes X.rankN.stb, a launcher's ranks X.N.stb (docs/multi-gpu.md)
            form = ".rank%d.stb" if kind == "builtin" else ".%d.stb"
            return [out.replace(".stb", form % r) for r in range(gpus)]
        return [out]

    def kept(self, name, gpus, k=0):
        """--predict-from: the bundle(s) an earlier run recorded for name (its k-th recording), or why there are none."""
        kind, _, n = PROGRAMS[name]
        out = os.path.join(self.a.out, name + (".r%d" % (k + 1) if k else "") + ".stb")
        paths = [out] if n == 1 else [out.replace(".stb", (".rank%d.stb" if kind == "builtin" else ".%d.stb") % r)
                                      for r in range(n)]
        missing = [p for p in paths if not os.path.exists(p)]
        return "not recorded in %s: %s" % (self.a.out, os.path.basename(missing[0])) if missing else paths

    # ---- prediction ----
    def explain(self, bundles, args):
        p = sh([self.a.steptrace, "explain"] + bundles + args, timeout=120)
        if p.returncode:
            raise RuntimeError((p.stderr or p.stdout).strip().splitlines()[0] if (p.stderr or p.stdout).strip()
                               else "explain failed")
        return p.stdout

    def predict(self, bundles, rules, extra, kind="builtin"):
        """(predicted, lo, hi, recorded step) in ms."""
        args = []
        for r in ["unrecorded"] + rules:
            args += ["--what-if", r]
        if "ranks" in extra:
            args += ["--allreduce", self.allreduce]
            if self.calibration.get(kind):
                args += ["--contention", self.calibration[kind]]
        report = json.loads(self.explain(bundles, args + ["--format", "json"]))   # one run: what_if and steps
        last = report["what_if"][-1]
        pred, rec = float(last["Predicted"]), float(last["Measured"])
        lo_key = next((k for k in last if k.lower().startswith(("low", "lo ", "lo(", "lower"))), None)
        hi_key = next((k for k in last if k.lower().startswith(("high", "hi ", "hi(", "upper"))), None)
        if lo_key and hi_key and last[lo_key] is not None and last[hi_key] is not None:
            return pred, float(last[lo_key]), float(last[hi_key]), rec
        walls = [float(r["Wall"]) for r in report["steps"] if str(r["Step"]) not in ("mean", "share (%)")]
        mean = statistics.mean(walls) if walls else rec
        return pred, pred * min(walls) / mean, pred * max(walls) / mean, rec

    # ---- measurement ----
    def bench(self, name):
        _, opts, _ = PROGRAMS[name]
        p = sh([self.a.steptrace, "bench"] + opts + ["--warmup", str(self.a.warmup), "--steps", str(self.a.steps),
                                                      "--format", "csv"], timeout=max(30, self.left()))
        rows = csv_rows(p.stdout)
        if p.returncode or not rows:
            return None
        row = next((r for r in rows if r.get("rank", "all") in ("all", "")), rows[0])
        try:   # one GPU: the median step; --nproc (the DDP table): the mean step of the "all" row
            return float(row.get("step_median_ms") or row["step_ms"])
        except (KeyError, ValueError):
            self.errors[name] = "bench: no step time in its CSV (%s)" % ",".join(row)[:200]
            return None

    def torchrun(self, name):
        _, opts, gpus = PROGRAMS[name]
        p = sh(["torchrun", "--standalone", "--nproc_per_node", str(gpus), TRAIN] + opts +
               ["--steps", str(self.a.steps + self.a.warmup)], timeout=max(30, self.left()))
        lines = [x for x in p.stdout.splitlines() if x.startswith("{")]
        if p.returncode or not lines:
            return None
        return statistics.median(json.loads(lines[-1])["iter_ms"][self.a.warmup:])

    def measure_inproc(self, base, changed):
        """--in-process: {program: [round medians]} and the window bundles, base and changed in one process."""
        names = [base] + [c for c in changed if c != base]
        variants = {n: PROGRAMS[n][1] for n in names}   # the base first: its optimizer's steps are the steps
        out = os.path.join(self.a.out, base + ".stb")
        go = os.path.join(self.a.out, base + ".go")
        err_path = os.path.join(self.a.out, base + ".err")
        window = max(2, self.a.steps - 2)
        cmd = [self.a.steptrace, "record", "--armed", "--modules-every", "1000000", "-o", out, "--", sys.executable,
               HARNESS, "--variants",
               json.dumps(variants), "--rounds", str(self.a.rounds), "--steps", str(self.a.steps), "--warmup",
               str(self.a.warmup), "--windows-of", base, "--go", go]
        err_f = open(err_path, "w")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err_f, text=True, bufsize=1)
        run_id, windows, medians, pending = None, [], {}, None
        for line in proc.stdout:
            if not line.startswith("{"):
                continue
            j = json.loads(line)
            if "window" in j:
                deadline = time.time() + 60
                while run_id is None and time.time() < deadline:
                    m = re.search(r"armed \(run (\d+)", open(err_path).read())
                    run_id = m.group(1) if m else None
                    time.sleep(0.1)
                if run_id:
                    pending = subprocess.Popen([self.a.steptrace, "trigger", "--run", run_id, "--steps", str(window),
                                                "--timeout", "120"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                               text=True)
                    time.sleep(1.0)   # the request in the run's status file before the steps begin
                with open(go, "w") as f:
                    f.write(str(j["window"]))
            elif "window_done" in j and pending is not None:
                try:
                    o, e = pending.communicate(timeout=120)
                except subprocess.TimeoutExpired:
                    pending.kill()
                    o, e = pending.communicate()
                m = re.search(r"steps (\d+) to (\d+) in '([^']+)'", o)
                self.note(step="window", program=base, round=j["window_done"], rc=pending.returncode,
                          bundle=m.group(3) if m else None, error=None if m else (e or o).strip()[-300:])
                if m:
                    windows.append(m.group(3))
                pending = None
            elif "medians" in j:
                medians = j["medians"]
                self.errors.update(j.get("errors", {}))
        proc.wait()
        err_f.close()
        self.note(step="measure in process", program=base, rc=proc.returncode, windows=len(windows))
        return medians, windows

    def measure(self, names):
        """name -> [median of each round] (ms); the torch variants in one process, the rest alternating."""
        got = {n: [] for n in names}
        torch_names = [n for n in names if PROGRAMS[n][0] == "torch"]
        others = [n for n in names if PROGRAMS[n][0] != "torch"]
        if self.a.dry_run:
            rnd = random.Random(37)
            for n in names:
                got[n] = [100.0 * (1 + 0.01 * rnd.uniform(-1, 1)) for _ in range(self.a.rounds)]
            return got
        if torch_names:
            variants = {n: PROGRAMS[n][1] for n in torch_names}
            p = sh([sys.executable, HARNESS, "--variants", json.dumps(variants), "--rounds", str(self.a.rounds),
                    "--steps", str(self.a.steps), "--warmup", str(self.a.warmup)],
                   timeout=max(60, self.left() - 30 * len(others) - 20))
            lines = [x for x in p.stdout.splitlines() if x.startswith('{"medians"')]
            self.note(step="measure torch", rc=p.returncode, error=None if lines else (p.stderr or "")[-500:])
            if lines:
                j = json.loads(lines[-1])
                got.update(j["medians"])
                self.errors.update(j.get("errors", {}))
            else:
                for n in torch_names:
                    self.errors[n] = "whatif_torch.py: %s" % ((p.stderr or p.stdout).strip().splitlines() or ["?"])[-1]
        for rnd in range(self.a.rounds):
            for n in others:
                if self.left() < 20:
                    self.note(step="measure", program=n, round=rnd, error="budget spent")
                    continue
                v = self.bench(n) if PROGRAMS[n][0] == "builtin" else self.torchrun(n)
                self.note(step="measure", program=n, round=rnd, median_ms=v)
                if v is not None:
                    got[n].append(v)
        return got


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steptrace", required=True)
    ap.add_argument("--out", required=True, help="folder for the bundles and whatif.json")
    ap.add_argument("--csv", required=True)
    ap.add_argument("--md", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10, help="measured steps a run")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--in-process", action="store_true",
                    help="the PyTorch bases recorded in windows of the process that measures them and their changes")
    ap.add_argument("--record-rounds", type=int, default=1,
                    help="record each base this many times, in as many processes; predict the median")
    ap.add_argument("--budget-s", type=float, default=540, help="seconds for the whole run")
    ap.add_argument("--only", default=None, help="comma-separated substrings of the changes to run")
    ap.add_argument("--dry-run", action="store_true", help="no GPU: shipped bundles, faked measurements")
    ap.add_argument("--predict-from", metavar="OUT", default=None,
                    help="no GPU: the bundles and whatif.json an earlier run left in OUT, predicted again")
    a = ap.parse_args()
    if a.predict_from and "," in a.predict_from:
        return predict_from_several(a)
    kept = None
    if a.predict_from:
        try:
            kept = json.load(open(os.path.join(a.predict_from, "whatif.json")))
        except (OSError, ValueError) as e:
            ap.error("--predict-from: %s" % e)
        for k in ("rounds", "steps", "warmup"):
            setattr(a, k, kept["args"][k])
        a.record_rounds = kept["args"].get("record_rounds", 1)
        a.in_process = kept["args"].get("in_process", False)
        a.out = a.predict_from
    if a.rounds < 3 and not a.dry_run:
        ap.error("--rounds: at least 3")
    if a.record_rounds < 1:
        ap.error("--record-rounds: at least 1")
    if not os.path.exists(a.steptrace) and not shutil.which(a.steptrace):
        ap.error("--steptrace %s: no such program" % a.steptrace)
    os.makedirs(a.out, exist_ok=True)
    run = Run(a)
    gpus = 8 if a.dry_run else kept["gpus"] if kept else gpu_count()
    if not a.dry_run and gpus == 0:
        print("whatif_validate: no GPU (nvidia-smi -L fails)")
        sys.exit(77)
    changes = [c for c in CHANGES if not a.only or any(s in c[2] for s in a.only.split(","))]
    run.allreduce, run.calibration = os.path.join(ROOT, "docs/multi/st-allreduce-h200x2.csv"), {}
    rows, want = [], []
    for base, changed, change, rules, extra in changes:
        need = max(PROGRAMS[base][2], PROGRAMS[changed][2])
        if need > gpus:
            line = "skipped: %d GPU(s), this change needs %d" % (gpus, need)
            print("%s: %s" % (change, line))
            rows.append(dict(bundle=base, change=change, rule=" + ".join(rules), gpus=need, status=line))
            continue
        want.append((base, changed, change, rules, extra, need))
    # the multi-GPU inputs of ranks=N: an all-reduce table and a calibration, measured here
    if kept and os.path.exists(os.path.join(a.out, "allreduce.csv")):
        run.allreduce = os.path.join(a.out, "allreduce.csv")
    elif not a.dry_run and any("ranks" in w[4] for w in want):
        p = sh([a.steptrace, "bench", "allreduce", "--nproc", str(min(gpus, 4)), "--format", "csv"], timeout=120)
        if p.returncode == 0:
            run.allreduce = os.path.join(a.out, "allreduce.csv")
            open(run.allreduce, "w").write(p.stdout)
    bundles, more = {}, {}   # each base's first recording; its others (--record-rounds)
    inproc = {}              # --in-process: base -> {program: [round medians]}
    if a.in_process:
        groups = {}
        for base, changed, *_ in want:
            if PROGRAMS[base][0] == "torch" and PROGRAMS[changed][0] == "torch":
                groups.setdefault(base, []).append(changed)
        for base, changed in groups.items():
            if kept:
                got = kept.get("in_process", {}).get(base, {})
                medians, windows = got.get("measured", {}), [os.path.join(a.out, w) for w in got.get("windows", [])]
            else:
                medians, windows = run.measure_inproc(base, changed)
            inproc[base] = dict(measured=medians, windows=[os.path.basename(w) for w in windows])
            ok = [[w] for w in windows if os.path.exists(w)]
            bundles[base] = ok[0] if ok else "no window recorded in the measuring process"
            more[base] = ok[1:]
    for k in range(a.record_rounds):
        for base, *_ in want:
            if base in inproc:
                continue
            if k == 0 and base not in bundles:
                bundles[base] = run.kept(base, gpus) if kept else run.record(base)
            elif k > 0 and len(more.setdefault(base, [])) < k:
                more[base].append(run.kept(base, gpus, k) if kept else run.record(base, k))
    # ranks=N's contention and host time per call, learned from this run's own multi-GPU recordings
    for kind, base in (("builtin", "st-bucket25"), ("torch", "pt-ddp2")):
        if a.dry_run or not isinstance(bundles.get(base), list):
            continue
        try:
            cal = run.explain(bundles[base], ["--section", "calibration", "--format", "csv"])
            cal_dir = a.out
            if kept:   # a kept run's folder is read, never written (it may be docs/whatif/runs/)
                import tempfile
                cal_dir = tempfile.mkdtemp(prefix="whatif-cal-")
            run.calibration[kind] = os.path.join(cal_dir, "calibration-%s.csv" % kind)
            open(run.calibration[kind], "w").write(cal)
        except (RuntimeError, OSError):
            pass
    preds = {}
    for base, changed, change, rules, extra, need in want:
        if isinstance(bundles[base], str):
            preds[change] = bundles[base]
            continue
        each = []
        for b in [bundles[base]] + [x for x in more.get(base, []) if isinstance(x, list)]:
            try:
                each.append(run.predict(b, rules, extra, PROGRAMS[base][0].replace("torchrun", "torch")))
            except (RuntimeError, ValueError, KeyError, IndexError) as e:
                each.append("explain: %s" % e)
            run.note(step="predict", change=change, bundle=os.path.basename(b[0]), prediction=each[-1])
        preds[change] = combine(each)
    names = sorted({w[0] for w in want if w[0] not in inproc} | {w[1] for w in want if w[0] not in inproc})
    measured = {n: kept["measured"].get(n) or [] for n in names} if kept else run.measure(names)
    for base, changed, change, rules, extra, need in want:
        row = dict(bundle=base, change=change, rule=" + ".join(rules), gpus=need)
        m, b = measured.get(changed) or [], measured.get(base) or []
        if base in inproc:   # measured beside its base's recorded windows, in one process
            m, b = inproc[base]["measured"].get(changed) or [], inproc[base]["measured"].get(base) or []
        if isinstance(preds[change], str):
            row["status"] = preds[change]
        elif not m or not b:
            why = run.errors.get(changed if not m else base)
            row["status"] = "not measured" + (": " + why if why else "")
        else:
            pred, lo, hi, rec = preds[change]
            if a.dry_run:   # faked: the prediction off by a few percent, the base as recorded
                r = random.Random(change)
                med = pred * (1 + r.uniform(-0.04, 0.04))
                base_ms = rec
                m = [med * x / statistics.median(m) for x in m]
            else:
                med, base_ms = statistics.median(m), statistics.median(b)
            row.update(predicted_ms="%.3f" % pred, lo="%.3f" % lo, hi="%.3f" % hi, measured_ms="%.3f" % med,
                       error_pct="%.2f" % (100 * (pred - med) / med),
                       noise_pct="%.2f" % (100 * (max(m) - min(m)) / med),
                       in_interval=str(lo <= med <= hi).lower(), base_ms="%.3f" % base_ms,
                       recorded_ms="%.3f" % rec, status="dry run" if a.dry_run else "ok")
        rows.append(row)
    write_csv(a.csv, rows)
    if not kept:   # --predict-from leaves the GPU run's record as it was
        with open(os.path.join(a.out, "whatif.json"), "w") as f:
            json.dump(dict(args=vars(a), gpus=gpus, log=run.log, measured=measured, in_process=inproc), f, indent=1)
    write_md(a, rows, gpus, time.time() - run.t0)


def combine(each):
    """One prediction from each recording's: the medians of the predictions and recorded steps, the widest interval."""
    ok = [p for p in each if not isinstance(p, str)]
    if not ok:
        return each[0]
    return (statistics.median(p[0] for p in ok), min(p[1] for p in ok), max(p[2] for p in ok),
            statistics.median(p[3] for p in ok))


def write_csv(path, rows):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in FIELDS})


def predict_from_several(a):
    """--predict-from DIR1,DIR2,...: each GPU run predicted again, one CSV of them all.

    A change measured in several runs takes the first run's row; a change
    skipped or failed in one run and measured in another (a one-GPU run and a
    two-GPU run) takes the measured row, so each row's prediction and
    measurement come from the same run."""
    import tempfile
    rows, gpus = {}, 0
    with tempfile.TemporaryDirectory() as tmp:
        for k, d in enumerate(a.predict_from.split(",")):
            c, m = os.path.join(tmp, "%d.csv" % k), os.path.join(tmp, "%d.md" % k)
            cmd = [sys.executable, os.path.abspath(__file__), "--steptrace", a.steptrace, "--out", d, "--csv", c,
                   "--md", m, "--predict-from", d] + (["--only", a.only] if a.only else [])
            if subprocess.run(cmd).returncode:
                sys.exit("whatif_validate: --predict-from %s failed" % d)
            gpus = max(gpus, json.load(open(os.path.join(d, "whatif.json")))["gpus"])
            for r in csv.DictReader(open(c)):
                old = rows.get(r["change"])
                if old is None or (old["status"] != "ok" and r["status"] == "ok"):
                    rows[r["change"]] = r
    order = [c[2] for c in CHANGES]
    rows = sorted(rows.values(), key=lambda r: order.index(r["change"]) if r["change"] in order else len(order))
    write_csv(a.csv, rows)
    write_md(a, rows, gpus, 0)


def write_md(a, rows, gpus, seconds):
    sys.path.insert(0, HERE)
    import whatif_check
    ok = [r for r in rows if r.get("measured_ms")]
    s = whatif_check.summary(rows)
    out = ["# What-if predictions against measurements", "",
           "Written by `python3 scripts/whatif_validate.py --steptrace %s --out OUT --csv %s --md %s --rounds %d` "
           "(%s, %d GPU(s), %.0f s); checked by `python3 scripts/whatif_check.py %s` (ctest `whatif.validation`). "
           "Each prediction is `explain --what-if unrecorded --what-if RULE...` of the base program's bundle; the "
           "measurement the changed program's own timer with nothing recording, in the same run, base and changed "
           "runs alternating over %d rounds (median; noise: the rounds' spread). Each rule's model: "
           "[whatif.md](../whatif.md)." % (a.steptrace, a.csv, a.md, a.rounds,
                                           "a dry run: shipped bundles, faked measurements" if a.dry_run
                                           else "measured", gpus, seconds, a.csv, a.rounds), "",
           "| Base | Change | Rule | Predicted (ms) | Interval (ms) | Measured (ms) | Error (%) | Noise (%) | In | Status |",
           "| --- | --- | --- | ---: | --- | ---: | ---: | ---: | --- | --- |"]
    for r in rows:
        out.append("| %s | %s | `%s` | %s | %s | %s | %s | %s | %s | %s |" % (
            r["bundle"], r["change"], r["rule"], r.get("predicted_ms", ""),
            "%s-%s" % (r["lo"], r["hi"]) if r.get("lo") else "", r.get("measured_ms", ""), r.get("error_pct", ""),
            r.get("noise_pct", ""), r.get("in_interval", ""), r.get("status", "")))
    out += ["", "Rankings (each base's changes by predicted saving, against their order by measured saving):", ""]
    for base, (pred_order, meas_order, same) in s["rankings"].items():
        out.append("- %s: predicted %s; measured %s: %s" % (base, " > ".join(pred_order), " > ".join(meas_order),
                                                           "right" if same else "WRONG"))
    out += ["", "Summary: %d changes measured of %d; mean |error| %s%%, max %s%%; coverage of the intervals %s; "
            "rankings right %d of %d." % (len(ok), len(rows), fmt(s["mean_abs"]), fmt(s["max_abs"]),
                                          "%d of %d" % (s["covered"], len(ok)), s["rank_right"], len(s["rankings"]))]
    if s["noisy"]:
        out += ["", "Too noisy to judge a prediction by (the measurement's rounds spread over %.0f%%): %s. The other "
                "%d changes: mean |error| %s%%, max %s%%." % (whatif_check.NOISY, "; ".join(s["noisy"]),
                                                             s["n_quiet"], fmt(s["mean_quiet"]), fmt(s["max_quiet"]))]
    out += [""]
    os.makedirs(os.path.dirname(os.path.abspath(a.md)), exist_ok=True)
    open(a.md, "w").write("\n".join(out))


def fmt(v):
    return "-" if v is None else "%.2f" % v


if __name__ == "__main__":
    main()
