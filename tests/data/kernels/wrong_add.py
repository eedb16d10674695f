"""A kernel of the add op that computes A - B: opmeter's check must fail it."""
import torch


class wrong_add:
    op = "add"

    def setup(case):
        a, b = case.inputs
        return a, b

    def run(state):
        a, b = state
        return a - b
