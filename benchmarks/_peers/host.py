"""The host side of benchmarks/peers.py: each case of cases.py as a host launch in raptor
(``plan.bind(...).launch()``), Numba (``@njit(parallel=True)``, a ``prange`` loop) and
NVIDIA Warp's CPU backend (``wp.launch(..., device="cpu")``). peers.py runs ``run_worker``
in a fresh process for one system at one N, so no two systems' thread pools meet.

Every system steps the same arrays in place: ``prepare(case, dtype, n)`` returns a ``Setup``
whose ``step()`` is what is timed and whose ``outputs()`` is checked against the NumPy
reference after the first step. Start reading at ``SYSTEMS`` and ``run_worker``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from _peers.cases import CD, DT, G, OSC_C, OSC_DT, check, make_inputs, reference
from _peers.timing import best


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
        from kernels import drag_step, osc

        cache = os.environ.get("RAPTOR_CACHE_DIR")
        self.plans = dict(zip(("drag", "osc"), eagle.plan.auto([drag_step, osc], targets=("host",), cache_dir=cache)))

    def prepare(self, case: str, arrays: dict[str, np.ndarray]) -> Setup:
        plan = self.plans[case]
        if case == "drag":
            out = aligned_copy(np.zeros_like(arrays["v"]), place=len(arrays))
            bound = plan.bind(v=arrays["v"], cd=CD, dt=DT, g=G, v_next=out)
            return Setup(bound.launch, lambda: {"v_next": out})
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

        self.drag, self.osc = numba_steps.drag, numba_steps.osc

    def prepare(self, case: str, arrays: dict[str, np.ndarray]) -> Setup:
        if case == "drag":
            v = arrays["v"]
            f = v.dtype.type
            out = aligned_copy(np.zeros_like(v), place=len(arrays))
            cd, dt, g = f(CD), f(DT), f(G)
            return Setup(lambda: self.drag(v, cd, dt, g, out), lambda: {"v_next": out})
        a = arrays
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
        f = arrays["x"].dtype.type
        k = self.kernels[arrays["x"].dtype.name]["osc"]
        inputs = [f(OSC_DT), f(OSC_C)] + [w[n] for n in ("t_final", "corr", "terminated", "x", "v", "t")]
        n = arrays["x"].shape[0]
        return Setup(lambda: wp.launch(k, dim=n, inputs=inputs, device="cpu"),
                     lambda: {k: arrays[k] for k in ("x", "v", "t", "terminated")})


SYSTEMS: dict[str, type] = {"raptor": Raptor, "numba": Numba, "warp": WarpCPU}
LABELS = {"raptor": "raptor launch()", "numba": "Numba parallel", "warp": "Warp CPU"}


def run_worker(system: str, n: int, cases: list[str], dtypes: list[str], repeat: int, min_round_s: float) -> list[dict]:
    """Times ``system`` at ``n`` samples on every case and dtype, after checking its first
    step against the NumPy reference; one record per (case, dtype) with the best time."""
    impl = SYSTEMS[system]()
    records = []
    for case in cases:
        for dtype in dtypes:
            fresh = make_inputs(case, n, dtype)
            arrays = {k: aligned_copy(a, place=i) for i, (k, a) in enumerate(sorted(fresh.items()))}
            setup = impl.prepare(case, arrays)
            setup.step()
            check(system, case, dtype, n, setup.outputs(), reference(case, fresh))
            t = best(setup.step, repeat, min_round_s)
            records.append({"side": "host", "system": system, "case": case, "dtype": dtype, "n": n, "seconds": t})
    return records
