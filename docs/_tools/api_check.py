"""The public modules the API reference documents, and the check that each of their public
names has a docstring (used by docs/conf.py at build time and by tests/test_public_api.py).

A module's public names are its ``__all__``; the reference pages (docs/api/) document
``__all__`` through autodoc, so a name added to a module appears there without a hand list.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

MODULES = (
    "hawk", "hawk.math", "eagle", "eagle.plan", "eagle.graph", "eagle.diff", "eagle.interop",
    "eagle.frameworks.jax",
)


def _own_doc(obj: Any) -> str | None:
    """The docstring written for ``obj`` itself: a class's or function's own ``__doc__``, a
    property's getter's. Values (floats, dtypes) carry their type's docstring, which says
    nothing about the name: those are documented in their module's docstring instead."""
    if isinstance(obj, property):
        obj = obj.fget
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    doc = getattr(obj, "__doc__", None)
    if inspect.isclass(obj) or callable(obj) or inspect.ismodule(obj):
        return doc.strip() if isinstance(doc, str) and doc.strip() else None
    return "value"  # a constant: described in the module docstring


def undocumented(module_name: str) -> list[str]:
    """The public names of a module (its ``__all__``), and the public methods and properties
    of its public classes defined in raptor, that have no docstring of their own."""
    mod = importlib.import_module(module_name)
    missing = []
    if not (mod.__doc__ or "").strip():
        missing.append(module_name)
    for name in getattr(mod, "__all__", ()):
        obj = getattr(mod, name)
        if _own_doc(obj) is None:
            missing.append(f"{module_name}.{name}")
        if inspect.isclass(obj) and obj.__module__.split(".")[0] in ("hawk", "eagle"):
            for attr, value in vars(obj).items():
                if attr.startswith("_"):
                    continue
                if isinstance(value, (property, staticmethod, classmethod)) or inspect.isfunction(value):
                    if _own_doc(value) is None:
                        missing.append(f"{module_name}.{name}.{attr}")
    return missing


def warn_undocumented(app: Any) -> None:
    """Sphinx ``builder-inited`` hook: one warning per undocumented public name."""
    from sphinx.util import logging

    log = logging.getLogger(__name__)
    for module_name in MODULES:
        for name in undocumented(module_name):
            log.warning("API reference: %s has no docstring (every public name is documented)", name)


def missing_from_reference(html_dir: Any) -> list[str]:
    """The public names (``__all__``, submodules aside, which have pages of their own or a
    guide) that the built reference page of their module, ``api/<module>.html`` under
    ``html_dir``, has no entry for."""
    import pathlib

    missing = []
    for module_name in MODULES:
        page = pathlib.Path(html_dir) / "api" / f"{module_name}.html"
        text = page.read_text(encoding="utf-8") if page.is_file() else ""
        mod = importlib.import_module(module_name)
        for name in getattr(mod, "__all__", ()):
            if inspect.ismodule(getattr(mod, name)):
                continue
            if f'id="{module_name}.{name}"' not in text:
                missing.append(f"{module_name}.{name}")
    return missing
