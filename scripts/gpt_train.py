#!/usr/bin/env python3
"""A GPT-2 style training loop written the way people write them.

No NVTX, no profiler, no import of steptrace: the model (GPT-2's layout:
token and position embeddings, pre-norm blocks of causal self-attention
through F.scaled_dot_product_attention and a GELU MLP, final LayerNorm, a
head tied to the token embedding), AdamW over a DataLoader of random
tokens, BF16 autocast, and the usual options. steptrace's guide records it
unchanged (`steptrace record -o run.stb -- python3 scripts/gpt_train.py`)
and its GPU tests (tests/foreign/auto.sh) check what the recorder makes of
it; scripts/torch_overhead.py times it with and without recording.

  --preset gpt2      GPT-2 small, 124M parameters (12 layers, 768 wide)
  --preset tiny      4 layers, 256 wide, vocabulary 8192 (the tests)
  --accum N          gradient accumulation: N micro-batches per optimizer step
  --compile [MODE]   torch.compile the model (default, reduce-overhead, ...)
  --infer            an inference loop: no backward, no optimizer
  --profile DIR      run under torch.profiler as its tutorial does (schedule
                     wait 1, warmup 1, active 2; record_shapes, profile_memory;
                     tensorboard_trace_handler(DIR, use_gzip=True)): the traces
                     `steptrace import` reads (tests/import/)
  --backend B        the process group's backend under torchrun (nccl; gloo
                     lets two ranks share one GPU)
  --item             log loss.item() after each micro-batch's forward, as
                     training loops that print their loss do (a host sync)
  --load-ms X        data loading that costs X ms a batch: the Dataset's
                     __getitem__ sleeps X / batch ms a sample (reading and
                     decoding, as real datasets do), in the loop's process;
                     the JSON line's load_ms: what the sleeps took each
                     iteration (asked and overshoot)
  --bucket-mb M      DistributedDataParallel's bucket_cap_mb (PyTorch: 25)
Under torchrun (RANK and WORLD_SIZE set) it trains data-parallel as people
write it: NCCL, DistributedDataParallel, each rank its own batches,
no_sync() on the micro-batches before the last of an accumulation; rank 0
prints the JSON line.
Prints one JSON line: the options and each iteration's time in ms
(torch.cuda.synchronize() then time.perf_counter(), as benchmark scripts do).
"""
import argparse
import contextlib
import json
import math
import time

import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

PRESETS = {
    "gpt2": dict(layers=12, heads=12, width=768, vocab=50304),
    "tiny": dict(layers=4, heads=4, width=256, vocab=8192),
}


class CausalSelfAttention(nn.Module):
    def __init__(self, width, heads, dropout):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)
        self.resid_dropout = nn.Dropout(dropout)
        self.dropout = dropout

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0,
                                           is_causal=True)
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, width, dropout):
        super().__init__()
        self.c_fc = nn.Linear(width, 4 * width)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * width, width)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, width, heads, dropout):
        super().__init__()
        self.ln_1 = nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads, dropout)
        self.ln_2 = nn.LayerNorm(width)
        self.mlp = MLP(width, dropout)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, layers, heads, width, vocab, ctx, dropout=0.0):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, width),
            wpe=nn.Embedding(ctx, width),
            drop=nn.Dropout(dropout),
            h=nn.ModuleList([Block(width, heads, dropout) for _ in range(layers)]),
            ln_f=nn.LayerNorm(width),
        ))
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.transformer.wte.weight = self.lm_head.weight   # tied, as GPT-2
        self.apply(self._init)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * layers))

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx, targets=None):
        b, t = idx.shape
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


class RandomTokens(Dataset):
    """Sequences of random tokens; each index always gives the same one."""

    def __init__(self, n, ctx, vocab, offset=0, load_s=0.0):
        self.n, self.ctx, self.vocab, self.offset, self.load_s = n, ctx, vocab, offset, load_s
        self.slept = 0.0   # seconds the sleeps took, asked and overshoot (the JSON line's load_ms)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.load_s:
            t = time.perf_counter()
            time.sleep(self.load_s)   # reading and decoding a sample
            self.slept += time.perf_counter() - t
        g = torch.Generator().manual_seed(self.offset + i)
        tokens = torch.randint(0, self.vocab, (self.ctx + 1,), generator=g)
        return tokens[:-1], tokens[1:]


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    ap.add_argument("--batch", type=int, default=None, help="micro-batch (gpt2: 12, tiny: 4)")
    ap.add_argument("--ctx", type=int, default=None, help="sequence length (gpt2: 1024, tiny: 64)")
    ap.add_argument("--steps", type=int, default=5, help="optimizer steps (iterations with --infer)")
    ap.add_argument("--accum", type=int, default=1)
    ap.add_argument("--compile", nargs="?", const="default", default=None)
    ap.add_argument("--infer", action="store_true")
    ap.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
    ap.add_argument("--workers", type=int, default=0, help="DataLoader workers")
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--profile", metavar="DIR", default=None)
    ap.add_argument("--backend", choices=["nccl", "gloo"], default="nccl")
    ap.add_argument("--item", action="store_true", help="log loss.item() after each forward")
    ap.add_argument("--load-ms", type=float, default=0.0, help="data loading per batch (ms)")
    ap.add_argument("--bucket-mb", type=float, default=None, help="DDP's bucket_cap_mb")
    return ap.parse_args(argv)


def setup(args):
    """The model, optimizer and data of a run: a dict for train()."""

    big = args.preset == "gpt2"
    batch = args.batch or (12 if big else 4)
    ctx = args.ctx or (1024 if big else 64)
    ddp = int(os.environ.get("WORLD_SIZE", "1")) > 1
    rank = int(os.environ.get("RANK", "0"))
    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    device = "cuda"
    if ddp:
        local = int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count()
        torch.cuda.set_device(local)
        dist.init_process_group(args.backend)
        device = "cuda:%d" % local
    model = GPT(ctx=ctx, **PRESETS[args.preset]).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)
    if ddp:
        extra = {} if args.bucket_mb is None else dict(bucket_cap_mb=args.bucket_mb)
        model = nn.parallel.DistributedDataParallel(model, device_ids=[torch.cuda.current_device()], **extra)
    if args.compile:
        model = torch.compile(model, mode=None if args.compile == "default" else args.compile)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.dtype == "bf16")
    return dict(model=model, optimizer=optimizer, autocast=autocast, device=device, ddp=ddp, rank=rank,
                batch=batch, ctx=ctx, epoch=0)


def train(args, st):
    """args.steps iterations of the loop; each one's time in ms."""
    model, optimizer, autocast, device, ddp = st["model"], st["optimizer"], st["autocast"], st["device"], st["ddp"]
    batch, ctx, rank = st["batch"], st["ctx"], st["rank"]
    micro_batches = args.steps * (1 if args.infer else args.accum)
    offset = (rank + st["epoch"]) * micro_batches * batch
    st["epoch"] += 1
    data = RandomTokens(micro_batches * batch, ctx, PRESETS[args.preset]["vocab"], offset=offset,
                        load_s=args.load_ms / 1e3 / batch)
    loader = DataLoader(data, batch_size=batch, num_workers=args.workers, pin_memory=True,
                        drop_last=True)

    profiler = contextlib.nullcontext()
    if args.profile:
        from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler
        profiler = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                           schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
                           on_trace_ready=tensorboard_trace_handler(args.profile, use_gzip=True),
                           record_shapes=True, profile_memory=True)

    log = open(os.devnull, "w") if args.item else None
    times = []
    t0 = time.perf_counter()
    if args.infer:
        model.eval()
        with torch.no_grad():
            for x, y in loader:
                x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
                with autocast:
                    logits, _ = model(x)
                torch.cuda.synchronize()
                t1 = time.perf_counter()
                times.append((t1 - t0) * 1e3)
                t0 = t1
    else:
        model.train()
        prof = profiler.__enter__()
        for i, (x, y) in enumerate(loader):
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            last = (i + 1) % args.accum == 0
            sync = model.no_sync() if ddp and not last else contextlib.nullcontext()
            with sync:
                with autocast:
                    logits, loss = model(x, y)
                if args.item:
                    print("micro-batch %d loss %.4f" % (i, loss.item()), file=log)
                (loss / args.accum).backward()
            if not last:
                continue
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            times.append((t1 - t0) * 1e3)
            if data.load_s:
                st.setdefault("load_ms", []).append(data.slept * 1e3)
                data.slept = 0.0
            if prof is not None:
                prof.step()
            t0 = t1
        profiler.__exit__(None, None, None)
        st["loss"] = loss.item()
    if log:
        log.close()
    return times


def main():
    args = parse()
    st = setup(args)
    times = train(args, st)
    model, ddp, rank, batch, ctx = st["model"], st["ddp"], st["rank"], st["batch"], st["ctx"]
    if "loss" in st:
        print("loss %.4f" % st["loss"], flush=True)
    n_params = sum(p.numel() for p in model.parameters())
    if ddp:
        dist.destroy_process_group()
        if rank:
            return
    print(json.dumps(dict(preset=args.preset, batch=batch, ctx=ctx, steps=args.steps, accum=args.accum,
                          compile=args.compile, infer=args.infer, dtype=args.dtype,
                          parameters=n_params, iter_ms=[round(t, 3) for t in times],
                          **({"load_ms": [round(t, 3) for t in st["load_ms"]]} if "load_ms" in st else {}))),
          flush=True)


if __name__ == "__main__":
    main()
