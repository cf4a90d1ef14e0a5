# A kernel the differential fuzzer generated (tests/kernelgen.py seed 47000035, 2026-12-06, the
# first run of its stepping loop check, check_loop), kept as it was generated: a `hawk.sum`
# output beside integers and a long loop, in a kernel of one step with a Terminated mask.
# eagle.until_done fused it into passes of 1024 steps, in which a launch's sum over its live
# samples became a sum over every step of every sample (its sum came out unlike the plain loop's
# of launches). Fixed: a kernel with sums over samples runs one launch at a time (eagle/loop.py
# until_done) and Kernel.with_steps refuses it. Checked by tests/test_differential.py
# (test_stepping_loops_equal_their_plain_loop,
# test_the_loop_check_catches_fused_sums_and_a_wrong_device_count) and, on a kernel of its own,
# tests/test_loop_planner.py (test_kernels_with_sums_over_samples_run_one_launch_at_a_time).
import math
import hawk
import hawk.math as hm
from hawk import Mutable, Param, Scalar, Table, Terminated, Vector
from hawk.math import (atan2, clamp, cos, cross, dot, exp, floor, log, maximum, minimum, norm, normalize, sign, sin, sqrt, tan, tanh, vec, where)
from hawk import Matrix, Random
from hawk.math import (det, identity, inverse, mat, outer, quat_conj, quat_from_axis_angle, quat_mul, quat_rotate,
                       quat_to_matrix, trace, transpose)

M = 5


@hawk.kernel
def fz_47000035(x0: Scalar, p0: Param, i0: Scalar[hawk.int32], iv: Vector[2, hawk.int32], y0: Mutable[Scalar], s: Mutable[Scalar], w: Mutable[Vector[2]], n0: Mutable[Scalar[hawk.int64]], tot0: Mutable[Param], tot1: Mutable[Param], done: Terminated):
    a1 = clamp(tan(sin(w[1])), -1.0, 1.5)
    for j2 in range(4):
        a3 = p0 * 0.5 + float(j2)
        if (floor((x0 - 1.5e1)) == 0.0) and (x0 > 1.49):
            continue
        a1 = a1 + 0.5 * tanh((hm.sinh(tanh((w)[0]) * 2.0)))
    a4 = (minimum(w[1], x0) - (p0 + s))
    a4 = a4 * 1.0
    k5 = (int((w[1] == a1)) + iv[1])
    for li6 in range(5265):
        if li6 >= 20:
            break
        a4 = 0.9 * a4 + 0.1 * tanh((hm.remainder((s + 0.25), 2.0))) * tanh(a4)
        k5 = k5 + 1
    y0 = math.atan2(((hm.sinh(tanh(w[1]) * 2.0)) + a1), 1.5) - 1.77 * x0 + -0.5 * p0 - 0.009 * s - 0.75 * a1 - 0.75 * a4 + 0.01 * float(i0 % 97) + 0.01 * float(iv[0] % 97) + 0.01 * float(k5 % 97)
    w[1] = log(abs(maximum(s, a4)) + 1.0)
    s = s + 0.25 * tanh(norm(w))
    tot0 = hawk.sum(where((0.5 >= p0), ((w[1] * w[1] + 0.5) ** tanh(a4)), p0), where=(w[1] < a4 <= a4))
    tot1 = hawk.sum((hm.erf(((a1 * a1 + 0.5) ** -2))))
    n0 = (((iv[1] - int(clamp((hm.acosh(a1 * a1 + 1.5)), -40.0, 40.0))) * int(float((hm.sample_index() if (a1 < 0.554) else 2)))) if (floor((hm.exp2(tanh(s) * 3.0))) == 1.0) else k5)
    if (not (x0 == -0.5)):
        done = (w[0] >= s)
