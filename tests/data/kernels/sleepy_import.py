"""A kernel whose module takes an hour to import (as one that builds an extension at import):
opmeter waits for the worker's describe reply meanwhile. For the interrupt tests."""
import time

time.sleep(3600)


class sleepy:
    op = "add"

    @staticmethod
    def setup(case):
        return case.inputs

    @staticmethod
    def run(state):
        return state[0] + state[1]
