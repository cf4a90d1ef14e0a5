"""The hawk kernels the benchmarks time, defined once (each benchmark script imports them;
its plain-JAX or hand-written baseline stays in the script, beside its measurement):

- ``drag_step``: the drag step of SPEC §1 (a 3-vector, a norm, three Params);
- ``osc`` / ``osc_active``: the damped oscillator of the stepping pages, a stepping kernel
  with a Terminated mask, plain and built with ``Guard(active_set=True)``;
- ``flight``: the flight step of the user's page 002 (position and velocity, a mask);
- ``coast``: ``flight``'s signature and data flow with almost no arithmetic, for the JAX
  bridge's floor rows (what any step costs through the bridge).
"""

from __future__ import annotations

import hawk
from hawk import Guard, Mutable, Param, Scalar, Terminated, Vector
from hawk.math import norm, vec

__all__ = ["drag_step", "osc", "osc_active", "flight", "coast"]


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
