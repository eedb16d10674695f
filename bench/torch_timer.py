#!/usr/bin/env python3
"""PyTorch's own timing of the calls opmeter's `torch` impl makes, for the agreement benchmark
(bench/worker_agreement.sh): torch.utils.benchmark's adaptive_autorange median, inputs reused (hot).
usage: torch_timer.py layernorm|gemm DTYPE SIZE... [--threads N] [--device cpu|cuda:0]
  layernorm: batch seq hidden     gemm: M N K
Prints seconds per call."""
import argparse

import torch
import torch.nn.functional as F
import torch.utils.benchmark as benchmark

p = argparse.ArgumentParser()
p.add_argument("op", choices=["layernorm", "gemm"])
p.add_argument("dtype")
p.add_argument("sizes", type=int, nargs="+")
p.add_argument("--threads", type=int, default=1)
p.add_argument("--device", default="cpu")
a = p.parse_args()
torch.set_num_threads(a.threads)
dt = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[a.dtype]
dev = torch.device(a.device)
if a.op == "layernorm":
    b, s, h = a.sizes
    x = torch.rand(b * s, h, device=dev).mul(2).sub(1).to(dt)
    w = torch.rand(h, device=dev).add(0.5).to(dt)
    bias = torch.rand(h, device=dev).sub(0.5).to(dt)
    stmt, env = "F.layer_norm(x, (h,), w, bias, 1e-5)", {"F": F, "x": x, "h": h, "w": w, "bias": bias}
else:
    m, n, k = a.sizes
    A = torch.rand(m, k, device=dev).mul(2).sub(1).to(dt)
    B = torch.rand(n, k, device=dev).mul(2).sub(1).to(dt)
    stmt, env = "torch.matmul(A, B.t())", {"torch": torch, "A": A, "B": B}
t = benchmark.Timer(stmt=stmt, globals=env, num_threads=a.threads)
m = t.adaptive_autorange(threshold=0.01, min_run_time=1.0) if hasattr(t, "adaptive_autorange") else t.blocked_autorange(min_run_time=2.0)
print(f"{m.median:.9g}")
