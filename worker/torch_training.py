"""Training steps (mode=train) of linear, ln_linear_<act> and transformer_block through PyTorch autograd, for impls
`torch` and `torch_compile` (the forward compiled: AOTAutograd compiles its backward too).

Inputs as ops/linear/linear.hpp lists them: x, W, b, [gamma, beta,] dy. The parameters are leaves
in the activations' dtype that require grad, as in `model.to(torch.bfloat16)`. What a call times
(`phase`): step = forward + torch.autograd.grad of every input (no .grad accumulation), forward =
the forward recording the graph, backward = autograd.grad over a graph kept from one forward per
input set (retain_graph). The check always runs the whole step and returns y, dx, dW, db
[, dgamma, dbeta] flattened one after another (linear.hpp's TrainLayout). transformer_block: its
13 inputs (shaped as torch_ops.py's inference form) are the leaves, the output y and their
gradients in order (ops/transformer/transformer_train.hpp).

Float8 training (quant=float8dq-tensor / float8dq-row, cc >= 8.9): a torch.autograd.Function whose
three GEMMs go through torch._scaled_mm: e4m3 x and W forward, e5m2 dy backward (e4m3 with rowwise
scales, as torchao's rowwise recipe), transposed fp8
copies where _scaled_mm needs its second operand column-major; the knobs scaling_input /
scaling_weight / scaling_grad (dynamic: amax scale per step, disabled: scale 1), granularity
(tensorwise | rowwise) and fast_accum as ops/linear/linear.hpp says.
"""
import torch
import torch.nn.functional as F

from case_io import Prepared, Unsupported

E4M3_MAX = 448.0
E5M2_MAX = 57344.0


def _knobs(case):
    recipe = case.get("quant", "baseline")
    granularity = case.get("granularity", "recipe")
    rowwise = recipe == "float8dq-row" if granularity == "recipe" else granularity == "rowwise"
    return {
        "input": case.get("scaling_input", "dynamic") == "dynamic",
        "weight": case.get("scaling_weight", "dynamic") == "dynamic",
        "grad": case.get("scaling_grad", "dynamic") == "dynamic",
        "rowwise": rowwise,
        "fast_accum": case.get("fast_accum", "1") == "1",
    }


def _to_fp8(t, dtype, dynamic, rowwise):
    """t in fp8 with its scale (fp32): t ~ fp8 * scale; rowwise: one scale per row (dim 0)."""
    top = E4M3_MAX if dtype == torch.float8_e4m3fn else E5M2_MAX
    if not dynamic:
        scale = torch.ones((t.shape[0], 1) if rowwise else (), device=t.device, dtype=torch.float32)
    elif rowwise:
        scale = t.abs().amax(dim=1, keepdim=True).float().clamp(min=1e-12) / top
    else:
        scale = t.abs().amax().float().clamp(min=1e-12) / top
    return (t.float() / scale).clamp(-top, top).to(dtype), scale


def _scaled_mm(a, a_scale, b_t, b_scale, out_dtype, fast_accum):
    """a (M x K, row-major) times b_t^T where b_t is N x K row-major (column-major K x N, as
    _scaled_mm needs its second operand); a_scale M x 1 or (), b_scale N x 1 or ()."""
    sb = b_scale.t() if b_scale.dim() == 2 else b_scale
    return torch._scaled_mm(a, b_t.t(), scale_a=a_scale, scale_b=sb, out_dtype=out_dtype, use_fast_accum=fast_accum)


class _Float8Linear(torch.autograd.Function):
    """y = x W^T + b with fp8 GEMMs forward (e4m3 x e4m3) and backward (e5m2 dy x e4m3)."""

    @staticmethod
    def forward(ctx, x, w, b, knobs):
        x8, sx = _to_fp8(x, torch.float8_e4m3fn, knobs["input"], knobs["rowwise"])
        w8, sw = _to_fp8(w, torch.float8_e4m3fn, knobs["weight"], knobs["rowwise"])
        y = _scaled_mm(x8, sx, w8, sw, x.dtype, knobs["fast_accum"]) + b
        ctx.save_for_backward(x, w)
        ctx.knobs = knobs
        return y

    @staticmethod
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        k = ctx.knobs
        # dx = dy W: W^T (hidden x out) quantized along out, the transposed copy _scaled_mm reads.
        # e5m2 gradients with tensorwise scales; rowwise scales keep e4m3 throughout, as torchao's
        # rowwise recipe does (and as _scaled_mm's rowwise kernels take).
        grad_dtype = torch.float8_e4m3fn if k["rowwise"] else torch.float8_e5m2
        dy8, sdy = _to_fp8(dy, grad_dtype, k["grad"], k["rowwise"])
        wt8, swt = _to_fp8(w.t().contiguous(), torch.float8_e4m3fn, k["weight"], k["rowwise"])
        dx = _scaled_mm(dy8, sdy, wt8, swt, x.dtype, k["fast_accum"])
        # dW = dy^T x: dy^T (out x rows) and x^T (hidden x rows), both transposed fp8 copies.
        dyt8, sdyt = _to_fp8(dy.t().contiguous(), grad_dtype, k["grad"], k["rowwise"])
        xt8, sxt = _to_fp8(x.t().contiguous(), torch.float8_e4m3fn, k["input"], k["rowwise"])
        dw = _scaled_mm(dyt8, sdyt, xt8, sxt, x.dtype, k["fast_accum"])
        return dx, dw, dy.sum(0).to(x.dtype), None


def _layer(case, act):
    """forward(x, w, b, *ln) -> y for the case's op and recipe."""
    layernorm = case.op.startswith("ln_linear_")
    h = case.int("hidden")
    recipe = case.get("quant", "baseline")
    if recipe not in ("baseline", "float8dq-tensor", "float8dq-row"):
        raise Unsupported(f"{case.impl} trains baseline, float8dq-tensor and float8dq-row, not quant={recipe}")
    fp8 = recipe != "baseline"
    if fp8:
        if not (case.cuda and hasattr(torch, "_scaled_mm")):
            raise Unsupported("float8 training runs torch._scaled_mm on a CUDA GPU of compute capability 8.9 or later")
        if torch.cuda.get_device_capability(case.device) < (8, 9):
            raise Unsupported("float8 training needs compute capability 8.9 or later (fp8 tensor cores)")
        knobs = _knobs(case)

    def linear(x, w, b):
        return _Float8Linear.apply(x, w, b, knobs) if fp8 else F.linear(x, w, b)

    def forward(x, w, b, *ln):
        if layernorm:
            x = F.layer_norm(x, (h,), ln[0], ln[1], 1e-5)
        return act(linear(x, w, b))
    return forward


def _autograd(forward, leaves_of, phase, input_sets):
    """Prepared timing `phase` of forward(*leaves) -> y and its backward from dy, where
    leaves_of(*inputs) -> (leaves, dy). The check's output: y, then the gradient of each leaf in
    order, flattened and joined in the leaves' dtype."""
    def prep(*inputs):
        leaves, dy = leaves_of(*inputs)
        args = {"leaves": leaves, "dy": dy}
        if phase == "backward":
            args["y"] = forward(*leaves)
        return (args,)

    def step(args):
        y = forward(*args["leaves"])
        return y, torch.autograd.grad(y, args["leaves"], args["dy"])

    def fn(args):
        if phase == "forward":
            forward(*args["leaves"])
        elif phase == "backward":
            torch.autograd.grad(args["y"], args["leaves"], args["dy"], retain_graph=True)
        else:
            step(args)

    def check_fn(args):
        y, grads = step(args)
        dtype = args["leaves"][0].dtype
        return torch.cat([p.detach().reshape(-1).to(dtype) for p in [y] + list(grads)])

    return Prepared(fn, prep, input_sets, {"autograd": "torch.autograd.grad"}, check_fn=check_fn)


def _leaf(t):
    return t.detach().clone().requires_grad_(True)


def make(case, act, compile_fn, input_sets):
    """(fn, prep, check_fn) for a training case of linear / ln_linear_<act>; fn(*args) returns
    None (the timed work only)."""
    forward = _layer(case, act)
    if compile_fn is not None:
        forward = compile_fn(forward)
    rows, h, out = case.int("batch") * case.int("seq"), case.int("hidden"), case.int("out")

    def leaves_of(*inputs):
        *params, dy = inputs
        x = params[0].view(rows, h)
        leaves = [_leaf(x), _leaf(params[1].view(out, h))] + [_leaf(p.to(x.dtype)) for p in params[2:]]
        return leaves, dy.view(rows, out)
    return _autograd(forward, leaves_of, case.get("phase", "step"), input_sets)


def make_module(case, forward, shape_inputs, compile_fn, input_sets):
    """A training case of an op whose inference form is forward(*shaped inputs) (torch_ops.py's,
    e.g. transformer_block): every input, shaped and cast by shape_inputs as for inference, is a
    leaf; dy is the last input, shaped as y."""
    if case.get("quant", "baseline") != "baseline":
        raise Unsupported(f"{case.impl} trains {case.op} unquantized, not quant={case.get('quant')}")
    if compile_fn is not None:
        forward = compile_fn(forward)

    def leaves_of(*inputs):
        *params, dy = inputs
        leaves = [_leaf(t) for t in shape_inputs(*params)]
        return leaves, dy.view(leaves[0].shape)
    return _autograd(forward, leaves_of, case.get("phase", "step"), input_sets)
