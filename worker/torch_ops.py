"""opmeter's ops in PyTorch, as a PyTorch user writes them: eager (impl `torch`) and the same
functions under torch.compile (`torch_compile`: default mode; `torch_compile_max`:
mode="max-autotune-no-cudagraphs"; `torch_compile_aot_eager`: backend="aot_eager").

OPS maps an op name to make(case) -> (fn, prep): `fn(*args)` is one call returning the output
tensor, `prep(*inputs)` turns one input set (the op's spec inputs in order, on the device, in the
layout ops/<op>/<op>.hpp describes) into fn's arguments. Parameters a model keeps in its own
dtype (gamma, beta, bias, BatchNorm statistics) are converted to the activations' dtype in prep,
once, as `model.to(torch.bfloat16)` does; opmeter's bf16/fp16 tolerance covers that rounding
(half an ulp of a term already inside the error's scale).
"""
import importlib
import math

import torch
import torch.nn.functional as F

import impl_table
from case_io import Prepared, Unsupported, elem_dtype

NORM_EPS = 1e-5      # ops/tensor/kernels.hpp kNormEps
LEAKY_SLOPE = 0.01   # kLeakySlope


def _identity(x):
    return x


def _leaky_relu(x):
    return F.leaky_relu(x, LEAKY_SLOPE)


def _gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


# The Act enum of ops/tensor/kernels.hpp, by name.
ACTS = {
    "none": _identity,
    "relu": F.relu,
    "relu6": F.relu6,
    "leaky_relu": _leaky_relu,
    "gelu": F.gelu,
    "gelu_tanh": _gelu_tanh,
    "silu": F.silu,
    "sigmoid": torch.sigmoid,
    "hardswish": F.hardswish,
}


def act_of(name, op):
    if name not in ACTS:
        raise ValueError(f"{op}: act '{name}' unknown: expected one of {', '.join(ACTS)}")
    return ACTS[name]


def rows_hidden(case):
    return case.int("batch") * case.int("seq"), case.int("hidden")


def like(x, *params):
    """Parameters in the activations' dtype."""
    return tuple(p.to(x.dtype) for p in params)


# --- activations, norms, losses, add: batch x seq x hidden seen as rows x hidden ---

def _activation(name):
    def make(case):
        rows, h = rows_hidden(case)
        return ACTS[name], lambda x: (x.view(rows, h),)
    return make


def _layernorm(case):
    rows, h = rows_hidden(case)

    def fn(x, gamma, beta):
        return F.layer_norm(x, (h,), gamma, beta, NORM_EPS)
    return fn, lambda x, gamma, beta: (x.view(rows, h),) + like(x, gamma, beta)


def _rmsnorm_manual(x, gamma):
    # As models wrote it before F.rms_norm: statistics in fp32, the result back in x's dtype.
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + NORM_EPS)
    return gamma * y.to(x.dtype)


def _rmsnorm(case):
    rows, h = rows_hidden(case)
    if hasattr(F, "rms_norm"):  # torch >= 2.4
        def fn(x, gamma):
            return F.rms_norm(x, (h,), gamma, NORM_EPS)
    else:
        fn = _rmsnorm_manual
    return fn, lambda x, gamma: (x.view(rows, h),) + like(x, gamma)


def _batchnorm(case):
    rows, h = rows_hidden(case)

    def fn(x, mean, var, gamma, beta):  # rows x hidden is (N, C): channels along hidden
        return F.batch_norm(x, mean, var, gamma, beta, False, 0.0, NORM_EPS)
    return fn, lambda x, *p: (x.view(rows, h),) + like(x, *p)


def _softmax(case):
    rows, h = rows_hidden(case)

    def fn(x):
        return F.softmax(x, dim=-1)
    return fn, lambda x: (x.view(rows, h),)


def _mse(case):
    return F.mse_loss, lambda pred, target: (pred, target)


def _cross_entropy(case):
    rows, h = rows_hidden(case)
    # F.cross_entropy wants int64 class indices: a data loader's labels already are.
    return F.cross_entropy, lambda logits, labels: (logits.view(rows, h), labels.long())


def _add(case):
    return torch.add, lambda a, b: (a, b)


# --- gemm: C = A B^T, A M x K, B stored N x K ---

def _gemm(case):
    M, N, K = case.int("M"), case.int("N"), case.int("K")
    out_dt = elem_dtype(torch, case.output["elem"]) if case.output else case.dtype

    def prep(a, b):  # B^T as a view: BLAS reads B N x K as the transposed operand
        return a.view(M, K), b.view(N, K).t()

    name = case.dtype_name
    if name == "int8":
        return _gemm_int8(case), prep
    if name in ("fp8", "fp8_e4m3"):
        return _gemm_fp8(case, out_dt, prep)
    if name == "tf32" and not case.cuda:
        raise Unsupported("tf32 is a GPU dtype: torch has no tf32 matmul on the CPU")
    if out_dt == case.dtype:
        return torch.matmul, prep
    return _gemm_widening(case, out_dt), prep


def _gemm_int8(case):
    if not case.cuda:
        raise Unsupported("torch has no u8 x s8 -> s32 matmul (opmeter's CPU int8 gemm); torch._int_mm is s8 x s8 on CUDA")
    if not hasattr(torch, "_int_mm"):
        raise Unsupported(f"torch {torch.__version__} has no torch._int_mm (int8 gemm, torch >= 2.1)")
    return torch._int_mm


def _gemm_fp8(case, out_dt, prep):
    if not case.cuda:
        raise Unsupported("fp8 gemm is CUDA only")
    if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
        raise Unsupported(f"torch {torch.__version__} has no torch._scaled_mm (fp8 gemm)")
    cap = torch.cuda.get_device_capability(case.device)
    if cap < (8, 9):
        raise Unsupported(f"fp8 gemm needs compute capability 8.9 or later, this GPU is {cap[0]}.{cap[1]}")
    one = torch.ones((), device=case.device, dtype=torch.float32)

    def fn(a, bt, scale_a, scale_b):
        # Keywords work across versions: 2.1-2.3 return (out, amax), later ones out alone.
        r = torch._scaled_mm(a, bt, scale_a=scale_a, scale_b=scale_b, out_dtype=out_dt)
        return r[0] if isinstance(r, tuple) else r
    return fn, lambda a, b: prep(a, b) + (one, one)


def _gemm_widening(case, out_dt):
    """16-bit inputs with an fp32 C (opmeter's CPU fp16/bf16 gemm): torch.mm(out_dtype=) where
    this torch has it; torch.matmul would round C to 16 bits, outside the fp32 tolerance."""
    a = torch.ones(2, 2, dtype=case.dtype, device=case.device)
    try:
        torch.mm(a, a, out_dtype=out_dt)
    except (TypeError, RuntimeError) as e:
        c_elem = case.output["elem"] if case.output else str(out_dt)
        raise Unsupported(f"opmeter's {case.dtype_name} gemm on {case.device} has a {c_elem} C; torch.matmul rounds it "
                          f"to {case.dtype_name} and torch.mm(out_dtype=) is unavailable here ({first_line(e)})") from None

    def fn(a, bt):
        return torch.mm(a, bt, out_dtype=out_dt)
    return fn


# --- linear, ln_linear_<act>, conv2d, attention, transformer_block: unfused eager sequences ---

def _linear_shape(case):
    rows, h = rows_hidden(case)
    return rows, h, case.int("out")


def _linear(case):
    rows, h, out = _linear_shape(case)
    act = act_of(case.get("act", "none"), "linear")

    def fn(x, w, b):
        return act(F.linear(x, w, b))
    return fn, lambda x, w, b: (x.view(rows, h), w.view(out, h)) + like(x, b)


def _ln_linear(act_name):
    def make(case):
        rows, h, out = _linear_shape(case)
        act = ACTS[act_name]

        def fn(x, w, b, gamma, beta):
            return act(F.linear(F.layer_norm(x, (h,), gamma, beta, NORM_EPS), w, b))
        return fn, lambda x, w, b, gamma, beta: (x.view(rows, h), w.view(out, h)) + like(x, b, gamma, beta)
    return make


def _conv2d(case):
    n, c, oc = case.int("batch"), case.int("channels"), case.int("out_channels")
    image, r, groups = case.int("image"), case.int("kernel"), case.int("groups")
    stride, pad, bn = case.int("stride"), case.int("padding"), case.int("bn", 0) != 0
    act = act_of(case.get("act", "none"), "conv2d")
    if c % groups or oc % groups:
        raise ValueError(f"conv2d groups={groups} must divide channels={c} and out_channels={oc}")

    def conv(x, w, b):
        return F.conv2d(x, w, b, stride, pad, 1, groups)

    def shape(x, w, b):
        return (x.view(n, c, image, image), w.view(oc, c // groups, r, r)) + like(x, b)

    if not bn:
        return (lambda x, w, b: act(conv(x, w, b))), shape

    def fn(x, w, b, mean, var, gamma, beta):  # inference BatchNorm after the conv
        return act(F.batch_norm(conv(x, w, b), mean, var, gamma, beta, False, 0.0, NORM_EPS))
    return fn, lambda x, w, b, *p: shape(x, w, b) + like(x, *p)


def _pool2d(case):
    n, c, image = case.int("batch"), case.int("channels"), case.int("image")
    k, stride, pad, kind = case.int("kernel"), case.int("stride"), case.int("padding"), case.get("kind", "max")
    if kind == "max":
        def fn(x):
            return F.max_pool2d(x, k, stride, pad)
    elif kind == "avg":
        def fn(x):  # padding counted in the mean: ops/pool/pool.hpp
            return F.avg_pool2d(x, k, stride, pad, count_include_pad=True)
    else:
        raise ValueError(f"pool2d kind '{kind}' unknown: expected max or avg")
    return fn, lambda x: (x.view(n, c, image, image),)


def _embedding(case):
    rows, h = rows_hidden(case)
    vocab = case.int("vocab")
    # F.embedding wants int64 ids, as a tokenizer's output already is.
    return F.embedding, lambda ids, table: (ids.long(), table.view(vocab, h))


def _attention(case):
    b, heads, seq, d = case.int("batch"), case.int("heads"), case.int("seq"), case.int("head_dim")
    causal, stage = case.int("causal", 0) != 0, case.get("stage", "full")
    if stage not in ("scores", "probs", "full"):
        raise ValueError(f"attention stage='{stage}' unknown: expected scores, probs or full")
    scale = 1.0 / math.sqrt(d)
    shape = (b, heads, seq, d)
    # True above the diagonal: key j > query i is masked.
    mask = torch.ones(seq, seq, dtype=torch.bool, device=case.device).triu(1) if causal else None

    def scores(q, k, mask):
        s = torch.matmul(q, k.transpose(-2, -1)) * scale
        return s.masked_fill(mask, float("-inf")) if causal else s

    def probs(q, k, mask):
        return F.softmax(scores(q, k, mask), dim=-1)

    if stage == "scores":
        return scores, lambda q, k: (q.view(shape), k.view(shape), mask)
    if stage == "probs":
        return probs, lambda q, k: (q.view(shape), k.view(shape), mask)
    if hasattr(F, "scaled_dot_product_attention"):  # torch >= 2.0
        def full(q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return full, lambda q, k, v: (q.view(shape), k.view(shape), v.view(shape))

    def full_manual(q, k, v, mask):
        return torch.matmul(probs(q, k, mask), v)
    return full_manual, lambda q, k, v: (q.view(shape), k.view(shape), v.view(shape), mask)


def _sdpa(q, k, v, causal, scale, mask):
    """softmax(q k^T * scale [masked]) v over the last two dims."""
    if hasattr(F, "scaled_dot_product_attention"):  # torch >= 2.0; its default scale is 1/sqrt(d)
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    s = torch.matmul(q, k.transpose(-2, -1)) * scale
    if causal:
        s = s.masked_fill(mask, float("-inf"))
    return torch.matmul(F.softmax(s, dim=-1), v)


def _transformer_block(case):
    """Pre-LN block (ops/transformer/transformer_block.hpp): h = x + Attn(LN1(x)),
    y = h + W2 act(W1 LN2(h) + b1) + b2, as a model's forward() writes it."""
    b, seq, h, heads = case.int("batch"), case.int("seq"), case.int("hidden"), case.int("heads")
    mlp, causal = case.int("mlp", 0) or 4 * h, case.int("causal", 0) != 0
    act = act_of(case.get("act", "gelu"), "transformer_block")
    if h % heads:
        raise ValueError(f"transformer_block hidden={h} is not divisible by heads={heads}")
    d = h // heads
    scale = 1.0 / math.sqrt(d)
    mask = torch.ones(seq, seq, dtype=torch.bool, device=case.device).triu(1) if causal else None

    def fn(x, g1, be1, wqkv, bqkv, wo, bo, g2, be2, w1, b1, w2, b2):
        qkv = F.linear(F.layer_norm(x, (h,), g1, be1, NORM_EPS), wqkv, bqkv)
        q, k, v = (t.view(b, seq, heads, d).transpose(1, 2) for t in qkv.split(h, dim=-1))
        o = _sdpa(q, k, v, causal, scale, mask).transpose(1, 2).reshape(b, seq, h)
        hres = x + F.linear(o, wo, bo)
        return hres + F.linear(act(F.linear(F.layer_norm(hres, (h,), g2, be2, NORM_EPS), w1, b1)), w2, b2)

    def prep(x, g1, be1, wqkv, bqkv, wo, bo, g2, be2, w1, b1, w2, b2):
        return ((x.view(b, seq, h),) + like(x, g1, be1) + (wqkv.view(3 * h, h),) + like(x, bqkv) +
                (wo.view(h, h),) + like(x, bo, g2, be2) + (w1.view(mlp, h),) + like(x, b1) + (w2.view(h, mlp),) +
                like(x, b2))
    return fn, prep


def _squeeze_excite(case):
    """torchvision's SqueezeExcitation: adaptive average pool, 1x1 conv, act, 1x1 conv, gate, x * gate
    (ops/squeeze_excite/squeeze_excite.hpp); the fp32 weights go to x's dtype as model.to() does."""
    n, c, image, r = case.int("batch"), case.int("channels"), case.int("image"), case.int("reduced")
    acts = {"relu": F.relu, "silu": F.silu}
    gates = {"sigmoid": torch.sigmoid, "hardsigmoid": F.hardsigmoid}
    act_name, gate_name = case.get("act", "relu"), case.get("gate", "hardsigmoid")
    if act_name not in acts:
        raise ValueError(f"squeeze_excite act='{act_name}' unknown: expected relu or silu")
    if gate_name not in gates:
        raise ValueError(f"squeeze_excite gate='{gate_name}' unknown: expected sigmoid or hardsigmoid")
    act, gate = acts[act_name], gates[gate_name]

    def fn(x, w1, b1, w2, b2):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * gate(F.conv2d(act(F.conv2d(s, w1, b1)), w2, b2))

    def prep(x, w1, b1, w2, b2):
        return (x.view(n, c, image, image),) + like(x, w1.view(r, c, 1, 1), b1, w2.view(c, r, 1, 1), b2)
    return fn, prep


def _decode_attention(case):
    """One query per (batch, head) over the KV cache: SDPA with a query of length 1
    (ops/decode_attention/decode_attention.hpp)."""
    b, heads, kv, d = case.int("batch"), case.int("heads"), case.int("kv"), case.int("head_dim")
    scale = 1.0 / math.sqrt(d)

    def prep(q, k, v):
        return q.view(b, heads, 1, d), k.view(b, heads, kv, d), v.view(b, heads, kv, d)
    return (lambda q, k, v: _sdpa(q, k, v, False, scale, None)), prep


ACT_OPS = [a for a in ACTS if a != "none"]
OPS = {
    **{a: _activation(a) for a in ACT_OPS},
    "layernorm": _layernorm,
    "rmsnorm": _rmsnorm,
    "batchnorm": _batchnorm,
    "softmax": _softmax,
    "mse": _mse,
    "cross_entropy": _cross_entropy,
    "add": _add,
    "gemm": _gemm,
    "linear": _linear,
    **{f"ln_linear_{a}": _ln_linear(a) for a in ACT_OPS},
    "conv2d": _conv2d,
    "pool2d": _pool2d,
    "embedding": _embedding,
    "attention": _attention,
    "transformer_block": _transformer_block,
    "squeeze_excite": _squeeze_excite,
    "decode_attention": _decode_attention,
}

# The ops and the dtypes each takes from the torch impls: impls.json's op set "torch_ops".
OP_SET = "torch_ops"


def first_line(e):
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def set_precision(case):
    """fp32 stays fp32 (no TF32 in cuBLAS or cuDNN) unless the dtype is tf32; 16-bit GEMMs
    reduce in fp32. Returns what was set, for the result's details."""
    if not case.cuda:
        return {}
    tf32 = case.dtype_name == "tf32"
    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    if hasattr(matmul, "fp32_precision"):  # torch >= 2.9: the old flags are deprecated
        matmul.fp32_precision = "tf32" if tf32 else "ieee"
        if hasattr(cudnn, "conv") and hasattr(cudnn.conv, "fp32_precision"):
            cudnn.conv.fp32_precision = "tf32" if tf32 else "ieee"
    else:
        matmul.allow_tf32 = tf32
        cudnn.allow_tf32 = tf32
    for flag in ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        if hasattr(matmul, flag):
            setattr(matmul, flag, False)
    return {"tf32": "on" if tf32 else "off", "reduced_precision_reduction": "off"}


def _compiled(fn, mode):
    # A Python function around fn: dynamo traces bytecode, and fn may be a builtin (torch.add).
    def core(*args):
        return fn(*args)
    if mode in COMPILE_BACKENDS:
        return torch.compile(core, backend=mode)
    return torch.compile(core) if mode == "default" else torch.compile(core, mode=mode)


# torch_compile_max: max-autotune's kernel search without its CUDA graphs. mode="max-autotune"
# also wraps the function in CUDA-graph trees, which copy every input into static buffers on each
# call (double the traffic of a memory-bound op) and nest badly inside opmeter's own graph=U
# capture; opmeter's graph setting is the one way a case is graphed.
# torch_compile_aot_eager: backend "aot_eager" (AOTAutograd's graphs run eagerly, no Inductor
# codegen), the other backend the GEMM seed compares: what tracing alone costs or saves.
COMPILE_MODES = {"torch": None, "torch_compile": "default", "torch_compile_max": "max-autotune-no-cudagraphs",
                 "torch_compile_aot_eager": "aot_eager"}
COMPILE_BACKENDS = ("aot_eager",)  # modes above that are backends


def make(case, input_sets):
    """Prepared for impl torch / torch_compile / torch_compile_max / torch_compile_aot_eager."""
    if case.op not in impl_table.ops_of(OP_SET):
        raise Unsupported(f"{case.impl} has no form of op '{case.op}'")
    if not impl_table.runs_dtype(OP_SET, case.op, case.dtype_name):
        dtypes = impl_table.dtypes_of(OP_SET, case.op)
        raise Unsupported(f"{case.impl} runs {case.op} in {', '.join(dtypes)}, not {case.dtype_name}")
    mode = COMPILE_MODES[case.impl]
    if mode and not hasattr(torch, "compile"):
        raise Unsupported(f"torch.compile needs PyTorch 2.0 or later; this is torch {torch.__version__}")
    details = {"torch": torch.__version__}
    if case.cuda:
        details["cuda"] = str(torch.version.cuda)
        details["gpu"] = torch.cuda.get_device_name(case.device)
    details.update(set_precision(case))
    verify = None
    training = case.get("mode", "inference") == "train"
    if case.get("quant", "baseline") != "baseline" and not training:
        raise Unsupported(f"{case.impl} runs quant={case.get('quant')} only in training steps (mode=train)")
    if training:
        compile_fn = (lambda f: _compiled(f, mode)) if mode else None
        training_forms = importlib.import_module("torch_training")
        if case.op == "transformer_block":
            prepared = training_forms.make_module(case, *_transformer_block(case), compile_fn, input_sets)
        elif case.op == "linear" or case.op.startswith("ln_linear_"):
            act = act_of(case.get("act", "none") if case.op == "linear" else case.op[len("ln_linear_"):], case.op)
            prepared = training_forms.make(case, act, compile_fn, input_sets)
        else:
            raise Unsupported(f"{case.impl} has no training step of '{case.op}'")
        prepared.details.update(details)
        return prepared
    if case.op == "model":  # a whole model: the worker checks it (model_case.py)
        fn, prep, verify, model_details = importlib.import_module("model_case").make(case)
        details.update(model_details)
    else:
        fn, prep = OPS[case.op](case)
    if mode:
        try:
            fn = _compiled(fn, mode)
        except RuntimeError as e:  # a mode this torch does not know (no-cudagraphs: torch >= 2.1)
            raise Unsupported(f"torch {torch.__version__} has no torch.compile mode '{mode}': {first_line(e)}") from None
        details["compile_backend" if mode in COMPILE_BACKENDS else "compile_mode"] = mode
    return Prepared(fn, prep, input_sets, details, verify)
