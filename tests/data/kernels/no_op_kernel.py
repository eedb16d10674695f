"""A kernel that names no op."""


class lonely:
    def setup(case):
        return None

    def run(state):
        return None
