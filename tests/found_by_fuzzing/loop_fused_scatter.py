# A kernel the differential fuzzer generated (tests/kernelgen.py seed 47000017, 2026-12-06, the
# first run of its stepping loop check, check_loop), kept as it was generated: a scatter target,
# `hawk.scatter(sct)[...] += ...`, in a kernel of one step with a Terminated mask.
# eagle.until_done fused it into passes of 1024 steps, in which a launch's sum over its live
# samples became a sum over every step of every sample (its scatter target came out unlike the
# plain loop's of launches). Fixed: a kernel with sums over samples runs one launch at a time
# (eagle/loop.py until_done) and Kernel.with_steps refuses it. Checked by
# tests/test_differential.py (test_stepping_loops_equal_their_plain_loop,
# test_the_loop_check_catches_fused_sums_and_a_wrong_device_count) and, on a kernel of its own,
# tests/test_loop_planner.py (test_kernels_with_sums_over_samples_run_one_launch_at_a_time).
import math
import hawk
import hawk.math as hm
from hawk import Mutable, Param, Scalar, Table, Terminated, Vector
from hawk.math import (atan2, clamp, cos, cross, dot, exp, floor, log, maximum, minimum, norm, normalize, sign, sin, sqrt, tan, tanh, vec, where)

M = 3

@hawk.func
def h0_47000017(q0, q1):
    return q0

@hawk.kernel
def fz_47000017(x0: Scalar, v: Vector[2], p0: Param, y0: Mutable[Scalar], y1: Mutable[Scalar], s: Mutable[Scalar], sct: Mutable[Table[Vector[2]]], done: Terminated):
    a1 = x0
    a2 = x0
    a3 = a1
    a4, a5 = (hm.tanh(a3) if (where((s > v[1]), x0, a3) != (-1.37 - v[0])) else -0.486), a2
    a6 = (dot(minimum((v if (v[0] < a5) else v), (vec(h0_47000017(v[0], v[0]), (a4 - x0)) + v)), (v / (v[1] * v[1] + 1.0))) + (math.sin(where((v[0] == a1), v[0], a1)) if (not (a2 == a2)) else (a4 * 1.25 + (-7 % 3))))
    y0 = ((minimum((s % 1.5), (a1 - v[1])) % 1.5) if (not ((v[0] + a6) > a4)) else tan(tanh(exp(-(v[1] * v[1]))))) - 1.5e1 * x0 - 1e-3 * s + 1.58 * a2 + 1.5e1 * a3 + 1.54 * a4 - -2.0 * a5 - 1.25 * a6 + v[1]
    y1 = v[0]
    s = s + 0.25 * tanh(minimum((s + (a2 // 0.75)), ((s + x0) - atan2(v[1], a5 * a5 + 0.1))))
    if (floor(a5) == -1.0):
        hawk.scatter(sct)[(tanh((where((x0 < v[0] <= a5), clamp(v[0], a1, a5), (a6 * a3)) if (((s > v[0]) and (v[1] >= a5)) or (v[0] < a3 <= p0)) else ((s * -1.81) - tan(tanh(a4))))) * 0.499 + 0.5) * M] += (-normalize(v + vec(2.5, 2.5)))
    if (floor(v[1]) == -1.0):
        hawk.scatter(sct)[(tanh(1.233) * 0.499 + 0.5) * M] += where((not (a6 <= a2)), (-(vec(v[0], h0_47000017(p0, p0)) - v)), abs(v))
    done = (s > 0.5)
