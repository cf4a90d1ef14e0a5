"""kernel.trace (docs/language.md, "Seeing inside a kernel"): every named local per step for
the chosen samples, from the reference interpreter, against NumPy references in float32 and
float64; steps > 1 with a loop and a mask (NaN for steps a sample did not run); the `print`
refusal points to it.
"""

from __future__ import annotations

import numpy as np
import pytest

import hawk
from hawk import Mutable, Param, Scalar, Table, Terminated, Vector
from hawk.math import norm, sqrt, vec


@hawk.kernel
def drag(v: Vector[3], cd: Param, dt: Param, v_next: Mutable[Vector[3]], fast: Mutable[Scalar]):
    speed = norm(v)
    a = vec(0.0, 0.0, -9.81) - cd * speed * v
    is_fast = speed > 2.0
    if is_fast:
        fast = 1.0
    else:
        fast = 0.0
    v_next = v + dt * a


@hawk.kernel(steps=4)
def decay(k: Param, w: Table[Scalar], terminated: Terminated, x: Mutable[Scalar]):
    n = 0.0
    for i in range(6):
        x = x - k * x * w.at(i)
        n = n + 1.0
        if x < 0.5:
            break
    r = sqrt(x)
    terminated = x < 0.3


def test_trace_values_per_sample_float64_and_float32():
    rng = np.random.default_rng(0)
    for dtype in (np.float64, np.float32):
        v = rng.uniform(-2.0, 2.0, (3, 10)).astype(dtype)
        samples = [0, 3, 7]
        tr = drag.trace(samples=samples, v=v, cd=0.3, dt=0.1)
        assert set(tr) == {"speed", "a", "is_fast"}
        vs = v[:, samples]
        speed = np.sqrt((vs * vs).sum(axis=0, dtype=dtype))
        assert tr["speed"].shape == (1, 3) and tr["speed"].dtype == dtype
        np.testing.assert_allclose(tr["speed"][0], speed, rtol=1e-6 if dtype == np.float32 else 1e-14)
        a = np.array([0.0, 0.0, -9.81], dtype)[:, None] - dtype(0.3) * speed * vs
        assert tr["a"].shape == (1, 3, 3)
        np.testing.assert_allclose(tr["a"][0], a.T, rtol=1e-5 if dtype == np.float32 else 1e-13)
        assert tr["is_fast"].dtype == bool
        np.testing.assert_array_equal(tr["is_fast"][0], speed > 2.0)


def test_trace_steps_loop_and_mask():
    w = np.array([0.5, 0.25, 0.5, 1.0, 0.1, 0.2])
    x0 = np.array([3.0, 1.0, 0.9, 5.0, 2.0])
    mask = np.array([False, False, True, False, False])
    tr = decay.trace(samples=[0, 1, 2, 4], k=0.4, w=w, terminated=mask, x=x0)
    assert set(tr) == {"n", "r"}  # `i` depends on the iteration each sample broke at: left out
    # reference: the same loop in plain Python, step by step
    for col, s in enumerate([0, 1, 2, 4]):
        x = x0[s]
        done = mask[s]
        for step in range(4):
            if done:
                assert np.isnan(tr["n"][step, col]) and np.isnan(tr["r"][step, col])
                continue
            n = 0.0
            for i in range(6):
                x = x - 0.4 * x * w[i]
                n += 1.0
                if x < 0.5:
                    break
            assert tr["n"][step, col] == n
            np.testing.assert_allclose(tr["r"][step, col], np.sqrt(x), rtol=1e-15)
            done = x < 0.3
    assert tr["n"].shape == (4, 4)


def test_trace_refusals():
    with pytest.raises(TypeError, match="derived kernel"):
        drag.tangent(["v"]).trace(samples=[0], v=np.zeros((3, 2)), cd=0.1, dt=0.1, v_dot=np.zeros((3, 2)))
    with pytest.raises(TypeError, match="no parameter 'speed'"):
        drag.trace(samples=[0], v=np.zeros((3, 2)), cd=0.1, dt=0.1, speed=1.0)
    with pytest.raises(KeyError, match="needs a value for 'cd'"):
        drag.trace(samples=[0], v=np.zeros((3, 2)), dt=0.1)


def test_print_refusal_points_to_trace():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_print(x: Scalar, out: Mutable[Scalar]):
            out = x
            print(x)
    assert "kernel.trace(samples=[...], **inputs)" in str(e.value)
