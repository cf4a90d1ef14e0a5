"""The public names of raptor's documented modules, pinned: each module's ``__all__`` is the
exact list below, so a name is added to (or removed from) the API on purpose, here and in the
reference together (docs/api/ documents ``__all__`` through autodoc). Every public name, and
every public method and property of a public class, has a docstring of its own (the docs
build fails otherwise: docs/_tools/api_check.py).

Adding a name: add it to the module's ``__all__``, give it a docstring, and add it below.
"""

from __future__ import annotations

import importlib
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "docs" / "_tools"))
import api_check  # noqa: E402

PUBLIC = {
    "hawk": [
        "Guard", "Helper", "Kernel", "KernelError", "Matrix", "Mutable", "Param", "Random", "Scalar", "SlotInfo",
        "Table", "Terminated", "Vector", "bool_", "func", "int32", "int64", "kernel", "math", "scatter",
    ],
    "hawk.math": [
        "abs", "absolute", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil",
        "cho_solve", "cholesky", "clamp", "clip", "copysign", "cos", "cosh", "cross", "det", "diag",
        "diagonal", "dot", "eigh", "erf", "erfc", "exp", "exp2", "expm1", "eye", "fdim", "floor", "fma",
        "fmod", "hypot", "identity", "inf", "inv", "inverse", "isfinite", "isinf", "isnan", "log", "log10",
        "log1p", "log2", "lstsq", "lu", "lu_solve", "mat", "maximum", "minimum", "n_samples", "nan", "norm", "normalize",
        "outer", "pow", "power", "quat_conj", "quat_from_axis_angle", "quat_mul", "quat_rotate",
        "quat_to_matrix", "remainder", "rint", "round", "rsqrt", "sample_index", "sign", "sin", "sinh", "solve", "sqrt",
        "stop_gradient", "tan", "tanh", "trace", "transpose", "tril", "triu", "trunc", "vec", "where",
    ],
    "eagle": [
        "Bound", "BuiltGraph", "Graph", "ModeError", "Report", "Runner", "SimResult", "call", "diff", "graph",
        "host_runtime", "interop", "plan", "simulate", "until_done",
    ],
    "eagle.plan": ["Plan", "auto"],
    "eagle.graph": [
        "BuiltGraph", "Graph", "OpaqueNode", "copy_results", "node_kind", "node_planes", "opaque", "plane_key",
        "segments",
    ],
    "eagle.diff": ["reverse"],
    "eagle.interop": ["DeviceBuffer", "import_buffer"],
    "eagle.frameworks.jax": ["JaxNode", "KernelFunction", "export_checks", "function", "node", "preload"],
}


def test_the_reference_covers_the_pinned_modules():
    assert sorted(api_check.MODULES) == sorted(PUBLIC)
    api_dir = pathlib.Path(__file__).resolve().parent.parent / "docs" / "api"
    assert sorted(p.stem for p in api_dir.glob("*.md")) == sorted(PUBLIC)
    for name in PUBLIC:
        assert f".. automodule:: {name}\n" in (api_dir / f"{name}.md").read_text()


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_all_is_pinned(module):
    names = importlib.import_module(module).__all__
    assert sorted(names) == PUBLIC[module], (
        f"{module}.__all__ changed: added {sorted(set(names) - set(PUBLIC[module]))}, "
        f"removed {sorted(set(PUBLIC[module]) - set(names))}; if on purpose, update tests/test_public_api.py"
    )
    assert len(set(names)) == len(names), f"{module}.__all__ lists a name twice"


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_every_public_name_resolves_and_is_documented(module):
    mod = importlib.import_module(module)
    for name in mod.__all__:
        assert hasattr(mod, name), f"{module}.__all__ names {name!r}, which the module does not define"
    assert api_check.undocumented(module) == []


def test_a_drift_is_caught(monkeypatch):
    """A name added without updating the pin, or without a docstring, fails."""
    import eagle.plan

    def extra():  # no docstring
        return None

    monkeypatch.setattr(eagle.plan, "extra", extra, raising=False)
    monkeypatch.setattr(eagle.plan, "__all__", [*eagle.plan.__all__, "extra"])
    assert sorted(eagle.plan.__all__) != PUBLIC["eagle.plan"]
    assert api_check.undocumented("eagle.plan") == ["eagle.plan.extra"]
