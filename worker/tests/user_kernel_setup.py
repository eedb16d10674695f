#!/usr/bin/env python3
"""A user kernel's setup() runs once per case, not once per cold-cache copy (issue 27, item 10):
a kernel that appends a line to a file in setup, prepared with 8 input copies, is set up once and
its other copies are independent deep copies. Needs no torch: user_kernels.make only passes
torch through.

    /usr/bin/python3 worker/tests/user_kernel_setup.py
"""
import os
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import user_kernels  # noqa: E402

KERNEL = '''
import os
COUNT = os.environ["SETUP_COUNT_FILE"]

class counted:
    op = "add"
    @staticmethod
    def setup(case):
        with open(COUNT, "a") as f:
            f.write("setup\\n")
        return {"x": list(case.inputs[0]), "lock": %s}
    @staticmethod
    def run(state):
        return [v + 1 for v in state["x"]]
'''

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def setups(count_file):
    with open(count_file) as f:
        return len(f.read().splitlines())


def prepare(tmp, name, lock_expr, copies):
    path = os.path.join(tmp, name + ".py")
    with open(path, "w") as f:
        f.write(KERNEL % lock_expr)
    count_file = os.path.join(tmp, name + ".count")
    os.environ["SETUP_COUNT_FILE"] = count_file
    case = types.SimpleNamespace(kernel={"file": path, "name": "counted"}, dtype_name="fp32", dtype="float32",
                                 params={}, op="add", device="cpu", threads=1)
    torch = types.SimpleNamespace(__version__="stand-in")
    input_sets = [[[float(i), 2.0, 3.0]] for i in range(copies)]
    return user_kernels.make(torch, case, input_sets), count_file


def main():
    with tempfile.TemporaryDirectory() as tmp:
        prepared, count_file = prepare(tmp, "copyable", "None", 8)
        check(setups(count_file) == 1, f"setup ran {setups(count_file)} times for 8 copies, expected once")
        check(len(prepared.args) == 8, f"{len(prepared.args)} copies prepared, expected 8")
        states = [args[0] for args in prepared.args]
        check(len({id(s["x"]) for s in states}) == 8, "the copies share memory: a cold sample would read a warm one")
        check(all(s["x"] == states[0]["x"] for s in states), "a copy differs from the state setup made")
        check(prepared.call(5) == [v + 1 for v in states[0]["x"]], "a copy computes another answer")
        prepared.refresh(0, [[9.0, 9.0, 9.0]])  # a check's fresh inputs are set up anew
        check(setups(count_file) == 2, f"a check's fresh inputs gave {setups(count_file) - 1} setups, expected 1")
        check(prepared.call(0) == [10.0, 10.0, 10.0], "the check did not compute on its fresh inputs")

        # A state deepcopy refuses (a lock) is shared by every copy, once, and the details say so.
        prepared, count_file = prepare(tmp, "locked", "__import__('threading').Lock()", 4)
        check(setups(count_file) == 1, f"setup ran {setups(count_file)} times for an uncopyable state, expected once")
        check(len(prepared.args) == 4 and all(a is prepared.args[0] for a in prepared.args),
              "an uncopyable state is not shared by the 4 copies")
        check("cannot be copied" in prepared.details.get("copies", ""), f"details do not say why: {prepared.details}")
    if FAILURES:
        sys.exit(1)
    print("user kernel setup: ok")


if __name__ == "__main__":
    main()
