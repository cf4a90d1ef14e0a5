# A kernel the differential fuzzer generated (tests/kernelgen.py seed 47000007, 2026-12-06, the
# first run of its reverse check, check_reverse), kept as it was generated: an integer pure
# output (n0) and draws. eagle.diff.reverse of a recorded run raised numpy's TypeError "Cannot
# cast scalar from dtype('float64') to dtype('int64')": it zeroed a cotangent of the integer
# output, which has none. Fixed: integer outputs get no cotangent (eagle/diff.py). Checked by
# tests/test_differential.py (test_reverse_sweeps_of_records_meet_the_tangent_loop) and, on a
# kernel of its own, tests/test_reverse.py
# (test_reverse_through_samples_that_finish_at_different_launches).
import math
import hawk
import hawk.math as hm
from hawk import Mutable, Param, Scalar, Table, Terminated, Vector
from hawk.math import (atan2, clamp, cos, cross, dot, exp, floor, log, maximum, minimum, norm, normalize, sign, sin, sqrt, tan, tanh, vec, where)
from hawk import Matrix, Random
from hawk.math import (det, identity, inverse, mat, outer, quat_conj, quat_from_axis_angle, quat_mul, quat_rotate,
                       quat_to_matrix, trace, transpose)

M = 3

@hawk.func
def h0_47000007(q0, q1):
    a1 = q0
    a2 = q1
    return sqrt(abs((q1 - q1)))

@hawk.func
def h1_47000007(q0, q1, q2):
    return q1

@hawk.kernel
def fz_47000007(x0: Scalar, p0: Param, i0: Scalar[hawk.int32], i1: Scalar[hawk.int32], rng: Random, y0: Mutable[Scalar], n0: Mutable[Scalar[hawk.int64]], done: Terminated):
    a3 = rng.normal() if ((int((-p0) if abs((-p0)) < 1e6 else 0.0) % max(abs(i1), 1)) > min(i1, i0)) else (1.5e1 if (p0 <= p0) else x0) * rng.uniform()
    a4 = ((a3 * x0) - tan(tanh(p0)))
    a5, a6 = p0, p0
    y0 = (sqrt(abs(p0)) if (min(int((x0 <= -1.371)), i1) % 2 == 0) else 1.28) - -0.51 * x0 - 1.254 * p0 - 1.5e1 * a3 - 1.5e1 * a4 - 0.75 * a5 + 0.01 * float(i0 % 97)
    n0 = ((i0 % max(abs(hm.sample_index()), 1)) if (a6 == p0) else (i1 * i0))
    if (a6 == x0):
        done = ((hm.n_samples() + i0) <= 0)
