"""Trust holes closed (issue 10): each test here failed before its fix.

- Compile-time integers follow Python: exact arbitrary-precision + - * // % ** and
  comparisons, floor division and modulo with the divisor's sign, and a constant that ends in
  a float converted as ``float(int)`` does (correctly rounded), or a KernelError naming the
  kernel and line where Python's own conversion would overflow. Checked against Python itself
  over many random expressions in both dtypes.
- ``$RAPTOR_CXXFLAGS`` replaces only the optimization flags: ``-O2`` and an empty value both
  build and run.
- Two builds of one kernel with different flags coexist in a process: each plan runs the
  build its ``info`` names.
- A kernel defined by ``exec()`` of a string is matched to its source text on its constants
  too, not only its bytecode and names.

Start at the section of the hole you are looking at.
"""

from __future__ import annotations

import importlib.util
import random
import textwrap

import numpy as np
import pytest

import eagle.plan
import hawk
from hawk import Mutable, Scalar
from hawk.source import function_source
from raptor_core import _core

DTYPES = (np.float32, np.float64)
# The largest compile-time integer hawk keeps exactly (docs/language.md), in bits.
INT_BITS_LIMIT = 16384


def _run(plan, x: np.ndarray) -> np.ndarray:
    y = np.zeros_like(x)
    plan.bind(x=x, y=y).launch()
    return y


def _inputs(dtype) -> np.ndarray:
    rng = np.random.default_rng(7)
    x = rng.standard_normal(64).astype(dtype)
    x[:4] = [0.0, -0.0, 1.0, -1.0]
    return x


# ---------------------------------------------------------------- hole 2: integer constants


@hawk.kernel
def issue_example(x: Scalar, y: Mutable[Scalar]):
    y = x * (3 ** 40) + x * (2 ** 70 // 3)


@hawk.kernel
def floor_semantics(x: Scalar, y: Mutable[Scalar]):
    y = x * (-7 // 2) + x * x * (-7 % 2) + x * x * x * (7 % -2) + (-7) // -2 * 1000.0


@hawk.kernel
def exact_compare(x: Scalar, y: Mutable[Scalar]):
    y = x * 2.0 if 2 ** 53 + 1 > 2 ** 53 else x * 3.0


def test_the_issue_example_is_exact(tmp_path):
    (plan,) = eagle.plan.auto([issue_example], cache_dir=tmp_path)
    for dtype in DTYPES:
        x = _inputs(dtype)
        want = x * float(3 ** 40) + x * float(2 ** 70 // 3)
        np.testing.assert_array_equal(_run(plan, x), want)


def test_floor_division_and_modulo_follow_python(tmp_path):
    plans = eagle.plan.auto([floor_semantics, exact_compare], cache_dir=tmp_path)
    for dtype in DTYPES:
        x = _inputs(dtype)
        want = x * float(-7 // 2) + x * x * float(-7 % 2) + x * x * x * float(7 % -2) + float((-7) // -2) * 1000.0
        np.testing.assert_array_equal(_run(plans[0], x), want)
        np.testing.assert_array_equal(_run(plans[1], x), x * 2.0)  # Python: 2**53 + 1 > 2**53


def _define(source: str, tmp_path, name: str):
    """Imports `source` (a module of plain functions) from a file, so hawk reads it back."""
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_overflowing_constant_is_a_kernel_error_naming_kernel_and_line(tmp_path):
    src = "from hawk import Scalar, Mutable\n\ndef too_big(x: Scalar, y: Mutable[Scalar]):\n    y = x * (10 ** 400 // 3)\n"
    module = _define(src, tmp_path, "too_big_mod")
    with pytest.raises(hawk.KernelError) as err:
        hawk.kernel(module.too_big)
    msg = str(err.value)
    assert "too_big" in msg and "too_big_mod.py:4" in msg, msg
    assert "float" in msg, msg  # says what to write instead


def test_huge_int_from_the_enclosing_scope_is_exact(tmp_path):
    src = textwrap.dedent(
        """
        from hawk import Scalar, Mutable
        BIG = 2 ** 70 + 1

        def quotient(x: Scalar, y: Mutable[Scalar]):
            y = x * (BIG // 3)

        def remainder(x: Scalar, y: Mutable[Scalar]):
            y = x * (BIG % 1000)
        """
    )
    module = _define(src, tmp_path, "scope_mod")
    plans = eagle.plan.auto([hawk.kernel(module.quotient), hawk.kernel(module.remainder)], cache_dir=tmp_path)
    big = 2 ** 70 + 1
    for dtype in DTYPES:
        x = _inputs(dtype)
        np.testing.assert_array_equal(_run(plans[0], x), x * float(big // 3))
        np.testing.assert_array_equal(_run(plans[1], x), x * float(big % 1000))  # 425, not 0


class _TooLarge(Exception):
    """An intermediate integer beyond INT_BITS_LIMIT: hawk refuses it, Python does not."""


def _random_int(rng: random.Random) -> int:
    kind = rng.randrange(5)
    if kind == 0:
        v = rng.randint(-20, 20)
    elif kind == 1:
        v = rng.randint(-(2 ** 31), 2 ** 31)
    elif kind == 2:
        v = rng.randint(2 ** 52, 2 ** 64)
    elif kind == 3:
        v = rng.randint(2 ** 64, 2 ** 200)
    else:
        v = rng.randint(2 ** 1000, 2 ** 1100)
    return v if rng.random() < 0.5 else -v


def _random_expr(rng: random.Random, depth: int) -> tuple[str, int]:
    """A random integer expression and its value as Python computes it (raises what Python
    raises, or _TooLarge)."""
    if depth == 0 or rng.random() < 0.25:
        v = _random_int(rng)
        return (f"({v})" if v < 0 else str(v)), v
    if rng.random() < 0.1:
        text, v = _random_expr(rng, depth - 1)
        return f"(-{text})", -v
    op = rng.choice(["+", "-", "*", "//", "%", "**"])
    ltext, lv = _random_expr(rng, depth - 1)
    if op == "**":
        e = rng.randint(0, 40)
        if abs(lv) > 1 and (abs(lv).bit_length() - 1) * e >= INT_BITS_LIMIT:
            raise _TooLarge
        v = lv ** e
        text = f"({ltext} ** {e})"
    else:
        rtext, rv = _random_expr(rng, depth - 1)
        v = {"+": lambda: lv + rv, "-": lambda: lv - rv, "*": lambda: lv * rv,
             "//": lambda: lv // rv, "%": lambda: lv % rv}[op]()
        text = f"({ltext} {op} {rtext})"
    if abs(v).bit_length() > INT_BITS_LIMIT:
        raise _TooLarge
    return text, v


def _random_cases(count: int, seed: int) -> list[tuple[str, object]]:
    """(expression, expected): expected is float(value), or an exception class."""
    rng = random.Random(seed)
    cases = []
    while len(cases) < count:
        depth = rng.randint(1, 4)
        try:
            text, v = _random_expr(rng, depth)
        except ZeroDivisionError:
            continue  # regenerated: Python's error, hawk's KernelError is tested separately
        except _TooLarge:
            continue
        try:
            cases.append((text, float(v)))
        except OverflowError:
            cases.append((text, OverflowError))
    # True division and negative powers of integers give floats in Python.
    for _ in range(count // 4):
        a, b = _random_int(rng), _random_int(rng)
        if b != 0:
            try:
                cases.append((f"(({a}) / ({b}))", a / b))
            except OverflowError:
                cases.append((f"(({a}) / ({b}))", OverflowError))
        base, e = rng.randint(-50, 50), -rng.randint(1, 30)
        if base != 0:
            cases.append((f"(({base}) ** ({e}))", base ** e))
    return cases


def test_random_integer_expressions_match_python(tmp_path):
    cases = _random_cases(240, seed=20261201)
    lines = ["from hawk import Scalar, Mutable", ""]
    for i, (text, _) in enumerate(cases):
        lines += [f"def k{i}(x: Scalar, y: Mutable[Scalar]):", f"    y = x * {text}", ""]
    module = _define("\n".join(lines), tmp_path, "random_ints")
    kernels, expected, refused = [], [], 0
    for i, (text, want) in enumerate(cases):
        fn = getattr(module, f"k{i}")
        if want is OverflowError:
            with pytest.raises(hawk.KernelError, match="float"):
                hawk.kernel(fn)
            refused += 1
            continue
        kernels.append(hawk.kernel(fn))
        expected.append((text, want))
    assert refused > 5 and len(kernels) > 150, (refused, len(kernels))
    plans = eagle.plan.auto(kernels, cache_dir=tmp_path)
    for dtype in DTYPES:
        x = _inputs(dtype)
        for plan, (text, want) in zip(plans, expected):
            with np.errstate(over="ignore", invalid="ignore"):
                ref = x * want
            got = _run(plan, x)
            np.testing.assert_array_equal(got, ref, err_msg=f"{dtype.__name__}: x * {text}")


def test_integer_division_by_zero_is_a_kernel_error(tmp_path):
    src = "from hawk import Scalar, Mutable\n\ndef div0(x: Scalar, y: Mutable[Scalar]):\n    y = x * (2 ** 80 // (3 - 3))\n"
    module = _define(src, tmp_path, "div0_mod")
    with pytest.raises(hawk.KernelError, match="division by zero"):
        hawk.kernel(module.div0)


# ---------------------------------------------------------------- hole 3: RAPTOR_CXXFLAGS


@hawk.kernel
def axpb(x: Scalar, y: Mutable[Scalar]):
    y = 2.0 * x + 1.0


@pytest.mark.parametrize("flags", ["-O2", "", "-O1 -g"])
def test_cxxflags_replace_only_optimization_flags(tmp_path, monkeypatch, flags):
    monkeypatch.setenv("RAPTOR_CXXFLAGS", flags)
    (plan,) = eagle.plan.auto([axpb], cache_dir=tmp_path)
    x = _inputs(np.float64)
    np.testing.assert_array_equal(_run(plan, x), 2.0 * x + 1.0)


def test_empty_cxxflags_means_the_defaults(tmp_path, monkeypatch):
    (default,) = eagle.plan.auto([axpb], cache_dir=tmp_path)
    monkeypatch.setenv("RAPTOR_CXXFLAGS", "")
    (empty,) = eagle.plan.auto([axpb], cache_dir=tmp_path)
    assert empty.info["key"] == default.info["key"]
    assert empty.info["cache_hit"]


# ---------------------------------------------------------------- builds by identity


@hawk.kernel
def nan_probe(x: Scalar, y: Mutable[Scalar]):
    y = x if x == x else 5.0  # -ffinite-math-only lets the C++ compiler take x == x as true


def test_builds_with_different_flags_coexist(tmp_path, monkeypatch):
    x = np.array([np.nan, 1.0, -2.0])
    monkeypatch.delenv("RAPTOR_CXXFLAGS", raising=False)
    (first,) = eagle.plan.auto([nan_probe], cache_dir=tmp_path)
    monkeypatch.setenv("RAPTOR_CXXFLAGS", _core.default_host_flags() + " -ffinite-math-only")
    (second,) = eagle.plan.auto([nan_probe], cache_dir=tmp_path)
    assert first.info["so_path"] != second.info["so_path"]
    assert first.digest() == second.digest()  # one kernel, two builds
    np.testing.assert_array_equal(_run(first, x), [5.0, 1.0, -2.0])
    # The second plan runs its own build (the one its info names), not the first one.
    np.testing.assert_array_equal(_run(second, x), [np.nan, 1.0, -2.0])
    np.testing.assert_array_equal(_run(first, x), [5.0, 1.0, -2.0])
    # The digest still finds the process's first build (what the JAX bridge launches).
    found = _core.find_entry(first.digest())
    assert found is not None and found.symbol == first.entry("float64").symbol


# ---------------------------------------------------------------- exec'd sources

def _exec_source(constant: str) -> str:
    # Built at call time, so that no string of this module holds the kernel's text.
    return "\ndef exec_" + "probe(x, y):\n    y = x * " + constant + " + 1.0\n"


def _exec_fn(text: str):
    namespace: dict = {}
    exec(compile(text, "<exec-probe>", "exec"), namespace)  # noqa: S102
    return namespace["exec_probe"]


def _lookup(fn, held: str):
    """function_source(fn) from a frame that holds only `held` (read by function_source)."""
    assert "exec_probe" in held
    return function_source(fn)


def test_exec_source_is_matched_on_constants():
    fn = _exec_fn(_exec_source("2.0"))
    # A string of the same bytecode and names but another constant is not fn's source.
    with pytest.raises(Exception, match="cannot read its source"):
        _lookup(fn, _exec_source("3.0"))
    assert "x * 2.0 + 1.0" in _lookup(fn, _exec_source("2.0"))[0]


def test_exec_source_is_matched_on_nested_constants_and_names():
    fn = _exec_fn("\ndef exec_" + "probe(x, y):\n    a = x\n    return (lambda t: t * 2.0)(a)\n")
    with pytest.raises(Exception, match="cannot read its source"):
        _lookup(fn, "\ndef exec_" + "probe(x, y):\n    a = x\n    return (lambda t: t * 3.0)(a)\n")
    with pytest.raises(Exception, match="cannot read its source"):
        _lookup(fn, "\ndef exec_" + "probe(x, y):\n    b = x\n    return (lambda t: t * 2.0)(b)\n")
    assert "t * 2.0" in _lookup(fn, "\ndef exec_" + "probe(x, y):\n    a = x\n    return (lambda t: t * 2.0)(a)\n")[0]
