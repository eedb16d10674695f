#!/usr/bin/env python3
"""The worker's quantized linear impls (worker/torch_quant.py) on the CPU, with any torch:

  - opmeter's quantization redone here element by element, in plain Python floats (the recipe's
    definition in ops/linear/quant/quantize.cpp), equals torch_quant's vectorised one code for code;
  - PyTorch's kernels replaced by stand-ins written from their documented semantics (tinygemm's
    packed nibbles and (q - 8) * scale + zero, _int_mm's s32 product, _weight_int8pack_mm's
    per-channel scales): each recipe's output equals the recipe computed in fp64 from the
    element-wise quantization, so what torch_quant hands the kernels is right;
  - without the kernels (Debian's torch 1.13) a case is unsupported naming the missing one; hqq,
    float8wo and an unimportable torchao are unsupported with their reasons.

    /usr/bin/python3 worker/tests/torch_quant_logic.py

Exits non-zero on any failure.
"""
import math
import os
import struct
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.dont_write_bytecode = True

import torch_quant as tq  # noqa: E402
from case_io import Unsupported  # noqa: E402

failures = []


def expect(name, cond, info=""):
    if not cond:
        failures.append(f"{name}: {info}")
        print("FAIL:", name, info)


class FakeCase:
    """The fields torch_quant reads of a setup request."""

    def __init__(self, op, dtype, params, impl="torch_quant"):
        self.op, self.impl, self.dtype_name, self.params = op, impl, dtype, {k: str(v) for k, v in params.items()}
        self.dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
        self.device, self.cuda = torch.device("cpu"), False

    def get(self, key, default=None):
        return self.params.get(key, default)

    def int(self, key, default=None):
        return int(self.params.get(key, default))


# --- opmeter's quantization, one element at a time (ops/linear/quant/quantize.cpp) ---

def f32(v):
    return struct.unpack("f", struct.pack("f", v))[0]


def bf16(v):
    """Round-to-nearest-even to bf16, on the fp32 bits."""
    bits = struct.unpack("I", struct.pack("f", v))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("f", struct.pack("I", bits))[0]


def int8_row(row, stored):
    amax = max(abs(v) for v in row)
    s = stored(f32(amax / 127.0)) if amax > 0 else stored(1.0)
    return [max(-127, min(127, round(f32(v / s)))) for v in row], s


def int4_group(vals, stored):
    lo, hi = min(vals), max(vals)
    scale = f32(f32(hi - lo) / 15) if hi > lo else 1.0  # two fp32 roundings, as in C++
    zero = float(max(0, min(15, round(f32(-lo / scale)))))
    scale, zero = stored(scale), stored(zero)
    codes = [max(0, min(15, round(f32(f32(v / scale) + zero)))) for v in vals]
    return codes, scale, zero


def recipe_weight(w, name, stored):
    """W as the recipe stores it, exactly (fp64), from the element-wise quantization."""
    out = []
    for row in w:
        if name.startswith("int4wo-"):
            group = int(name.split("-")[1])
            deq = []
            for g in range(0, len(row), group):
                codes, s, z = int4_group(row[g:g + group], stored)
                deq += [(q - z) * s for q in codes]
            out.append(deq)
        else:
            codes, s = int8_row(row, stored)
            out.append([q * s for q in codes])
    return torch.tensor(out, dtype=torch.float64)


def int8_activations(x):
    rows = []
    for row in x.tolist():
        codes, s = int8_row([f32(v) for v in row], lambda v: v)
        rows.append([q * s for q in codes])
    return torch.tensor(rows, dtype=torch.float64)


# --- PyTorch's kernels as documented, for a torch that lacks them ---

def fake_convert_int4(packed_bytes, inner_k_tiles):
    """torch >= 2.5: uint8 [N, K/2], even k in the high nibble. The stand-in keeps the codes."""
    assert packed_bytes.dtype == torch.uint8 and inner_k_tiles in (2, 4, 8)
    b = packed_bytes.to(torch.int32)
    return torch.stack([b >> 4, b & 15], dim=2).reshape(b.shape[0], -1)


def fake_int4_mm(x, q, group, scales_and_zeros):
    """y = x W^T with W[n, k] = (q - 8) * scale[k / group, n] + zero[k / group, n]."""
    assert x.dtype == torch.bfloat16 and scales_and_zeros.dtype == torch.bfloat16
    sz = scales_and_zeros.float().repeat_interleave(group, dim=0)  # [K, N, 2]
    w = (q.float() - 8) * sz[:, :, 0].t() + sz[:, :, 1].t()
    return (x.float() @ w.t()).to(x.dtype)


def fake_int8pack_mm(x, w, scales):
    assert w.dtype == torch.int8 and scales.dtype == x.dtype and scales.shape == (w.shape[0],)
    return ((x.float() @ w.float().t()) * scales.float()).to(x.dtype)


def fake_int_mm(a, b):
    assert a.dtype == torch.int8 and b.dtype == torch.int8
    return (a.double() @ b.double()).to(torch.int32)


FAKES = {"_convert_weight_to_int4pack": fake_convert_int4, "_weight_int4pack_mm": fake_int4_mm,
         "_weight_int8pack_mm": fake_int8pack_mm, "_int_mm": fake_int_mm}


def uniform(shape, gen, lo=-1.0, hi=1.0):
    return torch.rand(shape, generator=gen, dtype=torch.float64) * (hi - lo) + lo


def run_case(op, dtype, recipe, rows=3, hidden=128, out=24):
    gen = torch.Generator().manual_seed(7)
    dt = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    x = uniform((rows, hidden), gen).to(dt)
    w = (torch.randn((out, hidden), generator=gen, dtype=torch.float64) / math.sqrt(hidden)).to(dt)
    b = uniform((out,), gen).float()
    inputs = [x.reshape(-1), w.reshape(-1), b]
    params = {"batch": 1, "seq": rows, "hidden": hidden, "out": out, "quant": recipe}
    if op == "linear":
        params["act"] = "relu"
    else:
        inputs += [uniform((hidden,), gen, 0.5, 1.5).float(), uniform((hidden,), gen, -0.5, 0.5).float()]
    case = FakeCase(op, dtype, params)
    prepared = tq.make(case, [inputs])
    got = prepared.call(0).double()
    # The recipe in fp64: activations as the kernels see them, weights as the recipe stores them.
    xa = x.double()
    if op != "linear":
        xa = F.layer_norm(x.float() if recipe == "int8dq" else x, (hidden,), inputs[3].to(x.dtype if recipe != "int8dq" else torch.float32),
                          inputs[4].to(x.dtype if recipe != "int8dq" else torch.float32), tq.NORM_EPS).double()
    if recipe == "int8dq":
        xa = int8_activations(xa.float())
    stored = bf16 if dtype == "bf16" else (lambda v: v)
    wq = recipe_weight(w.double().tolist(), recipe, stored)
    z = xa @ wq.t() + b.double()
    ref = F.relu(z) if op in ("linear", "ln_linear_relu") else z
    mag = xa.abs() @ wq.abs().t() + b.double().abs()
    err = ((got - ref).abs() / mag).max().item()
    return err


def test_quantization_matches_opmeters_element_by_element():
    gen = torch.Generator().manual_seed(3)
    w = (torch.randn((5, 128), generator=gen) * 0.1).float()
    w[1] = 0  # an all-zero channel: scale 1
    w[2, :64] = 0.25  # a constant group: scale 1, zero from -lo
    for dt, stored in ((torch.float32, lambda v: v), (torch.bfloat16, bf16)):
        codes, s = tq.quantize_8bit(w, False, False, dt)
        for j, row in enumerate(w.tolist()):
            want_codes, want_s = int8_row(row, stored)
            expect(f"int8 scale {dt} row {j}", s[j].item() == want_s, (s[j].item(), want_s))
            expect(f"int8 codes {dt} row {j}", codes[j].tolist() == want_codes)
        q, scale, zero = tq.quantize_int4(w, 32, dt)
        for j, row in enumerate(w.tolist()):
            for g in range(4):
                want_codes, want_s, want_z = int4_group(row[32 * g:32 * g + 32], stored)
                expect(f"int4 {dt} ({j},{g}) scale", scale[j, g].item() == want_s, (scale[j, g].item(), want_s))
                expect(f"int4 {dt} ({j},{g}) zero", zero[j, g].item() == want_z, (zero[j, g].item(), want_z))
                expect(f"int4 {dt} ({j},{g}) codes", q[j, 32 * g:32 * g + 32].tolist() == want_codes)
    x = uniform((3, 40), gen).float()
    xq, xs = tq.quantize_rows(x, False, False)
    for m, row in enumerate(x.tolist()):
        want_codes, want_s = int8_row(row, lambda v: v)
        expect(f"activation row {m}", xq[m].tolist() == want_codes and xs[m].item() == want_s)


def test_kernels_are_fed_the_recipe():
    saved = {name: getattr(torch, name, None) for name in FAKES}
    try:
        for name, fake in FAKES.items():
            setattr(torch, name, fake)
        if hasattr(torch, "_weight_int4pack_mm_for_cpu"):  # the stand-ins are tinygemm's CUDA forms
            saved["_weight_int4pack_mm_for_cpu"] = torch._weight_int4pack_mm_for_cpu
            delattr(torch, "_weight_int4pack_mm_for_cpu")
        # fp32 outputs: within fp32 rounding of a 128-term sum; bf16: within a few bf16 ulps
        # (tinygemm's bf16 zero term (8 - zero) * scale is rounded once per group).
        for op, dtype, recipe, tol in (("linear", "fp32", "int8wo", 1e-6), ("ln_linear_none", "bf16", "int8wo", 8e-3),
                                       ("linear", "fp32", "int8dq", 1e-6), ("ln_linear_relu", "fp32", "int8dq", 1e-5),
                                       ("linear", "bf16", "int4wo-32", 8e-3), ("ln_linear_none", "bf16", "int4wo-64", 8e-3)):
            err = run_case(op, dtype, recipe)
            expect(f"{op} {dtype} {recipe}", err <= tol, f"scaled error {err:.3g} > {tol}")
        # A wrong kernel format is caught: tinygemm's zero taken as opmeter's integer zero.
        real = torch._weight_int4pack_mm
        torch._weight_int4pack_mm = lambda x, q, g, sz: fake_int4_mm(x, q, g, torch.stack([sz[..., 0], sz[..., 0] * 8 - sz[..., 1]], dim=2))
        err = run_case("linear", "bf16", "int4wo-32")
        expect("a wrong zero convention fails", err > 5e-2, f"scaled error {err:.3g}")
        torch._weight_int4pack_mm = real
    finally:
        for name, fn in saved.items():
            if fn is None:
                if hasattr(torch, name):
                    delattr(torch, name)
            else:
                setattr(torch, name, fn)


def unsupported_reason(op, dtype, recipe, impl="torch_quant"):
    params = {"batch": 1, "seq": 2, "hidden": 64, "out": 8, "quant": recipe, "act": "none"}
    w = torch.randn(8 * 64)
    try:
        tq.make(FakeCase(op, dtype, params, impl), [[torch.rand(2 * 64), w, torch.rand(8)]])
    except Unsupported as e:
        return str(e)
    return ""


def test_what_cannot_run_is_unsupported_with_the_reason():
    for name, recipe in (("_weight_int8pack_mm", "int8wo"), ("_int_mm", "int8dq")):
        if not hasattr(torch, name):
            why = unsupported_reason("linear", "fp32", recipe)
            expect(f"{recipe} without torch.{name}", f"torch.{name}" in why, why)
    expect("hqq", "HQQ" in unsupported_reason("linear", "bf16", "hqq-int4-32"))
    expect("float8wo", "weight-only" in unsupported_reason("linear", "bf16", "float8wo"))
    expect("int4wo in fp32", "bf16" in unsupported_reason("linear", "fp32", "int4wo-32"))
    expect("float8dq-row in fp32", "bf16 only" in unsupported_reason("linear", "fp32", "float8dq-row"))
    try:
        import torchao  # noqa: F401
    except Exception:  # noqa: BLE001
        why = unsupported_reason("linear", "bf16", "int8wo", "torchao")
        expect("torchao missing", why.startswith("torchao cannot be imported"), why)


def main():
    test_quantization_matches_opmeters_element_by_element()
    test_kernels_are_fed_the_recipe()
    test_what_cannot_run_is_unsupported_with_the_reason()
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
