"""Users' Python kernels (docs/worker-protocol.md, "Your own Python kernel").

A kernel is an attribute of a Python file with `setup(case) -> state` and `run(state) -> output
tensor`: a class whose functions take no self (as in the doc's example), a class whose methods
do (instantiated once), or any object. When the name is the file's stem and the module itself
defines setup and run, the module is the kernel.
"""
import copy
import importlib.util
import inspect
import itertools
import math
import os
import re
import sys
import types

from case_io import Prepared, Unsupported

DEFAULT_DTYPES = ["fp32"]
# Tolerance on max |got - ref| / (|ref| + 1) for a new op's own reference, by dtype.
DEFAULT_TOLERANCE = {"fp64": 1e-12, "fp32": 1e-5, "tf32": 1e-3, "fp16": 1e-3, "bf16": 1e-2, "fp8": 1e-1,
                     "fp8_e4m3": 1e-1, "int8": 0.0}
LARGEST = sys.float_info.max  # a NaN or infinite error, as JSON can carry it

_serial = itertools.count()


def _load_module(path):
    if not os.path.isfile(path):
        raise ValueError(f"kernel file {path} does not exist")
    stem = os.path.splitext(os.path.basename(path))[0]
    # A fresh, unique module name: two files may share a stem, and a file may change between loads.
    name = f"opmeter_user_{re.sub(r'[^0-9A-Za-z_]', '_', stem)}_{next(_serial)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ValueError(f"{path} cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    spec.loader.exec_module(module)
    return module, stem


def _is_kernel(obj):
    return callable(getattr(obj, "setup", None)) and callable(getattr(obj, "run", None))


def _wants_instance(cls):
    """A class whose setup takes (self, case): instantiate it; setup(case) is called on the class."""
    try:
        params = inspect.signature(cls.setup).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2


def load(kernel):
    """The kernel object named by a request's {"file", "name"}."""
    path, name = kernel.get("file", ""), kernel.get("name", "")
    module, stem = _load_module(path)
    obj = getattr(module, name, None)
    if not _is_kernel(obj):
        if name == stem and _is_kernel(module):
            return module
        if obj is None:
            raise ValueError(f"{path} defines no kernel '{name}'")
        raise ValueError(f"{path}: '{name}' has no setup(case) and run(state)")
    if inspect.isclass(obj) and _wants_instance(obj):
        obj = obj()
    return obj


def _summary(obj):
    doc = inspect.getdoc(obj) if not isinstance(obj, types.ModuleType) else (obj.__doc__ or "")
    lines = (doc or "").strip().splitlines()
    return lines[0].strip() if lines else ""


def _dtypes(obj):
    dtypes = getattr(obj, "dtypes", None) or DEFAULT_DTYPES
    if isinstance(dtypes, (str, bytes)) or not isinstance(dtypes, (list, tuple)):
        # A string would be read letter by letter ("unknown dtype 'f'").
        raise ValueError(f"dtypes must be a list of dtype names, e.g. dtypes = [\"fp32\", \"bf16\"], not {dtypes!r}")
    return [str(d) for d in dtypes]


def _declared_params(obj):
    return {str(k): str(v) for k, v in (getattr(obj, "params", None) or {}).items()}


def describe(kernel):
    obj = load(kernel)
    op = getattr(obj, "op", None)
    return {"op": None if op is None else str(op), "summary": _summary(obj), "dtypes": _dtypes(obj),
            "params": _declared_params(obj), "reference": callable(getattr(obj, "reference", None))}


def _param_value(v):
    try:
        return int(v)
    except ValueError:
        return v


def make(torch, case, input_sets):
    obj = load(case.kernel)
    if case.dtype_name not in _dtypes(obj):
        raise Unsupported(f"kernel {case.kernel.get('name')} declares dtypes {', '.join(_dtypes(obj))}, "
                          f"not {case.dtype_name}")
    params = {k: _param_value(v) for k, v in {**_declared_params(obj), **case.params}.items()}

    def prep(*inputs):
        ns = types.SimpleNamespace(op=case.op or getattr(obj, "op", None), dtype=case.dtype,
                                   dtype_name=case.dtype_name, device=case.device, params=dict(params),
                                   threads=case.threads, inputs=list(inputs))
        return (obj.setup(ns),)

    details = {"kernel": case.kernel.get("name", ""), "kernel_file": case.kernel.get("file", ""),
               "torch": getattr(torch, "__version__", "")}
    # setup() runs once (a setup of seconds ran once per cold-cache copy: 256 times for a small
    # add); the other copies are deep copies of its state (tensors copied: fresh memory to rotate
    # over, as input copies were). A check's fresh inputs still get a setup of their own.
    prepared = Prepared(obj.run, prep, input_sets[:1], details)
    state = prepared.args[0]
    for _ in input_sets[1:]:
        try:
            prepared.args.append(copy.deepcopy(state))
        except Exception as e:  # noqa: BLE001 - a state that cannot be copied is shared, and said
            prepared.args = [state] * len(input_sets)
            prepared.details["copies"] = (f"1: the kernel's state cannot be copied ({type(e).__name__}), so every "
                                          f"sample reuses it (warm caches)")
            break
    prepared.kernel = obj
    return prepared


def check_own(torch, case, prepared, sync):
    """A kernel of an op opmeter does not know: its output against its own reference(state)."""
    obj = prepared.kernel
    if not callable(getattr(obj, "reference", None)):
        prepared.call(0)
        sync()
        return {"unchecked": True}
    state = prepared.args[0][0]
    got = obj.run(state)
    sync()
    ref = obj.reference(state)
    got = torch.as_tensor(got).detach().to("cpu", torch.float64).reshape(-1)
    ref = torch.as_tensor(ref).detach().to("cpu", torch.float64).reshape(-1)
    tol = getattr(obj, "tolerance", None)
    tol = float(tol(state) if callable(tol) else tol) if tol is not None else DEFAULT_TOLERANCE.get(case.dtype_name, 1e-5)
    if not math.isfinite(tol) or tol < 0:  # a NaN tolerance would pass any error
        raise ValueError(f"kernel {case.kernel.get('name')}: tolerance must be a finite number >= 0, not {tol}")
    if got.numel() != ref.numel():
        return {"max_error": LARGEST, "tolerance": tol,
                "detail": f"run gave {got.numel()} elements, reference {ref.numel()}"}
    if got.numel() == 0:
        return {"max_error": 0.0, "tolerance": tol, "detail": "empty output"}
    err = (got - ref).abs() / (ref.abs() + 1)
    err[torch.isnan(err)] = math.inf  # NaN anywhere is the worst error
    i = int(torch.argmax(err))
    e = float(err[i])
    detail = (f"max error |got - ref| / (|ref| + 1) = {e:.3g} at [{i}] (got {float(got[i]):.7g}, expected "
              f"{float(ref[i]):.7g}) over {got.numel()} elements (tolerance {tol:.3g})")
    return {"max_error": e if math.isfinite(e) else LARGEST, "tolerance": tol, "detail": detail}
