"""The cases of benchmarks/_peers/cases.py written for Numba: ``prange`` loops under
``@njit(parallel=True)``, compiled per dtype on first call and cached ($NUMBA_CACHE_DIR).
Imported only when Numba is installed (host.Numba); the arithmetic is the hawk kernels'
(benchmarks/kernels.py), written so that float32 inputs stay float32 (no float64 literals).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(parallel=True, cache=True)
def drag(v, cd, dt, g, out):
    """v_next = v + dt * ((0, 0, -g) - cd |v| v) over a (3, N) plane."""
    for i in prange(v.shape[1]):
        x, y, z = v[0, i], v[1, i], v[2, i]
        s = cd * np.sqrt(x * x + y * y + z * z)
        out[0, i] = x + dt * -(s * x)
        out[1, i] = y + dt * -(s * y)
        out[2, i] = z + dt * (-g - s * z)


@njit(parallel=True, cache=True)
def osc(dt, c, t_final, corr, terminated, x, v, t):
    """One oscillator step in place; a finished sample keeps its values."""
    for i in prange(x.shape[0]):
        if not terminated[i]:
            xi, vi = x[i], v[i]
            x[i] = xi + dt * vi
            v[i] = vi + dt * (-xi - c * vi + corr[i] * vi)
            tn = t[i] + dt
            t[i] = tn
            terminated[i] = tn >= t_final[i]


@njit(parallel=True, cache=True)
def pend(dt, gamma, drive, freq, theta, omega, phase):
    """One driven pendulum step in place (semi-implicit Euler)."""
    for i in prange(theta.shape[0]):
        om = omega[i] + dt * (-np.sin(theta[i]) - gamma * omega[i] + drive * np.cos(phase[i]))
        omega[i] = om
        theta[i] = theta[i] + dt * om
        phase[i] = phase[i] + dt * freq
