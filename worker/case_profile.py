"""The `profile` request: an untimed pass over a set-up case, after its measurement, that writes a
PyTorch profiler trace of a few calls (chrome-trace JSON, which Perfetto and chrome://tracing open)
and, when asked, measures the case's peak memory and on CUDA writes a memory snapshot (the pickle
PyTorch's memory visualizer, pytorch.org/memory_viz, opens). Files go only where opmeter says:
its private directory; opmeter moves them next to the run's results.
"""
import pickle

PROFILE_CALLS = 3  # calls in the pass: the first may still warm caches; the trace shows them all
SNAPSHOT_ENTRIES = 100000  # allocation events the CUDA history keeps


def held_bytes(torch, args):
    """Bytes of the distinct tensor storages in the case's input sets (inputs, weights, saved
    tensors): what the case holds between calls."""
    seen, total, todo = set(), 0, list(args)
    while todo:
        item = todo.pop()
        if isinstance(item, (list, tuple)):
            todo.extend(item)
        elif isinstance(item, dict):
            todo.extend(item.values())
        elif isinstance(item, torch.Tensor):
            storage = item.untyped_storage() if hasattr(item, "untyped_storage") else item.storage()
            key = (storage.data_ptr(), item.device.type)
            if key not in seen:
                seen.add(key)
                total += storage.nbytes()
    return total


def peak_of_allocations(events):
    """The most bytes allocated at once above the start, from (time, signed bytes) events
    (allocations positive, frees negative), taken in time order."""
    live = peak = 0
    for _, nbytes in sorted(events, key=lambda e: e[0]):
        live += nbytes
        peak = max(peak, live)
    return peak


def memory_events(prof):
    """(start_us, nbytes) of the profiler's allocation events, or None where this torch does not
    expose them."""
    try:
        events = prof.profiler.kineto_results.events()
    except AttributeError:
        return None
    return [(e.start_us(), e.nbytes()) for e in events if e.name() == "[memory]"]


def start_memory_history(cuda_memory):
    """Starts recording CUDA allocations with their stacks (torch >= 2.1 takes enabled="all",
    older versions a bool). False where this torch cannot record them."""
    record = getattr(cuda_memory, "_record_memory_history", None)
    if record is None:
        return False
    try:
        record(enabled="all", max_entries=SNAPSHOT_ENTRIES)
    except TypeError:
        record(True)
    return True


def stop_memory_history(cuda_memory):
    try:
        cuda_memory._record_memory_history(enabled=None)
    except TypeError:
        cuda_memory._record_memory_history(False)


def dump_memory_snapshot(cuda_memory, path):
    """Writes the snapshot to `path` (the visualizer's pickle): _dump_snapshot where it exists,
    else the pickled _snapshot()."""
    if hasattr(cuda_memory, "_dump_snapshot"):
        cuda_memory._dump_snapshot(path)
        return
    with open(path, "wb") as f:
        pickle.dump(cuda_memory._snapshot(), f)


def run(torch, case, prepared, sync, memory_base, req):
    """The reply to a profile request: what was written and the memory measured."""
    calls = int(req.get("calls", PROFILE_CALLS))
    if calls < 1:
        raise ValueError(f"calls {calls}: a profile pass needs at least one call")
    trace, memory, snapshot = req.get("trace"), bool(req.get("memory", False)), req.get("snapshot")
    reply = {}
    recording = False
    if memory and case.cuda:
        torch.cuda.reset_peak_memory_stats(case.device)
        if snapshot:
            recording = start_memory_history(torch.cuda.memory)
            if not recording:
                reply["snapshot_why"] = f"torch {torch.__version__} cannot record CUDA allocations (no _record_memory_history)"
    activities = [torch.profiler.ProfilerActivity.CPU]
    if case.cuda:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    try:
        with torch.profiler.profile(activities=activities, record_shapes=True, profile_memory=memory) as prof:
            for i in range(calls):
                with torch.profiler.record_function(f"opmeter call {i}"):
                    prepared.call(i % case.copies)
            sync()
        if recording:
            dump_memory_snapshot(torch.cuda.memory, snapshot)
            reply["snapshot"] = True
    finally:
        if recording:
            stop_memory_history(torch.cuda.memory)
    if trace:
        prof.export_chrome_trace(trace)
        reply["trace"] = True
    if memory:
        reply.update(measured_memory(torch, case, prepared, memory_base, prof))
    return reply


def measured_memory(torch, case, prepared, memory_base, prof):
    if case.cuda:  # PyTorch's CUDA allocator keeps its high-water mark
        peak = max(0, torch.cuda.max_memory_allocated(case.device) - memory_base)
        return {"peak_memory_bytes": peak,
                "memory_note": "CUDA: torch.cuda.max_memory_allocated over the profiled calls, less what was "
                               "allocated before the case's setup"}
    events = memory_events(prof)
    if events is None:
        return {"memory_note": f"CPU: torch {torch.__version__}'s profiler gives no allocation events: peak not measured"}
    held, during = held_bytes(torch, prepared.args), peak_of_allocations(events)
    return {"peak_memory_bytes": held + during,
            "memory_note": f"CPU: {held} bytes held by the case's tensors (every input set) plus the most PyTorch "
                           f"allocated at once during the profiled calls ({during} bytes, from the profiler's "
                           f"allocation events); Python objects and library workspaces are not counted"}
