"""The work that benchmarks/peers.py times, defined once for every system: the inputs of each
case at a sample count N and dtype, the constants, and a NumPy reference of one step that
every system's result is checked against before anything is timed.

Cases (the hawk kernels are in benchmarks/kernels.py):
- ``drag``: ``drag_step`` of SPEC §1 / page 001: v_next = v + dt * ((0, 0, -g) - cd |v| v),
  v a (3, N) plane (components first, samples last: raptor's layout, kept for every peer).
- ``osc``: one step of ``osc``, the damped oscillator of the stepping pages, with its
  Terminated mask: a live sample steps (x, v, t) and finishes when t >= t_final; a finished
  sample keeps its values. A quarter of the samples start finished (chosen at random) and no
  live one reaches its final time, so every repeated step does the same work. The damping
  (c - corr, 0.009 to 0.011) is about what explicit Euler adds at dt = 0.01 (its amplitude
  grows by dt^2 / 2 per step): the values stay within e^+-5 of their start over a million
  steps. A faster system steps its arrays more often in the same time; with c = 0.3 they
  decayed into subnormal numbers within 10^5 steps, which x86 cores take tens of times longer
  to add and multiply: raptor's float32 step at 2^10 took 28 us, 2.1 us with the values kept
  normal (measured on an Intel Xeon).
- ``pend``: one semi-implicit Euler step of a driven, damped pendulum per sample (``pendulum``):
  omega += dt (-sin(theta) - gamma omega + drive cos(phase)), theta += dt omega, phase += dt
  freq: a sin and a cos per sample, which raptor computes with its own functions in float64
  (cpp/runtime/rp_math.h, vectorized) and every peer with a library call per sample (glibc's
  sin / cos; jax.numpy XLA's own). The damping keeps omega bounded; theta and phase grow by
  at most about 0.03 and 0.007 a step.

Start reading at ``make_inputs`` and ``reference``.
"""

from __future__ import annotations

import numpy as np

CASES = ("drag", "osc", "pend")
DTYPES = ("float64", "float32")
CD, DT, G = 0.1, 0.01, 9.81  # drag step
OSC_DT, OSC_C = 0.01, 0.011  # oscillator step
PEND_DT, PEND_GAMMA, PEND_DRIVE, PEND_FREQ = 0.01, 0.1, 0.5, 0.7  # pendulum step
PEND_OUT = ("theta", "omega", "phase")

# Agreement with the NumPy reference demanded before timing (relative, per dtype).
RTOL = {"float64": 1e-12, "float32": 1e-5}


def make_inputs(case: str, n: int, dtype: str, seed: int = 0) -> dict[str, np.ndarray]:
    """Fresh inputs of ``case`` at ``n`` samples: float planes of ``dtype``, the mask bool.
    The same seed gives the same numbers for every system."""
    rng = np.random.default_rng(seed)
    f = np.dtype(dtype)
    if case == "drag":
        return {"v": (5.0 * rng.normal(size=(3, n))).astype(f)}
    if case == "osc":
        return {
            "x": rng.uniform(0.5, 1.5, n).astype(f),
            "v": rng.uniform(-0.2, 0.3, n).astype(f),
            "t": np.zeros(n, f),
            "corr": rng.uniform(0.0, 0.002, n).astype(f),
            # never reached while timing (float32's t stops growing at 2^18, float64's would
            # take 10^8 steps)
            "t_final": rng.uniform(1e6, 2e6, n).astype(f),
            "terminated": rng.uniform(size=n) < 0.25,
        }
    if case == "pend":
        return {
            "theta": rng.uniform(-3.0, 3.0, n).astype(f),
            "omega": rng.uniform(-1.0, 1.0, n).astype(f),
            "phase": rng.uniform(0.0, 6.0, n).astype(f),
        }
    raise ValueError(f"unknown case {case!r}: the cases are {', '.join(CASES)}")


def reference(case: str, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One step of ``case`` in NumPy, in the inputs' dtype: the outputs by name (drag:
    v_next; osc: x, v, t, terminated after the step; pend: theta, omega, phase)."""
    if case == "drag":
        v = inputs["v"]
        f = v.dtype.type
        s = f(CD) * np.sqrt((v * v).sum(axis=0))
        a = np.stack([-s * v[0], -s * v[1], f(-G) - s * v[2]])
        return {"v_next": v + f(DT) * a}
    if case == "osc":
        x, v, t = inputs["x"], inputs["v"], inputs["t"]
        f = x.dtype.type
        live = ~inputs["terminated"]
        vn = v + f(OSC_DT) * (-x - f(OSC_C) * v + inputs["corr"] * v)
        xn, tn = x + f(OSC_DT) * v, t + f(OSC_DT)
        return {
            "x": np.where(live, xn, x),
            "v": np.where(live, vn, v),
            "t": np.where(live, tn, t),
            "terminated": inputs["terminated"] | (live & (tn >= inputs["t_final"])),
        }
    if case == "pend":
        theta, omega, phase = inputs["theta"], inputs["omega"], inputs["phase"]
        f = theta.dtype.type
        dt = f(PEND_DT)
        om = omega + dt * (-np.sin(theta) - f(PEND_GAMMA) * omega + f(PEND_DRIVE) * np.cos(phase))
        return {"theta": theta + dt * om, "omega": om, "phase": phase + dt * f(PEND_FREQ)}
    raise ValueError(f"unknown case {case!r}: the cases are {', '.join(CASES)}")


def check(system: str, case: str, dtype: str, n: int, got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    """Raises AssertionError naming the system, case and output when ``got`` is not ``want``
    to the dtype's tolerance (masks exactly)."""
    for name, w in want.items():
        g = np.asarray(got[name])
        where = f"{system}, {case} {dtype} N={n}, output {name}"
        if g.shape != w.shape:
            raise AssertionError(f"{where}: shape {g.shape}, expected {w.shape}")
        if w.dtype == bool:
            if not np.array_equal(g, w):
                raise AssertionError(f"{where}: {int((g != w).sum())} mask entries differ from the NumPy reference")
            continue
        scale = float(np.abs(w).max()) or 1.0
        err = float(np.abs(g.astype(np.float64) - w.astype(np.float64)).max()) / scale
        if not err <= RTOL[dtype]:
            raise AssertionError(f"{where}: relative error {err:.3g} against the NumPy reference (tolerance {RTOL[dtype]:.0e})")
