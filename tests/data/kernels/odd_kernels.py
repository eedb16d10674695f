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
