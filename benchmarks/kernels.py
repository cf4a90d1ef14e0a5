"""The hawk kernels the benchmarks time, defined once (each benchmark script imports them;
its plain-JAX or hand-written baseline stays in the script, beside its measurement):

- ``drag_step``: the drag step of SPEC §1 (a 3-vector, a norm, three Params);
- ``osc`` / ``osc_active``: the damped oscillator of the stepping pages, a stepping kernel
  with a Terminated mask, plain and built with ``Guard(active_set=True)``;
- ``flight``: the flight step of the user's page 002 (position and velocity, a mask);
- ``pendulum``: a driven, damped pendulum, one semi-implicit Euler step (a sin and a cos per
  sample: benchmarks/peers.py's ``pend`` case);
- ``coast``: ``flight``'s signature and data flow with almost no arithmetic, for the JAX
  bridge's floor rows (what any step costs through the bridge).
"""

from __future__ import annotations

import hawk
from hawk import Guard, Mutable, Param, Scalar, Terminated, Vector
from hawk.math import cos, norm, sin, vec

__all__ = ["drag_step", "osc", "osc_active", "pendulum", "flight", "coast", "card_rk4"]


@hawk.kernel
def drag_step(v: Vector[3], cd: Param, dt: Param, g: Param, v_next: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -g) - cd * norm(v) * v
    v_next = v + dt * a


@hawk.kernel(steps=1)
def osc(dt: Param, c: Param, t_final: Scalar, corr: Scalar, terminated: Terminated,
        x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    vn = v + dt * (-x - c * v + corr * v)
    x = x + dt * v
    v = vn
    t = t + dt
    terminated = t >= t_final


@hawk.kernel(steps=1, guard=Guard(active_set=True))
def osc_active(dt: Param, c: Param, t_final: Scalar, corr: Scalar, terminated: Terminated,
               x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    vn = v + dt * (-x - c * v + corr * v)
    x = x + dt * v
    v = vn
    t = t + dt
    terminated = t >= t_final


@hawk.kernel
def pendulum(dt: Param, gamma: Param, drive: Param, freq: Param, theta: Mutable[Scalar],
             omega: Mutable[Scalar], phase: Mutable[Scalar]):
    omega = omega + dt * (-sin(theta) - gamma * omega + drive * cos(phase))
    theta = theta + dt * omega
    phase = phase + dt * freq


@hawk.kernel(steps=1)
def flight(r: Vector[3], v: Vector[3], cd: Param, dt: Param, g: Param, terminated: Terminated,
           r_next: Mutable[Vector[3]], v_next: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -g) - cd * norm(v) * v
    v_new = v + dt * a
    v_next = v_new
    r_next = r + dt * v_new
    terminated = r_next[2] < 0.0


@hawk.kernel(steps=1)
def coast(r: Vector[3], v: Vector[3], cd: Param, dt: Param, g: Param, terminated: Terminated,
          r_next: Mutable[Vector[3]], v_next: Mutable[Vector[3]]):
    v_next = v - (cd * dt) * v
    r_next = r + dt * v_next
    terminated = r_next[2] < 0.0


@hawk.func
def card_accel(omega, zeta, x, v):
    return -2.0 * zeta * omega * v - omega * omega * x


@hawk.kernel(steps=1)
def card_rk4(omega: Scalar, zeta: Scalar, nstop: Scalar, dt: Param, terminated: Terminated,
             x: Mutable[Scalar], v: Mutable[Scalar], k: Mutable[Scalar]):
    """The performance card's step: a damped oscillator, one classical RK4 step, counting its
    steps in k and stopping at its own step count nstop."""
    h = 0.5 * dt
    k1x = v
    k1v = card_accel(omega, zeta, x, v)
    k2x = v + h * k1v
    k2v = card_accel(omega, zeta, x + h * k1x, v + h * k1v)
    k3x = v + h * k2v
    k3v = card_accel(omega, zeta, x + h * k2x, v + h * k2v)
    k4x = v + dt * k3v
    k4v = card_accel(omega, zeta, x + dt * k3x, v + dt * k3v)
    x = x + (dt / 6.0) * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
    v = v + (dt / 6.0) * (k1v + 2.0 * k2v + 2.0 * k3v + k4v)
    k = k + 1.0
    terminated = k >= nstop
