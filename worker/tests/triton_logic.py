#!/usr/bin/env python3
"""Runs the bodies of our Triton kernels (worker/triton_kernels.py) on the CPU, through a small
numpy stand-in for `triton` and `triton.language`, and compares their outputs with float64
references. It checks the algorithms — masks, the block loops of wide rows, the online softmax,
the matmul's tile order and K tail, the epilogue — not Triton's compiler: a kernel that passes
here may still fail to compile on a GPU.

    /usr/bin/python3 worker/tests/triton_logic.py

Each program runs in turn as plain Python over numpy arrays; keep the sizes small.
"""
import math
import os
import sys
import types

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


# --- the stand-in: values are numpy arrays with .to(); pointers are (buffer, offsets) ---

class T(np.ndarray):
    def to(self, dtype):
        return np.asarray(self).astype(dtype).view(T)


def t(x):
    return np.asarray(x).view(T)


class Ptr:
    def __init__(self, buf, off=0):
        self.buf, self.off = buf, np.asarray(off, np.int64)

    def __add__(self, off):
        return Ptr(self.buf, self.off + np.asarray(off, np.int64))

    __radd__ = __iadd__ = __add__

    @property
    def dtype(self):
        return types.SimpleNamespace(element_ty=self.buf.dtype)


_program = [0]


def load(ptr, mask=None, other=None):
    mask = np.ones(ptr.off.shape, bool) if mask is None else np.broadcast_to(mask, ptr.off.shape)
    out = np.full(ptr.off.shape, 0 if other is None else other, dtype=ptr.buf.dtype)
    out[mask] = ptr.buf[ptr.off[mask]]
    return t(out)


def store(ptr, value, mask=None):
    mask = np.ones(ptr.off.shape, bool) if mask is None else np.broadcast_to(mask, ptr.off.shape)
    value = np.broadcast_to(np.asarray(value), ptr.off.shape)
    ptr.buf[ptr.off[mask]] = value[mask]


def dot(a, b, acc=None, input_precision=None, out_dtype=np.float32):
    assert input_precision in ("ieee", "tf32"), input_precision
    return t(acc + np.asarray(a).astype(out_dtype) @ np.asarray(b).astype(out_dtype))


tl = types.ModuleType("triton.language")
tl.constexpr = lambda v=None: v
tl.float32, tl.int32, tl.int64 = np.float32, np.int32, np.int64
tl.program_id = lambda axis: t(np.int32(_program[0]))
tl.arange = lambda a, b: t(np.arange(a, b, dtype=np.int32))
tl.zeros = lambda shape, dtype: t(np.zeros(shape, dtype))
tl.full = lambda shape, value, dtype: t(np.full(shape, value, dtype))
tl.load, tl.store, tl.dot = load, store, dot
tl.sum = lambda x, axis=None: t(np.sum(x, axis=axis))
tl.max = lambda x, axis=None: t(np.max(x, axis=axis))
tl.maximum = lambda a, b: t(np.maximum(a, b))
tl.minimum = lambda a, b: t(np.minimum(a, b))
tl.where = lambda c, a, b: t(np.where(c, a, b))
tl.exp = lambda x: t(np.exp(np.asarray(x, np.float32)))
tl.log = lambda x: t(np.log(np.asarray(x, np.float32)))
tl.sqrt = lambda x: t(np.sqrt(np.asarray(x, np.float32)))
tl.sigmoid = lambda x: t(1 / (1 + np.exp(-np.asarray(x, np.float32))))
tl.erf = lambda x: t(np.vectorize(math.erf)(np.asarray(x, np.float64)).astype(np.float32))
tl.cdiv = lambda a, b: (a + b - 1) // b


def _pointer(arg):
    if isinstance(arg, torch.Tensor):
        assert arg.is_contiguous(), "kernels get contiguous tensors"
        return Ptr(arg.detach().numpy().reshape(-1))
    return arg


class Kernel:
    def __init__(self, fn, configs=None):
        self.fn, self.configs = fn, configs
        self.config_index = 0  # which autotune config a launch uses

    def __call__(self, *args, **kwargs):  # a @jit helper called from a kernel
        return self.fn(*args, **kwargs)

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            for k in ("num_warps", "num_stages"):
                kwargs.pop(k, None)
            if self.configs:
                kwargs.update(self.configs[self.config_index].kwargs)
            g = grid(kwargs) if callable(grid) else grid
            args = [_pointer(a) for a in args]
            with np.errstate(invalid="ignore", over="ignore"):
                for pid in range(g[0]):
                    _program[0] = pid
                    self.fn(*args, **kwargs)
        return launch


triton = types.ModuleType("triton")
triton.__version__ = "numpy stand-in"
triton.language = tl
triton.jit = lambda fn: Kernel(fn)
triton.Config = lambda kwargs, num_stages=0, num_warps=0: types.SimpleNamespace(kwargs=kwargs)
triton.autotune = lambda configs, key: (lambda k: Kernel(k.fn, configs))
triton.cdiv = tl.cdiv
triton.next_power_of_2 = lambda n: 1 << max(0, (n - 1).bit_length())
sys.modules["triton"], sys.modules["triton.language"] = triton, tl

import triton_kernels as tk  # noqa: E402  (after the stand-in is in place)

failures = []


def expect(name, err, tol):
    ok = err <= tol
    if not ok:
        failures.append(name)
    print(f"{'ok  ' if ok else 'FAIL'} {name}  (max scaled error {err:.3g}, tolerance {tol:.3g})")


class FakeCase:
    def __init__(self, op, dtype="fp32", out_elem=None, **params):
        self.op, self.dtype_name, self.params = op, dtype, {k: str(v) for k, v in params.items()}
        self.dtype = {"fp32": torch.float32, "int8": torch.int8}[dtype]
        self.output = {"elem": out_elem} if out_elem else None
        self.device = torch.device("cpu")

    def int(self, key, default=None):
        return int(self.params.get(key, default))

    def get(self, key, default=None):
        return self.params.get(key, default)


def run(case, *inputs):
    fn, prep = tk.OPS[case.op](case)
    return fn(*prep(*inputs))


def rnd(*shape, lo=-1.0, hi=1.0, seed=[0]):
    seed[0] += 1
    g = torch.Generator().manual_seed(seed[0])
    return torch.rand(*shape, generator=g) * (hi - lo) + lo


def err(got, ref, mag):
    got, ref, mag = (np.asarray(v, np.float64).reshape(-1) for v in (got, ref, mag))
    return float(np.max(np.abs(got - ref) / mag))


def test_rows():
    # one block (37), one block at the limit (8192), a loop with a masked tail (9001)
    for h in (8, 37, 8192, 9001):
        rows = 3
        x, g, b = rnd(rows * h, lo=-8, hi=8), rnd(h, lo=.5, hi=1.5), rnd(h, lo=-.5, hi=.5)
        xd = x.double().view(rows, h)
        tol = (64 + 4 * math.sqrt(h)) * 2.0 ** -24
        case = FakeCase("layernorm", batch=1, seq=rows, hidden=h)
        xhat = (xd - xd.mean(1, keepdim=True)) / torch.sqrt(xd.var(1, unbiased=False, keepdim=True) + 1e-5)
        scaled = xhat * g.double()
        expect(f"layernorm hidden={h}", err(run(case, x, g, b), scaled + b.double(), scaled.abs() + b.double().abs() + 1), tol)
        ref = xd / torch.sqrt((xd * xd).mean(1, keepdim=True) + 1e-5) * g.double()
        expect(f"rmsnorm hidden={h}", err(run(FakeCase("rmsnorm", batch=1, seq=rows, hidden=h), x, g), ref, ref.abs() + 1), tol)
        p = torch.softmax(xd, 1)
        expect(f"softmax hidden={h}", err(run(FakeCase("softmax", batch=1, seq=rows, hidden=h), x), p, p + 1.0 / h), tol)
        labels = torch.randint(0, h, (rows,), dtype=torch.int32)
        lse = torch.logsumexp(xd, 1)
        target = xd[torch.arange(rows), labels.long()]
        ref = (lse - target).mean()
        mag = (lse.abs() + target.abs()).mean()
        got = run(FakeCase("cross_entropy", batch=1, seq=rows, hidden=h), x, labels)
        expect(f"cross_entropy hidden={h}", err(got, ref, mag), 1e-5)


def test_elementwise():
    n = 3000  # not a multiple of the block: a masked tail
    x = rnd(n, lo=-8, hi=8)
    xd = x.double()
    refs = {
        "relu": xd.clamp_min(0), "relu6": xd.clamp(0, 6), "leaky_relu": torch.where(xd > 0, xd, 0.01 * xd),
        "gelu": 0.5 * xd * torch.erfc(-xd / math.sqrt(2)),
        "gelu_tanh": 0.5 * xd * (1 + torch.tanh(math.sqrt(2 / math.pi) * (xd + 0.044715 * xd ** 3))),
        "silu": xd * torch.sigmoid(xd), "sigmoid": torch.sigmoid(xd), "hardswish": xd * (xd + 3).clamp(0, 6) / 6,
    }
    for act, ref in refs.items():
        expect(act, err(run(FakeCase(act, batch=1, seq=1, hidden=n), x), ref, ref.abs() + 1), 64 * 2.0 ** -24)
    a, b = rnd(n), rnd(n)
    expect("add", err(run(FakeCase("add", batch=1, seq=1, hidden=n), a, b), a.double() + b.double(),
                      a.double().abs() + b.double().abs()), 2 * 2.0 ** -24)


def test_matmul():
    M, N, K = 70, 45, 100  # no dimension a multiple of any tile: every mask matters
    a, b = rnd(M * K), rnd(N * K)
    ad, bd = a.double().view(M, K), b.double().view(N, K)
    ref, mag = ad @ bd.T, ad.abs() @ bd.abs().T
    tol = 4 * math.sqrt(K) * 2.0 ** -24 + 1e-7
    configs = tk._matmul_kernel.configs
    for i, cfg in enumerate(configs):
        tk._matmul_kernel.config_index = i
        got = run(FakeCase("gemm", out_elem="f32", M=M, N=N, K=K), a, b)
        expect(f"gemm fp32 config {cfg.kwargs}", err(got, ref, mag), tol)
    tk._matmul_kernel.config_index = len(configs) - 2  # a small tile: several tiles and groups
    ai = torch.randint(-128, 128, (M * K,), dtype=torch.int8)
    bi = torch.randint(-128, 128, (N * K,), dtype=torch.int8)
    got = run(FakeCase("gemm", "int8", out_elem="s32", M=M, N=N, K=K), ai, bi)
    exact = ai.long().view(M, K) @ bi.long().view(N, K).T
    expect("gemm int8 exact", float((got.long() != exact).sum()), 0)
    assert got.dtype == torch.int32
    bias = rnd(N)
    for act in ("none", "gelu", "relu"):
        got = run(FakeCase("linear", batch=2, seq=M // 2, hidden=K, out=N, act=act), a, b, bias)
        z = ad @ bd.T + bias.double()
        f = {"none": lambda v: v, "gelu": lambda v: 0.5 * v * torch.erfc(-v / math.sqrt(2)), "relu": torch.relu}[act]
        expect(f"linear act={act}", err(got, f(z), 1.2 * (mag + bias.double().abs()) + 1e-6),
               (64 + 8 * math.sqrt(K)) * 2.0 ** -24)


def test_table():
    """The kernels are the ones impls.json declares (the worker announces that table)."""
    import impl_table
    declared = set(impl_table.ops_of(tk.OP_SET))
    if set(tk.OPS) != declared:
        failures.append(f"triton_kernels.OPS {sorted(tk.OPS)} != impls.json's {sorted(declared)}")


def main():
    test_table()
    test_elementwise()
    test_rows()
    test_matmul()
    print(f"\n{len(failures)} failure(s)" + "".join(f"\n  {f}" for f in failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
