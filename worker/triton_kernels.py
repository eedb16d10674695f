"""opmeter's own Triton kernels (impl `triton`): activations, add, layernorm, rmsnorm, softmax,
cross_entropy, gemm and linear (gemm with a bias + activation epilogue).

Every kernel loads its storage type (fp32, bf16, fp16; int8/fp8 for gemm), computes in fp32 (int32
for int8 gemm) and rounds once on the store. Row ops run one program per row; a row wider than
one block (hidden up to 262144 and beyond) is walked in blocks, twice or three times, with masked
loads for the tail. Imported only when a triton case is set up: importing triton is slow.
"""
import torch
import triton
import triton.language as tl

import impl_table
from case_io import Prepared, Unsupported, elem_dtype

NORM_EPS = 1e-5
# Globals a kernel reads must be constexpr (Triton refuses plain globals inside @jit).
LEAKY_SLOPE = tl.constexpr(0.01)
SQRT1_2 = tl.constexpr(0.7071067811865476)
SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)

ELEMENTWISE_BLOCK = 1024
ROW_BLOCK_MAX = 8192     # a row up to this many elements stays in registers (one pass over memory)
ROW_BLOCK_LOOP = 4096    # wider rows are walked in blocks of this size
MAX_GRID = 2**31 - 1


@triton.jit
def _act(x, ACT: tl.constexpr):
    """The Act enum of ops/tensor/kernels.hpp on fp32 values."""
    if ACT == "relu":
        y = tl.maximum(x, 0.0)
    elif ACT == "relu6":
        y = tl.minimum(tl.maximum(x, 0.0), 6.0)
    elif ACT == "leaky_relu":
        y = tl.where(x > 0, x, x * LEAKY_SLOPE)
    elif ACT == "gelu":
        y = 0.5 * x * (1.0 + tl.erf(x * SQRT1_2))
    elif ACT == "gelu_tanh":
        # 0.5 x (1 + tanh(u)) = x sigmoid(2u): no tanh needed, no cancellation for x << 0
        u = SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)
        y = x * tl.sigmoid(2.0 * u)
    elif ACT == "silu":
        y = x * tl.sigmoid(x)
    elif ACT == "sigmoid":
        y = tl.sigmoid(x)
    elif ACT == "hardswish":
        y = x * tl.minimum(tl.maximum(x + 3.0, 0.0), 6.0) / 6.0
    else:  # none
        y = x
    return y


@triton.jit
def _act_kernel(x_ptr, y_ptr, n, ACT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, _act(x, ACT).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _add_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(c_ptr + offs, (a + b).to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _layernorm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, cols, eps, BLOCK: tl.constexpr, ONE_BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * cols
    y_row = y_ptr + row * cols
    if ONE_BLOCK:
        offs = tl.arange(0, BLOCK)
        mask = offs < cols
        x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
        mean = tl.sum(x, axis=0) / cols
        d = tl.where(mask, x - mean, 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / cols + eps)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + offs, (d * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)
    else:
        # Mean first, then the centred sum of squares: no cancellation for rows far from 0.
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, cols, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            acc += tl.load(x_row + offs, mask=offs < cols, other=0.0).to(tl.float32)
        mean = tl.sum(acc, axis=0) / cols
        acc2 = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, cols, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < cols
            x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
            d = tl.where(mask, x - mean, 0.0)
            acc2 += d * d
        rstd = 1.0 / tl.sqrt(tl.sum(acc2, axis=0) / cols + eps)
        for start in range(0, cols, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < cols
            x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
            b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
            tl.store(y_row + offs, ((x - mean) * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rmsnorm_kernel(x_ptr, y_ptr, w_ptr, cols, eps, BLOCK: tl.constexpr, ONE_BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * cols
    y_row = y_ptr + row * cols
    if ONE_BLOCK:
        offs = tl.arange(0, BLOCK)
        mask = offs < cols
        x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
        rrms = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / cols + eps)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + offs, (x * rrms * w).to(y_ptr.dtype.element_ty), mask=mask)
    else:
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for start in range(0, cols, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            x = tl.load(x_row + offs, mask=offs < cols, other=0.0).to(tl.float32)
            acc += x * x
        rrms = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / cols + eps)
        for start in range(0, cols, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < cols
            x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
            tl.store(y_row + offs, (x * rrms * w).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _row_max_sumexp(x_row, cols, BLOCK: tl.constexpr):
    """max and sum(exp(x - max)) of a row wider than BLOCK, in one pass (online rescaling):
    each lane keeps its own running max and sum, combined at the end."""
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + offs, mask=offs < cols, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        # A lane that has seen only masked values keeps max -inf: shift by 0 so no inf - inf.
        shift = tl.where(m_new == float("-inf"), 0.0, m_new)
        s = s * tl.exp(m - shift) + tl.exp(x - shift)
        m = m_new
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(tl.where(m == float("-inf"), 0.0, s * tl.exp(m - row_max)), axis=0)
    return row_max, row_sum


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr, ONE_BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * cols
    y_row = y_ptr + row * cols
    if ONE_BLOCK:
        offs = tl.arange(0, BLOCK)
        mask = offs < cols
        x = tl.load(x_row + offs, mask=mask, other=float("-inf")).to(tl.float32)
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(y_row + offs, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty), mask=mask)
    else:
        row_max, row_sum = _row_max_sumexp(x_row, cols, BLOCK)
        inv = 1.0 / row_sum
        for start in range(0, cols, BLOCK):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < cols
            x = tl.load(x_row + offs, mask=mask, other=float("-inf")).to(tl.float32)
            tl.store(y_row + offs, (tl.exp(x - row_max) * inv).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _cross_entropy_kernel(x_ptr, labels_ptr, loss_ptr, cols, BLOCK: tl.constexpr, ONE_BLOCK: tl.constexpr):
    """loss[row] = logsumexp(row) - row[label], in fp32."""
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * cols
    if ONE_BLOCK:
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_row + offs, mask=offs < cols, other=float("-inf")).to(tl.float32)
        row_max = tl.max(x, axis=0)
        row_sum = tl.sum(tl.exp(x - row_max), axis=0)
    else:
        row_max, row_sum = _row_max_sumexp(x_row, cols, BLOCK)
    label = tl.load(labels_ptr + row)
    target = tl.load(x_row + label).to(tl.float32)
    tl.store(loss_ptr + row, row_max + tl.log(row_sum) - target)


def _matmul_configs():
    shapes = [  # BLOCK_M, BLOCK_N, BLOCK_K, stages, warps
        (128, 256, 64, 3, 8), (128, 128, 64, 4, 4), (128, 128, 32, 4, 4), (64, 128, 32, 4, 4),
        (128, 64, 32, 4, 4), (64, 64, 32, 5, 2), (32, 64, 32, 5, 2), (128, 128, 128, 3, 8),
    ]
    return [triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "GROUP_M": 8}, num_stages=s, num_warps=w)
            for m, n, k, s, w in shapes]


@triton.autotune(configs=_matmul_configs(), key=["M", "N", "K", "PRECISION", "IS_INT", "HAS_BIAS", "ACT"])
@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K,
                   stride_am, stride_ak, stride_bn, stride_bk, stride_cm, stride_cn,
                   PRECISION: tl.constexpr, IS_INT: tl.constexpr, HAS_BIAS: tl.constexpr, ACT: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """C = act(A B^T + bias): A M x K, B stored N x K, one BLOCK_M x BLOCK_N tile of C per program,
    tiles ordered in groups of GROUP_M rows so neighbouring programs share A and B in L2."""
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * grid_n
    first_m = (pid // per_group) * GROUP_M
    group_rows = tl.minimum(grid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group_rows
    pid_n = (pid % per_group) // group_rows

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None].to(tl.int64) * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rn[None, :].to(tl.int64) * stride_bn + rk[:, None] * stride_bk  # a K x N tile of B^T
    if IS_INT:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = rk < K - k0  # the K tail reads zeros, which add nothing
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & k_ok[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=k_ok[:, None] & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc=acc, input_precision=PRECISION, out_dtype=acc.dtype)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    out = acc
    if HAS_BIAS:
        out = out + tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    out = _act(out, ACT)
    c_ptrs = c_ptr + rm[:, None].to(tl.int64) * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, out.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


# --- host side: launches ---

def _row_block(cols):
    """(BLOCK, ONE_BLOCK, num_warps) for a row op over `cols` columns."""
    p2 = triton.next_power_of_2(cols)
    block, one = (max(p2, 16), True) if p2 <= ROW_BLOCK_MAX else (ROW_BLOCK_LOOP, False)
    return block, one, min(16, max(1, block // 256))


def _rows_hidden(case):
    rows, h = case.int("batch") * case.int("seq"), case.int("hidden")
    if rows > MAX_GRID:
        raise Unsupported(f"triton: {rows} rows exceed one program per row (grid limit {MAX_GRID})")
    return rows, h


def _elementwise_grid(n):
    return (triton.cdiv(n, ELEMENTWISE_BLOCK),)


def _activation(case, act):
    def fn(x):
        y = torch.empty_like(x)
        _act_kernel[_elementwise_grid(x.numel())](x, y, x.numel(), ACT=act, BLOCK=ELEMENTWISE_BLOCK, num_warps=4)
        return y
    return fn, lambda x: (x,)


def _add(case):
    def fn(a, b):
        c = torch.empty_like(a)
        _add_kernel[_elementwise_grid(a.numel())](a, b, c, a.numel(), BLOCK=ELEMENTWISE_BLOCK, num_warps=4)
        return c
    return fn, lambda a, b: (a, b)


def _layernorm(case):
    rows, h = _rows_hidden(case)
    block, one, warps = _row_block(h)

    def fn(x, gamma, beta):
        y = torch.empty_like(x)
        _layernorm_kernel[(rows,)](x, y, gamma, beta, h, NORM_EPS, BLOCK=block, ONE_BLOCK=one, num_warps=warps)
        return y
    return fn, lambda x, gamma, beta: (x, gamma, beta)  # gamma, beta stay fp32: the kernel reads them so


def _rmsnorm(case):
    rows, h = _rows_hidden(case)
    block, one, warps = _row_block(h)

    def fn(x, gamma):
        y = torch.empty_like(x)
        _rmsnorm_kernel[(rows,)](x, y, gamma, h, NORM_EPS, BLOCK=block, ONE_BLOCK=one, num_warps=warps)
        return y
    return fn, lambda x, gamma: (x, gamma)


def _softmax(case):
    rows, h = _rows_hidden(case)
    block, one, warps = _row_block(h)

    def fn(x):
        y = torch.empty_like(x)
        _softmax_kernel[(rows,)](x, y, h, BLOCK=block, ONE_BLOCK=one, num_warps=warps)
        return y
    return fn, lambda x: (x,)


def _cross_entropy(case):
    rows, h = _rows_hidden(case)
    block, one, warps = _row_block(h)

    def fn(logits, labels):
        losses = torch.empty(rows, dtype=torch.float32, device=logits.device)
        _cross_entropy_kernel[(rows,)](logits, labels, losses, h, BLOCK=block, ONE_BLOCK=one, num_warps=warps)
        return losses.mean()  # the mean over rows: a second, small launch
    return fn, lambda logits, labels: (logits, labels)  # labels stay s32


def _matmul(a, b, out_dtype, precision, bias=None, act="none"):
    M, K = a.shape
    N = b.shape[0]
    c = torch.empty((M, N), dtype=out_dtype, device=a.device)

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
    _matmul_kernel[grid](a, b, c, c if bias is None else bias, M, N, K,
                         a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                         PRECISION=precision, IS_INT=not a.dtype.is_floating_point, HAS_BIAS=bias is not None,
                         ACT=act)
    return c


def _gemm(case):
    M, N, K = case.int("M"), case.int("N"), case.int("K")
    if case.dtype_name.startswith("fp8") and torch.cuda.get_device_capability(case.device) < (9, 0):
        raise Unsupported("triton's fp8 e4m3 dot needs compute capability 9.0 or later")
    out_dt = elem_dtype(torch, case.output["elem"]) if case.output else case.dtype
    # fp32 means fp32: IEEE products, not TF32 (Triton's default for fp32 dots).
    precision = "ieee" if case.dtype_name == "fp32" else "tf32"

    def fn(a, b):
        return _matmul(a, b, out_dt, precision)
    return fn, lambda a, b: (a.view(M, K), b.view(N, K))


def _linear(case):
    rows, h = _rows_hidden(case)
    out = case.int("out")
    act = case.get("act", "none")
    if act not in ACTS:
        raise ValueError(f"linear: act '{act}' unknown: expected one of {', '.join(ACTS)}")
    precision = "ieee" if case.dtype_name == "fp32" else "tf32"

    def fn(x, w, bias):
        return _matmul(x, w, x.dtype, precision, bias=bias, act=act)
    return fn, lambda x, w, bias: (x.view(rows, h), w.view(out, h), bias)  # bias fp32, added to the fp32 tile


ACTS = ("none", "relu", "relu6", "leaky_relu", "gelu", "gelu_tanh", "silu", "sigmoid", "hardswish")
OPS = {
    **{a: (lambda case, a=a: _activation(case, a)) for a in ACTS if a != "none"},
    "add": _add,
    "layernorm": _layernorm,
    "rmsnorm": _rmsnorm,
    "softmax": _softmax,
    "cross_entropy": _cross_entropy,
    "gemm": _gemm,
    "linear": _linear,
}
OP_SET = "triton_kernels"  # the ops and their dtypes in impls.json


def make(case, input_sets):
    if case.op not in impl_table.ops_of(OP_SET):
        raise Unsupported(f"triton: no kernel of ours for op '{case.op}' (ours: {', '.join(sorted(OPS))})")
    if not impl_table.runs_dtype(OP_SET, case.op, case.dtype_name):
        dtypes = impl_table.dtypes_of(OP_SET, case.op)
        raise Unsupported(f"triton {case.op} runs {', '.join(dtypes)}, not {case.dtype_name}")
    fn, prep = OPS[case.op](case)
    details = {"triton": triton.__version__, "torch": torch.__version__,
               "gpu": torch.cuda.get_device_name(case.device)}
    return Prepared(fn, prep, input_sets, details)


def tuned_config():
    """The matmul config the autotuner chose last, for the details (None before a gemm ran)."""
    best = getattr(_matmul_kernel, "best_config", None)
    return None if best is None else str(best)
