"""The host side of benchmarks/peers.py: each case of cases.py as a host launch in raptor
(``plan.bind(...).launch()``), Numba (``@njit(parallel=True)``, a ``prange`` loop) and
NVIDIA Warp's CPU backend (``wp.launch(..., device="cpu")``). peers.py starts one process per
system running ``serve``, so no two systems' thread pools share a process, and asks them for
rounds in turn: every system is timed across the same stretch of the machine's time.

Every system steps the same arrays in place: ``prepare(case, dtype, n)`` returns a ``Setup``
whose ``step()`` is what is timed and whose ``outputs()`` is checked against the NumPy
reference after the first step. Start reading at ``SYSTEMS`` and ``serve``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

import numpy as np

from _peers.cases import (CD, DT, G, OSC_C, OSC_DT, PEND_DRIVE, PEND_DT, PEND_FREQ, PEND_GAMMA, PEND_OUT, check,
                          make_inputs, reference)
from _peers.timing import calls_per_round, settle, warm_up


@dataclass
class Setup:
    """One case ready to run: ``step`` runs one step in place, ``outputs`` reads the result."""

    step: Callable[[], object]
    outputs: Callable[[], dict[str, np.ndarray]]


# Where each plane starts within its 4 KiB page: the same in every system's process, and
# 1 KiB apart from plane to plane. A load whose address matches an earlier, still pending
# store in its low 12 bits waits for it (4K aliasing): with an output plane 64 bytes past an
# input plane modulo 4096, one AVX-512 vector apart, the drag step at N = 2^17 takes 2.4x as
# long in raptor and 2.2x in Numba (measured). Left to the allocator, the offsets differ from
# process to process, and so did the winner of a comparison. docs/performance.md.
PAGE_OFFSETS = (64, 1088, 2112, 3136)


def aligned_copy(a: np.ndarray, place: int = 0) -> np.ndarray:
    """A C-contiguous copy of ``a`` starting ``PAGE_OFFSETS[place % 4]`` bytes into a 4 KiB
    page (so 64-byte aligned, as raptor's binding asks; every system gets the same layout)."""
    page = 4096
    buf = np.empty(a.nbytes + 2 * page, np.uint8)
    start = (-buf.ctypes.data) % page + PAGE_OFFSETS[place % len(PAGE_OFFSETS)]
    out = buf[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


# ---------------------------------------------------------------------------------------------
# raptor


class Raptor:
    """raptor: the hawk kernels of benchmarks/kernels.py, one plan each (both dtypes)."""

    name = "raptor"
    module = None  # always there

    def __init__(self) -> None:
        import eagle.plan
        from kernels import drag_step, osc, pendulum

        cache = os.environ.get("RAPTOR_CACHE_DIR")
        self.plans = dict(zip(("drag", "osc", "pend"),
                              eagle.plan.auto([drag_step, osc, pendulum], targets=("host",), cache_dir=cache)))

    def prepare(self, case: str, arrays: dict[str, np.ndarray]) -> Setup:
        plan = self.plans[case]
        if case == "drag":
            out = aligned_copy(np.zeros_like(arrays["v"]), place=len(arrays))
            bound = plan.bind(v=arrays["v"], cd=CD, dt=DT, g=G, v_next=out)
            return Setup(bound.launch, lambda: {"v_next": out})
        if case == "pend":
            bound = plan.bind(dt=PEND_DT, gamma=PEND_GAMMA, drive=PEND_DRIVE, freq=PEND_FREQ, **arrays)
            return Setup(bound.launch, lambda: {k: arrays[k] for k in PEND_OUT})
        bound = plan.bind(dt=OSC_DT, c=OSC_C, **arrays)
        return Setup(bound.launch, lambda: {k: arrays[k] for k in ("x", "v", "t", "terminated")})


# ---------------------------------------------------------------------------------------------
# Numba


class Numba:
    """Numba: the same steps as ``prange`` loops under ``@njit(parallel=True)``, compiled
    for each dtype on first call (cached in $NUMBA_CACHE_DIR)."""

    name = "numba"
    module = "numba"

    def __init__(self) -> None:
        from _peers import numba_steps

        self.drag, self.osc, self.pend = numba_steps.drag, numba_steps.osc, numba_steps.pend

    def prepare(self, case: str, arrays: dict[str, np.ndarray]) -> Setup:
        if case == "drag":
            v = arrays["v"]
            f = v.dtype.type
            out = aligned_copy(np.zeros_like(v), place=len(arrays))
            cd, dt, g = f(CD), f(DT), f(G)
            return Setup(lambda: self.drag(v, cd, dt, g, out), lambda: {"v_next": out})
        a = arrays
        if case == "pend":
            f = a["theta"].dtype.type
            c = (f(PEND_DT), f(PEND_GAMMA), f(PEND_DRIVE), f(PEND_FREQ))
            return Setup(lambda: self.pend(*c, a["theta"], a["omega"], a["phase"]),
                         lambda: {k: a[k] for k in PEND_OUT})
        f = a["x"].dtype.type
        dt, c = f(OSC_DT), f(OSC_C)
        return Setup(lambda: self.osc(dt, c, a["t_final"], a["corr"], a["terminated"], a["x"], a["v"], a["t"]),
                     lambda: {k: a[k] for k in ("x", "v", "t", "terminated")})


# ---------------------------------------------------------------------------------------------
# Warp, CPU backend


class WarpCPU:
    """NVIDIA Warp's CPU backend: ``wp.launch`` on device "cpu" over arrays that alias the
    NumPy planes (no copies). Warp runs a CPU launch on one thread."""

    name = "warp"
    module = "warp"

    def __init__(self) -> None:
        import warp as wp

        wp.config.quiet = True
        wp.init()
        self.wp = wp
        from _peers.warp_steps import warp_kernels

        self.kernels = {d: warp_kernels(d) for d in ("float64", "float32")}

    def prepare(self, case: str, arrays: dict[str, np.ndarray]) -> Setup:
        wp = self.wp
        w = {k: wp.array(a, dtype=wp.dtype_from_numpy(a.dtype), device="cpu", copy=False)
             for k, a in arrays.items()}
        if case == "drag":
            v = arrays["v"]
            f = v.dtype.type
            out = aligned_copy(np.zeros_like(v), place=len(arrays))
            w_out = wp.array(out, dtype=wp.dtype_from_numpy(out.dtype), device="cpu", copy=False)
            k = self.kernels[v.dtype.name]["drag"]
            inputs = [w["v"], f(CD), f(DT), f(G), w_out]
            return Setup(lambda: wp.launch(k, dim=v.shape[1], inputs=inputs, device="cpu"), lambda: {"v_next": out})
        if case == "pend":
            f = arrays["theta"].dtype.type
            k = self.kernels[arrays["theta"].dtype.name]["pend"]
            inputs = [f(PEND_DT), f(PEND_GAMMA), f(PEND_DRIVE), f(PEND_FREQ)] + [w[n] for n in PEND_OUT]
            n = arrays["theta"].shape[0]
            return Setup(lambda: wp.launch(k, dim=n, inputs=inputs, device="cpu"),
                         lambda: {k: arrays[k] for k in PEND_OUT})
        f = arrays["x"].dtype.type
        k = self.kernels[arrays["x"].dtype.name]["osc"]
        inputs = [f(OSC_DT), f(OSC_C)] + [w[n] for n in ("t_final", "corr", "terminated", "x", "v", "t")]
        n = arrays["x"].shape[0]
        return Setup(lambda: wp.launch(k, dim=n, inputs=inputs, device="cpu"),
                     lambda: {k: arrays[k] for k in ("x", "v", "t", "terminated")})


SYSTEMS: dict[str, type] = {"raptor": Raptor, "numba": Numba, "warp": WarpCPU}
LABELS = {"raptor": "raptor launch()", "numba": "Numba parallel", "warp": "Warp CPU"}


def serve(system: str, min_round_s: float, requests: TextIO, replies: TextIO) -> None:
    """A host worker (one process per system, peers.HostWorker starts it): answers each JSON
    request line of ``requests`` with one JSON line on ``replies``, until the input ends.

    - ``{"cmd": "prepare", "case", "dtype", "n"}``: fresh inputs, one step checked against the
      NumPy reference, a warm-up; replies ``{"number": calls per round}`` or ``{"error": why}``.
    - ``{"cmd": "round"}``: a short untimed warm-up (the caches and threads the other systems'
      rounds took), then ``number`` timed steps; replies ``{"seconds": time per step}`` once
      this process's threads are idle (``timing.settle``), so that the next system's round
      does not share a core with them.
    """
    impl = SYSTEMS[system]()
    setup: Setup | None = None
    number = 0
    for line in requests:
        req = json.loads(line)
        try:
            if req["cmd"] == "prepare":
                setup = None  # the last item's arrays go before the next item's are made
                case, dtype, n = req["case"], req["dtype"], int(req["n"])
                fresh = make_inputs(case, n, dtype)
                arrays = {k: aligned_copy(a, place=i) for i, (k, a) in enumerate(sorted(fresh.items()))}
                setup = impl.prepare(case, arrays)
                setup.step()
                check(system, case, dtype, n, setup.outputs(), reference(case, fresh))
                warm_up(setup.step, 20 * min_round_s)
                number = calls_per_round(setup.step, min_round_s)
                settle()
                reply = {"number": number}
            elif req["cmd"] == "round" and setup is not None:
                warm_up(setup.step, min_round_s / 4)
                t0 = time.perf_counter()
                for _ in range(number):
                    setup.step()
                seconds = (time.perf_counter() - t0) / number
                settle()
                reply = {"seconds": seconds}
            else:
                reply = {"error": f"unexpected request {req!r}"}
        except Exception as e:  # noqa: BLE001 - reported to the parent, which skips the item
            reply = {"error": f"{type(e).__name__}: {e}"}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()
