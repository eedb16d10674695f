"""Two example kernels for opmeter's worker (docs/worker-protocol.md, "Your own Python kernel").

    my_add    the existing op `add`: opmeter makes the inputs and checks the output
    add_relu  a new op: relu(A + B) over n elements, with its own inputs and reference

A kernel is named by this file's path and its name (the worker's `kernel` field).
"""
import torch


class my_add:
    """A + B with torch.add into a preallocated output"""
    op = "add"                      # the opmeter op it computes: its inputs, work and check
    dtypes = ["fp32", "bf16", "fp16"]

    def setup(case):                # case.inputs: A and B as tensors on case.device
        a, b = case.inputs
        return a, b, torch.empty_like(a)

    def run(state):                 # one call; returns the output tensor
        a, b, out = state
        return torch.add(a, b, out=out)


class add_relu:
    """relu(A + B) over n elements, in place on a preallocated output"""
    op = "add_relu"                 # not an opmeter op: the kernel makes its inputs and checks itself
    dtypes = ["fp32", "bf16"]
    params = {"n": "1048576"}       # name -> default

    def setup(case):
        n = case.params["n"]
        gen = torch.Generator().manual_seed(1234)
        a, b = (torch.rand(n, generator=gen) * 2 - 1 for _ in range(2))  # uniform in [-1, 1)
        a, b = a.to(case.device, case.dtype), b.to(case.device, case.dtype)
        return a, b, torch.empty_like(a)

    def run(state):
        a, b, out = state
        return torch.add(a, b, out=out).relu_()

    def reference(state):           # the expected output; compared in float64
        a, b, _ = state
        return (a.double() + b.double()).clamp_min(0)
