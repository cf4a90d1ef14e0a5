"""Timing for benchmarks/peers.py: the best per-call time of a function over several rounds,
each round long enough (``min_round_s``) for the clock and short enough to dodge other jobs.
Start reading at ``best``; ``Rounds`` is the same measurement for several functions at
once, alternating them round by round so that all of them see the same machine; ``settle``
keeps one side's idle threads out of the next side's round.
"""

from __future__ import annotations

import time
from collections.abc import Callable


def calls_per_round(fn: Callable[[], object], min_round_s: float, sync: Callable[[object], object] = lambda r: r) -> int:
    """How many calls of ``fn`` take at least ``min_round_s`` (at least one), measured by
    doubling from one call; ``sync`` waits for a result (JAX: block_until_ready)."""
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            out = fn()
        sync(out)
        if time.perf_counter() - t0 >= min_round_s or number >= 1 << 20:
            return number
        number *= 2


def warm_up(fn: Callable[[], object], seconds: float, sync: Callable[[object], object] = lambda r: r) -> None:
    """Calls ``fn`` for about ``seconds``: thread pools that sleep between calls (OpenMP's,
    Numba's) are awake and spinning when the timing starts."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        sync(fn())


# settle(): quiet means this process used under QUIET_SHARE of one core over a window of
# QUIET_WINDOW_S seconds; it gives up after SETTLE_MAX_S.
QUIET_WINDOW_S = 0.002
QUIET_SHARE = 0.1
SETTLE_MAX_S = 1.0


def settle() -> float:
    """Waits until this process's threads are idle, and returns how long that took.

    A thread pool keeps spinning for a while after its last job so that the next one starts
    at once: raptor's for 50 us, OpenMP's (Numba's default threading layer) for its
    GOMP_SPINCOUNT, measured at 6.8 ms of CPU after each ``prange`` loop on a 2-core AMD EPYC
    (Zen 5). A round of another system that starts in that time shares a core with the spinning
    thread: raptor's drag step at N = 2^13 measured 8.3 us right after Numba's rounds and 2.0 us
    alone. Called after every timed round, so the next round, whichever system's, starts on
    an idle machine (its own warm-up then wakes its own threads)."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < SETTLE_MAX_S:
        c0, w0 = time.process_time(), time.perf_counter()
        time.sleep(QUIET_WINDOW_S)
        if time.process_time() - c0 < QUIET_SHARE * (time.perf_counter() - w0):
            break
    return time.perf_counter() - t0


def best(fn: Callable[[], object], repeat: int, min_round_s: float) -> float:
    """The best per-call time in seconds of ``fn`` over ``repeat`` rounds (after a warm-up
    of 20 rounds' time, rounds of as many calls as take ``min_round_s``)."""
    warm_up(fn, 20 * min_round_s)
    return Rounds({"": fn}, min_round_s).run(repeat)[""]


class Rounds:
    """Several functions timed in alternating rounds: each round calls each function
    ``number`` times (its own count, sized by ``min_round_s``) after one untimed call, so a
    switch from one side's threads to another's is not counted; between rounds the process
    settles (``settle``)."""

    def __init__(self, fns: dict[str, Callable[[], object]], min_round_s: float,
                 sync: Callable[[object], object] = lambda r: r) -> None:
        self.fns = fns
        self.sync = sync
        for fn in fns.values():
            warm_up(fn, 5 * min_round_s, sync)
        self.number = {name: calls_per_round(fn, min_round_s, sync) for name, fn in fns.items()}

    def run(self, repeat: int) -> dict[str, float]:
        """The best per-call time in seconds of each function over ``repeat`` rounds."""
        times: dict[str, list[float]] = {name: [] for name in self.fns}
        for _ in range(repeat):
            for name, fn in self.fns.items():
                self.sync(fn())
                number = self.number[name]
                t0 = time.perf_counter()
                for _ in range(number):
                    out = fn()
                self.sync(out)
                times[name].append((time.perf_counter() - t0) / number)
                settle()
        return {name: min(ts) for name, ts in times.items()}
