#!/usr/bin/env python3
"""The operations of opmeter's GPU performance goals, timed with PyTorch on the same GPU:
bf16 and fp8 GEMM 8192^3 and a 1 GiB device copy_. CUDA events around each call, median of 50
after 10 warm-up calls, inputs reused (hot), as `opmeter run ... --hot` measures. Prints JSON."""
import json
import statistics

import torch


def median_seconds(fn, calls=50, warmup=10):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(calls):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 1e3)
    return statistics.median(times)


def main():
    n = 8192
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda}
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    t = median_seconds(lambda: torch.matmul(a, b))
    out["matmul_bf16_8192_tflops"] = 2 * n**3 / t / 1e12
    if hasattr(torch, "float8_e4m3fn") and hasattr(torch, "_scaled_mm") and torch.cuda.get_device_capability(0) >= (8, 9):
        a8 = a.to(torch.float8_e4m3fn)
        b8 = b.to(torch.float8_e4m3fn).t().contiguous().t()  # column-major second operand
        one = torch.ones((), device="cuda")
        t = median_seconds(lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
        out["scaled_mm_fp8_8192_tflops"] = 2 * n**3 / t / 1e12
    elems = (1 << 30) // 4
    src = torch.rand(elems, device="cuda")
    dst = torch.empty_like(src)
    t = median_seconds(lambda: dst.copy_(src))
    out["copy_1gib_gbps"] = 2 * elems * 4 / t / 1e9
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
