# A kernel the differential fuzzer generated (scripts/fuzz_kernels.py, seed 40000320 of
# tests/kernelgen.py on 2026-12-05), kept as it was generated: a helper with a 4x4 eigh
# rebuild (three times), solves and a Cholesky, called in a loop, with draws and a Matrix
# Mutable. Its tangent kernel has 10,116 values per step; jax.jvp through the JAX bridge's
# "xla" lowering gave XLA 18,303 instructions, which its CPU fusion grew to 336,055 (each
# producer duplicated into its consumers), and compiling that needed more than 10 GB
# (std::bad_alloc under a 10 GB cap). Now such steps are materialized every 1,000 values
# (_jax_xla._materialize): 1.4 GB and 16 s. Checked by tests/test_jax_lowerings.py
# (test_the_fuzzers_big_tangent_kernel_compiles_on_xla).
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
def h0_40000320(q0, q1):
    if ((q0 > q1) or (q0 <= q0)):
        a1 = (q1 / -0.7)
    else:
        a2 = (q0 * q0)
        a3 = math.sin(a2)
        a1 = atan2(a2, a2)
    a4 = (q1 - 1.6)
    return (where((a1 <= q1), -1.0, (float(hm.solve((identity(2) + 0.1 * (transpose(tanh(identity(2))) @ tanh(identity(2)))), vec(q1, q0))[1] + hm.cholesky((hm.eye(2) + 0.1 * (transpose(tanh(mat(vec(a4, q0), vec(q1, q0)))) @ tanh(mat(vec(a4, q0), vec(q1, q0))))))[1]) + hm.eye(2)[1, 1])) / (where((q1 >= q1), math.atan2(q1, 1.5), (hm.eigh((hm.diag(vec(2.0, 4.0, 6.0, 8.0)) + 0.2 * tanh(mat(vec(min(q0, q1), q1, a1, a1), (-0.5, (a4 + q0), q1, where((0.068 >= (-7 % 3)), q1, a4)), vec(q1, q1, a4, q0), (q0, 0.031, float(5 // 2), maximum(q1, 0.5))))))[1] @ hm.diag(hm.eigh((hm.diag(vec(2.0, 4.0, 6.0, 8.0)) + 0.2 * tanh(mat(vec(min(q0, q1), q1, a1, a1), (-0.5, (a4 + q0), q1, where((0.068 >= (-7 % 3)), q1, a4)), vec(q1, q1, a4, q0), (q0, 0.031, float(5 // 2), maximum(q1, 0.5))))))[0]) @ transpose(hm.eigh((hm.diag(vec(2.0, 4.0, 6.0, 8.0)) + 0.2 * tanh(mat(vec(min(q0, q1), q1, a1, a1), (-0.5, (a4 + q0), q1, where((0.068 >= (-7 % 3)), q1, a4)), vec(q1, q1, a4, q0), (q0, 0.031, float(5 // 2), maximum(q1, 0.5))))))[1]))[0, 0]) * where((q1 >= q1), math.atan2(q1, 1.5), (hm.eigh((hm.diag(vec(2.0, 4.0, 6.0, 8.0)) + 0.2 * tanh(mat(vec(min(q0, q1), q1, a1, a1), (-0.5, (a4 + q0), q1, where((0.068 >= (-7 % 3)), q1, a4)), vec(q1, q1, a4, q0), (q0, 0.031, float(5 // 2), maximum(q1, 0.5))))))[1] @ hm.diag(hm.eigh((hm.diag(vec(2.0, 4.0, 6.0, 8.0)) + 0.2 * tanh(mat(vec(min(q0, q1), q1, a1, a1), (-0.5, (a4 + q0), q1, where((0.068 >= (-7 % 3)), q1, a4)), vec(q1, q1, a4, q0), (q0, 0.031, float(5 // 2), maximum(q1, 0.5))))))[0]) @ transpose(hm.eigh((hm.diag(vec(2.0, 4.0, 6.0, 8.0)) + 0.2 * tanh(mat(vec(min(q0, q1), q1, a1, a1), (-0.5, (a4 + q0), q1, where((0.068 >= (-7 % 3)), q1, a4)), vec(q1, q1, a4, q0), (q0, 0.031, float(5 // 2), maximum(q1, 0.5))))))[1]))[0, 0]) + 1.0))

@hawk.func
def h1_40000320(q0, q1):
    b5 = (floor(-1.4) == 0.0)
    return q1, 0.837

@hawk.func
def hv_40000320(u, s):
    return u * s + u / (s * s + 1.0)

@hawk.kernel
def fz_40000320(x0: Scalar, x1: Scalar, x2: Scalar, p0: Param, p1: Param, tb: Table[Scalar], A: Matrix[3, 2], rng: Random, y0: Mutable[Scalar], s: Mutable[Scalar], W: Mutable[Matrix[2, 2]]):
    if (tan(sin(s)) != tan(sin(x2))):
        a7 = det((identity(2) + 0.1 * (transpose(tanh(W)) @ tanh(W))))
        for j8 in range(2):
            a9 = p0 * 0.5 + 0.0
            if (x0 > -0.417) and (x0 < -1.11):
                break
            a7 = a7 - a9 * (-7 % 3)
        a10 = rng.uniform()
        a6 = p0
    else:
        if (p1 == p0):
            a11 = (x2 if (3 > (2 ** 3 // 3)) else p0)
        elif (0.0 <= (0.5 * 2.0) and (0.5 * 2.0) < 3 and tb.at((0.5 * 2.0)) > 0.0):
            a12 = x2 + -1.994 * rng.normal()
            a11 = math.cos(a12)
        else:
            a13 = p0 + 0.25 * rng.gamma(2.5)
            a14 = sin(x1)
            a11 = hm.lu_solve(hm.lu((identity(2) + 0.1 * (transpose(tanh(A)) @ tanh(A))))[0], vec((a13 if (x1 >= x1) else a14), tan(tanh(p0))))[0]
        a6 = (p1 / (abs((s if (floor(x1 * 3.0) < 0.0 or floor(x1 * 3.0) >= 3) else tb.at(floor(x1 * 3.0)))) + 0.5))
    b15 = (not (p0 != p0))
    a16 = a6
    for j17 in range(2):
        a18 = x2 * 0.5 + (j17 % 2)
        if (0.0 <= (tb.at(clamp(-1.7, 0.0, 2.0)) * 2.0) and (tb.at(clamp(-1.7, 0.0, 2.0)) * 2.0) < 3 and tb.at((tb.at(clamp(-1.7, 0.0, 2.0)) * 2.0)) > 0.0) and (x0 >= -0.34):
            break
        a16 = a16 * 0.75 + sin(h0_40000320((x1 / (x1 * x1 + 1.0)), a16))
    y0 = inverse((identity(2) + 0.1 * (transpose(tanh((p1 * outer(vec((s * x2), (-p0)), vec(((x0 * x0 + 0.5) ** tanh(1.8)), min(s, x1)))))) @ tanh((p1 * outer(vec((s * x2), (-p0)), vec(((x0 * x0 + 0.5) ** tanh(1.8)), min(s, x1))))))))[0, 0] - -1.3 * x0 + 1e-3 * x2 + -0.96 * p0 - (2 ** 3 // 3) * s - (2 ** 3 // 3) * a6 - -0.52 * a16 + -0.25 * rng.normal()
    s = s + 0.25 * tanh(((a16 + s) * 0.5 + -2.0))
    W[0, 1] = a6
