#!/usr/bin/env python3
"""Drives worker/opmeter_worker.py over its protocol on the CPU and checks its replies: outputs
against float64 numpy references with opmeter's error metrics and tolerances, timing requests,
error and unsupported replies (after which the worker must keep serving), user kernels.

    /usr/bin/python3 worker/tests/drive_worker.py [-v]

Needs torch and numpy in the Python that runs it (the worker runs under the same Python).
Not part of CTest: a quick check while working on the worker.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(REPO, "worker", "opmeter_worker.py")
EXAMPLES = os.path.join(REPO, "examples", "kernels", "my_kernels.py")
VERBOSE = "-v" in sys.argv
rng = np.random.default_rng(7)
failures = []


# --- bf16 in numpy: float32 bits rounded to nearest even, top 16 kept ---

def bf16_bits(x):
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_value(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def storage(x, elem):
    """(what to write to the file, the values the worker will see as float64)."""
    if elem == "bf16":
        bits = bf16_bits(x)
        return bits, bf16_value(bits).astype(np.float64)
    np_type = {"f32": np.float32, "s32": np.int32, "s8": np.int8, "u8": np.uint8, "f64": np.float64}[elem]
    arr = np.asarray(x).astype(np_type)
    return arr, arr.astype(np.float64)


def read_output(path, elem, count):
    if elem == "bf16":
        return bf16_value(np.fromfile(path, np.uint16, count)).astype(np.float64)
    np_type = {"f32": np.float32, "s32": np.int32, "f64": np.float64}[elem]
    return np.fromfile(path, np_type, count).astype(np.float64)


# --- the worker ---

class Worker:
    def __init__(self):
        self.p = subprocess.Popen([sys.executable, "-u", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=None if VERBOSE else subprocess.DEVNULL, text=True, cwd=REPO)
        self.hello = json.loads(self.p.stdout.readline())

    def send_raw(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        reply = self.p.stdout.readline()
        assert reply, f"worker died after {line[:200]}"
        return json.loads(reply)

    def ask(self, **req):
        return self.send_raw(json.dumps(req))

    def quit(self):
        self.p.stdin.write('{"cmd": "quit"}\n')
        self.p.stdin.flush()
        return self.p.wait(timeout=30)


def expect(name, cond, info=""):
    if not cond:
        failures.append(f"{name}: {info}")
    print(f"{'ok  ' if cond else 'FAIL'} {name}" + (f"  ({info})" if info and (VERBOSE or not cond) else ""))


# --- one case: inputs to files, setup, check, compare ---

class Case:
    def __init__(self, tmp, op, dtype, params, inputs, out_elem, out_count, impl="torch", **extra):
        """inputs: [(name, elem, array)]; arrays are rounded to their elem as the worker reads them."""
        self.tmp, self.values, self.descs = tmp, [], []
        for i, (name, elem, arr) in enumerate(inputs):
            raw, val = storage(arr, elem)
            path = os.path.join(tmp, f"{op}-{dtype}-in{i}")
            raw.tofile(path)
            self.descs.append({"name": name, "elem": elem, "count": int(raw.size), "path": path})
            self.values.append(val)
        self.out = {"name": "out", "elem": out_elem, "count": int(out_count)}
        self.setup = dict(cmd="setup", impl=impl, op=op, dtype=dtype, params={k: str(v) for k, v in params.items()},
                          device="cpu", threads=1, copies=2, hot=False, graph=0, inputs=self.descs, output=self.out,
                          **extra)

    def run_check(self, w):
        r = w.ask(**self.setup)
        if not r.get("ok"):
            return r, None
        path = os.path.join(self.tmp, "out")
        r = w.ask(cmd="check", inputs=[d["path"] for d in self.descs], output=path)
        if not r.get("ok"):
            return r, None
        return r, read_output(path, self.out["elem"], self.out["count"])


def scaled_error(got, ref, mag):
    same = got == ref  # masked scores: -inf == -inf
    with np.errstate(invalid="ignore"):
        diff = np.abs(got - ref)
    err = np.where(same, 0.0, diff / np.where(mag > 0, mag, 1.0))
    return float(np.max(err)) if err.size else 0.0


def check_op(w, tmp, label, op, dtype, params, inputs, out_elem, out_count, reference, tol, impl="torch"):
    case = Case(tmp, op, dtype, params, inputs, out_elem, out_count, impl=impl)
    reply, got = case.run_check(w)
    if got is None:
        expect(label, False, json.dumps(reply))
        return
    ref, mag = reference(*case.values)
    err = scaled_error(got, np.asarray(ref, np.float64).reshape(-1), np.asarray(mag, np.float64).reshape(-1))
    expect(label, err <= tol, f"max scaled error {err:.3g}, tolerance {tol:.3g}")


# --- fp64 references, as opmeter's ops/ compute them ---

EPS = 1e-5
ACT_REF = {
    "none": lambda x: x,
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.clip(x, 0, 6),
    "leaky_relu": lambda x: np.where(x > 0, x, 0.01 * x),
    "gelu": lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))),
    "gelu_tanh": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
    "silu": lambda x: x / (1 + np.exp(-x)),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "hardswish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
}


def storage_tol(dtype):
    return 4 * 2.0 ** -8 if dtype == "bf16" else 0.0


def layernorm_ref(x, g, b, h):
    x = x.reshape(-1, h)
    xhat = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + EPS)
    return xhat * g, b


def uniform(n, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, n)


def test_tensor_ops(w, tmp):
    b, s, h = 2, 3, 37
    n = b * s * h
    p = {"batch": b, "seq": s, "hidden": h}
    act_elem = {"fp32": "f32", "bf16": "bf16"}
    norm_tol = (64 + 4 * math.sqrt(h)) * 2.0 ** -24

    for dtype in ("fp32", "bf16"):
        e = act_elem[dtype]

        def ln(x, g, be):
            scaled, beta = layernorm_ref(x, g, be, h)
            return scaled + beta, np.abs(scaled) + np.abs(beta) + 1
        check_op(w, tmp, f"layernorm {dtype}", "layernorm", dtype, p,
                 [("x", e, uniform(n)), ("gamma", "f32", uniform(h, .5, 1.5)), ("beta", "f32", uniform(h, -.5, .5))],
                 e, n, ln, norm_tol + storage_tol(dtype))

    for act in ACT_REF:
        if act == "none":
            continue
        f = ACT_REF[act]
        check_op(w, tmp, f"{act} fp32", act, "fp32", p, [("x", "f32", uniform(n, -8, 8))], "f32", n,
                 lambda x, f=f: (f(x), np.abs(f(x)) + 1), 64 * 2.0 ** -24)
    f = ACT_REF["gelu"]
    check_op(w, tmp, "gelu bf16", "gelu", "bf16", p, [("x", "bf16", uniform(n, -8, 8))], "bf16", n,
             lambda x: (f(x), np.abs(f(x)) + 1), 64 * 2.0 ** -24 + storage_tol("bf16"))

    def rms(x, g):
        x = x.reshape(-1, h)
        ref = x / np.sqrt((x * x).mean(1, keepdims=True) + EPS) * g
        return ref, np.abs(ref) + 1
    check_op(w, tmp, "rmsnorm fp32", "rmsnorm", "fp32", p, [("x", "f32", uniform(n)), ("gamma", "f32", uniform(h, .5, 1.5))],
             "f32", n, rms, norm_tol)

    def bn(x, mean, var, g, be):
        scaled = (x.reshape(-1, h) - mean) / np.sqrt(var + EPS) * g
        return scaled + be, np.abs(scaled) + np.abs(be) + 1
    check_op(w, tmp, "batchnorm fp32", "batchnorm", "fp32", p,
             [("x", "f32", uniform(n)), ("mean", "f32", uniform(h, -.5, .5)), ("var", "f32", uniform(h, .25, 1.5)),
              ("gamma", "f32", uniform(h, .5, 1.5)), ("beta", "f32", uniform(h, -.5, .5))], "f32", n, bn, norm_tol)

    def softmax(x):
        x = x.reshape(-1, h)
        e = np.exp(x - x.max(1, keepdims=True))
        ref = e / e.sum(1, keepdims=True)
        return ref, ref + 1.0 / h
    for dtype in ("fp32", "bf16"):
        check_op(w, tmp, f"softmax {dtype}", "softmax", dtype, p, [("x", act_elem[dtype], uniform(n, -8, 8))],
                 act_elem[dtype], n, softmax, norm_tol + storage_tol(dtype))

    def mse(a, t):
        d2 = (a - t) ** 2
        return d2.mean(), d2.sum() / d2.size + 1e-30
    check_op(w, tmp, "mse fp32", "mse", "fp32", p, [("pred", "f32", uniform(n)), ("target", "f32", uniform(n))],
             "f32", 1, mse, 1e-5)

    def xent(x, labels):
        x = x.reshape(-1, h)
        mx = x.max(1)
        lse = np.log(np.exp(x - mx[:, None]).sum(1)) + mx
        target = x[np.arange(x.shape[0]), labels.astype(int)]
        return (lse - target).mean(), (np.abs(lse) + np.abs(target)).mean() + 1e-30
    for dtype in ("fp32", "bf16"):
        check_op(w, tmp, f"cross_entropy {dtype}", "cross_entropy", dtype, p,
                 [("logits", act_elem[dtype], uniform(n, -8, 8)), ("labels", "s32", rng.integers(0, h, b * s))],
                 "f32", 1, xent, 1e-5 + storage_tol(dtype))

    def add(a, c):
        return a + c, np.abs(a) + np.abs(c)
    check_op(w, tmp, "add fp32", "add", "fp32", p, [("A", "f32", uniform(n)), ("B", "f32", uniform(n))], "f32", n,
             add, 2 * 2.0 ** -24)
    check_op(w, tmp, "add bf16", "add", "bf16", p, [("A", "bf16", uniform(n)), ("B", "bf16", uniform(n))], "bf16", n,
             add, 2 * 2.0 ** -8)


def gemm_ref(a, b, M, N, K):
    a, b = a.reshape(M, K), b.reshape(N, K)
    return a @ b.T, np.abs(a) @ np.abs(b).T


def test_gemm_linear(w, tmp):
    M, N, K = 33, 17, 29
    p = {"M": M, "N": N, "K": K}
    check_op(w, tmp, "gemm fp32", "gemm", "fp32", p, [("A", "f32", uniform(M * K)), ("B", "f32", uniform(N * K))],
             "f32", M * N, lambda a, b: gemm_ref(a, b, M, N, K), 4 * math.sqrt(K) * 2.0 ** -24 + 1e-7)
    check_op(w, tmp, "gemm fp64", "gemm", "fp64", p, [("A", "f64", uniform(M * K)), ("B", "f64", uniform(N * K))],
             "f64", M * N, lambda a, b: gemm_ref(a, b, M, N, K), 4 * math.sqrt(K) * 2.0 ** -53 + 1e-15)

    # opmeter's CPU bf16 gemm has an fp32 C: torch.mm(out_dtype=) where this torch has it, else unsupported
    case = Case(tmp, "gemm", "bf16", p, [("A", "bf16", uniform(M * K)), ("B", "bf16", uniform(N * K))], "f32", M * N)
    reply, got = case.run_check(w)
    if "unsupported" in reply:
        expect("gemm bf16 -> f32 C unsupported here", "out_dtype" in reply["unsupported"], json.dumps(reply))
    else:
        ref, mag = gemm_ref(*case.values, M, N, K)
        err = scaled_error(got, ref.reshape(-1), mag.reshape(-1)) if got is not None else math.inf
        expect("gemm bf16 -> f32 C", err <= 4 * math.sqrt(K) * 2.0 ** -24 + 1e-7, f"{json.dumps(reply)} err={err}")
    r = w.ask(**dict(case.setup, dtype="tf32"))
    expect("tf32 gemm on cpu is unsupported", "unsupported" in r, json.dumps(r))

    rows, h, out = 6, 37, 11
    for dtype, e in (("fp32", "f32"), ("bf16", "bf16")):
        for op, act, ln in (("linear", "gelu_tanh", False), ("linear", "none", False), ("ln_linear_relu", "relu", True)):
            params = {"batch": 2, "seq": 3, "hidden": h, "out": out}
            if op == "linear":
                params["act"] = act
            inputs = [("x", e, uniform(rows * h)), ("w", e, uniform(out * h)), ("bias", "f32", uniform(out))]
            if ln:
                inputs += [("gamma", "f32", uniform(h, .5, 1.5)), ("beta", "f32", uniform(h, -.5, .5))]

            def ref(x, wt, bias, *norm, act=act, ln=ln):
                x = x.reshape(rows, h)
                if ln:
                    scaled, beta = layernorm_ref(x, norm[0], norm[1], h)
                    x = scaled + beta
                wt = wt.reshape(out, h)
                z = x @ wt.T + bias
                return ACT_REF[act](z), 1.2 * (np.abs(x) @ np.abs(wt).T + np.abs(bias)) + 1e-6
            tol = (64 + 8 * math.sqrt(h)) * 2.0 ** -24 + storage_tol(dtype)
            check_op(w, tmp, f"{op} act={act} {dtype}", op, dtype, params, inputs, e, rows * out, ref, tol)


def test_conv_attention(w, tmp):
    n, c, oc, hh, r, stride, pad, groups = 2, 6, 4, 9, 3, 2, 1, 2
    oh = (hh + 2 * pad - r) // stride + 1
    cg = c // groups
    params = {"batch": n, "channels": c, "out_channels": oc, "image": hh, "kernel": r, "stride": stride,
              "padding": pad, "groups": groups, "bn": 1, "act": "relu"}
    inputs = [("x", "f32", uniform(n * c * hh * hh)), ("w", "f32", uniform(oc * cg * r * r)), ("bias", "f32", uniform(oc)),
              ("mean", "f32", uniform(oc, -.5, .5)), ("var", "f32", uniform(oc, .25, 1.5)),
              ("gamma", "f32", uniform(oc, .5, 1.5)), ("beta", "f32", uniform(oc, -.5, .5))]

    def conv_ref(x, wt, bias, mean, var, g, be):
        x = np.pad(x.reshape(n, c, hh, hh), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        wt = wt.reshape(oc, cg, r, r)
        z = np.zeros((n, oc, oh, oh))
        m = np.zeros_like(z)
        for o in range(oc):
            gi = o // (oc // groups)
            for i in range(oh):
                for j in range(oh):
                    patch = x[:, gi * cg:(gi + 1) * cg, i * stride:i * stride + r, j * stride:j * stride + r]
                    prod = patch * wt[o]
                    z[:, o, i, j] = prod.sum(axis=(1, 2, 3)) + bias[o]
                    m[:, o, i, j] = np.abs(prod).sum(axis=(1, 2, 3)) + abs(bias[o])
        scale = (g / np.sqrt(var + EPS))[None, :, None, None]
        shift = (be - mean * g / np.sqrt(var + EPS))[None, :, None, None]
        return np.maximum(z * scale + shift, 0), 1.2 * (m * np.abs(scale) + np.abs(shift)) + 1e-6
    check_op(w, tmp, "conv2d bn relu groups=2 fp32", "conv2d", "fp32", params, inputs, "f32", n * oc * oh * oh, conv_ref,
             (64 + 8 * math.sqrt(cg * r * r)) * 2.0 ** -24)

    b, heads, seq, d = 1, 2, 7, 16
    scale = float(np.float32(1) / np.sqrt(np.float32(d)))
    count = b * heads * seq * d
    for stage in ("scores", "probs", "full"):
        for causal in (0, 1):
            for dtype, e in (("fp32", "f32"), ("bf16", "bf16")):
                inputs = [("q", e, uniform(count)), ("k", e, uniform(count))]
                if stage == "full":
                    inputs.append(("v", e, uniform(count)))

                def att_ref(q, k, *v, stage=stage, causal=causal):
                    q, k = q.reshape(b * heads, seq, d), k.reshape(b * heads, seq, d)
                    prod = q[:, :, None, :] * k[:, None, :, :] * scale
                    s, smag = prod.sum(-1), np.abs(prod).sum(-1) + 1e-6
                    masked = np.triu(np.ones((seq, seq), bool), 1)[None] if causal else np.zeros((1, seq, seq), bool)
                    if stage == "scores":
                        return np.where(masked, -np.inf, s), np.where(masked, np.inf, smag)
                    s = np.where(masked, -np.inf, s)
                    pr = np.exp(s - s.max(-1, keepdims=True))
                    pr /= pr.sum(-1, keepdims=True)
                    if stage == "probs":
                        return pr, pr + 1.0 / seq
                    vv = v[0].reshape(b * heads, seq, d)
                    return pr @ vv, pr @ np.abs(vv) + 1e-6
                out_count = b * heads * seq * (d if stage == "full" else seq)
                tol = (64 + 8 * math.sqrt(seq + d)) * 2.0 ** -24 + storage_tol(dtype)
                check_op(w, tmp, f"attention {stage} causal={causal} {dtype}", "attention", dtype,
                         {"batch": b, "heads": heads, "seq": seq, "head_dim": d, "causal": causal, "stage": stage},
                         inputs, e, out_count, att_ref, tol)


def test_transformer_block(w, tmp):
    """A pre-LN block: numpy in float64 against the worker's torch form, inputs in the spec's order.
    Scale |y| + 1 with a fixed tolerance: a tiny block in fp32 stays far below it (opmeter's own
    check, with propagated scales, runs in tests/worker_test.cpp)."""
    b, seq, h, heads, mlp = 2, 7, 8, 2, 12
    d = h // heads
    scale = float(np.float32(1) / np.sqrt(np.float32(d)))
    bound = 1 / math.sqrt(h)
    for causal in (0, 1):
        inputs = [("x", "f32", uniform(b * seq * h)), ("ln1_gamma", "f32", uniform(h, .5, 1.5)),
                  ("ln1_beta", "f32", uniform(h, -.5, .5)), ("wqkv", "f32", uniform(3 * h * h, -bound, bound)),
                  ("bqkv", "f32", uniform(3 * h, -bound, bound)), ("wo", "f32", uniform(h * h, -bound, bound)),
                  ("bo", "f32", uniform(h, -bound, bound)), ("ln2_gamma", "f32", uniform(h, .5, 1.5)),
                  ("ln2_beta", "f32", uniform(h, -.5, .5)), ("w1", "f32", uniform(mlp * h, -bound, bound)),
                  ("b1", "f32", uniform(mlp, -bound, bound)), ("w2", "f32", uniform(h * mlp, -bound, bound)),
                  ("b2", "f32", uniform(h, -bound, bound))]

        def block_ref(x, g1, be1, wqkv, bqkv, wo, bo, g2, be2, w1, b1, w2, b2, causal=causal):
            def ln(v, g, be):
                xhat, _ = layernorm_ref(v, g, be, h)
                return xhat + be
            x = x.reshape(b * seq, h)
            qkv = ln(x, g1, be1) @ wqkv.reshape(3 * h, h).T + bqkv
            q, k, v = (qkv[:, i * h:(i + 1) * h].reshape(b, seq, heads, d).transpose(0, 2, 1, 3) for i in range(3))
            s = q @ k.transpose(0, 1, 3, 2) * scale
            if causal:
                s = np.where(np.triu(np.ones((seq, seq), bool), 1), -np.inf, s)
            p = np.exp(s - s.max(-1, keepdims=True))
            p /= p.sum(-1, keepdims=True)
            o = (p @ v).transpose(0, 2, 1, 3).reshape(b * seq, h)
            hres = x + o @ wo.reshape(h, h).T + bo
            u = ACT_REF["gelu"](ln(hres, g2, be2) @ w1.reshape(mlp, h).T + b1)
            y = hres + u @ w2.reshape(h, mlp).T + b2
            return y, np.abs(y) + 1
        check_op(w, tmp, f"transformer_block causal={causal} fp32", "transformer_block", "fp32",
                 {"batch": b, "seq": seq, "hidden": h, "heads": heads, "mlp": mlp, "act": "gelu", "causal": causal},
                 inputs, "f32", b * seq * h, block_ref, 1e-5)


def test_timing(w, tmp):
    h = 64
    case = Case(tmp, "gelu", "fp32", {"batch": 4, "seq": 8, "hidden": h}, [("x", "f32", uniform(4 * 8 * h))],
                "f32", 4 * 8 * h)
    case.setup["copies"] = 3
    r = w.ask(**case.setup)
    expect("setup gelu (3 copies)", r.get("ok") and isinstance(r.get("details"), dict), json.dumps(r))
    r = w.ask(cmd="run", copy=2, calls=4)
    expect("run copy 2, 4 calls (and the calls' own seconds)", r.get("ok") and 0 <= r.get("seconds", -1) < 10, json.dumps(r))
    expect("run copy 3 out of range is an error", "error" in w.ask(cmd="run", copy=3, calls=1))
    for cold in (True, False):
        r = w.ask(cmd="sample", calls=5, cold=cold)
        expect(f"sample cold={cold}", r.get("ok") and 0 < r.get("seconds", 0) < 10, json.dumps(r))
    expect("release", w.ask(cmd="release") == {"ok": True})
    expect("sample after release is an error", "error" in w.ask(cmd="sample", calls=1, cold=False))
    # a CUDA graph on the CPU cannot be: unsupported, not an error
    case.setup["graph"] = 10
    expect("graph on cpu is unsupported", "unsupported" in w.ask(**case.setup))


def test_errors(w, tmp):
    good = Case(tmp, "relu", "fp32", {"batch": 1, "seq": 2, "hidden": 8}, [("x", "f32", uniform(16))], "f32", 16)
    r = w.send_raw("{not json")
    expect("malformed JSON is an error", r.get("ok") is False and "error" in r, json.dumps(r))
    expect("non-object request is an error", "error" in w.send_raw("[1, 2]"))
    expect("unknown cmd is an error", "error" in w.ask(cmd="frobnicate"))
    bad = dict(good.setup, op="no_such_op")
    r = w.ask(**bad)
    expect("unknown op is unsupported", "unsupported" in r, json.dumps(r))
    bad = dict(good.setup, inputs=[dict(good.descs[0], path=os.path.join(tmp, "missing"))])
    r = w.ask(**bad)
    expect("missing input file is an error", "error" in r, json.dumps(r))
    bad = dict(good.setup, inputs=[dict(good.descs[0], count=17)])
    r = w.ask(**bad)
    expect("short input file is an error", "error" in r, json.dumps(r))
    bad = dict(good.setup, op="linear", params={"batch": "1", "seq": "2", "hidden": "8", "out": "4", "act": "zap"},
               inputs=good.descs * 3)
    r = w.ask(**bad)
    expect("error reply names the cause", "error" in r, json.dumps(r))
    for impl, why in (("torch_compile", "torch.compile"), ("triton", "CUDA"), ("nonesuch", "no impl")):
        r = w.ask(**dict(good.setup, impl=impl))
        expect(f"impl {impl} on this machine is unsupported", why in r.get("unsupported", ""), json.dumps(r))
    r = w.ask(**dict(good.setup, device="cuda:0"))
    expect("cuda:0 without CUDA is unsupported", "unsupported" in r, json.dumps(r))
    r = w.ask(**dict(good.setup, dtype="fp8"))
    expect("fp8 relu is unsupported", "unsupported" in r, json.dumps(r))
    gemm = Case(tmp, "gemm", "int8", {"M": 4, "N": 4, "K": 4}, [("A", "u8", rng.integers(0, 256, 16)),
                                                               ("B", "s8", rng.integers(-128, 128, 16))], "s32", 16)
    r = w.ask(**gemm.setup)
    expect("int8 gemm on cpu is unsupported", "unsupported" in r, json.dumps(r))
    r = w.ask(cmd="check", inputs=[], output=os.path.join(tmp, "o"))
    expect("check without a case is an error", "error" in r, json.dumps(r))
    # ... and the worker still serves
    reply, got = good.run_check(w)
    x = good.values[0]
    expect("worker serves after errors", got is not None and np.array_equal(got, np.maximum(x, 0)), json.dumps(reply))


def test_user_kernels(w, tmp):
    r = w.ask(cmd="describe", kernel={"file": EXAMPLES, "name": "my_add"})
    expect("describe my_add", r.get("ok") and r["op"] == "add" and r["reference"] is False
           and "bf16" in r["dtypes"] and r["summary"].startswith("A + B"), json.dumps(r))
    r = w.ask(cmd="describe", kernel={"file": EXAMPLES, "name": "add_relu"})
    expect("describe add_relu", r.get("ok") and r["op"] == "add_relu" and r["params"] == {"n": "1048576"}
           and r["reference"] is True, json.dumps(r))
    r = w.ask(cmd="describe", kernel={"file": EXAMPLES, "name": "nothing"})
    expect("describe a missing kernel is an error", "error" in r, json.dumps(r))

    n = 2 * 3 * 37
    kernel = {"file": EXAMPLES, "name": "my_add"}
    for dtype, e in (("fp32", "f32"), ("bf16", "bf16")):
        case = Case(tmp, "add", dtype, {"batch": 2, "seq": 3, "hidden": 37}, [("A", e, uniform(n)), ("B", e, uniform(n))],
                    e, n, impl="my_add", kernel=kernel)
        reply, got = case.run_check(w)
        a, b = case.values
        err = scaled_error(got, a + b, np.abs(a) + np.abs(b)) if got is not None else None
        expect(f"user kernel my_add {dtype}", got is not None and err <= 2 * (2.0 ** -8 if dtype == "bf16" else 2.0 ** -24),
               f"{json.dumps(reply)} err={err}")
        expect(f"user kernel my_add {dtype} sample", w.ask(cmd="sample", calls=3, cold=True).get("ok"))

    new = dict(cmd="setup", impl="add_relu", op="add_relu", dtype="fp32", params={"n": "1000"}, device="cpu",
               threads=1, copies=2, hot=False, graph=0, inputs=[], kernel={"file": EXAMPLES, "name": "add_relu"})
    r = w.ask(**new)
    expect("setup new op add_relu", r.get("ok"), json.dumps(r))
    r = w.ask(cmd="check", inputs=[])
    expect("check new op against its reference", r.get("ok") and r["max_error"] <= r["tolerance"] == 1e-5
           and "detail" in r, json.dumps(r))
    expect("sample new op", w.ask(cmd="sample", calls=2, cold=False).get("ok"))
    r = w.ask(**dict(new, dtype="fp16"))
    expect("undeclared dtype is unsupported", "unsupported" in r, json.dumps(r))

    # A module-level kernel that prints, to stdout and straight to fd 1: the protocol stays clean.
    path = os.path.join(tmp, "noisy_double.py")
    with open(path, "w") as f:
        f.write('"""2x, noisily"""\nimport os, torch\nop = "doubled"\n'
                'def setup(case):\n    print("hello from setup")\n    os.write(1, b"raw fd 1\\n")\n'
                '    return torch.arange(4.0)\n'
                'def run(state):\n    print("hello from run")\n    return state * 2\n')
    r = w.ask(cmd="describe", kernel={"file": path, "name": "noisy_double"})
    expect("module kernel describe", r.get("ok") and r["op"] == "doubled" and r["summary"] == "2x, noisily"
           and r["dtypes"] == ["fp32"], json.dumps(r))
    r = w.ask(**dict(new, impl="noisy_double", op="doubled", params={}, kernel={"file": path, "name": "noisy_double"}))
    expect("prints in user code stay off the protocol", r.get("ok"), json.dumps(r))
    r = w.ask(cmd="check", inputs=[])
    expect("no reference: unchecked", r == {"ok": True, "unchecked": True}, json.dumps(r))

    # A kernel that raises, and one that exits: errors, and the worker lives on.
    with open(path, "w") as f:
        f.write('import sys\nclass boom:\n    def setup(case):\n        raise RuntimeError("kaboom")\n'
                '    def run(state):\n        pass\nclass bye:\n    def setup(case):\n        sys.exit(3)\n'
                '    def run(state):\n        pass\n')
    for name, text in (("boom", "kaboom"), ("bye", "SystemExit")):
        r = w.ask(**dict(new, impl=name, kernel={"file": path, "name": name}))
        expect(f"kernel {name} is an error", text in r.get("error", ""), json.dumps(r))
    expect("worker alive after kernel errors", w.ask(cmd="release") == {"ok": True})


def main():
    w = Worker()
    h = w.hello
    expect("hello", h.get("hello") == "opmeter-worker" and h.get("protocol") == 1 and h.get("torch")
           and "triton" in h and "cuda_devices" in h, json.dumps(h))
    with tempfile.TemporaryDirectory(prefix="opmeter-worker-test-") as tmp:
        for test in (test_tensor_ops, test_gemm_linear, test_conv_attention, test_transformer_block, test_timing,
                     test_errors, test_user_kernels):
            test(w, tmp)
    expect("quit ends the worker", w.quit() == 0)
    print(f"\n{len(failures)} failure(s)" + "".join(f"\n  {f}" for f in failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
