"""Stepping kernels that several test modules step, with NumPy's plain loops of them (not a
test module). ``osc``: an undamped oscillator stepped until its own ``t_final``
(tests/test_api_properties.py feeds it random values; tests/test_loop_planner.py steps its
tangent kernel). ``tally``: a kernel with sums over samples (a hawk.sum, a hawk.max, a
scatter target), which stepping loops run one launch at a time; ``np_tally`` is its plain loop
(tests/test_loop_planner.py, tests/test_one_call.py)."""

from __future__ import annotations

import numpy as np

import hawk
from hawk import Mutable, Param, Scalar, Table, Terminated


@hawk.kernel(steps=1)
def osc(dt: Param, t_final: Scalar, terminated: Terminated, x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    vn = v - dt * x
    x = x + dt * v
    v = vn
    t = t + dt
    terminated = t >= t_final


@hawk.kernel(steps=1)
def tally(limit: Scalar, terminated: Terminated, t: Mutable[Scalar], total: Mutable[Param], top: Mutable[Param],
          hist: Mutable[Table[Scalar]]):
    t = t + 1.0
    total = hawk.sum(t * 0.5)
    top = hawk.max(limit - t)
    hawk.scatter(hist)[t - 1.0] += 1.0
    terminated = t >= limit


def np_tally(limit: np.ndarray, launches_at_most: int, done: np.ndarray | None = None,
             entries: int | None = None) -> tuple[dict[str, np.ndarray], np.ndarray, int]:
    """tally's plain loop in NumPy from the mask `done` (every sample live by default) and t,
    total, top and a hist of `entries` (default: max(limit)) at zero: (the arrays by name,
    the mask, the launches made)."""
    out = dict(t=np.zeros(limit.size), total=np.zeros(1), top=np.zeros(1), hist=np.zeros(entries or int(limit.max())))
    done = np.zeros(limit.size, bool) if done is None else done.copy()
    launches = 0
    while launches < launches_at_most and not done.all():
        live = ~done
        out["t"][live] += 1.0
        out["total"][0] = (out["t"][live] * 0.5).sum()
        out["top"][0] = (limit - out["t"])[live].max()
        np.add.at(out["hist"], (out["t"][live] - 1.0).astype(int), 1.0)
        done |= live & (out["t"] >= limit)
        launches += 1
    return out, done, launches
