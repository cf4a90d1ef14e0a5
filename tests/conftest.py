"""Shared fixtures for the raptor Python test suite.

Every plan is compiled into a temporary cache directory (never ~/.cache/raptor): a per-test
one (``cache_dir``) or a per-module one (``module_cache_dir``) for modules that compile all
their kernels once.
"""

from __future__ import annotations

import os
from typing import Any, Callable

import numpy as np
import pytest

import eagle
import eagle.plan
import hawk

DTYPES = (np.float32, np.float64)


@pytest.fixture(autouse=True)
def _no_home_cache(monkeypatch, tmp_path_factory):
    """Point RAPTOR_CACHE_DIR at a temp dir so a test that forgets cache_dir never touches
    ~/.cache. Tests pass cache_dir explicitly anyway."""
    monkeypatch.setenv("RAPTOR_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "env-cache"))


@pytest.fixture
def cache_dir(tmp_path) -> str:
    """A fresh cache directory for one test (created by raptor itself, mode 0700)."""
    return str(tmp_path / "raptor-cache")


@pytest.fixture(scope="module")
def module_cache_dir(tmp_path_factory) -> str:
    """One cache directory shared by the tests of a module."""
    return str(tmp_path_factory.mktemp("module") / "raptor-cache")


def plan_kernels(kernels, cache_dir: str) -> dict[str, Any]:
    """Plans kernels (one translation unit) and returns {kernel name: plan}."""
    plans = eagle.plan.auto(list(kernels), targets=("host",), cache_dir=cache_dir)
    return {p.kernel.name: p for p in plans}


def launch_once(plan, **values):
    """Binds a plan to values, launches once, and returns (bound, finished)."""
    bound = plan.bind(**values)
    finished = bound.launch()
    return bound, finished


@pytest.fixture
def run_kernel(cache_dir) -> Callable[..., Any]:
    """``run_kernel(kernel, **values)``: plans ``kernel`` in the test's cache dir, binds it to
    ``values`` and launches it once; returns the Bound (its arrays are the caller's)."""

    def run(kernel: hawk.Kernel, **values: Any):
        (plan,) = eagle.plan.auto([kernel], targets=("host",), cache_dir=cache_dir)
        bound, _ = launch_once(plan, **values)
        return bound

    return run


def outputs_for(kernel: hawk.Kernel, n: int, dtype) -> dict[str, np.ndarray]:
    """Zero arrays for every pure output plane of a kernel (Mutable not read before written)."""
    out = {}
    for s in kernel.slots:
        if s.kind == "mutable" and not s.inout:
            out[s.name] = np.zeros((s.width, n) if s.is_vector else (n,), dtype=dtype)
    return out
