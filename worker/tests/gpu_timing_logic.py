#!/usr/bin/env python3
"""The worker's GPU timing decisions, on the CPU: how long a sample's launch hold lasts
(worker/gpu_timing.py), what a sample says about it, and the torch.compile mode of each impl.

    /usr/bin/python3 worker/tests/gpu_timing_logic.py

Exits non-zero on any failure.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import gpu_timing as g  # noqa: E402

failures = []


def expect(name, cond, info=""):
    if not cond:
        failures.append(f"{name}: {info}")


def close(a, b):
    return abs(a - b) <= 1e-12 + 1e-9 * abs(b)


def test_hold_seconds():
    # Twice the measured issue time of the sample's calls.
    expect("twice the issue time", close(g.hold_seconds(10, True, 30e-6), 2 * 10 * 30e-6), g.hold_seconds(10, True, 30e-6))
    # Before any sample measured it: the generous first guess.
    expect("first guess", close(g.hold_seconds(4, True, None), 2 * 4 * g.FIRST_ISSUE_S))
    expect("zero measured is no measurement", close(g.hold_seconds(4, True, 0.0), 2 * 4 * g.FIRST_ISSUE_S))
    # Bounds: never shorter than the minimum, never longer than the maximum.
    expect("minimum", close(g.hold_seconds(1, True, 1e-9), g.MIN_HOLD_S))
    expect("maximum", close(g.hold_seconds(128, True, 1.0), g.MAX_HOLD_S))
    # The plugin's limit: 128 calls are held, 129 are not (their dispatch is amortised).
    expect("128 held", g.hold_seconds(g.MAX_HELD_CALLS, True, 1e-6) > 0)
    expect("129 not held", g.hold_seconds(g.MAX_HELD_CALLS + 1, True, 1e-6) == 0.0)
    expect("128 like the plugin", g.MAX_HELD_CALLS == plugin_max_held_calls(), plugin_max_held_calls())
    # No torch.cuda._sleep in this torch: no hold.
    expect("no _sleep", g.hold_seconds(1, False, 1e-6) == 0.0)


def plugin_max_held_calls():
    """kMaxHeldCalls as src/cuda/plugin/timer.cpp declares it."""
    with open(os.path.join(os.path.dirname(os.path.dirname(HERE)), "src", "cuda", "plugin", "timer.cpp")) as f:
        for line in f:
            if "kMaxHeldCalls =" in line:
                return int(line.split("=")[1].strip().rstrip(";"))
    return None


def test_sleep_cycles():
    # At the fastest clock any GPU has the hold lasts exactly as asked; at slower ones longer.
    expect("cycles", g.sleep_cycles(1e-3) == int(1e-3 * g.CLOCK_BOUND_HZ), g.sleep_cycles(1e-3))
    expect("a 1.98 GHz H100 holds at least as long", g.sleep_cycles(1e-3) / 1.98e9 >= 1e-3)
    expect("a 2.52 GHz RTX 4090 holds at least as long", g.sleep_cycles(1e-3) / 2.52e9 >= 1e-3)


def test_hold_outcome():
    expect("held", g.hold_outcome(1e-3, 0.5e-3) == g.HELD)
    expect("held at the edge", g.hold_outcome(1e-3, 1e-3) == g.HELD)
    expect("ran short", g.hold_outcome(1e-3, 2e-3) == g.RAN_SHORT)
    expect("unheld", g.hold_outcome(0.0, 1e-3) == g.UNHELD)


def test_compile_modes():
    import torch_ops  # needs torch (Debian's python3-torch): only its table is read here
    modes = torch_ops.COMPILE_MODES
    expect("eager", modes["torch"] is None, modes)
    expect("default", modes["torch_compile"] == "default", modes)
    # No CUDA-graph trees: they copy every input on each call and clash with graph=U.
    expect("max without cudagraphs", modes["torch_compile_max"] == "max-autotune-no-cudagraphs", modes)


def main():
    test_hold_seconds()
    test_sleep_cycles()
    test_hold_outcome()
    test_compile_modes()
    for f in failures:
        print("FAIL", f)
    print(f"gpu_timing_logic: {'FAILED' if failures else 'ok'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
