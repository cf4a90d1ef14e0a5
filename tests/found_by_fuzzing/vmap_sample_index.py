# A kernel the differential fuzzer generated (scripts/fuzz_kernels.py, seed 43000203 of
# tests/kernelgen.py on 2026-12-05, in a run with -march=x86-64-v3), kept as it was generated:
# `n0 = (n0 + hm.sample_index()) % 1000`. Under jax.vmap on "ffi" with only per-sample planes
# batched, the bridge folded the batch into the sample axis, so the second entry's one sample
# read sample_index() 1 and n0 came out 40 where its own call gives 39 (check_jax_vmap, the
# first mismatch of its vmap check). Fixed: a kernel that reads sample_index() or n_samples()
# runs one launch per entry under vmap, as one that draws does (eagle/frameworks/_jax_rules.py
# _batch). Checked by tests/test_differential.py
# (test_the_fuzzers_sample_index_kernel_is_numbered_per_entry_under_vmap) and, on a kernel of
# its own, tests/test_sample_index.py (test_vmap_numbers_each_entrys_samples).
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
def h0_43000203(q0):
    u1 = normalize(vec(q0, q0, (q0 // 0.75)) + vec(2.5, 2.5, 2.5))
    return (((-0.5 * u1[2]) * 1.5 + -1.348) / ((((q0 * q0 + 0.5) ** -2) - (q0 + q0)) * (((q0 * q0 + 0.5) ** -2) - (q0 + q0)) + 1.0))

@hawk.kernel
def fz_43000203(x0: Scalar, v: Vector[3], tb: Table[Vector[3]], i0: Scalar[hawk.int32], ip: Param[hawk.int32], A: Matrix[2, 2], qin: Vector[4], y0: Mutable[Scalar], s: Mutable[Scalar], w: Mutable[Vector[3]], n0: Mutable[Scalar[hawk.int32]], n1: Mutable[Scalar[hawk.int64]]):
    qt2 = normalize(qin)
    a3 = (v[2] + s)
    a3 = a3 * 1.0
    k4 = (-n0) % 97
    for li5 in range(7831):
        if li5 >= 2:
            break
        a6 = clamp(s, -1.0, 1.5) * 0.5 + 0.1 * float(li5)
        a3 = a3 * 0.75 + sin(where((w[0] != s), -1.888, a6))
        a3 = (a3 * 0.5 + tanh(s)) if (a3 == x0) else a3
    a7 = (w[0] ** 4)
    y0 = (((a7 + -1.46) * (a7 + -1.46) + 0.5) ** -3) - 0.44 * x0 - 0.7 * a3 + 0.01 * float(i0 % 97) + 0.01 * float(k4 % 97) + qt2[0]
    w[2] = tb.at(k4 % 3)[0]
    s = s + 0.25 * tanh((v[0] - x0))
    n0 = (n0 + hm.sample_index()) % 1000
    n1 = (max(hm.sample_index(), ip) * (k4 + i0))
