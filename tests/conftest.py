"""Shared fixtures for the raptor Python test suite.

Every plan is compiled into a temporary cache directory (never ~/.cache/raptor): a per-test
one (``cache_dir``) or a per-module one (``module_cache_dir``) for modules that compile all
their kernels once. ``Page`` runs the user's documentation pages cell by cell, as a notebook
does (the page tests of test_jax_pages.py, test_graphs.py and test_reverse.py).
"""

from __future__ import annotations

import ast
import contextlib
import io
import linecache
import os
import textwrap
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


class Page:
    """A notebook page of the user's documentation: cells run once each, in order, in one
    namespace. Each cell is registered in linecache, as IPython does, so that
    ``@hawk.kernel`` finds its source; a cell's last expression is printed, as a notebook
    shows it."""

    def __init__(self, name: str, cells: list[str]) -> None:
        self.name = name
        self.cells = [textwrap.dedent(c).strip("\n") + "\n" for c in cells]
        self.ns: dict = {"__name__": f"__{name}__"}
        self.outputs: list[str] = []

    def run(self, upto: int) -> list[str]:
        """Runs every cell up to and including ``upto`` (once each); returns cell upto's
        printed lines."""
        while len(self.outputs) <= upto:
            i = len(self.outputs)
            file = f"<{self.name}-cell-{i}>"
            src = self.cells[i]
            linecache.cache[file] = (len(src), None, src.splitlines(True), file)
            tree = ast.parse(src, file)
            last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                exec(compile(tree, file, "exec"), self.ns)
                if last is not None:  # a notebook shows the value of a cell's last expression
                    value = eval(compile(ast.Expression(last.value), file, "eval"), self.ns)
                    if value is not None:
                        print(repr(value))
            self.outputs.append(buf.getvalue())
        return self.outputs[upto].splitlines()
