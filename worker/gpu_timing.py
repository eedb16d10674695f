"""How the worker keeps Python's dispatch out of a GPU sample (pure: no torch here, so the tests
check it on the CPU).

opmeter's own CUDA samples hold the stream behind a spin kernel until every call of the sample is
issued (src/cuda/plugin/launch_hold.*), so their time is the kernels' back to back, not the
host's launch cost. Without the same, a short torch or Triton kernel's sample would include the
Python dispatch between launches (~5-50 us a call) and the comparison would be unfair. torch has
no host-released spin kernel, so the worker enqueues torch.cuda._sleep(cycles) before the start
event, long enough for the calls to be issued behind it: twice the issue time the previous sample
measured. The sample says whether the hold lasted (`held`) or may have run out before the last
call was issued (`ran_short`: that sample may include launch gaps, and the next one holds
longer). Samples of more calls than the plugin holds (128) are not held, as the plugin's are
not: their dispatch is amortised over the batch, and a long hold would cost more than it saves.
"""

MAX_HELD_CALLS = 128        # src/cuda/plugin/timer.cpp kMaxHeldCalls
MIN_HOLD_S = 20e-6
MAX_HOLD_S = 50e-3          # never hold a stream longer (an idle GPU's slow clock stretches it further)
HOLD_MARGIN = 2.0           # hold twice the issue time last measured
FIRST_ISSUE_S = 100e-6      # per call, until a sample has measured it: generous for eager torch
CLOCK_BOUND_HZ = 3.0e9      # above any GPU's SM clock: _sleep(cycles) lasts at least cycles / this

HELD, RAN_SHORT, UNHELD = "held", "ran_short", "unheld"


def hold_seconds(calls, has_sleep, issue_s_per_call):
    """How long to hold the stream before a sample of `calls` calls (a graph replay is one call);
    0 when the sample is not held (too many calls, or no torch.cuda._sleep)."""
    if not has_sleep or calls > MAX_HELD_CALLS:
        return 0.0
    per_call = issue_s_per_call if issue_s_per_call and issue_s_per_call > 0 else FIRST_ISSUE_S
    return min(MAX_HOLD_S, max(MIN_HOLD_S, HOLD_MARGIN * calls * per_call))


def sleep_cycles(seconds):
    """torch.cuda._sleep's argument for a hold of at least `seconds` on any GPU."""
    return int(seconds * CLOCK_BOUND_HZ)


def hold_outcome(hold_s, issued_s):
    """What a sample's hold did: `issued_s` is the host time from enqueuing the hold to the end
    event enqueued after the last call."""
    if hold_s <= 0:
        return UNHELD
    return HELD if issued_s <= hold_s else RAN_SHORT
