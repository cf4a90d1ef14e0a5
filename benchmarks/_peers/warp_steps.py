"""The cases of benchmarks/_peers/cases.py written as NVIDIA Warp kernels, one module per
kernel and dtype, shared by Warp's CPU launch (host.WarpCPU) and its jax_kernel
(jax_side.py). Imported only when Warp is installed.

No ``from __future__ import annotations`` here: Warp reads the kernels' annotations, which
name the dtype ``T`` of the enclosing function, so they must be evaluated where defined.
"""

import warp as wp


def warp_kernels(dtype: str) -> dict:
    """The three steps in ``dtype``: ``drag`` takes (v, cd, dt, g, v_next) over a (3, N) plane,
    ``osc`` (dt, c, t_final, corr, terminated, x, v, t) and steps the last four in place (a
    finished sample keeps its values), ``pend`` (dt, gamma, drive, freq, theta, omega, phase)
    and steps the last three in place. One thread per sample: launch with dim = N."""
    T = wp.float64 if dtype == "float64" else wp.float32

    @wp.kernel(module="unique", enable_backward=False)
    def drag(v: wp.array2d(dtype=T), cd: T, dt: T, g: T, v_next: wp.array2d(dtype=T)):
        i = wp.tid()
        x = v[0, i]
        y = v[1, i]
        z = v[2, i]
        s = cd * wp.sqrt(x * x + y * y + z * z)
        v_next[0, i] = x + dt * -(s * x)
        v_next[1, i] = y + dt * -(s * y)
        v_next[2, i] = z + dt * (-g - s * z)

    @wp.kernel(module="unique", enable_backward=False)
    def osc(dt: T, c: T, t_final: wp.array(dtype=T), corr: wp.array(dtype=T), terminated: wp.array(dtype=wp.bool),
            x: wp.array(dtype=T), v: wp.array(dtype=T), t: wp.array(dtype=T)):
        i = wp.tid()
        if not terminated[i]:
            xi = x[i]
            vi = v[i]
            x[i] = xi + dt * vi
            v[i] = vi + dt * (-xi - c * vi + corr[i] * vi)
            tn = t[i] + dt
            t[i] = tn
            terminated[i] = tn >= t_final[i]

    @wp.kernel(module="unique", enable_backward=False)
    def pend(dt: T, gamma: T, drive: T, freq: T, theta: wp.array(dtype=T), omega: wp.array(dtype=T),
             phase: wp.array(dtype=T)):
        i = wp.tid()
        om = omega[i] + dt * (-wp.sin(theta[i]) - gamma * omega[i] + drive * wp.cos(phase[i]))
        omega[i] = om
        theta[i] = theta[i] + dt * om
        phase[i] = phase[i] + dt * freq

    return {"drag": drag, "osc": osc, "pend": pend}
