"""A kernel whose import appends a line to $OPMETER_TEST_MARKER: shows which commands import a
config's kernels (only those that measure may)."""
import os

if os.environ.get("OPMETER_TEST_MARKER"):
    with open(os.environ["OPMETER_TEST_MARKER"], "a") as f:
        f.write("kernel imported\n")


class marker:
    op = "add"

    @staticmethod
    def setup(case):
        return case.inputs

    @staticmethod
    def run(state):
        return state[0] + state[1]
