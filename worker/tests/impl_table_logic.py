#!/usr/bin/env python3
"""The worker's impls are declared once (worker/impls.json): the torch impls' forms are the ones
it declares, the session dispatches every impl it names, and the hello announces it as it is.

    /usr/bin/python3 worker/tests/impl_table_logic.py
"""
import io
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import impl_table  # noqa: E402

failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def main():
    table = impl_table.TABLE
    with open(os.path.join(os.path.dirname(HERE), "impls.json"), encoding="utf-8") as f:
        check(json.load(f) == table, "the table is impls.json as written")
    for entry in table["impls"]:
        check(entry["ops"] in table["op_sets"], f"{entry['impl']}: op set {entry['ops']} is declared")
        check(set(entry["devices"]) <= {"cpu", "cuda"}, f"{entry['impl']}: devices {entry['devices']}")
    for name, ops in table["op_sets"].items():
        for op, dtype_set in ops.items():
            check(dtype_set in table["dtype_sets"], f"{name}.{op}: dtype set {dtype_set} is declared")
    check("fp64" in impl_table.dtypes_of("torch_ops", "gemm"), "torch gemm runs fp64 (the C++ copy never offered it)")
    check(impl_table.runs_dtype("torch_ops", "gemm", "fp8_e4m3"), "the fp8_e4m3 alias still runs")
    check(not impl_table.runs_dtype("torch_ops", "layernorm", "int8"), "layernorm in int8 is not declared")

    try:
        import torch  # noqa: F401
    except ImportError as e:
        print(f"skip  the torch side: {e}")
        return
    import opmeter_worker
    import session
    import torch_ops
    check(set(torch_ops.OPS) | {"model"} == set(impl_table.ops_of(torch_ops.OP_SET)),
          "torch_ops.OPS (and the whole model) are impls.json's torch_ops")
    check(set(session.TORCH_IMPLS) == set(impl_table.impls_of("torch_ops")), "the session dispatches the torch impls")
    check(set(torch_ops.COMPILE_MODES) == set(impl_table.impls_of("torch_ops")), "each torch impl has its compile mode")
    hello = opmeter_worker.hello(torch, "")
    check(hello["impls"] == table, "the hello announces the table")
    check(json.loads(json.dumps(hello))["impls"] == table, "the announcement survives JSON")


if __name__ == "__main__":
    main()
    print(f"\n{len(failures)} failure(s)" + "".join(f"\n  {f}" for f in failures))
    sys.exit(1 if failures else 0)
