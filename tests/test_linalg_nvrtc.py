"""The CUDA emission of the linear algebra kernels (the 6x6 one, diff3, an adjoint, the 6x6
eigh's tangent) compiles with NVRTC (sm_80 and its cubin)."""

import pytest

from linalg_cases import KERNELS, diff3, eigh6


def test_cuda_emission_compiles_with_nvrtc():
    from raptor_core import _core

    try:
        _core.nvrtc_check([], "sm_80")
    except RuntimeError as err:
        pytest.fail(f"NVRTC is needed for this check: {err}")
    ks = [KERNELS[6], diff3, diff3.adjoint(["A", "H"]), eigh6.tangent(["H"])]
    assert _core.nvrtc_check([k._core for k in ks], "sm_80") == 2 * len(ks)
