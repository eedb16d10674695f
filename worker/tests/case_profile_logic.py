#!/usr/bin/env python3
"""The worker's profile pass (worker/case_profile.py): on the CPU for real (a chrome trace of a
linear layer's training step, its peak memory against the tensors' own sizes), and its CUDA path
(peak from max_memory_allocated, the memory snapshot through either of PyTorch's APIs, history
recording stopped afterwards) against stand-ins, as there is no GPU here.

    /usr/bin/python3 worker/tests/case_profile_logic.py

Exits non-zero on any failure.
"""
import json
import os
import pickle
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import case_profile as cp  # noqa: E402

failures = []


def expect(name, cond, info=""):
    if not cond:
        failures.append(f"{name}: {info}")


def test_peak_of_allocations():
    # Out of time order on purpose: the peak is of the running total in time order.
    events = [(30, -100), (10, 100), (20, 50), (40, 70), (35, -50)]
    expect("peak in time order", cp.peak_of_allocations(events) == 150, cp.peak_of_allocations(events))
    expect("no events", cp.peak_of_allocations([]) == 0)
    expect("frees of what was there before count nothing", cp.peak_of_allocations([(1, -64), (2, 32)]) == 0)


# --- CUDA stand-ins ---

class NewMemoryApi:
    """torch >= 2.1: _record_memory_history(enabled=..., max_entries=...), _dump_snapshot(path)."""

    def __init__(self):
        self.calls = []

    def _record_memory_history(self, enabled="all", max_entries=0):
        self.calls.append(("record", enabled, max_entries))

    def _dump_snapshot(self, path):
        self.calls.append(("dump", path))
        with open(path, "wb") as f:
            pickle.dump({"segments": [], "device_traces": [[{"action": "alloc"}]]}, f)


class OldMemoryApi:
    """torch 2.0: _record_memory_history(bool) and _snapshot() only."""

    def __init__(self):
        self.calls = []

    def _record_memory_history(self, enabled):
        if not isinstance(enabled, bool):
            raise TypeError("_record_memory_history(): argument 'enabled' must be bool")
        self.calls.append(("record", enabled))

    def _snapshot(self):
        return {"segments": [{"total_size": 2 << 20}]}


class FakeProfile:
    def __init__(self, **kwargs):
        self.kwargs = kwargs

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def export_chrome_trace(self, path):
        with open(path, "w") as f:
            json.dump({"traceEvents": [{"name": "fake"}]}, f)


def fake_torch(memory_api):
    cuda = types.SimpleNamespace(memory=memory_api, reset_peak_memory_stats=lambda d: memory_api.calls.append(("reset", d)),
                                 max_memory_allocated=lambda d: 5000)
    profiler = types.SimpleNamespace(profile=FakeProfile, record_function=lambda name: FakeProfile(),
                                     ProfilerActivity=types.SimpleNamespace(CPU="cpu", CUDA="cuda"))
    return types.SimpleNamespace(cuda=cuda, profiler=profiler, __version__="stand-in")


def test_cuda_path(tmp):
    case = types.SimpleNamespace(cuda=True, device="cuda:0", copies=2)
    calls = []
    prepared = types.SimpleNamespace(call=lambda copy: calls.append(copy), args=[])
    for api in (NewMemoryApi(), OldMemoryApi()):
        name = type(api).__name__
        snap = os.path.join(tmp, f"{name}.pickle")
        calls.clear()
        reply = cp.run(fake_torch(api), case, prepared, lambda: None, 1200,
                       {"calls": 3, "memory": True, "snapshot": snap, "trace": None})
        expect(f"{name}: calls over the copies", calls == [0, 1, 0], calls)
        expect(f"{name}: peak less the base", reply.get("peak_memory_bytes") == 3800, reply)
        expect(f"{name}: snapshot said", reply.get("snapshot") is True, reply)
        with open(snap, "rb") as f:
            expect(f"{name}: snapshot is a pickle", isinstance(pickle.load(f), dict))
        records = [c for c in api.calls if c[0] == "record"]
        expect(f"{name}: recording on, then off", len(records) == 2 and records[-1][1] in (None, False), api.calls)
        expect(f"{name}: peak reset first", api.calls[0] == ("reset", "cuda:0"), api.calls)
    # A torch that cannot record allocations: no snapshot, a reason, the peak still.
    bare = types.SimpleNamespace(calls=[])
    reply = cp.run(fake_torch(bare), case, prepared, lambda: None, 0,
                   {"memory": True, "snapshot": os.path.join(tmp, "none.pickle")})
    expect("no history api: reason", "cannot record" in reply.get("snapshot_why", ""), reply)
    expect("no history api: no file", not os.path.exists(os.path.join(tmp, "none.pickle")))
    expect("no history api: peak", reply.get("peak_memory_bytes") == 5000, reply)
    # Without memory: nothing recorded, no memory fields.
    api = NewMemoryApi()
    reply = cp.run(fake_torch(api), case, prepared, lambda: None, 0, {"trace": os.path.join(tmp, "t.json")})
    expect("trace only: no memory", "peak_memory_bytes" not in reply and not api.calls, (reply, api.calls))
    expect("trace only: trace", reply.get("trace") is True, reply)


def test_cpu_for_real(tmp):
    try:
        import torch
    except ImportError as e:
        print(f"case_profile_logic: no torch ({e}): CPU pass not run")
        return
    rows, hidden, out = 64, 96, 128
    args = []
    for _ in range(2):
        x = torch.randn(rows, hidden)
        w = torch.randn(out, hidden, requires_grad=True)
        args.append((x, w, w[:1]))  # a view of w: its storage counts once

    def call(copy):
        x, w, _ = args[copy]
        y = torch.nn.functional.linear(x, w)
        return torch.autograd.grad(y, (w,), torch.ones_like(y))

    case = types.SimpleNamespace(cuda=False, device="cpu", copies=2)
    prepared = types.SimpleNamespace(call=call, args=args)
    expect("held bytes", cp.held_bytes(torch, args) == 2 * 4 * (rows * hidden + out * hidden), cp.held_bytes(torch, args))
    trace = os.path.join(tmp, "cpu.trace.json")
    reply = cp.run(torch, case, prepared, lambda: None, 0, {"trace": trace, "memory": True, "calls": 2})
    expect("trace said", reply.get("trace") is True, reply)
    with open(trace) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    names = {e.get("name") for e in events}
    expect("trace has the calls", {"opmeter call 0", "opmeter call 1"} <= names, sorted(n for n in names if n)[:20])
    expect("trace has the linear", any(n and n.startswith("aten::") and "mm" in n for n in names), sorted(n for n in names if n)[:20])
    if cp.memory_events(_Probe(torch)) is None:
        expect("no allocation events: a note", "not measured" in reply.get("memory_note", ""), reply)
        return
    # Each call allocates y (rows x out), grad of y and dW (out x hidden) in fp32 at least.
    at_least = 2 * 4 * (rows * hidden + out * hidden) + 4 * (rows * out + out * hidden)
    at_most = 2 * 4 * (rows * hidden + out * hidden) + 4 * 4 * (rows * out + out * hidden)
    peak = reply.get("peak_memory_bytes", 0)
    expect("cpu peak within the tensors' sizes", at_least <= peak <= at_most, (at_least, peak, at_most, reply))
    expect("cpu note", "held by the case's tensors" in reply.get("memory_note", ""), reply)


class _Probe:
    """A profiler run of one allocation: whether this torch exposes allocation events."""

    def __init__(self, torch):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as p:
            torch.ones(16)
        self.profiler = p.profiler


def main():
    test_peak_of_allocations()
    with tempfile.TemporaryDirectory() as tmp:
        test_cuda_path(tmp)
        test_cpu_for_real(tmp)
    for f in failures:
        print("FAIL", f)
    print(f"case_profile_logic: {len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
