"""Op `model`: a built-in pipeline's model end to end (worker/models.py), as a PyTorch user runs
it: random weights from a fixed seed, eval mode, `model.to(dtype)` on the case's device.

opmeter cannot compute a whole model's answer, so the worker checks it: sample 0 of the batch is
recomputed by a float64 copy of the same weights on the CPU (BatchNorm in eval and OPT's rows
make samples independent), and the check reply carries the verdict:

    max_error = max |got - ref| / max |ref|   over sample 0's output (OPT prefill: a few token rows)

the error relative to the largest magnitude of that output, against TOLERANCE of the case dtype
(docs/worker-protocol.md, "Ops the worker checks").
"""
import math

import torch

import models

WEIGHT_SEED = 16  # the same random model in every run

# Bounds on max_error: rounding in the case dtype through ~50 layers, with headroom; a model that
# computes something else is off by O(1).
TOLERANCE = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 5e-2}


def shape_of(case):
    """(model name, batch, input shape per call) from the case's parameters."""
    name, batch = case.get("name", "resnet18"), case.int("batch", 1)
    if name not in models.NAMES:
        raise ValueError(f"model: name '{name}' unknown: expected one of {', '.join(models.NAMES)}")
    if name in models.VISION:
        image = case.int("image", 224)
        return name, (batch, 3, image, image)
    seq = 1 if name == "opt_66b_decode" else case.int("seq", 128)
    return name, (batch, seq, models.OPT_66B["hidden"])


def _build(case, name, batch, device, meta=False):
    """The model on `device` in fp32 (the OPT layer built there directly: 4 GB in fp32)."""
    kv = case.int("kv", 0)
    image = case.int("image", 224)
    if name in models.OPT:
        size = models.OPT_66B
        m = models.OPTDecoderLayer(size["hidden"], size["heads"], size["ffn"], kv=kv if name == "opt_66b_decode" else 0,
                                   batch=batch, device="meta" if meta else device)
        return m.eval()
    return models.build(name, image=image, batch=batch, kv=kv).to(device)


def _frozen(model):
    for p in model.parameters():
        p.requires_grad_(False)  # inference: no autograd graph
    return model


def check_rows(name, seq):
    """Token rows of sample 0 the check recomputes: all for a vision model (None), the first,
    a few inside and the last for OPT prefill (the last sees every key)."""
    if name not in models.OPT:
        return None
    return sorted({0, 1, seq // 3, 2 * seq // 3, seq - 1} & set(range(seq)))


def make(case):
    """(fn, prep, verify) for the case: verify(inputs, out) -> the check reply's verdict."""
    name, shape = shape_of(case)
    batch = shape[0]
    model = _build(case, name, batch, case.device)
    models.init_random(model, WEIGHT_SEED)
    model = _frozen(model.to(case.dtype))
    reference = {}  # the fp64 copy, made at the first check

    def fn(x):
        return model(x)

    def prep(x):
        return (x.view(shape),)

    def verify(inputs, out):
        if "model" not in reference:
            reference["model"] = _fp64_copy(case, name, model)
        rows = check_rows(name, shape[1])
        x0 = inputs[0].view(shape)[:1].detach().to("cpu", torch.float64)
        got = out[:1].detach().to("cpu", torch.float64)
        with torch.no_grad():
            ref = reference["model"](x0, rows) if rows is not None else reference["model"](x0)
        if rows is not None:
            got = got[:, rows]
        scale = ref.abs().max().item()
        err = (got - ref).abs().max().item() / scale if scale > 0 else math.inf
        if not math.isfinite(err):
            err = math.inf
        where = f"token rows {rows} of sequence 0" if rows is not None else "sample 0"
        return {"max_error": err, "tolerance": TOLERANCE[case.dtype_name],
                "detail": f"{where} against a float64 copy of the model on the CPU (max |ref| {scale:.3g})"}

    details = {"model": name, "model_params": str(models.param_count(model)), "weights": f"random, seed {WEIGHT_SEED}"}
    return fn, prep, verify, details


def _fp64_copy(case, name, model):
    """The case's weights (already rounded to its dtype) in float64 on the CPU; a KV cache keeps
    sequence 0 only."""
    ref = _build(case, name, 1, "cpu", meta=True)
    if name in models.OPT:
        ref = ref.to_empty(device="cpu")
    ref = ref.to(torch.float64)
    state = {}
    for k, v in model.state_dict().items():
        v = v.detach()
        if k in ("k_cache", "v_cache"):
            v = v[:1]
        state[k] = v.to("cpu", torch.float64)
    ref.load_state_dict(state)
    return _frozen(ref.eval())
