#!/usr/bin/env python3
"""torch_check.py: checks one `steptrace step` against PyTorch.

The CS336 "basics" Transformer LM is written out below with exactly the maths
of SPEC.md ("The workload") and the same parameter names, so its state dict
reads and writes the safetensors files that `steptrace step` uses.

Flow (on the GPU machine, PyTorch 2.x with safetensors):

  # 1. random weights (F32, PyTorch names) and a batch (I64 inputs/targets)
  python3 scripts/torch_check.py make --d-model 64 --d-ff 256 --layers 2 \
      --heads 4 --vocab 512 --batch 2 --ctx 32 -w w.safetensors -b b.safetensors
  # 2. one step in C/CUDA
  build/steptrace step --model custom --d-model 64 --d-ff 256 --layers 2 \
      --heads 4 --vocab 512 --batch 2 --ctx 32 --precision fp32 --mode train \
      --weights w.safetensors --batch-file b.safetensors -o out.safetensors
  # 3. compare loss, gradients and updated weights; non-zero exit over tolerance
  python3 scripts/torch_check.py compare -w w.safetensors -b b.safetensors out.safetensors

or all three at once: `python3 scripts/torch_check.py run --steptrace build/steptrace
--precision bf16 --mode train --d-model 64 ...`.

How it compares: PyTorch runs the same step twice, in float64 (the truth)
and in the step's precision (fp32 with TF32 off, tf32, or bf16 autocast).
For each tensor the error is the norm-wise relative error
||x - truth|| / ||truth||; steptrace passes if its error is within
max(tolerance of the precision, 4 x PyTorch's own error at that precision).
Updated weights are compared through the update (new - old), which is what
AdamW changes.

AdamW order: SPEC.md applies the decoupled weight decay AFTER the Adam
update (p -= alpha_t m/(sqrt(v)+eps); then p -= lr wd p), while
torch.optim.AdamW multiplies p by (1 - lr wd) BEFORE it (and adds eps to
sqrt(v_hat) rather than sqrt(v)). The check applies SPEC's formula by hand;
--torch-adamw uses torch.optim.AdamW instead, to see the difference.
"""

import argparse
import json
import math
import os
import subprocess
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

PRESETS = {  # name: (d_model, d_ff, layers, heads), SPEC.md's table
    "small": (768, 3072, 12, 12),
    "medium": (1024, 4096, 24, 16),
    "large": (1280, 5120, 36, 20),
    "xl": (1600, 6400, 48, 25),
    "2.7B": (2560, 10240, 32, 32),
}

RMSNORM_EPS = 1e-5
ROPE_THETA = 10000.0


# ---------------------------------------------------------------- the model

class Linear(nn.Module):
    """y = x W^T, W (out, in), no bias; truncated normal std sqrt(2/(in+out)), cut at 3 std."""

    def __init__(self, d_in, d_out):
        super().__init__()
        std = math.sqrt(2.0 / (d_in + d_out))
        self.weight = nn.Parameter(torch.empty(d_out, d_in))
        nn.init.trunc_normal_(self.weight, std=std, a=-3 * std, b=3 * std)

    def forward(self, x):
        return x @ self.weight.t()


class Embedding(nn.Module):
    def __init__(self, vocab, d):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(vocab, d))
        nn.init.trunc_normal_(self.weight, std=1.0, a=-3.0, b=3.0)

    def forward(self, ids):
        return self.weight[ids]


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * g, computed in FP32 (or wider), cast back."""

    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        in_dtype = x.dtype
        xf = x.float() if in_dtype in (torch.bfloat16, torch.float16) else x
        rms = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + RMSNORM_EPS)
        return (xf * rms * self.weight).to(in_dtype)


def rope(x, positions):
    """Interleaved pairs (x[2i], x[2i+1]) of (B, T, H, dh) rotated by t * theta^(-2i/dh)."""
    dh = x.shape[-1]
    i = torch.arange(dh // 2, device=x.device, dtype=torch.float64)
    ang = positions.to(torch.float64)[:, None] * ROPE_THETA ** (-2.0 * i / dh)  # (T, dh/2)
    cos = ang.cos().to(x.dtype)[None, :, None, :]
    sin = ang.sin().to(x.dtype)[None, :, None, :]
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.q_proj, self.k_proj = Linear(d, d), Linear(d, d)
        self.v_proj, self.output_proj = Linear(d, d), Linear(d, d)

    def forward(self, x):
        B, T, d = x.shape
        H, dh = self.heads, d // self.heads
        pos = torch.arange(T, device=x.device)
        q = rope(self.q_proj(x).view(B, T, H, dh), pos).transpose(1, 2)  # (B, H, T, dh)
        k = rope(self.k_proj(x).view(B, T, H, dh), pos).transpose(1, 2)
        v = self.v_proj(x).view(B, T, H, dh).transpose(1, 2)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
        sdt = scores.dtype if scores.dtype == torch.float64 else torch.float32
        probs = torch.softmax(scores.to(sdt), dim=-1)  # max-subtracted, FP32 under autocast
        out = (probs @ v).transpose(1, 2).reshape(B, T, d)
        return self.output_proj(out)


class SwiGLU(nn.Module):
    def __init__(self, d, d_ff):
        super().__init__()
        self.w1, self.w2, self.w3 = Linear(d, d_ff), Linear(d_ff, d), Linear(d, d_ff)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, d, d_ff, heads):
        super().__init__()
        self.ln1, self.attn = RMSNorm(d), Attention(d, heads)
        self.ln2, self.ffn = RMSNorm(d), SwiGLU(d, d_ff)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.ffn(self.ln2(x))


class TransformerLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["d_model"]
        self.token_embeddings = Embedding(cfg["vocab"], d)
        self.layers = nn.ModuleList(Block(d, cfg["d_ff"], cfg["heads"]) for _ in range(cfg["layers"]))
        self.ln_final = RMSNorm(d)
        self.lm_head = Linear(d, cfg["vocab"])

    def forward(self, ids):
        x = self.token_embeddings(ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.ln_final(x))


def loss_fn(logits, targets):
    """Mean cross-entropy, in FP32 (or wider), max-subtracted log-sum-exp."""
    lf = logits if logits.dtype == torch.float64 else logits.float()
    return F.cross_entropy(lf.reshape(-1, lf.shape[-1]), targets.reshape(-1))


def param_count(cfg):
    d, ff, v = cfg["d_model"], cfg["d_ff"], cfg["vocab"]
    return v * d + cfg["layers"] * (4 * d * d + 3 * d * ff + 2 * d) + d + d * v


def config_from_args(a, name=None):
    """A config dict from a preset name and/or --d-model ... overrides."""
    name = name or getattr(a, "model", None) or ("custom" if a.d_model else "small")
    if name == "custom":
        if not (a.d_model and a.layers and a.heads):
            sys.exit("error: custom model needs --d-model, --layers and --heads")
        cfg = dict(d_model=a.d_model, d_ff=4 * a.d_model, layers=a.layers, heads=a.heads)
    elif name in PRESETS:
        d, ff, nl, nh = PRESETS[name]
        cfg = dict(d_model=d, d_ff=ff, layers=nl, heads=nh)
    else:
        sys.exit(f"error: unknown model '{name}'")
    for k in ("d_model", "d_ff", "layers", "heads"):
        if getattr(a, k, None):
            cfg[k] = getattr(a, k)
    cfg["name"] = name
    cfg["vocab"] = a.vocab or 10000
    cfg["batch"] = a.batch or 4
    cfg["ctx"] = getattr(a, "ctx", None) or 128
    if cfg["d_model"] % cfg["heads"] or (cfg["d_model"] // cfg["heads"]) % 2:
        sys.exit("error: d_model must split into heads of an even size")
    return cfg


def add_size_args(p, ctx=True):
    p.add_argument("--model", help="small, medium, large, xl, 2.7B or custom")
    for k in ("d-model", "d-ff", "layers", "heads", "vocab", "batch"):
        p.add_argument("--" + k, type=int)
    if ctx:
        p.add_argument("--ctx", type=int)


def precision_context(precision, device):
    """Sets PyTorch's matmul precision and returns the autocast context of a precision."""
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    if precision == "bf16":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return torch.autocast(device_type=device.type, enabled=False)


# ---------------------------------------------------------------- AdamW

def adamw_spec(params, grads, lr, wd, step=1, betas=(0.9, 0.999), eps=1e-8):
    """SPEC.md's AdamW from zero state: decay applied after the Adam update."""
    b1, b2 = betas
    out = {}
    for name, p in params.items():
        g = grads[name]
        m = (1 - b1) * g
        v = (1 - b2) * g * g
        alpha = lr * math.sqrt(1 - b2 ** step) / (1 - b1 ** step)
        p = p - alpha * m / (v.sqrt() + eps)
        out[name] = p - lr * wd * p
    return out


def adamw_torch(model, lr, wd):
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=wd)
    opt.step()
    return {n: p.detach().clone() for n, p in model.named_parameters()}


# ---------------------------------------------------------------- one step

def torch_step(cfg, weights, inputs, targets, precision, mode, lr, wd, device, torch_adamw=False):
    """loss, grads {name: tensor}, new weights {name: tensor} of one PyTorch step, in float64 on CPU."""
    model = TransformerLM(cfg).to(device)
    if precision == "fp64":
        model = model.double()
    model.load_state_dict({k: v.to(next(model.parameters()).dtype) for k, v in weights.items()})
    inputs, targets = inputs.to(device).long(), targets.to(device).long()
    with precision_context(precision, device):
        if mode == "forward":
            with torch.no_grad():
                loss = loss_fn(model(inputs), targets)
        else:
            loss = loss_fn(model(inputs), targets)
    grads, new = {}, {}
    if mode != "forward":
        loss.backward()
        grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
    if mode == "train":
        if torch_adamw:
            new = adamw_torch(model, lr, wd)
        else:
            params = {n: p.detach().clone() for n, p in model.named_parameters()}
            new = adamw_spec(params, grads, lr, wd)
    cpu = lambda d: {k: v.double().cpu() for k, v in d.items()}
    return loss.item(), cpu(grads), cpu(new)


# ---------------------------------------------------------------- files

def save(path, tensors, metadata=None):
    from safetensors.torch import save_file
    save_file({k: v.contiguous() for k, v in tensors.items()}, path, metadata=metadata)


def load(path):
    from safetensors import safe_open
    with safe_open(path, framework="pt") as f:
        return {k: f.get_tensor(k) for k in f.keys()}, (f.metadata() or {})


def cmd_make(a):
    cfg = config_from_args(a)
    torch.manual_seed(a.seed)
    model = TransformerLM(cfg)
    with torch.no_grad():
        if not a.gains_one:  # gains away from 1 so a missing gain shows
            for n, p in model.named_parameters():
                if p.ndim == 1:
                    p.add_(0.1 * torch.randn_like(p))
    weights = {n: p.detach().float() for n, p in model.named_parameters()}
    shape = (cfg["batch"], cfg["ctx"])
    dt = torch.int32 if a.batch_dtype == "i32" else torch.int64
    batch = {"inputs": torch.randint(cfg["vocab"], shape).to(dt),
             "targets": torch.randint(cfg["vocab"], shape).to(dt)}
    meta = {k: str(v) for k, v in cfg.items()}
    save(a.weights, weights, meta)
    save(a.batch_file, batch, meta)
    print(f"wrote {a.weights} ({len(weights)} tensors, {param_count(cfg):,} parameters) "
          f"and {a.batch_file} {tuple(shape)}", file=sys.stderr)
    return cfg


def rel_err(x, ref):
    x, ref = x.double().flatten(), ref.double().flatten()
    den = ref.norm().item()
    num = (x - ref).norm().item()
    return num / den if den > 0 else num


TOL = {  # norm-wise relative error allowed against float64 PyTorch
    "fp32": {"loss": 1e-5, "grad": 1e-4, "update": 1e-3},
    "tf32": {"loss": 5e-3, "grad": 3e-2, "update": 5e-2},
    "bf16": {"loss": 3e-2, "grad": 1e-1, "update": 2e-1},
}


def cmd_compare(a):
    out, meta = load(a.step_file)
    weights, _ = load(a.weights)
    batch, _ = load(a.batch_file)
    if "config" not in meta:
        sys.exit(f"error: '{a.step_file}' has no steptrace config metadata")
    sc = json.loads(meta["config"])
    cfg = {k: sc[k] for k in ("d_model", "d_ff", "layers", "heads", "vocab", "batch", "ctx")}
    precision, mode = sc["precision"], sc["mode"]
    lr, wd = sc["lr"], sc["weight_decay"]
    names = list(weights.keys())
    device = torch.device("cuda" if torch.cuda.is_available() and not a.cpu else "cpu")

    for k in ["loss"] + ([f"grad.{n}" for n in names] if mode != "forward" else []) + \
            (names if mode == "train" else []):
        if k not in out:
            sys.exit(f"error: '{a.step_file}' lacks tensor '{k}'")

    args = (cfg, weights, batch["inputs"], batch["targets"])
    truth = torch_step(*args, "fp64", mode, lr, wd, device, a.torch_adamw)
    same = torch_step(*args, precision, mode, lr, wd, device, a.torch_adamw)
    tol = dict(TOL[precision])
    if a.tol:
        tol = {k: a.tol for k in tol}

    rows, failed = [], 0

    def check(kind, name, ours, theirs, ref):
        nonlocal failed
        e_ours, e_torch = rel_err(ours, ref), rel_err(theirs, ref)
        limit = max(tol[kind], 4 * e_torch)
        ok = e_ours <= limit and math.isfinite(e_ours)
        failed += not ok
        rows.append((kind, name, e_ours, e_torch, limit, "ok" if ok else "FAIL"))

    t = lambda v: torch.tensor([v], dtype=torch.float64)
    check("loss", "loss", out["loss"].reshape(1), t(same[0]), t(truth[0]))
    if mode != "forward":
        for n in names:
            check("grad", n, out[f"grad.{n}"], same[1][n], truth[1][n])
    if mode == "train":
        for n in names:
            w0 = weights[n].double()
            check("update", n, out[n].double() - w0, same[2][n] - w0, truth[2][n] - w0)

    print(f"steptrace step vs PyTorch: {precision} {mode} {sc.get('attention', 'naive')} attention, {sc.get('kernels', 'plain')} kernels, d_model {cfg['d_model']} "
          f"layers {cfg['layers']} heads {cfg['heads']} vocab {cfg['vocab']} "
          f"batch {cfg['batch']} ctx {cfg['ctx']}; loss steptrace {out['loss'].item():.6f} "
          f"torch-{precision} {same[0]:.6f} torch-fp64 {truth[0]:.6f}")
    print(f"{'kind':<7} {'tensor':<34} {'steptrace':>10} {'torch':>10} {'limit':>9}  result")
    shown = rows if a.verbose else sorted(rows, key=lambda r: -r[2] / r[4])[:12]
    for kind, name, eo, et, lim, res in shown:
        print(f"{kind:<7} {name:<34} {eo:10.3e} {et:10.3e} {lim:9.2e}  {res}")
    for kind in ("loss", "grad", "update"):
        sel = [r for r in rows if r[0] == kind]
        if sel:
            print(f"max relative error of {kind}: steptrace {max(r[2] for r in sel):.3e}, "
                  f"torch-{precision} {max(r[3] for r in sel):.3e} ({len(sel)} tensors)")
    print(f"{'FAILED' if failed else 'PASSED'}: {failed} of {len(rows)} over tolerance")
    return 1 if failed else 0


def cmd_run(a):
    os.makedirs(a.workdir, exist_ok=True)
    a.weights = os.path.join(a.workdir, "weights.safetensors")
    a.batch_file = os.path.join(a.workdir, "batch.safetensors")
    a.step_file = os.path.join(a.workdir, "step.safetensors")
    cfg = cmd_make(a)
    cmd = [a.steptrace, "step", "--model", "custom", "--d-model", str(cfg["d_model"]),
           "--d-ff", str(cfg["d_ff"]), "--layers", str(cfg["layers"]), "--heads", str(cfg["heads"]),
           "--vocab", str(cfg["vocab"]), "--batch", str(cfg["batch"]), "--ctx", str(cfg["ctx"]),
           "--precision", a.precision, "--mode", a.mode, "--kernels", a.kernels,
           "--lr", repr(a.lr),
           "--weights", a.weights, "--batch-file", a.batch_file, "-o", a.step_file]
    if a.attention:
        cmd[cmd.index("--kernels"):cmd.index("--kernels")] = ["--attention", a.attention]
    print("+ " + " ".join(cmd), file=sys.stderr)
    rc = subprocess.run(cmd).returncode
    if rc:
        print(f"error: steptrace step exited with {rc}", file=sys.stderr)
        return 2
    return cmd_compare(a)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)

    def common_make(p):
        add_size_args(p)
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--batch-dtype", choices=("i32", "i64"), default="i64")
        p.add_argument("--gains-one", action="store_true", help="keep RMSNorm gains at 1 (SPEC init)")

    def common_compare(p):
        p.add_argument("--tol", type=float, help="one norm-wise relative tolerance for everything")
        p.add_argument("--torch-adamw", action="store_true",
                       help="use torch.optim.AdamW (decay before the update) instead of SPEC's order")
        p.add_argument("--cpu", action="store_true", help="run PyTorch on the CPU")
        p.add_argument("-v", "--verbose", action="store_true", help="show every tensor")

    p = sub.add_parser("make", help="write random weights and a batch")
    common_make(p)
    p.add_argument("-w", "--weights", required=True)
    p.add_argument("-b", "--batch-file", required=True)

    p = sub.add_parser("compare", help="compare a `steptrace step` output with PyTorch")
    p.add_argument("step_file")
    p.add_argument("-w", "--weights", required=True)
    p.add_argument("-b", "--batch-file", required=True)
    common_compare(p)

    p = sub.add_parser("run", help="make, run `steptrace step`, compare")
    common_make(p)
    common_compare(p)
    p.add_argument("--steptrace", default="build/steptrace")
    p.add_argument("--precision", default="fp32", choices=("fp32", "tf32", "bf16"))
    p.add_argument("--mode", default="train", choices=("forward", "fwdbwd", "train"))
    p.add_argument("--attention", choices=("naive", "flash"),
                   help="steptrace's attention (PyTorch's is the same maths either way; "
                        "default: the kernels', naive, or flash for fused in bf16)")
    p.add_argument("--kernels", default="plain", choices=("plain", "fused"),
                   help="steptrace's kernels: plain, or fused (fused AdamW and residual adds)")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--workdir", default="torch_check.out")

    a = ap.parse_args()
    if a.cmd in ("make", "run") and not (a.d_model or a.model):
        # tiny by default: a check, not a benchmark
        a.model, a.d_model, a.d_ff, a.layers, a.heads = "custom", 64, 256, 2, 4
        a.vocab, a.batch, a.ctx = a.vocab or 512, a.batch or 2, a.ctx or 32
    if a.cmd == "make":
        cmd_make(a)
        return 0
    return cmd_compare(a) if a.cmd == "compare" else cmd_run(a)


if __name__ == "__main__":
    sys.exit(main())
