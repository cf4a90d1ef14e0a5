# A kernel the differential fuzzer generated (scripts/fuzz_kernels.py, seed 30000129 of
# tests/kernelgen.py on 2026-12-05), kept as it was generated: its nested linear algebra
# (eigh, lstsq, solve, inverse of 2x2 and 4x4 matrices) made the JAX bridge's "xla" lowering
# hand XLA sums over lanes that were stacked rows (reduce of concatenate, nested), which XLA's
# CPU backend compiled with more than 8 GB of memory, then crashed. Checked by
# tests/test_jax_lowerings.py (test_the_fuzzers_nested_linear_algebra_kernel_compiles_on_xla).
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
def h0_30000129(q0, q1, q2):
    return q1

@hawk.kernel(steps=2)
def fz_30000129(x0: Scalar, v: Vector[2], tb: Table[Vector[2]], rng: Random, y0: Mutable[Scalar], s: Mutable[Scalar], w: Mutable[Vector[2]], done: Terminated):
    a1, a2 = ((x0 * log(x0 * x0 + 1.0)) + (-s)), (float(hm.solve((identity(2) + 0.1 * tanh((mat(vec(0.75, v[0]), vec(clamp(x0, -1.0, 1.5), s)) + mat(vec(((s * s + 0.25) ** -0.5), x0), (x0, x0))))), (v if (s == x0) else vec(h0_30000129(s, x0, s), x0)))[1] + hm.cholesky((hm.eye(2) + 0.1 * (transpose(tanh((-mat(vec((s * s), (-7 % 3)), (cos(v[0]), cos(s)))))) @ tanh((-mat(vec((s * s), (-7 % 3)), (cos(v[0]), cos(s))))))))[1]) + hm.eye(2)[1, 1])
    a3 = rng.normal() if (x0 == log(abs((x0 if (a1 != 0.5) else x0)) + 1.0)) else maximum((a1 * (v[1] + s)), a1) * rng.uniform()
    u4 = (((vec((s * -2.0 + 1.379), exp(-(a1 * a1))) * v) * (v - v)) - (normalize(v + vec(2.5, 2.5)) if (floor(v[0]) == 0.0) else (vec((a3 * a3), tan(tanh(a1))) * v)))
    a5 = tan(tanh(dot((where((u4[0] != x0), u4, vec(hm.lstsq((identity(4) + 0.1 * (transpose(tanh(outer(u4, normalize(vec(log(abs(a3) + 1.0), a1, x0, where((a2 >= v[1]), u4[1], v[1]) * where((a2 >= v[1]), u4[1], v[1]) + 1.0))))) @ tanh(outer(u4, normalize(vec(log(abs(a3) + 1.0), a1, x0, where((a2 >= v[1]), u4[1], v[1]) * where((a2 >= v[1]), u4[1], v[1]) + 1.0)))))), normalize(vec((tb.at(abs(a2) % 3)[0] if abs(a2) < 1e6 else 0.0), log(abs(v[1]) + 1.0), where((a3 <= a3), u4[1], a2), (a2 // 1.5) * (a2 // 1.5) + 1.0)))[0][2], (v[0] if (floor(u4[0] * 3.0) < 0.0 or floor(u4[0] * 3.0) >= 3) else tb.at(floor(u4[0] * 3.0))[1]))) - (a3 * vec(floor(a1), x0))), minimum((v / (u4[0] * u4[0] + 1.0)), (a3 + a3)))))
    if (v[1] < where((a1 != a5), (a3 - a1), sign(a3)) <= ((tb.at(abs(u4[0]) % 3)[0] if abs(u4[0]) < 1e6 else 0.0) / (abs(sqrt(abs(a3))) + 0.5))):
        a6 = (((a2 ** 0) + (a5 * s)) + (min(a5, x0) if (floor((-0.6 - u4[0]) * 3.0) < 0.0 or floor((-0.6 - u4[0]) * 3.0) >= 3) else tb.at(floor((-0.6 - u4[0]) * 3.0))[0]))
    elif ((where((x0 < s), a3, a5) == a1) or (a1 <= (s * u4[0]))):
        a7, a8 = hm.inv((identity(2) + 0.1 * (transpose(tanh((mat((a2, a5), (0.75, a5)) + mat((a3, a5), (a2, s))))) @ tanh((mat((a2, a5), (0.75, a5)) + mat((a3, a5), (a2, s)))))))[0][0, 1], math.atan2(hm.lu_solve(hm.lu((identity(2) + 0.1 * (transpose(tanh(outer(u4, u4))) @ tanh(outer(u4, u4)))))[0], vec(dot(vec(exp(-(1e-3 * 1e-3)), 0.59), vec(clamp(x0, -1.0, 1.5), h0_30000129(v[0], s, a2))), (s * u4[1])))[0], 1.5)
        a6 = h0_30000129((tan(sin(a5)) - hm.eigh((hm.diag(vec(2.0, 4.0)) + 0.2 * tanh(identity(2))))[0][1]), tan(tanh(hm.tanh(u4[1]))), (float(hm.solve((identity(2) + 0.1 * tanh(inverse((identity(2) + 0.1 * (transpose(tanh(mat((a3, a2), ((a5 + x0), where((u4[1] <= 1.25), (-7 % 3), a7))))) @ tanh(mat((a3, a2), ((a5 + x0), where((u4[1] <= 1.25), (-7 % 3), a7))))))))), (v if (a7 <= a5) else v))[1] + hm.cholesky((hm.eye(2) + 0.1 * (transpose(tanh((identity(2) if (v[0] <= -1.87) else outer(vec((-a1), (v[1] // 0.75)), v)))) @ tanh((identity(2) if (v[0] <= -1.87) else outer(vec((-a1), (v[1] // 0.75)), v))))))[1]) + hm.eye(2)[1, 0]))
    else:
        a9 = log((tb.at(clamp(a1, 0.0, 2.0)))[1] * (tb.at(clamp(a1, 0.0, 2.0)))[1] + 1.0)
        a10 = (hm.lu_solve(hm.lu((identity(3) + 0.1 * (transpose(tanh((mat((x0, (a2 + 0.3), s), vec(u4[1], 3, a1)) if (u4[0] != a3) else mat((x0, u4[1], a1), ((a3 if (a2 < a9) else v[0]), x0, atan2(a9, a5)))))) @ tanh((mat((x0, (a2 + 0.3), s), vec(u4[1], 3, a1)) if (u4[0] != a3) else mat((x0, u4[1], a1), ((a3 if (a2 < a9) else v[0]), x0, atan2(a9, a5))))))))[0], vec((x0 / (abs(a1) + 0.5)), (a2 - a3), (a9 * a3)))[1] * 0.839 + -0.5)
        a6 = max(a9, (hm.eigh((hm.diag(vec(2.0, 4.0, 6.0, 8.0)) + 0.2 * tanh((identity(4) + a2))))[1] @ hm.diag(hm.eigh((hm.diag(vec(2.0, 4.0, 6.0, 8.0)) + 0.2 * tanh((identity(4) + a2))))[0]) @ transpose(hm.eigh((hm.diag(vec(2.0, 4.0, 6.0, 8.0)) + 0.2 * tanh((identity(4) + a2))))[1]))[3, 1])
    y0 = v[0] + -0.4 * x0 + 0.553 * a1 - -0.6 * a3 + 0.2 * a5 - -1.028 * a6 + v[0] + u4[1]
    w = vec(-0.012, (v[0] if (1e-3 >= x0) else a3))
    s = s + 0.25 * tanh(u4[1])
    done = (s > 1.0)
