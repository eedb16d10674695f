"""A stand-in worker for opmeter's protocol tests: pure Python (no PyTorch), it computes relu on
fp32 inputs correctly, or misbehaves as FAKE_WORKER_MODE says:
  ok, wrong (a wrong output), short (too few output bytes), crash_on_sample, hang_on_sample,
  hang_on_setup (sleeps in setup, as a kernel that compiles for minutes),
  unsupported, error (setup replies so), protocol_99 (another protocol version), not_a_worker,
  crash_at_start (killed by SIGSEGV before its hello), exit_at_start (exits 1 before its hello),
  memory (its check replies report a peak memory of 12345 bytes, as a CUDA worker's do),
  held (its samples say they were held behind a launch hold, as a CUDA worker's do),
  model_ok / model_wrong / model_no_verdict / model_nan (for op `model`, which the worker checks:
  an output of 0.5s with a passing verdict, a failing one, none, or a NaN in the output),
  fork_and_crash_on_sample (forks a helper that keeps its stdout open and sleeps, then is killed
  by SIGSEGV), deep_reply (a setup reply nested a million levels deep), double_reply (two replies
  to setup), and with a JSON text after the colon: hello:{...} (fields put in the hello),
  setup_reply:TEXT (setup's reply line), run_seconds:TEXT and sample_seconds:TEXT (the seconds
  those replies give)."""
import array
import json
import os
import signal
import sys
import time

mode = os.environ.get("FAKE_WORKER_MODE", "ok")
mode, _, mode_text = mode.partition(":")
out = sys.stdout


def reply(obj):
    out.write(json.dumps(obj) + "\n")
    out.flush()


if mode == "not_a_worker":
    print("hello, I am a shell script")
    sys.exit(0)
if mode == "crash_at_start":
    print("fake worker: crashing while importing", file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGSEGV)
if mode == "exit_at_start":
    print("ImportError: fake worker: a module is missing", file=sys.stderr, flush=True)
    sys.exit(1)
reply({"hello": "opmeter-worker", "protocol": 99 if mode == "protocol_99" else 1, "python": sys.version.split()[0],
       "torch": None, "torch_why": "fake", "triton": None, "triton_why": "fake", "cuda_devices": 0,
       **(json.loads(mode_text) if mode == "hello" else {})})


def reply_raw(text):
    out.write(text + "\n")
    out.flush()


def read_f32(path):
    a = array.array("f")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    return a


x = None
for line in sys.stdin:
    req = json.loads(line)
    cmd = req["cmd"]
    if cmd == "quit":
        break
    if cmd == "setup":
        if mode == "unsupported":
            reply({"ok": False, "unsupported": "fake: no such device here"})
            continue
        if mode == "error":
            reply({"ok": False, "error": "fake: setup went wrong"})
            continue
        if mode == "hang_on_setup":
            print("fake worker: stuck in setup", file=sys.stderr, flush=True)
            time.sleep(3600)
        x = read_f32(req["inputs"][0]["path"])
        out_count = req["output"]["count"] if req.get("output") else 0
        if mode == "setup_reply":
            reply_raw(mode_text)
            continue
        if mode == "deep_reply":
            depth = 1000000
            reply_raw('{"ok": true, "details": {"x": ' + "[" * depth + "]" * depth + "}}")
            continue
        if mode == "double_reply":  # both lines in one write: they reach opmeter together, however busy the machine
            reply_raw(json.dumps({"ok": True, "details": {"fake": "yes"}}) + "\n" +
                      json.dumps({"ok": True, "details": {"fake": "again"}}))
            continue
        reply({"ok": True, "details": {"fake": "yes"}})
    elif cmd == "run":
        if mode == "run_seconds":
            reply_raw('{"ok": true, "seconds": ' + mode_text + "}")
            continue
        reply({"ok": True})
    elif cmd == "sample":
        if mode == "crash_on_sample":
            print("fake worker: about to crash", file=sys.stderr, flush=True)
            os._exit(3)
        if mode == "hang_on_sample":
            print("fake worker: stuck", file=sys.stderr, flush=True)
            time.sleep(3600)
        if mode == "fork_and_crash_on_sample":
            helper = os.fork()
            if helper == 0:  # holds the worker's stdout open: no end of file tells opmeter
                time.sleep(3600)
                os._exit(0)
            print(f"fake worker: helper {helper}, about to crash", file=sys.stderr, flush=True)
            os.kill(os.getpid(), signal.SIGSEGV)
        if mode == "sample_seconds":
            reply_raw('{"ok": true, "seconds": ' + mode_text + "}")
            continue
        t0 = time.perf_counter()
        for _ in range(req["calls"]):
            y = [v if v > 0 else 0.0 for v in x]
        held = {"hold": "held"} if mode == "held" else {}  # as the real worker's GPU samples say
        reply({"ok": True, "seconds": max(time.perf_counter() - t0, 1e-9), **held})
    elif cmd == "check" and mode.startswith("model_"):
        y = array.array("f", [0.5] * out_count)
        if mode == "model_nan":
            y[out_count - 1] = float("nan")
        with open(req["output"], "wb") as f:
            f.write(y.tobytes())
        verdicts = {"model_ok": {"max_error": 0.002, "tolerance": 0.001 * 10, "detail": "fake: sample 0"},
                    "model_wrong": {"max_error": 0.7, "tolerance": 0.001, "detail": "fake: sample 0"}}
        reply({"ok": True, **verdicts.get(mode, {"max_error": 0.0, "tolerance": 1.0} if mode == "model_nan" else {})})
    elif cmd == "check":
        x = read_f32(req["inputs"][0])
        y = array.array("f", [7.0 if mode == "wrong" else (v if v > 0 else 0.0) for v in x])
        if mode == "short":
            y = y[: len(y) // 2]
        with open(req["output"], "wb") as f:
            f.write(y.tobytes())
        reply({"ok": True, "peak_memory_bytes": 12345} if mode == "memory" else {"ok": True})
    elif cmd == "release":
        reply({"ok": True})
    else:
        reply({"ok": False, "error": "fake: unknown cmd " + cmd})
