# A kernel the differential fuzzer generated (scripts/fuzz_kernels.py, seed 40000125 of
# tests/kernelgen.py on 2026-12-05), kept as it was generated: `u7 = cross(w, v)` where the
# select makes w the same vector as v, so the interpreter's (and the C++ build's) components
# cancel to exactly 0 and `where(u7[0] == u7[2], ...)` (written with >= and <=) takes its
# table branch; XLA:CPU contracts a product of the cross product into an FMA, leaves a rounding
# error there and takes the other branch in 50 of 70 samples, on the "xla" lowering's forward
# call and its derivatives. Not a raptor bug (docs/jax.md); the fuzzer's "xla" checks flagged
# it until the interpreter's moved runs modelled the contraction (perturb_products). Checked by
# tests/test_jax_lowerings.py (test_the_fuzzers_cancelling_cross_product_is_within_the_xla_rule).
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
def hv_40000125(u, s):
    return u * s + u / (s * s + 1.0)

@hawk.kernel(steps=3)
def fz_40000125(x0: Scalar, x1: Scalar, v: Vector[3], p0: Param, tb: Table[Vector[3]], A: Matrix[3, 3], y0: Mutable[Scalar], s: Mutable[Scalar], done: Terminated):
    a1 = (hm.atanh(tanh(where((x1 != x1), s, (p0 + v[1]))) * 0.9))
    a2 = ((s * s + 0.5) ** tanh(s))
    a1 = a1 * 1.0
    a2 = a2 * 1.0
    for li3 in range(7399):
        if li3 >= 8:
            break
        a4 = (math.atan2(p0, 1.5) - dot(v, v)) * 0.5 + float(li3)
        a2 = (a2 * 0.5 + tanh(x0)) if (not (0.0 <= (p0 * 2.0) and (p0 * 2.0) < 5 and tb.at((p0 * 2.0))[0] > 0.0)) else a2
    a5 = tan(tanh((log(-0.7 * -0.7 + 1.0) * (-7 % 3) + 1.199)))
    m6 = mat(vec(p0, p0), (1e-3, (hm.log10(abs(a5) + 0.5))))
    u7 = cross((vec(x0, where((v[2] <= x1), v[0], a2), (hm.pow(abs(v[2]) + 0.5, 1.5))) if (a1 >= v[1]) else v), where(((-7 % 3) != a1), v, v))
    y0 = where((not ((u7[0] >= u7[2]) and (u7[0] <= u7[2]))), clamp(math.sqrt(a2 * a2 + 1.0), -1.0, 1.5), tb.at(2)[0]) + 1.5e1 * x0 + -1.8 * x1 + -0.73 * p0 - -2.0 * s + -0.914 * a1 + -0.25 * a2 - 1.46 * a5 + v[1] + u7[1]
    s = s + 0.25 * tanh(log(abs((hm.sinh(tanh(u7[0]) * 2.0))) + 1.0))
    done = (s > -0.25)
