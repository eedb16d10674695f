#!/usr/bin/env python3
"""The end-to-end models of op `model` (worker/models.py, worker/model_case.py) on the CPU:
parameter counts equal the published ones, output shapes at small images, samples independent
of the batch, OPT's cheap row form and KV-cache decode equal to the full prefill, and the worker's
own check: a case checked through a Session passes, a corrupted output fails.

    /usr/bin/python3 worker/tests/torch_models.py

Needs torch (Debian's 1.13 is enough); CTest runs it as WorkerPython.torch_models.
"""
import math
import os
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.dont_write_bytecode = True

import model_case  # noqa: E402
import models  # noqa: E402
from session import Session  # noqa: E402

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


# torchvision's published parameter counts; RepLKNet-31B: 79M (Ding et al. 2022, Table 5).
PUBLISHED = {
    "resnet18": 11_689_512,
    "resnet50": 25_557_032,
    "mobilenet_v3_small": 2_542_856,
    "efficientnet_b0": 5_288_548,
    "vit_b_16": 86_567_656,
}


def test_param_counts():
    for name, count in PUBLISHED.items():
        got = models.param_count(models.build(name))
        expect(got == count, f"{name}: {got} parameters, published {count}")
    replk = models.param_count(models.build("replknet_31b"))
    expect(78.5e6 <= replk <= 79.6e6, f"replknet_31b: {replk} parameters, published ~79M")
    h = models.OPT_66B["hidden"]
    layer = models.OPTDecoderLayer(h, models.OPT_66B["heads"], models.OPT_66B["ffn"], device="meta")
    expect(models.param_count(layer) == 12 * h * h + 13 * h,
           f"one OPT-66B layer: {models.param_count(layer)} parameters, 12h^2 + 13h = {12 * h * h + 13 * h}")
    expect(models.param_count(layer) * 64 > 65e9, "64 OPT-66B layers hold about 66B parameters")


def frozen(m):
    for p in m.parameters():
        p.requires_grad_(False)
    return m


def test_vision_shapes_and_batch_independence():
    torch.manual_seed(0)
    for name in models.VISION:
        m = frozen(models.init_random(models.build(name, image=32), seed=3))
        x = torch.rand(3, 3, 32, 32) * 2 - 1
        y = m(x)
        expect(tuple(y.shape) == (3, 1000), f"{name}: output shape {tuple(y.shape)}, expected (3, 1000)")
        expect(bool(torch.isfinite(y).all()), f"{name}: non-finite logits")
        expect(float(y.std()) > 1e-3, f"{name}: logits nearly constant ({float(y.std())})")
        # BatchNorm in eval: sample 0 alone gives sample 0's logits (the check relies on it).
        err = float((m(x[:1]) - y[:1]).abs().max() / y[:1].abs().max())
        expect(err < 1e-5, f"{name}: sample 0 alone differs by {err}")
    try:
        models.build("vit_b_16", image=40)
        expect(False, "vit_b_16 at image=40 should be refused (not a multiple of 16)")
    except ValueError as e:
        expect("multiple of the patch size" in str(e), f"vit image message: {e}")
    try:
        models.build("alexnet")
        expect(False, "an unknown model should be refused")
    except ValueError as e:
        expect("resnet18" in str(e), f"unknown model message names the known ones: {e}")


def small_opt(kv=0, batch=1):
    return models.OPTDecoderLayer(32, 4, 64, kv=kv, batch=batch).double()


def test_opt_rows_and_decode():
    torch.manual_seed(1)
    prefill = frozen(models.init_random(small_opt(), seed=5).eval())
    x = torch.randn(2, 7, 32, dtype=torch.float64)
    full = prefill(x)
    expect(tuple(full.shape) == (2, 7, 32), f"opt prefill shape {tuple(full.shape)}")
    rows = [0, 3, 6]
    part = prefill(x, rows)
    expect(float((part - full[:, rows]).abs().max()) < 1e-12, "opt rows form differs from the full prefill")
    # causal: changing token 6 changes no earlier row
    x2 = x.clone()
    x2[:, 6] += 1
    expect(float((prefill(x2)[:, :6] - full[:, :6]).abs().max()) < 1e-12, "opt prefill is not causal")
    # decode of token 6 over a cache of tokens 0..5 equals prefill's row 6
    decode = frozen(small_opt(kv=6, batch=2).eval())
    decode.load_state_dict({k: v for k, v in prefill.state_dict().items()}, strict=False)
    y = prefill.self_attn_layer_norm(x[:, :6])
    decode.k_cache[:, :, :6].copy_(models.split_heads(prefill.k_proj(y), 4))
    decode.v_cache[:, :, :6].copy_(models.split_heads(prefill.v_proj(y), 4))
    step = decode(x[:, 6:7])
    expect(float((step - full[:, 6:7]).abs().max()) < 1e-12, "opt decode over the KV cache differs from prefill")


class FakeCase:
    """What model_case reads from a case."""

    def __init__(self, params, dtype_name="fp32"):
        self.params = {k: str(v) for k, v in params.items()}
        self.dtype_name = dtype_name
        self.dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype_name]
        self.device = torch.device("cpu")

    def get(self, key, default=None):
        return self.params.get(key, default)

    def int(self, key, default=None):
        return int(self.params.get(key, default))


def test_model_case_check():
    for name, params, dtype in [("resnet18", {"image": 32, "batch": 2}, "fp32"),
                                ("mobilenet_v3_small", {"image": 32, "batch": 2}, "bf16"),
                                ("vit_b_16", {"image": 32, "batch": 2}, "bf16")]:
        case = FakeCase({"name": name, **params}, dtype)
        fn, prep, verify, details = model_case.make(case)
        x = (torch.rand(2, 3, 32, 32) * 2 - 1).to(case.dtype)
        out = fn(*prep(x))
        v = verify([x], out)
        expect(v["max_error"] <= v["tolerance"], f"{name} {dtype}: max_error {v['max_error']} > {v['tolerance']}")
        print(f"  {name} {dtype}: max_error {v['max_error']:.3g} (tolerance {v['tolerance']})")
        bad = out.clone()
        bad[0, 7] += bad[0].abs().max()  # one wrong logit of sample 0
        w = verify([x], bad)
        expect(w["max_error"] > w["tolerance"], f"{name}: a wrong logit passes ({w['max_error']})")
        expect(details["model_params"] == str(models.param_count(models.build(name, image=32))), "model_params")


def test_opt_case_check():
    """OPT's check (token rows of sequence 0, the KV cache's sequence 0) on a small layer: a
    full-size one is 4 GB in fp32."""
    full = dict(models.OPT_66B)
    models.OPT_66B.update(hidden=64, heads=4, ffn=128)
    try:
        for name, params, dtype, rows in [("opt_66b_prefill", {"seq": 9, "batch": 2}, "fp32", 9),
                                          ("opt_66b_decode", {"kv": 5, "batch": 3}, "bf16", 1)]:
            case = FakeCase({"name": name, **params}, dtype)
            fn, prep, verify, _ = model_case.make(case)
            x = torch.randn(int(params["batch"]) * rows * 64).to(case.dtype)
            out = fn(*prep(x))
            expect(tuple(out.shape) == (int(params["batch"]), rows, 64), f"{name}: output {tuple(out.shape)}")
            v = verify([x], out)
            expect(v["max_error"] <= v["tolerance"], f"{name} {dtype}: max_error {v['max_error']} > {v['tolerance']}")
            print(f"  {name} {dtype}: max_error {v['max_error']:.3g} (tolerance {v['tolerance']}): {v['detail']}")
            bad = out.clone()
            bad[0, -1, 0] += bad.abs().max()
            expect(verify([x], bad)["max_error"] > v["tolerance"], f"{name}: a wrong last row passes")
    finally:
        models.OPT_66B.update(full)


def test_session_end_to_end():
    """setup / run / sample / check through the worker's Session, inputs from files as opmeter writes them."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "in0")
        torch.manual_seed(2)
        (torch.rand(2 * 3 * 32 * 32) * 2 - 1).numpy().tofile(path)
        s = Session(torch, "")
        req = {"cmd": "setup", "impl": "torch", "op": "model", "dtype": "fp32",
               "params": {"name": "resnet18", "batch": "2", "image": "32", "seq": "128", "kv": "0"},
               "device": "cpu", "threads": 1, "copies": 2, "hot": False, "graph": 0,
               "inputs": [{"name": "image", "elem": "f32", "count": 2 * 3 * 32 * 32, "path": path}],
               "output": {"name": "logits", "elem": "f32", "count": 2000}}
        setup = s.setup(req)
        expect(setup["details"]["model"] == "resnet18", f"details: {setup['details']}")
        expect(s.run({"copy": 1, "calls": 2})["seconds"] > 0, "run seconds")
        expect(s.sample({"calls": 1})["seconds"] > 0, "sample seconds")
        out = os.path.join(d, "out")
        reply = s.check({"inputs": [path], "output": out})
        expect(os.path.getsize(out) == 2000 * 4, "check writes the output")
        expect("max_error" in reply and reply["max_error"] <= reply["tolerance"], f"check verdict: {reply}")
        expect("sample 0" in reply.get("detail", ""), f"check detail: {reply}")
        s.release()
        req["params"]["name"] = "nope"
        try:
            s.setup(req)
            expect(False, "an unknown model name must be refused")
        except ValueError as e:
            expect("name 'nope' unknown" in str(e), f"unknown name message: {e}")


def main():
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    for test in (test_param_counts, test_vision_shapes_and_batch_independence, test_opt_rows_and_decode,
                 test_model_case_check, test_opt_case_check, test_session_end_to_end):
        print(test.__name__)
        test()
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
