# A kernel the differential fuzzer generated (tests/kernelgen.py seed 47000037, 2026-12-06, the
# first run of its reverse check, check_reverse), kept as it was generated: pure outputs (y0,
# y1, w) in a kernel of three steps whose samples finish at different launches (those with x0 <=
# -1.02 once s > 1). eagle.diff.reverse of a recorded run zeroed the cotangents of pure outputs
# after each launch for every sample, also those finished before it, whose values an earlier
# launch wrote: over 2 launches <reverse(ct), t> was -4.06 where the tangent kernel's loop and
# finite differences give -13.62. Fixed: only the samples live in the launch are zeroed
# (eagle/diff.py _Adjoint.run, ArrayModule.zero_live). Checked by tests/test_differential.py
# (test_reverse_sweeps_of_records_meet_the_tangent_loop) and, on a kernel of its own,
# tests/test_reverse.py (test_reverse_through_samples_that_finish_at_different_launches).
import math
import hawk
import hawk.math as hm
from hawk import Mutable, Param, Scalar, Table, Terminated, Vector
from hawk.math import (atan2, clamp, cos, cross, dot, exp, floor, log, maximum, minimum, norm, normalize, sign, sin, sqrt, tan, tanh, vec, where)
from hawk import Matrix, Random
from hawk.math import (det, identity, inverse, mat, outer, quat_conj, quat_from_axis_angle, quat_mul, quat_rotate,
                       quat_to_matrix, trace, transpose)

M = 5

@hawk.func
def h0_47000037(q0):
    a1 = (hm.clip(q0, (hm.asin(tanh(q0) * 0.9)), (q0 + q0)))
    a2 = (tan(sin(q0)) - hm.stop_gradient(a1))
    return a2

@hawk.func
def h1_47000037(q0):
    a3 = (hm.cholesky((hm.eye(4) + 0.1 * (transpose(tanh(mat((q0, q0, abs(q0), math.cos(q0)), vec(q0, q0, q0, hm.stop_gradient(q0)), vec((q0 * q0), ((q0 * q0 + 0.5) ** tanh(q0)), q0, q0)))) @ tanh(mat((q0, q0, abs(q0), math.cos(q0)), vec(q0, q0, q0, hm.stop_gradient(q0)), vec((q0 * q0), ((q0 * q0 + 0.5) ** tanh(q0)), q0, q0))))))[0][0, 1] * (hm.diagonal(mat(vec(q0, q0, q0), vec(q0, log(q0 * q0 + 1.0), q0), (q0, q0, q0))) @ hm.diag(vec((hm.power(q0 * q0 + 0.5, tanh(q0))), q0, max(q0, q0))) @ hm.diagonal(mat(vec(q0, q0, q0), vec(q0, log(q0 * q0 + 1.0), q0), (q0, q0, q0)))))
    return (math.sin(q0) % 3), hm.tanh(log(q0 * q0 + 1.0))

@hawk.kernel(steps=3)
def fz_47000037(x0: Scalar, x1: Scalar, v: Vector[3], p0: Param, y0: Mutable[Scalar], y1: Mutable[Scalar], s: Mutable[Scalar], w: Mutable[Vector[3]], done: Terminated):
    a4 = p0
    b5 = (floor(x0) == -1.0)
    a6 = ((a4 * v))[0]
    y0 = ((v[1] - x0) * 3 + -0.5) - 1.3 * x0 - -1.3 * p0 + -0.5 * s + -0.12 * a4 + -0.759 * a6 + where(b5, -0.436, 0.0) + v[2]
    y1 = (hm.log10(abs(where((a4 <= s), p0, 1.25)) + 0.5))
    w = v
    s = s + 0.25 * tanh(max(a4, a6))
    if (x0 <= -1.02):
        done = (s > 1.0)
