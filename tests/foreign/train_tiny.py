#!/usr/bin/env python3
"""train_tiny.py: the GPU tests' PyTorch training script (tests/foreign/gpu.sh).

scripts/torch_train.py's step (the CS336 model, AdamW, NVTX ranges
train_step > forward, backward, optimizer) at a tiny size: d_model 128, 2
layers, 4 heads, d_ff 256, vocab 512, batch 2, ctx 64. Its other flags pass
through (--emit-nvtx, --kernel-counts F, --crash-at K --crash KIND, -w, -n).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import torch_train  # noqa: E402

TINY = ["--d-model", "128", "--d-ff", "256", "--layers", "2", "--heads", "4", "--vocab", "512",
        "--ctx", "64", "--batch", "2"]

if __name__ == "__main__":
    sys.argv[1:1] = TINY
    sys.exit(torch_train.main())
