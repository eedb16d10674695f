"""One case at a time: setup, run, sample (the timing), check, release."""
import gc
import importlib
import re
import sys
import time

import gpu_timing
import impl_table
from case_io import Case, Unsupported, write_tensor

TORCH_IMPLS = impl_table.impls_of("torch_ops")  # impls.json
QUANT_IMPLS = impl_table.impls_of("quant_ops")  # worker/torch_quant.py
FALLBACK_L2_FLUSH_BYTES = 256 << 20  # when this torch does not report the L2 size
GRAPH_WARMUP_CALLS = 3
# Messages of PyTorch's exceptions that mean "cannot run here" rather than "ran wrong", for our own
# impls (a user kernel says so itself: NotImplementedError). "requires grad" is a bug, not a limit.
UNSUPPORTED_PATTERN = re.compile(r"not implemented|not supported|unsupported|does not support|only supported|"
                                 r"needs to be|divisible by|requires(?![ _]grad)", re.IGNORECASE)


def first_line(e):
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


class Session:
    def __init__(self, torch, torch_why):
        self.torch = torch
        self.torch_why = torch_why
        self._clear()

    def _clear(self):
        self.case = None
        self.prepared = None
        self.next_copy = 0      # where the next sample's rotation over the copies starts
        self.graph = None       # the captured CUDA graph of case.graph calls
        self.graph_args = None  # the input sets the graph reads: alive as long as it is
        self.flush = None       # a buffer twice the L2 size, read before cold GPU samples
        self.memory_base = 0    # CUDA bytes allocated when the case's count started
        self.issue_s_per_call = None  # host time to issue one call, from the last GPU sample

    # --- requests ---

    def setup(self, req):
        self.release()
        torch = self.torch
        if torch is None:
            # Name the interpreter: a venv's python3 first on the PATH silently loses every torch impl.
            raise Unsupported(f"torch cannot be imported by {sys.executable}: {self.torch_why}; set OPMETER_PYTHON "
                              f"to a Python that has PyTorch")
        case = Case(torch, req)
        if case.graph > 0 and not case.cuda:
            raise Unsupported("CUDA graphs (graph > 0) need a CUDA device")
        if case.cuda:
            torch.cuda.set_device(case.device)
            # The flush buffer is the measurement's, not the case's: allocated before the peak
            # memory count starts.
            self.flush = torch.zeros(self._l2_bytes(case) // 2, dtype=torch.int32, device=case.device)
            torch.cuda.reset_peak_memory_stats(case.device)
            self.memory_base = torch.cuda.memory_allocated(case.device)
        elif case.threads > 0:
            torch.set_num_threads(case.threads)
        try:
            self.case = case
            try:
                self.prepared = self._make(case)
            except NotImplementedError as e:  # "cannot run this case", said in setup as in run
                raise Unsupported(f"{case.impl} {case.op} {case.dtype_name} on {case.device}: {first_line(e)}") from e
            out = self._first_call()
            if case.output is not None and out is not None and out.numel() != int(case.output["count"]):
                raise ValueError(f"{case.impl} {case.op} gave {out.numel()} elements (shape {tuple(out.shape)}), "
                                 f"the output has {case.output['count']}")
            if case.graph > 0:
                self._capture(case.graph)
        except BaseException:
            self.release()
            raise
        details = {k: str(v) for k, v in self.prepared.details.items()}
        if case.impl == "triton" and case.op in ("gemm", "linear"):
            best = importlib.import_module("triton_kernels").tuned_config()
            if best:
                details["triton_config"] = best
        if case.graph > 0:
            details["cuda_graph_calls"] = str(case.graph)
        if not case.cuda:
            details["threads"] = str(torch.get_num_threads())
        return {"details": details}

    def run(self, req):
        self._need_case()
        copy, calls = int(req.get("copy", 0)), int(req.get("calls", 1))
        if not 0 <= copy < self.case.copies:
            raise ValueError(f"copy {copy} out of range: the case has {self.case.copies} copies")
        t0 = time.perf_counter_ns()
        if self.graph is not None and calls == self.case.graph:
            self.graph.replay()
        else:
            for _ in range(calls):
                self.prepared.call(copy)
        self._sync()
        # Wall time of the calls here, without the pipe: opmeter sizes its batches by it.
        return {"seconds": (time.perf_counter_ns() - t0) * 1e-9}

    def sample(self, req):
        self._need_case()
        calls, cold = int(req.get("calls", 1)), bool(req.get("cold", False))
        if calls < 1:
            raise ValueError(f"calls {calls}: a sample needs at least one call")
        if self.graph is not None and calls != self.case.graph:
            raise ValueError(f"the case captured a CUDA graph of {self.case.graph} calls; a sample is one replay "
                             f"(calls {self.case.graph}), not {calls}")
        if not self.case.cuda:
            return {"seconds": self._sample_cpu(calls)}
        seconds, hold = self._sample_cuda(calls, cold)
        return {"seconds": seconds, "hold": hold}

    def check(self, req, user_kernels=None):
        self._need_case()
        case, torch = self.case, self.torch
        if case.kernel is not None and case.output is None:  # a new op: the kernel checks itself
            return user_kernels.check_own(torch, case, self.prepared, self._sync)
        if not req.get("output"):
            raise ValueError("check needs 'output': the file to write the output to")
        fresh = [t.to(case.device) for t in case.load_inputs(list(req.get("inputs") or []))]
        self.prepared.refresh(0, fresh)
        out = self.prepared.check_call(0)
        self._sync()
        write_tensor(torch, out, req["output"], case.output["elem"], int(case.output["count"]))
        reply = {}
        if case.cuda:  # the case's allocation high-water mark so far (setup, timing, checks)
            reply["peak_memory_bytes"] = max(0, torch.cuda.max_memory_allocated(case.device) - self.memory_base)
        if getattr(self.prepared, "verify", None) is not None:  # an op opmeter cannot check (model)
            reply.update(self.prepared.verify(fresh, out))
        return reply

    def profile(self, req):
        """An untimed pass after the measurement: a profiler trace, peak memory, a CUDA memory
        snapshot (worker/case_profile.py)."""
        self._need_case()
        return importlib.import_module("case_profile").run(self.torch, self.case, self.prepared, self._sync,
                                                           self.memory_base, req)

    def release(self, req=None):
        had_cuda = self.case is not None and self.case.cuda
        self._clear()
        gc.collect()
        if had_cuda:
            self.torch.cuda.empty_cache()
        return {}

    # --- helpers ---

    def _need_case(self):
        if self.prepared is None:
            raise ValueError("no case is set up (send setup first)")

    def _make(self, case):
        input_sets = case.input_copies()
        if case.kernel is not None:
            return importlib.import_module("user_kernels").make(self.torch, case, input_sets)
        if case.impl in TORCH_IMPLS:
            return importlib.import_module("torch_ops").make(case, input_sets)
        if case.impl in QUANT_IMPLS:
            return importlib.import_module("torch_quant").make(case, input_sets)
        if case.impl == "triton":
            if not case.cuda:
                raise Unsupported("triton needs a CUDA device")
            try:
                triton_kernels = importlib.import_module("triton_kernels")
            except Exception as e:  # not installed, or broken against this torch/CUDA
                raise Unsupported(f"triton cannot be imported: {type(e).__name__}: {first_line(e)}") from None
            return triton_kernels.make(case, input_sets)
        raise Unsupported(f"the worker has no impl '{case.impl}' (it has {', '.join(TORCH_IMPLS + QUANT_IMPLS)}, triton "
                          f"and user kernels)")

    def _first_call(self):
        """One call at setup: compiles (torch.compile, Triton, autotuning) out of the timing, and
        turns what cannot run here into an unsupported reply."""
        case = self.case
        try:
            out = self.prepared.call(0)
            self._sync()
        except Exception as e:
            if case.impl.startswith("torch_compile"):
                raise Unsupported(f"{case.impl}: compiling {case.op} failed: {type(e).__name__}: {first_line(e)}") from e
            own_impl = case.kernel is None
            if isinstance(e, NotImplementedError) or (own_impl and UNSUPPORTED_PATTERN.search(first_line(e))):
                raise Unsupported(f"{case.impl} {case.op} {case.dtype_name} on {case.device}: {first_line(e)}") from e
            raise
        return out if hasattr(out, "numel") else None

    def _sync(self):
        if self.case is not None and self.case.cuda:
            self.torch.cuda.synchronize(self.case.device)

    def _rotate(self):
        copy = self.next_copy
        self.next_copy = (copy + 1) % self.case.copies
        return copy

    def _sample_cpu(self, calls):
        # torch's CPU ops are synchronous: the wall time around the calls is their time. Cold
        # samples on the CPU come from rotating over copies larger than the caches together.
        call, rotate = self.prepared.call, self._rotate
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            call(rotate())
        t1 = time.perf_counter_ns()
        return (t1 - t0) * 1e-9

    def _sample_cuda(self, calls, cold):
        """(seconds, hold outcome): CUDA events around the calls, which wait behind a
        torch.cuda._sleep until they are all issued where the sample is held (gpu_timing.py)."""
        torch = self.torch
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        self._sync()
        if cold:
            # Read, not written: a write leaves L2 dirty and the sample would pay for its write-back
            # (src/cuda/plugin/l2_flush.hpp). Before the start event, on the same stream.
            self.flush.sum()
        launches = 1 if self.graph is not None else calls
        hold_s = gpu_timing.hold_seconds(launches, hasattr(torch.cuda, "_sleep"), self.issue_s_per_call)
        t0 = time.perf_counter()
        if hold_s > 0:
            torch.cuda._sleep(gpu_timing.sleep_cycles(hold_s))
        start.record()
        if self.graph is not None:
            self.graph.replay()
        else:
            call, rotate = self.prepared.call, self._rotate
            for _ in range(calls):
                call(rotate())
        end.record()
        issued_s = time.perf_counter() - t0
        self.issue_s_per_call = issued_s / launches
        end.synchronize()
        return start.elapsed_time(end) * 1e-3, gpu_timing.hold_outcome(hold_s, issued_s)

    def _capture(self, calls):
        """A CUDA graph of `calls` calls over the copies in turn, warmed up on a side stream first
        (as torch.cuda.graphs asks: lazy initialisation must not happen during capture)."""
        torch, prepared, copies = self.torch, self.prepared, self.case.copies
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        try:
            with torch.cuda.stream(side):
                for i in range(GRAPH_WARMUP_CALLS):
                    prepared.call(i % copies)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for i in range(calls):
                    prepared.call(i % copies)
            torch.cuda.synchronize()
        except Exception as e:
            raise Unsupported(f"{self.case.impl} cannot be captured in a CUDA graph: {type(e).__name__}: "
                              f"{first_line(e)}") from e
        self.graph, self.graph_args = graph, list(prepared.args)

    def _l2_bytes(self, case):
        props = self.torch.cuda.get_device_properties(case.device)
        for name in ("L2_cache_size", "l2_cache_size"):
            size = getattr(props, name, None)
            if size:
                return int(size)
        return FALLBACK_L2_FLUSH_BYTES // 2
