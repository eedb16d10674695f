#!/usr/bin/env python3
"""opmeter's worker: runs impls that live outside opmeter's process (PyTorch eager,
torch.compile, our Triton kernels, users' Python kernels) for the engine, which drives it over a
pipe. One JSON object per line each way; the protocol is docs/worker-protocol.md.

    python3 -u worker/opmeter_worker.py

stdout carries the protocol only: at start the real stdout is kept for replies and fd 1 (and
sys.stdout) point at stderr, so prints from user code or native libraries cannot corrupt it.
"""
import importlib.metadata
import importlib.util
import json
import math
import os
import platform
import shutil
import stat
import sys
import threading
import time
import traceback

sys.dont_write_bytecode = True  # no __pycache__ beside users' kernel files (nor ours)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # our modules, wherever we run from

import impl_table  # noqa: E402
from case_io import Unsupported  # noqa: E402
from session import Session  # noqa: E402

PROTOCOL = 1
MAX_ERROR_CHARS = 800


def claim_stdout():
    """The protocol's channel: a duplicate of fd 1, after which fd 1 is stderr."""
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(fd, "w", encoding="utf-8", buffering=1)


def claim_stdin():
    """The requests' channel: a duplicate of fd 0, after which fd 0 (and sys.stdin) read
    /dev/null, so that a kernel that reads its input (input(), pdb) meets its end at once instead
    of waiting on opmeter's requests until the deadline, or eating one."""
    fd = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(os.devnull, encoding="utf-8")
    return os.fdopen(fd, "r", encoding="utf-8")


PARENT_POLL_S = 0.25


def remove_private_dir(path):
    """opmeter's private directory (src/util/private_temp.hpp), only if it is one: a directory,
    not a link, ours, named opmeter-*."""
    try:
        st = os.lstat(path)
    except OSError:
        return
    if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and os.path.basename(path).startswith("opmeter-"):
        shutil.rmtree(path, ignore_errors=True)


def ancestors(limit=8):
    """The worker's parent, its parent and so on (at most `limit`, never init), from /proc; just
    the parent where /proc cannot be read."""
    pids, pid = [], os.getppid()
    while pid > 1 and len(pids) < limit:
        pids.append(pid)
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
            pid = int(stat.rsplit(")", 1)[1].split()[1])  # the field after the command's name
        except (OSError, ValueError, IndexError):
            break
    return pids


def watch_parent():
    """Ends the worker when the opmeter that started it is gone (SIGKILL gives opmeter no chance
    to stop it): a thread, since the main one may be inside a kernel's setup for minutes. It
    polls the process tree rather than using PR_SET_PDEATHSIG, which fires when the *thread* that
    spawned the worker ends, not the process. opmeter is the parent, or an ancestor where
    OPMETER_PYTHON is a wrapper that runs Python without exec: when opmeter ends, the wrapper is
    handed to init and opmeter is no longer above the worker."""
    parent = int(os.environ.get("OPMETER_PARENT_PID") or 0)
    private = os.environ.get("OPMETER_PRIVATE_DIR") or ""
    if parent <= 1:
        return

    def leave():
        if private:
            remove_private_dir(private)
        os._exit(1)

    if parent not in ancestors():
        if not os.path.exists(f"/proc/{parent}"):
            leave()  # killed while this worker started: its files are for no one now
        return  # set by another process, still running: nothing of ours to watch or remove

    def loop():
        while parent in ancestors():
            time.sleep(PARENT_POLL_S)
        leave()

    threading.Thread(target=loop, name="opmeter-parent-watch", daemon=True).start()


def import_torch():
    try:
        import torch
        return torch, ""
    except Exception as e:  # noqa: BLE001 - any failure to import is a reason, not a crash
        return None, f"{type(e).__name__}: {e}"


def triton_version():
    """(version, why) without importing triton where the package metadata says it (import is slow)."""
    if importlib.util.find_spec("triton") is None:
        return None, "triton is not installed (no module named 'triton')"
    for dist in ("triton", "pytorch-triton"):
        try:
            return importlib.metadata.version(dist), ""
        except importlib.metadata.PackageNotFoundError:
            pass
    try:
        import triton
        return triton.__version__, ""
    except Exception as e:  # noqa: BLE001
        return None, f"{type(e).__name__}: {e}"


def hello(torch, torch_why):
    triton, triton_why = triton_version()
    devices = 0
    if torch is not None:
        try:
            devices = torch.cuda.device_count()
        except Exception:  # noqa: BLE001 - a broken CUDA setup is "no devices"
            devices = 0
    return {"hello": "opmeter-worker", "protocol": PROTOCOL, "python": platform.python_version(),
            "torch": torch.__version__ if torch is not None else None, "torch_why": torch_why,
            "triton": triton, "triton_why": triton_why, "cuda_devices": devices,
            "impls": impl_table.TABLE}


def error_text(e):
    """The exception and where it came from: the last frames, innermost first."""
    frames = traceback.extract_tb(e.__traceback__)[-3:]
    where = " <- ".join(f"{os.path.basename(f.filename)}:{f.lineno} in {f.name}" for f in reversed(frames))
    msg = " ".join(str(e).split())
    text = f"{type(e).__name__}: {msg}" + (f" (at {where})" if where else "")
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS - 3] + "..."


def finite(value):
    """JSON has no NaN or infinity: report them as the largest double, with the sign."""
    if isinstance(value, float) and not math.isfinite(value):
        return math.copysign(sys.float_info.max, value) if not math.isnan(value) else sys.float_info.max
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


class Worker:
    def __init__(self, out, torch, torch_why):
        self.out = out
        self.session = Session(torch, torch_why)
        self.handlers = {
            "setup": self.session.setup,
            "run": self.session.run,
            "sample": self.session.sample,
            "check": lambda req: self.session.check(req, self._user_kernels()),
            "describe": self.describe,
            "profile": self.session.profile,
            "release": self.session.release,
        }

    @staticmethod
    def _user_kernels():
        import user_kernels
        return user_kernels

    def describe(self, req):
        kernel = req.get("kernel")
        if not isinstance(kernel, dict):
            raise ValueError("describe needs 'kernel': {\"file\": ..., \"name\": ...}")
        return self._user_kernels().describe(kernel)

    def reply(self, obj):
        try:
            line = json.dumps(finite(obj), allow_nan=False)
        except (TypeError, ValueError) as e:  # a reply that cannot be JSON is itself an error
            line = json.dumps({"ok": False, "error": f"reply not serializable: {e}"})
        self.out.write(line + "\n")
        self.out.flush()

    def handle(self, line):
        """The reply to one request line, or None for quit."""
        try:
            req = json.loads(line)
        except ValueError as e:
            return {"ok": False, "error": f"malformed request (not JSON): {e}"}
        if not isinstance(req, dict) or not isinstance(req.get("cmd"), str):
            return {"ok": False, "error": "malformed request: expected a JSON object with a string 'cmd'"}
        cmd = req["cmd"]
        if cmd == "quit":
            return None
        if cmd not in self.handlers:
            return {"ok": False, "error": f"unknown cmd '{cmd}': expected one of {', '.join(self.handlers)}, quit"}
        try:
            return {"ok": True, **self.handlers[cmd](req)}
        except Unsupported as e:
            return {"ok": False, "unsupported": str(e)}
        except (Exception, SystemExit) as e:  # noqa: BLE001 - a bad request or kernel must not end the worker
            traceback.print_exc(file=sys.stderr)
            return {"ok": False, "error": error_text(e)}

    def serve(self, inp):
        while True:
            line = inp.readline()
            if not line:  # opmeter closed the pipe
                return
            if not line.strip():
                continue
            reply = self.handle(line)
            if reply is None:
                return
            self.reply(reply)
            sys.stderr.flush()


def main():
    watch_parent()
    out = claim_stdout()
    requests = claim_stdin()
    torch, torch_why = import_torch()
    worker = Worker(out, torch, torch_why)
    worker.reply(hello(torch, torch_why))
    worker.serve(requests)


if __name__ == "__main__":
    main()
