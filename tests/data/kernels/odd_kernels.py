"""Kernels that go wrong in ways a worker must not take for something else."""
import torch


class slash_op:
    """An op name a case string cannot carry."""
    op = "a/b"
    params = {"n": "16"}

    def setup(case):
        return torch.ones(case.params["n"])

    def run(state):
        return state


class padded_default:
    """A default integer written as case strings never write it."""
    op = "padded"
    params = {"n": "016"}

    def setup(case):
        return torch.ones(int(case.params["n"]))

    def run(state):
        return state


class comma_default:
    """A default value with a comma, which splits a case string's parameters."""
    op = "comma"
    params = {"mode": "a,b"}

    def setup(case):
        return torch.ones(4)

    def run(state):
        return state


class nan_tolerance:
    """Wrong by 50% with a NaN tolerance: must not pass."""
    op = "triple"
    params = {"n": "64"}
    tolerance = float("nan")

    def setup(case):
        return torch.rand(case.params["n"], dtype=torch.float64)

    def run(state):
        return state * 3

    def reference(state):
        return state * 2


class buggy_relu:
    """A bug whose message reads like PyTorch's 'cannot run here' messages."""
    op = "relu"

    def setup(case):
        return case.inputs

    def run(state):
        raise RuntimeError("Index put requires the source and destination dtypes match")


class cannot_here:
    """A kernel that says it cannot run this case."""
    op = "relu"

    def setup(case):
        return case.inputs

    def run(state):
        raise NotImplementedError("cannot_here runs only on a device this machine lacks")


class cannot_set_up:
    """A kernel that says in setup, where it learns the case, that it cannot run it."""
    op = "relu"

    def setup(case):
        raise NotImplementedError("cannot_set_up needs hidden >= 1000000")

    def run(state):
        return state


class relu_fp64:
    """Declares a dtype relu has no form of: it would get fp32 inputs under an fp64 name."""
    op = "relu"
    dtypes = ["fp32", "fp64"]

    def setup(case):
        return case.inputs[0]

    def run(state):
        return torch.relu(state)


class claims_peak:
    """Claims an op whose inputs and check only opmeter's own impls know."""
    op = "peak"

    def setup(case):
        return torch.zeros(1)

    def run(state):
        return state


class string_dtypes:
    """dtypes as a string, not a list: must not be read letter by letter."""
    op = "relu"
    dtypes = "fp32"

    def setup(case):
        return case.inputs[0]

    def run(state):
        return torch.relu(state)


class reads_stdin:
    """Reads its standard input (as input() or pdb would): must meet its end at once, not the
    worker's requests."""
    op = "relu"

    def setup(case):
        import os
        import sys
        assert sys.stdin.read() == "" and os.read(0, 16) == b"", "stdin is not empty"
        return case.inputs[0], torch.empty_like(case.inputs[0])

    def run(state):
        x, out = state
        return torch.clamp(x, min=0, out=out)
