"""The GPU side that can be checked without a GPU: a kernel lowered for the CUDA platform
(jax's cross-platform lowering) becomes the `raptor_kernel` custom call, and lowering builds
the kernel for CUDA (NVRTC to PTX, cached, registered for the XLA CUDA handler). Running it
needs an NVIDIA GPU, which this test does not assume."""

from __future__ import annotations

import glob
import os

import jax
import jax.numpy as jnp
import pytest

import hawk
from eagle.frameworks import jax as eagle_jax
from hawk import Mutable, Param, Scalar, Table, Terminated, Vector
from hawk.math import norm, vec
from raptor_core import _core

jax.config.update("jax_enable_x64", True)


@hawk.kernel
def drag_cuda(v: Vector[3], cd: Param, dt: Param, g: Param, v_next: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -g) - cd * norm(v) * v
    v_next = v + dt * a


@hawk.kernel(steps=3)
def masked_cuda(w: Table[Scalar], x: Scalar, terminated: Terminated, y: Mutable[Scalar]):
    y = y + w.at(0) * x
    terminated = y > 10.0


def _nvrtc_available() -> bool:
    try:
        _core.build_cuda([drag_cuda._core], _core.Compiler(None))
    except RuntimeError as err:
        if "needs NVRTC" in str(err):
            return False
        raise
    return True


def test_the_handlers_include_cuda():
    assert {"cpu", "cuda"} <= set(_core.ffi_targets())


def test_lowering_for_cuda_builds_ptx_and_emits_the_custom_call(tmp_path, monkeypatch):
    monkeypatch.setenv("RAPTOR_CACHE_DIR", str(tmp_path))
    if not _nvrtc_available():
        pytest.skip("no NVRTC on this machine: the CUDA build cannot be checked here")
    step = eagle_jax.function(drag_cuda, wrt=("v", "cd"))
    v = jnp.ones((3, 16))
    loss = lambda v, cd: (step(v, cd, 0.01, 9.81) ** 2).sum()  # noqa: E731
    text = jax.jit(loss).trace(v, 0.1).lower(lowering_platforms=("cuda",)).as_text()
    assert "@raptor_kernel" in text and "digest" in text
    grad_text = jax.jit(jax.grad(loss, argnums=(0, 1))).trace(v, 0.1).lower(lowering_platforms=("cuda",)).as_text()
    assert grad_text.count("@raptor_kernel") >= 2  # the primal and the adjoint kernel
    ptx = glob.glob(os.path.join(str(tmp_path), "*", "*.ptx"))
    assert ptx, "lowering for CUDA compiled no PTX"
    assert any(".entry raptor_drag_cuda_" in open(p).read() for p in ptx)
    # The CPU still runs the same program.
    assert jnp.isfinite(jax.jit(loss)(v, 0.1))


def test_build_cuda_registers_both_dtypes_of_masked_table_kernels(tmp_path):
    if not _nvrtc_available():
        pytest.skip("no NVRTC on this machine: the CUDA build cannot be checked here")
    assert _core.build_cuda([masked_cuda._core, masked_cuda.adjoint(["w", "x"])._core], _core.Compiler(str(tmp_path))) == 4
