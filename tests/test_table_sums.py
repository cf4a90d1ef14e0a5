"""Table cotangents (TableSum scatter-adds) when many samples hit the same entries.

The adjoint of a Table read scatters each sample's contribution into the entry it read;
samples that share an entry add into the same place. The host code generator must not put
those scatter-adds in a loop it promises is free of dependences between iterations
(``#pragma GCC ivdep`` / ``#pragma omp simd``): with AVX-512 GCC vectorizes such a loop
into gather-add-scatter, and lanes hitting one entry then lose all but one contribution.

Every case runs at the default host flags (-O3 -march=native), for N from 1 to 70000
(below and above the thread pool's serial threshold, 32768 samples), with one entry hit
by every sample and with a few entries, against NumPy's np.add.at in float64 (1e-12
relative) and float32. Kernels: a Scalar table and a Vector table read at a data index
(steps == 1, the vectorized sample loop) and a stepped kernel (steps > 1, the blocked
loop). Start at ``test_table_cotangent_matches_add_at``.
"""

from __future__ import annotations

import numpy as np
import pytest

import eagle.plan
import hawk
from hawk import Mutable, Param, Scalar, Table, Vector

M = 5  # table entries
NS = (1, 3, 17, 64, 65, 1000, 32767, 32768, 32769, 70000)


@hawk.kernel
def ts_scalar(w: Table[Scalar], idx: Scalar, x: Scalar, y: Mutable[Scalar]):
    y = w.at(idx) * x


@hawk.kernel
def ts_vector(wv: Table[Vector[3]], idx: Scalar, x: Scalar, o: Mutable[Vector[3]]):
    o = wv.at(idx) * x


@hawk.kernel(steps=3)
def ts_stepped(w: Table[Scalar], idx: Scalar, p: Param, y: Mutable[Scalar]):
    y = y * p + w.at(idx)


@pytest.fixture(scope="module")
def plans(module_cache_dir):
    """The adjoints of the three kernels with respect to their tables, one host module."""
    ks = [ts_scalar.adjoint(["w"]), ts_vector.adjoint(["wv"]), ts_stepped.adjoint(["w", "y"])]
    return dict(zip(("scalar", "vector", "stepped"), eagle.plan.auto(ks, cache_dir=module_cache_dir)))


def indices(rng, n: int, pattern: str) -> np.ndarray:
    """Table indices (float, as the kernels read them): every sample on entry 2, or a few
    entries (0, 1, 3) in random order."""
    if pattern == "one":
        return np.full(n, 2.0)
    return rng.choice(np.array([0.0, 1.0, 3.0]), n)


def check(got: np.ndarray, want: np.ndarray, dtype, what: str) -> None:
    assert got.dtype == dtype, what
    if dtype == np.float64:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0.0, err_msg=what)
    else:  # float32 contributions, summed in double by the launcher, rounded once
        np.testing.assert_allclose(got, want.astype(np.float32), rtol=2e-7, atol=0.0, err_msg=what)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("pattern", ["one", "few"])
@pytest.mark.parametrize("n", NS)
def test_table_cotangent_matches_add_at(plans, n, pattern, dtype):
    rng = np.random.default_rng(n * 7 + (pattern == "one"))
    idx = indices(rng, n, pattern)
    # positive contributions: no cancellation, so the relative tolerance is meaningful
    x = rng.uniform(0.5, 1.5, n).astype(dtype)
    ct = rng.uniform(0.5, 1.5, n).astype(dtype)
    ii = idx.astype(int)

    # Scalar table: w_bar[idx[i]] += x[i] * y_bar[i]
    vals = dict(w=np.zeros(M, dtype), idx=idx.astype(dtype), x=x, y_bar=ct.copy(),
                w_bar=np.full(M, np.nan, dtype))
    plans["scalar"].bind(**vals).launch()
    want = np.zeros(M)
    np.add.at(want, ii, (x * ct).astype(np.float64))  # the product in the kernel's dtype
    check(vals["w_bar"], want, dtype, f"scalar table, n={n}, {pattern}")

    # Vector table: wv_bar[idx[i], c] += x[i] * o_bar[c, i]
    ctv = rng.uniform(0.5, 1.5, (3, n)).astype(dtype)
    vals = dict(wv=np.zeros((M, 3), dtype), idx=idx.astype(dtype), x=x, o_bar=ctv.copy(),
                wv_bar=np.full((M, 3), np.nan, dtype))
    plans["vector"].bind(**vals).launch()
    want = np.zeros((M, 3))
    np.add.at(want, ii, (x * ctv).T.astype(np.float64))
    check(vals["wv_bar"], want, dtype, f"vector table, n={n}, {pattern}")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", NS)
def test_stepped_table_cotangent_matches_add_at(plans, n, dtype):
    """y_3 = p^3 y_0 + (p^2 + p + 1) w[idx]: w_bar[idx[i]] += (p^2 + p + 1) y_bar[i]; the
    contribution of each step is scattered in the blocked loop."""
    rng = np.random.default_rng(n)
    idx = indices(rng, n, "few")
    p = dtype(0.5)
    ct = rng.uniform(0.5, 1.5, n).astype(dtype)
    vals = dict(w=np.zeros(M, dtype), idx=idx.astype(dtype), p=float(p),
                y=np.zeros(n, dtype), y_bar=ct.copy(), w_bar=np.full(M, np.nan, dtype))
    plans["stepped"].bind(**vals).launch()
    want = np.zeros(M)
    np.add.at(want, idx.astype(int), ct.astype(np.float64) * (1.0 + 0.5 + 0.25))
    if dtype == np.float64:
        np.testing.assert_allclose(vals["w_bar"], want, rtol=1e-12, atol=0.0)
    else:  # each step's contribution is rounded to float32 before the double sum
        np.testing.assert_allclose(vals["w_bar"], want.astype(np.float32), rtol=1e-6, atol=0.0)
