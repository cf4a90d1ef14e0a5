"""The JAX bridge's kernel calls are kept per cache directory (issue 10 item 7): a process that
switches $RAPTOR_CACHE_DIR builds into the new directory instead of reusing a call whose build
lives in the old one, and derived kernels land in their primal's directory."""

from __future__ import annotations

import os

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import hawk  # noqa: E402
from hawk import Mutable, Param, Scalar  # noqa: E402
from eagle.frameworks import _jax_call  # noqa: E402


@hawk.kernel
def scaled(x: Scalar, c: Param, y: Mutable[Scalar]):
    y = c * x * x


def _dirs_holding(root: str, digest: str) -> bool:
    """Whether the manifest of ``digest`` was written under ``root``."""
    return os.path.exists(os.path.join(root, "kernels", digest + ".kernel"))


def test_calls_are_kept_per_cache_directory(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    monkeypatch.setenv("RAPTOR_CACHE_DIR", str(a))
    call_a = _jax_call.call_for(scaled, np.float64)
    monkeypatch.setenv("RAPTOR_CACHE_DIR", str(b))
    call_b = _jax_call.call_for(scaled, np.float64)
    assert call_a is not call_b
    assert call_a.digest == call_b.digest  # the same kernel: one primitive parameter
    # Built when the FFI path first needs it, in the directory in force when the call was made.
    assert not _dirs_holding(str(a), call_a.digest)
    call_a.ensure_host()
    call_b.ensure_host()
    assert _dirs_holding(str(a), call_a.digest) and _dirs_holding(str(b), call_b.digest)
    assert _jax_call.call_for(scaled, np.float64) is call_b  # and reused within a directory
    # Derived kernels are built in their primal's directory.
    tangent = call_b.tangent(["x"])
    tangent.ensure_host()
    assert _dirs_holding(str(b), tangent.digest)
    assert not _dirs_holding(str(a), tangent.digest)


def test_a_call_lowered_with_xla_compiles_no_cpp(tmp_path, monkeypatch):
    from eagle.frameworks import jax as eagle_jax

    d = tmp_path / "d"
    monkeypatch.setenv("RAPTOR_CACHE_DIR", str(d))
    x = jnp.linspace(-1.0, 1.0, 8)
    digest = scaled.digest("float64")
    y = jax.jit(jax.grad(lambda x: eagle_jax.function(scaled, wrt=("x",), lowering="xla")(x, 2.0).sum()))(x)
    np.testing.assert_allclose(np.asarray(y), 4.0 * np.asarray(x), rtol=1e-12)
    assert not _dirs_holding(str(d), digest)
    eagle_jax.function(scaled, lowering="ffi")(x, 2.0)
    assert _dirs_holding(str(d), digest)


def test_an_explicit_cache_dir_is_its_own_key(tmp_path):
    c = tmp_path / "c"
    call = _jax_call.call_for(scaled, np.float32, str(c))
    call.ensure_host()
    assert _dirs_holding(str(c), call.digest)
    assert _jax_call.call_for(scaled, np.float32, str(c)) is call
    x = jnp.linspace(-1.0, 1.0, 8, dtype=jnp.float32)
    from eagle.frameworks import jax as eagle_jax

    y = eagle_jax.function(scaled)(x, 2.0)
    np.testing.assert_allclose(np.asarray(y), 2.0 * np.asarray(x) ** 2, rtol=1e-6)
