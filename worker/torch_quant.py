"""PyTorch's own quantized linear kernels (impl `torch_quant`) and torchao's `quantize_` (impl
`torchao`), for `linear` and `ln_linear_<act>` cases with quant=RECIPE (ops/linear/quant/recipe.hpp).

torch_quant quantizes W here exactly as opmeter does (ops/linear/quant/quantize.cpp: the same codes,
scales and zeros), lays them out as each kernel wants, and quantizes dynamic recipes' activations
per call as opmeter's kernels do. opmeter's check then gates the output against the same recipe
in fp64 and reports the same SQNR as for its own impl `opmeter_quant`:

  int8wo           torch._weight_int8pack_mm(x, W int8 [N, K], scales [N])
  int4wo-G         tinygemm: torch._convert_weight_to_int4pack + torch._weight_int4pack_mm (CUDA),
                   their _for_cpu forms on the CPU; scale and zero as tinygemm stores them:
                   w = (q - 8) * scale + (8 - zero) * scale
  int8dq           torch._int_mm(x int8, W^T int8) -> s32, times both scales
  float8dq-tensor  torch._scaled_mm(x e4m3, W^T e4m3, one scale each)
  float8dq-row     torch._scaled_mm with per-token and per-channel scales (bf16 output)
Where this PyTorch lacks the kernel, or has none for the device or dtype, the case is
unsupported with PyTorch's own message. float8wo (no such kernel: torchao dequantizes) and
hqq-int4-G (opmeter's own HQQ) are unsupported.
"""
import torch
import torch.nn.functional as F

from case_io import Prepared, Unsupported
from torch_ops import ACTS, NORM_EPS, first_line

QUANT_IMPLS = ("torch_quant", "torchao")
LN_PREFIX = "ln_linear_"
INT8_MAX = 127.0
FP8_MAX = 448.0


def recipe_of(case):
    """(weights, activations, group) of the case's quant parameter."""
    name = case.params.get("quant", "baseline")
    fixed = {"int8wo": ("int8", None, 0), "int8dq": ("int8", "int8", 0), "float8wo": ("fp8", None, 0),
             "float8dq-tensor": ("fp8", "fp8_tensor", 0), "float8dq-row": ("fp8", "fp8_row", 0)}
    if name in fixed:
        return fixed[name]
    if name.startswith("int4wo-"):
        return "int4", None, int(name.split("-")[1])
    if name.startswith("hqq-int4-"):
        raise Unsupported(f"{case.impl}: quant={name} takes opmeter's own HQQ scales and zeros; "
                          f"{case.impl} runs the round-to-nearest recipes")
    raise Unsupported(f"{case.impl} runs linear layers with a quant recipe; quant={name}")


def layer_of(case):
    """rows, hidden, out, activation function, whether LayerNorm comes first."""
    rows, h = case.int("batch") * case.int("seq"), case.int("hidden")
    if case.op == "linear":
        return rows, h, case.int("out"), ACTS[case.get("act", "none")], False
    if case.op.startswith(LN_PREFIX) and case.op[len(LN_PREFIX):] in ACTS:
        return rows, h, case.int("out"), ACTS[case.op[len(LN_PREFIX):]], True
    raise Unsupported(f"{case.impl} runs linear and ln_linear_<act>, not {case.op}")


# --- opmeter's quantization (ops/linear/quant/quantize.cpp), value for value ---

def round_to(t, scale_dtype):
    """fp32 values rounded to the scales' stored type (the activations' 16-bit type, else fp32)."""
    return t if scale_dtype == torch.float32 else t.to(scale_dtype).float()


def scale_of(amax, code_max):
    """amax / code_max rounded once to fp32 (as a double quotient is); 1 where amax is 0."""
    return torch.where(amax > 0, (amax.double() / code_max).float(), torch.ones_like(amax))


def quantize_8bit(w, fp8, per_tensor, scale_dtype):
    """int8 or e4m3 codes of W (out x hidden, fp32) and per-channel (or one) scales."""
    amax = w.abs().amax() if per_tensor else w.abs().amax(dim=1)
    s = round_to(scale_of(amax, FP8_MAX if fp8 else INT8_MAX), scale_dtype)
    v = w / (s if per_tensor else s[:, None])
    codes = v.to(torch.float8_e4m3fn) if fp8 else v.round().clamp(-INT8_MAX, INT8_MAX).to(torch.int8)
    return codes, s.reshape(-1) if not per_tensor else s.reshape(())


def quantize_int4(w, group, scale_dtype):
    """Round-to-nearest int4 codes (0..15, int32, out x hidden) and per-group scales and zeros
    (out x groups, fp32 holding the stored values): w = (q - zero) * scale."""
    out, h = w.shape
    g = w.reshape(out, h // group, group)
    lo, hi = g.amin(dim=2), g.amax(dim=2)
    scale = torch.where(hi > lo, (hi - lo) / 15, torch.ones_like(lo))
    zero = (-lo / scale).round().clamp(0, 15)
    scale = round_to(scale, scale_dtype)
    scale = torch.where(scale > 0, scale, round_to(torch.full_like(scale, 1e-8), scale_dtype))
    zero = round_to(zero, scale_dtype)
    q = (g / scale[:, :, None] + zero[:, :, None]).round().clamp(0, 15).to(torch.int32)
    return q.reshape(out, h), scale, zero


def quantize_rows(x, fp8, per_tensor):
    """Dynamic activations (rows x hidden, fp32): codes and fp32 scales, per token or tensor."""
    amax = x.abs().amax() if per_tensor else x.abs().amax(dim=1, keepdim=True)
    s = scale_of(amax, FP8_MAX if fp8 else INT8_MAX)
    v = x / s
    return (v.to(torch.float8_e4m3fn) if fp8 else v.round().clamp(-INT8_MAX, INT8_MAX).to(torch.int8)), s


# --- the kernels ---

def kernel(name, why_missing=""):
    fn = getattr(torch, name, None)
    if fn is None:
        raise Unsupported(f"torch {torch.__version__} has no torch.{name}{why_missing}")
    return fn


def int4_kernels(case):
    """(pack(q int32 [N, K], inner_k_tiles), mm(x, packed, group, scales_and_zeros)): tinygemm's
    CUDA forms, or on the CPU the _for_cpu forms where this torch has them."""
    if not case.cuda and hasattr(torch, "_weight_int4pack_mm_for_cpu"):
        return kernel("_convert_weight_to_int4pack_for_cpu"), torch._weight_int4pack_mm_for_cpu
    convert = kernel("_convert_weight_to_int4pack")

    def pack(q, tiles):
        # torch >= 2.5 takes bytes of two codes (even k in the high nibble); earlier, int32 codes.
        try:
            return convert((q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8), tiles)
        except RuntimeError:
            return convert(q, tiles)
    return pack, kernel("_weight_int4pack_mm")


def inner_k_tiles(h):
    for tiles in (8, 4, 2):
        if h % (16 * tiles) == 0:
            return tiles
    raise Unsupported(f"tinygemm needs hidden to be a multiple of 32; hidden={h}")


def _matmul(case, weights, acts, group, w):
    """(matmul(x_fp32_or_dtype) -> y before bias, tensors it reads): the recipe's product x W^T."""
    sd = torch.float32 if case.dtype == torch.float32 else case.dtype
    w32 = w.float()
    if weights == "int8" and acts is None:
        mm = kernel("_weight_int8pack_mm")
        codes, s = quantize_8bit(w32, False, False, sd)
        return (lambda x, c, sc: mm(x, c, sc)), (codes, s.to(case.dtype))
    if weights == "int4":
        if case.dtype != torch.bfloat16:
            raise Unsupported(f"tinygemm (torch._weight_int4pack_mm) takes bf16 activations, not {case.dtype_name}")
        pack, mm = int4_kernels(case)
        q, scale, zero = quantize_int4(w32, group, sd)
        sz = torch.stack([scale, (8 - zero) * scale], dim=2).transpose(0, 1).contiguous().to(torch.bfloat16)
        packed = pack(q.to(w.device), inner_k_tiles(w.shape[1]))
        return (lambda x, p, z: mm(x, p, group, z)), (packed, sz.to(w.device))
    if weights == "int8" and acts == "int8":
        mm = kernel("_int_mm")
        codes, s = quantize_8bit(w32, False, False, sd)

        def int8dq(x, wt, ws):
            xq, xs = quantize_rows(x.float(), False, False)
            return mm(xq, wt).float() * xs * ws
        return int8dq, (codes.t(), s)  # W^T as a view: the column-major operand
    if weights == "fp8" and acts in ("fp8_tensor", "fp8_row"):
        if acts == "fp8_row" and case.dtype != torch.bfloat16:
            raise Unsupported(f"rowwise torch._scaled_mm writes bf16 only: its output would not hold {case.dtype_name}")
        mm = kernel("_scaled_mm")
        if not hasattr(torch, "float8_e4m3fn"):
            raise Unsupported(f"torch {torch.__version__} has no torch.float8_e4m3fn")
        tensor = acts == "fp8_tensor"
        codes, s = quantize_8bit(w32, True, tensor, sd)
        ws = s.float().reshape(()) if tensor else s.float().reshape(1, -1)
        out_dtype = torch.float32 if tensor else torch.bfloat16  # rowwise scaling: bf16 output only

        def float8dq(x, wt, wscale):
            xq, xs = quantize_rows(x.float(), True, tensor)
            y = mm(xq, wt, scale_a=xs.reshape(()) if tensor else xs, scale_b=wscale, out_dtype=out_dtype)
            return (y[0] if isinstance(y, tuple) else y).float()  # torch < 2.4 also returned amax
        return float8dq, (codes.t(), ws)
    raise Unsupported(f"{case.impl}: PyTorch has no float8 weight-only kernel (torchao's float8wo dequantizes W "
                      f"to the activations' dtype); quant={case.params.get('quant')}")


def make_torch_quant(case, input_sets):
    weights, acts, group = recipe_of(case)
    rows, h, out, act, layernorm = layer_of(case)
    dynamic = acts is not None
    details = {"torch": torch.__version__, "kernel": {
        ("int8", None): "torch._weight_int8pack_mm", ("int4", None): "tinygemm (torch._weight_int4pack_mm)",
        ("int8", "int8"): "torch._int_mm", ("fp8", "fp8_tensor"): "torch._scaled_mm tensorwise",
        ("fp8", "fp8_row"): "torch._scaled_mm rowwise"}.get((weights, acts), "")}

    def prep(x, w, b, gamma=None, beta=None):
        mm, packed = _matmul(case, weights, acts, group, w.view(out, h))
        # Dynamic recipes quantize fp32 activations (LayerNorm in fp32), as opmeter's kernels do.
        pdt = torch.float32 if dynamic else case.dtype
        norm = (gamma.to(pdt), beta.to(pdt)) if layernorm else ()
        # The bias in the kernel's output type: fp32 for the dynamic kernels, the activations'
        # for weight-only ones, so the timed call adds it without a round trip through fp32.
        return (x.view(rows, h), mm, packed, b.float() if dynamic else b.to(case.dtype)) + norm

    def fn(x, mm, packed, b, gamma=None, beta=None):
        if layernorm:
            x = F.layer_norm(x.float() if dynamic else x, (h,), gamma, beta, NORM_EPS)
        return act(mm(x, *packed) + b).to(case.dtype)  # no copy where it already is
    return Prepared(fn, prep, input_sets, details)


def torchao_config(case):
    """torchao's config for the case's recipe (imported inside: torchao is optional)."""
    import torchao.quantization as q
    name = case.params.get("quant", "baseline")
    if name == "int8wo":
        return q.Int8WeightOnlyConfig()
    if name == "int8dq":
        return q.Int8DynamicActivationInt8WeightConfig()
    if name.startswith("int4wo-"):
        return q.Int4WeightOnlyConfig(group_size=int(name.split("-")[1]))
    if name.startswith("hqq-int4-"):
        return q.Int4WeightOnlyConfig(group_size=int(name.split("-")[2]), use_hqq=True)
    if name == "float8wo":
        return q.Float8WeightOnlyConfig()
    if name in ("float8dq-tensor", "float8dq-row"):
        return q.Float8DynamicActivationFloat8WeightConfig(granularity=q.PerTensor() if name.endswith("tensor") else q.PerRow())
    raise Unsupported(f"torchao runs linear layers with a quant recipe; quant={name}")


def make_torchao(case, input_sets):
    try:
        import torchao
        from torchao.quantization import quantize_
    except Exception as e:  # noqa: BLE001 - not installed, or broken against this torch
        raise Unsupported(f"torchao cannot be imported: {type(e).__name__}: {first_line(e)}") from None
    rows, h, out, act, layernorm = layer_of(case)
    config = torchao_config(case)

    def prep(x, w, b, gamma=None, beta=None):
        layer = torch.nn.Linear(h, out, device=w.device, dtype=case.dtype)
        with torch.no_grad():
            layer.weight.copy_(w.view(out, h))
            layer.bias.copy_(b)
        quantize_(layer, config)  # torchao's own rounding of the recipe: the gate says if it matches ours
        norm = (gamma.to(case.dtype), beta.to(case.dtype)) if layernorm else ()
        return (x.view(rows, h), layer) + norm

    def fn(x, layer, gamma=None, beta=None):
        if layernorm:
            x = F.layer_norm(x, (h,), gamma, beta, NORM_EPS)
        return act(layer(x))
    return Prepared(fn, prep, input_sets, {"torch": torch.__version__, "torchao": torchao.__version__,
                                           "config": type(config).__name__})


def make(case, input_sets):
    if case.dtype_name not in ("fp32", "bf16", "fp16"):
        raise Unsupported(f"{case.impl} runs linear layers in fp32, bf16 or fp16, not {case.dtype_name}")
    return (make_torch_quant if case.impl == "torch_quant" else make_torchao)(case, input_sets)
