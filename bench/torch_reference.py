#!/usr/bin/env python3
"""PyTorch's figures for the operations opmeter's GPU goals compare with, on the same GPU.

For every GEMM dtype PyTorch has (fp32, tf32, fp16, bf16, fp8 e4m3 via torch._scaled_mm, int8 via
torch._int_mm) at 4096^3 and 8192^3, and a 1 GiB device copy_:
  burst      median of 30 calls after 10 warm-up calls (CUDA events around each call), as
             triton.testing.do_bench or a short PyTorch loop measures;
  sustained  calls back to back until the GPU's power settles (pynvml, at most --heat seconds),
             then the median of >= 10 ms batches over --window seconds.
Inputs are random and reused (hot), as `opmeter run ... --hot` measures. Prints JSON.
Usage: torch_reference.py [--sizes 4096 8192] [--heat 5] [--window 1] [--only burst|sustained]
"""
import argparse
import json
import statistics
import sys
import time

import torch

try:
    import pynvml
except ImportError:  # sustained figures then heat for a fixed time
    pynvml = None


def burst_seconds(fn, calls=30, warmup=10):
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


def power_w(handle):
    return pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0 if handle else None


def heat_until_steady(fn, batch, handle, max_s, window_s=0.25, tolerance=0.03):
    """Back-to-back calls until two consecutive power windows agree within 3% (as opmeter does)."""
    t0 = time.perf_counter()
    readings = []
    while time.perf_counter() - t0 < (max_s if handle else min(1.0, max_s)):
        for _ in range(batch):
            fn()
        torch.cuda.synchronize()
        if handle:
            now = time.perf_counter()
            readings.append((now, power_w(handle)))
            last = [w for t, w in readings if t >= now - window_s]
            before = [w for t, w in readings if now - 2 * window_s <= t < now - window_s]
            if now - t0 >= 2 * window_s and last and before:
                a, b = statistics.mean(last), statistics.mean(before)
                if abs(a - b) <= tolerance * b:
                    break
    return time.perf_counter() - t0


def sustained_seconds(fn, per_call_s, handle, heat_s, window_s):
    batch = max(1, int(0.01 / per_call_s) + 1)
    heated = heat_until_steady(fn, batch, handle, heat_s)
    times, watts = [], []
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < window_s:
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(batch):
            fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 1e3 / batch)
        if handle:
            watts.append(power_w(handle))
    return statistics.median(times), heated, (statistics.median(watts) if watts else None)


def gemm_cases(n):
    """(name, fn) for each GEMM dtype PyTorch runs on this GPU at n^3."""
    cases = []
    a32 = torch.randn(n, n, device="cuda")
    b32 = torch.randn(n, n, device="cuda")

    def fp32():
        torch.backends.cuda.matmul.allow_tf32 = False
        return torch.matmul(a32, b32)

    def tf32():
        torch.backends.cuda.matmul.allow_tf32 = True
        return torch.matmul(a32, b32)

    cases += [("fp32", fp32), ("tf32", tf32)]
    for name, dt in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
        a, b = a32.to(dt), b32.to(dt)
        cases.append((name, lambda a=a, b=b: torch.matmul(a, b)))
    if hasattr(torch, "float8_e4m3fn") and torch.cuda.get_device_capability(0) >= (8, 9):
        a8 = a32.to(torch.float8_e4m3fn)
        b8 = b32.to(torch.float8_e4m3fn).t().contiguous().t()  # column-major second operand
        one = torch.ones((), device="cuda")
        cases.append(("fp8", lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)))
    ai = torch.randint(-128, 128, (n, n), device="cuda", dtype=torch.int8)
    bi = torch.randint(-128, 128, (n, n), device="cuda", dtype=torch.int8).t().contiguous().t()
    cases.append(("int8", lambda: torch._int_mm(ai, bi)))
    return cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    ap.add_argument("--heat", type=float, default=5.0)
    ap.add_argument("--window", type=float, default=1.0)
    ap.add_argument("--only", choices=["burst", "sustained"])
    args = ap.parse_args()
    handle = None
    if pynvml:
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
           "method": __doc__.split("\n\n")[1].strip(), "gemm": [], "copy": []}

    def measure(kind, name, fn, work, unit, scale):
        entry = {"name": name, "unit": unit}
        burst = burst_seconds(fn)
        if args.only != "sustained":
            entry["burst"] = work / burst / scale
        if args.only != "burst":
            s, heated, watts = sustained_seconds(fn, burst, handle, args.heat, args.window)
            entry.update(sustained=work / s / scale, heat_s=round(heated, 2), sustained_power_w=watts)
        out[kind].append(entry)
        print(json.dumps(entry), file=sys.stderr, flush=True)  # progress

    for n in args.sizes:
        for dtype, fn in gemm_cases(n):
            measure("gemm", f"{dtype} {n}^3", fn, 2 * n**3, "TFLOP/s", 1e12)
        torch.cuda.empty_cache()
    elems = (1 << 30) // 4
    src = torch.rand(elems, device="cuda")
    dst = torch.empty_like(src)
    measure("copy", "copy_ 1 GiB fp32", lambda: dst.copy_(src), 2 * elems * 4, "GB/s", 1e9)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
