#!/usr/bin/env python3
"""ddp_train.py: a data-parallel training loop as people write one, for torchrun.

    torchrun --nproc_per_node 2 tests/foreign/ddp_train.py [--fsdp] [--steps N] [--facts FILE]
    mpirun -np 2 python3 tests/foreign/ddp_train.py --init tcp://127.0.0.1:PORT ...

No NVTX, no import of steptrace: a small GPT-style model (embedding,
pre-norm transformer blocks, LM head), BF16 autocast, AdamW, either
DistributedDataParallel (PyTorch's default buckets of 25 MiB) or FSDP2
(`torch.distributed.fsdp.fully_shard` on each block and on the whole
model, parameters kept in FP32). With --facts, rank 0 writes what the
tests check `steptrace comm` against (JSON): the world size, the
parameters' count and bytes, DDP's bucket sizes as its logging data
reports them (rebuilt_bucket_sizes, bytes), and for FSDP the bytes of
each unit's parameters.
"""

import argparse
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        h = self.ln_1(x)
        x = x + self.attn(h, h, h, need_weights=False, is_causal=True,
                          attn_mask=nn.Transformer.generate_square_subsequent_mask(x.size(1), device=x.device))[0]
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab=8192, d=512, layers=4, heads=8, ctx=256):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(ctx, d)
        self.h = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fsdp", action="store_true")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--facts")
    ap.add_argument("--init", help="under mpirun: the rendezvous (tcp://HOST:PORT); rank and size from Open MPI")
    args = ap.parse_args()

    if args.init:
        rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
        local = int(os.environ["OMPI_COMM_WORLD_LOCAL_RANK"])
        torch.cuda.set_device(local)
        dist.init_process_group("nccl", init_method=args.init, rank=rank,
                                world_size=int(os.environ["OMPI_COMM_WORLD_SIZE"]))
    else:
        local = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(local)
        dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1234)
    model = GPT().cuda()
    units = []
    if args.fsdp:
        from torch.distributed.fsdp import fully_shard
        for block in model.h:
            units.append(sum(p.numel() * p.element_size() for p in block.parameters()))
            fully_shard(block)
        rest = sum(p.numel() * p.element_size() for p in model.parameters()) - sum(units)
        fully_shard(model)
        units.append(rest)
        net = model
    else:
        net = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local])
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    gen = torch.Generator(device="cuda").manual_seed(rank)
    for _ in range(args.steps):
        x = torch.randint(0, 8192, (args.batch, 256), device="cuda", generator=gen)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = net(x[:, :-1])
            loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    if rank == 0 and args.facts:
        params = [p for p in model.parameters()]
        facts = {
            "world_size": world,
            "fsdp": args.fsdp,
            "steps": args.steps,
            "loss": float(loss),
            "param_count": sum(p.numel() for p in params),
            "param_bytes": sum(p.numel() * 4 for p in params),
        }
        if args.fsdp:
            facts["unit_bytes"] = units
        else:
            log = net._get_ddp_logging_data()
            sizes = str(log.get("rebuilt_bucket_sizes") or log.get("bucket_sizes") or "")
            facts["bucket_sizes"] = [int(s) for s in sizes.split(",") if s.strip()]
            facts["total_parameter_size_bytes"] = int(log.get("total_parameter_size_bytes", 0))
        with open(args.facts, "w") as f:
            json.dump(facts, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
