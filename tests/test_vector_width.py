"""The per-kernel vector width (cpp/codegen/host_driver.cpp, HostWriter::divider_bound): a
float64 kernel whose per-sample arithmetic is bound by square roots and divisions (more than
one per 32 other operations) and has no mask is compiled with 256-bit vectors (RP_NARROW);
float32 kernels, kernels without them, roots or divisions of Params alone (done once, not per
sample) and kernels with a Terminated mask (GCC 12 leaves their masked float64 loops scalar at
256 bits on AVX-512 targets) keep the flags' width; so does every kernel compiled for an AMD Zen
core (the preamble defines RP_NARROW empty there). Results do not depend on the width: checked against NumPy bit for bit."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import eagle.plan
import hawk
from hawk import Mutable, Param, Scalar, Terminated, Vector
from hawk.math import norm, sqrt, vec

NARROW = "RAPTOR_EXPORT RP_NARROW void"


@hawk.kernel
def drag(v: Vector[3], cd: Param, dt: Param, g: Param, v_next: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -g) - cd * norm(v) * v
    v_next = v + dt * a


@hawk.kernel(steps=1)
def flight(r: Vector[3], v: Vector[3], cd: Param, dt: Param, g: Param, terminated: Terminated,
           r_next: Mutable[Vector[3]], v_next: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -g) - cd * norm(v) * v
    v_next = v + dt * a
    r_next = r + dt * v_next
    terminated = r_next[2] < 0.0


@hawk.kernel
def root_of_param(x: Scalar, c: Param, y: Mutable[Scalar]):
    y = x * sqrt(c) + x * (1.0 / c)


@hawk.kernel
def ratio(x: Scalar, z: Scalar, y: Mutable[Scalar]):
    y = x / z


@hawk.kernel
def long_polynomial(x: Scalar, y: Mutable[Scalar]):
    # one division among 33 multiplications and additions: not bound by the division
    p = x
    for _ in range(16):
        p = p * x + 1.0
    y = p + 1.0 / (x + 2.0)


@hawk.kernel
def no_root(x: Scalar, y: Mutable[Scalar]):
    y = x * x + 1.0


@pytest.mark.parametrize(
    "kernel, narrow64",
    [(drag, True), (ratio, True), (flight, False), (root_of_param, False), (long_polynomial, False),
     (no_root, False)],
    ids=["drag", "ratio", "flight", "root_of_param", "long_polynomial", "no_root"],
)
def test_which_kernels_prefer_256_bit_vectors(kernel, narrow64):
    assert (NARROW in kernel.cpp("float64")) == narrow64
    assert NARROW not in kernel.cpp("float32")


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_a_narrow_kernel_computes_what_numpy_does(tmp_path, dtype):
    (plan,) = eagle.plan.auto([drag], cache_dir=str(tmp_path))
    rng = np.random.default_rng(20261205)
    n = 1003  # not a multiple of any vector width: the loop's remainder runs too
    v = rng.uniform(-50.0, 50.0, (3, n)).astype(dtype)  # planes are (width, N)
    out = np.zeros_like(v)
    cd, dt, g = 0.0125, 0.01, 9.81
    plan.bind(v=v, cd=cd, dt=dt, g=g, v_next=out).launch()
    c, t, gg = dtype(cd), dtype(dt), dtype(g)
    speed = np.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    a = np.stack([np.zeros(n, dtype), np.zeros(n, dtype), np.full(n, -gg, dtype)]) - (c * speed) * v
    want = v + t * a
    np.testing.assert_array_equal(out, want)


def _narrow_after_preprocessing(tmp_path, source: str, march: list[str]) -> bool:
    """Whether the kernel's entry point carries prefer-vector-width=256 once g++ has
    preprocessed ``source`` for the target ``march`` (the preamble's #if on the core)."""
    src = tmp_path / "kernel.cpp"
    src.write_text(source)
    out = subprocess.run(["g++", "-std=c++20", "-E", "-P", *march, str(src)], capture_output=True,
                         text=True, check=True).stdout
    entry = next(line for line in out.splitlines() if "raptor_drag_" in line and "raptor_args* a" in line)
    return 'target("prefer-vector-width=256")' in entry


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ to preprocess the kernel")
@pytest.mark.parametrize(
    "march, narrow",
    [(["-march=skylake-avx512"], True), (["-march=sapphirerapids"], True), (["-march=x86-64-v4"], True),
     (["-march=znver3", "-mavx512f", "-mavx512vl"], False), (["-march=znver2"], False)],
    ids=["skylake-avx512", "sapphirerapids", "x86-64-v4", "znver3+avx512 (GCC 12's Zen 4)", "znver2"],
)
def test_zen_cores_keep_the_flags_width(tmp_path, march, narrow):
    # Zen 4 runs 512-bit vectors at full clock and splits them in two for the dividers: the
    # drag step was 13-35% faster there with 512 bits than with 256 (host_driver.cpp).
    assert _narrow_after_preprocessing(tmp_path, drag.cpp("float64"), march) == narrow
