"""The worker's impls, ops and dtypes, declared once in impls.json beside this file. The worker
dispatches by it (torch_ops, triton_kernels) and announces it in its hello; opmeter's build embeds
the same file, so the impls are listed where Python or PyTorch is missing. Imports neither torch
nor triton."""
import json
import os

TABLE_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "impls.json")

with open(TABLE_FILE, encoding="utf-8") as f:
    TABLE = json.load(f)

# Names the worker has always accepted for a dtype besides the one opmeter sends.
DTYPE_ALIASES = {"fp8_e4m3": "fp8"}


def impl_entry(impl):
    for entry in TABLE["impls"]:
        if entry["impl"] == impl:
            return entry
    return None


def impls_of(op_set):
    """The impls that run an op set (torch_ops: torch, torch_compile, ...)."""
    return tuple(e["impl"] for e in TABLE["impls"] if e["ops"] == op_set)


def ops_of(op_set):
    return tuple(TABLE["op_sets"][op_set])


def dtypes_of(op_set, op):
    """The dtypes an op of the op set runs in; () when the set has no such op."""
    dtype_set = TABLE["op_sets"][op_set].get(op)
    return tuple(TABLE["dtype_sets"][dtype_set]) if dtype_set else ()


def runs_dtype(op_set, op, dtype_name):
    return DTYPE_ALIASES.get(dtype_name, dtype_name) in dtypes_of(op_set, op)


if __name__ == "__main__":  # the table as the hello carries it
    print(json.dumps(TABLE, indent=1))
