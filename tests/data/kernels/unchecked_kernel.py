"""A kernel of its own op with no reference: its results are flagged unchecked."""
import torch

op = "fill_ones"
dtypes = ["fp32"]
params = {"n": "1024"}


def setup(case):
    return torch.empty(case.params["n"], dtype=case.dtype)


def run(state):
    return state.fill_(1.0)
