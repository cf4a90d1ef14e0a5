"""Plans: compiled kernels ready to bind (SPEC §2).

``auto(kernels, targets=("host",), cache_dir=None)`` compiles all the kernels, in both float
dtypes, as one translation unit (or finds it in the on-disk cache: ``cache_dir``, else
``$RAPTOR_CACHE_DIR``, else ``~/.cache/raptor``) and returns one ``Plan`` per kernel.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np

from raptor_core import _core

from eagle.binding import Bound, bind
from eagle.errors import ModeError
from hawk.kernel import Kernel

__all__ = ["Plan", "auto"]

_TARGETS = ("host", "cuda")


class Plan:
    """A kernel compiled for a target; ``bind(**values)`` ties it to arrays."""

    def __init__(self, kernel: Kernel, target: str, entries: dict[str, Any], info: dict[str, Any], cache_dir: str | None = None) -> None:
        self.kernel = kernel
        self.cache_dir = cache_dir  # as given to auto (None: the default directory)
        self.target = target
        self._entries = entries
        self.info = info  # cache_hit, compile_seconds, key, so_path, source_path

    def entry(self, dtype: Any) -> Any:
        """The compiled entry for a dtype (float32 or float64)."""
        name = np.dtype(dtype).name
        if name not in self._entries:
            raise ModeError(f"eagle: kernel '{self.kernel.name}' is built for float32 and float64, not {name}")
        return self._entries[name]

    def digest(self, dtype: Any = "float64") -> str:
        return self.entry(dtype).digest

    def bind(self, **values: Any) -> Bound:
        """Binds every parameter by name to a value: planes and tables by reference (a later
        change to a bound array is seen by the next launch), Params as numbers or 0-d/1-element
        arrays (read at each launch). ``finished_count=`` (uint32, one element) counts finished
        samples. Raises TypeError/ValueError/ModeError naming the kernel and plane; nothing is
        bound when a check fails."""
        return bind(self, values)

    @property
    def source_path(self) -> str:
        """Where the generated C++ that was compiled for this plan lies."""
        return self.info["source_path"]

    def __repr__(self) -> str:
        return f"<eagle.Plan {self.kernel.name} target={self.target}>"


def auto(kernels: Sequence[Kernel], targets: Sequence[str] = ("host",), cache_dir: str | os.PathLike | None = None) -> list[Plan]:
    """Compiles ``kernels`` for the first usable target and returns one Plan per kernel."""
    kernels = list(kernels)
    for k in kernels:
        if not isinstance(k, Kernel):
            raise TypeError(f"eagle.plan.auto: expected hawk kernels, got {type(k).__name__}")
    if isinstance(targets, str):
        targets = (targets,)
    for t in targets:
        if t not in _TARGETS:
            raise ValueError(f"eagle.plan.auto: unknown target {t!r}; targets are {_TARGETS}")
    if "host" not in targets:
        raise ModeError(
            "eagle.plan.auto: this build of eagle runs kernels on the host only; the 'cuda' target "
            "(CUDA C++ through NVRTC) is not available yet: use targets=('host',)"
        )
    compiler = _core.Compiler(os.fspath(cache_dir) if cache_dir is not None else None)
    entries, info = _core.build([k._core for k in kernels], compiler, os.environ.get("RAPTOR_CXXFLAGS"))
    where = os.fspath(cache_dir) if cache_dir is not None else None
    return [Plan(k, "host", {"float32": e32, "float64": e64}, dict(info), where) for k, (e32, e64) in zip(kernels, entries)]
