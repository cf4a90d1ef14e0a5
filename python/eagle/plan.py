"""Plans: compiled kernels ready to bind (docs/runtime.md, "Plans and bound launches").

``auto(kernels, targets=("host",), cache_dir=None)`` compiles all the kernels, in both float
dtypes, for the first usable target of ``targets`` (or finds the build in the on-disk cache:
``cache_dir``, else ``$RAPTOR_CACHE_DIR``, else ``~/.cache/raptor``) and returns one ``Plan``
per kernel. Targets: ``'host'`` (C++ through the host compiler, always usable) and ``'cuda'``
(CUDA C++ through NVRTC, usable when ``eagle.cuda.probe()`` finds a device: ``('cuda',)``
alone raises ModeError with the probe's reason; ``('cuda', 'host')`` falls back to the host).
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
        """The content digest of the plan's build for ``dtype`` (its key in the on-disk cache)."""
        return self.entry(dtype).digest

    def bind(self, **values: Any) -> Bound:
        """Binds every parameter by name to a value: planes and tables by reference (a later
        change to a bound array is seen by the next launch), Params as numbers or 0-d/1-element
        arrays (read at each launch). ``finished_count=`` (uint32, one element) counts finished
        samples. Raises TypeError/ValueError/ModeError naming the kernel and plane; nothing is
        bound when a check fails. A CUDA plan takes device arrays (``eagle.cuda.bind``)."""
        if self.target == "cuda":
            from eagle import cuda

            return cuda.bind(self, values)
        return bind(self, values)

    @property
    def source_path(self) -> str:
        """Where the generated C++ that was compiled for this plan lies (host plans)."""
        return self.info["source_path"]

    def __repr__(self) -> str:
        return f"<eagle.Plan {self.kernel.name} target={self.target}>"


def _usable(target: str) -> str | None:
    """None when ``target`` can run here, else why not."""
    if target == "host":
        return None
    from eagle import cuda

    return cuda.unusable_reason()


def auto(kernels: Sequence[Kernel], targets: Sequence[str] = ("host",), cache_dir: str | os.PathLike | None = None) -> list[Plan]:
    """Compiles ``kernels`` for the first usable target and returns one Plan per kernel.
    Raises ModeError naming why when no target of ``targets`` is usable."""
    kernels = list(kernels)
    for k in kernels:
        if not isinstance(k, Kernel):
            raise TypeError(f"eagle.plan.auto: expected hawk kernels, got {type(k).__name__}")
    if isinstance(targets, str):
        targets = (targets,)
    targets = tuple(targets)
    if not targets:
        raise ValueError(f"eagle.plan.auto: no target given; targets are {_TARGETS}")
    for t in targets:
        if t not in _TARGETS:
            raise ValueError(f"eagle.plan.auto: unknown target {t!r}; targets are {_TARGETS}")
    reasons = {}
    for t in targets:
        reasons[t] = _usable(t)
        if reasons[t] is None:
            break
    else:
        why = "; ".join(f"'{t}': {r}" for t, r in reasons.items())
        raise ModeError(f"eagle.plan.auto: no usable target among {targets} ({why}); add 'host' to fall back to the CPU")
    compiler = _core.Compiler(os.fspath(cache_dir) if cache_dir is not None else None)
    where = os.fspath(cache_dir) if cache_dir is not None else None
    if t == "cuda":
        for k in kernels:
            if k.staged:
                from eagle.stages import refuse_cuda

                refuse_cuda(k)
        return _auto_cuda(kernels, compiler, where)
    # A staged kernel (eagle/stages.py) is built as its stages, in the same build.
    built = [s for k in kernels for s in (k.stages if k.staged else (k,))]
    # Each distinct kernel once in the translation unit (one symbol per digest): the same
    # kernel twice, or a stage passed beside its staged kernel, would define a symbol twice.
    unique: dict[str, int] = {}
    for k in built:
        unique.setdefault(k.digest("float64"), len(unique))
    cores = [None] * len(unique)
    for k in built:
        cores[unique[k.digest("float64")]] = k._core
    entries, info = _core.build(cores, compiler, os.environ.get("RAPTOR_CXXFLAGS"))
    plans = [Plan(k, "host", dict(zip(("float32", "float64"), entries[unique[k.digest("float64")]])), dict(info), where)
             for k in built]
    out: list[Any] = []
    for k in kernels:
        if k.staged:
            from eagle.stages import StagedPlan

            out.append(StagedPlan(k, plans[:len(k.stages)], dict(info), where))
            plans = plans[len(k.stages):]
        else:
            out.append(plans.pop(0))
    return out


def _auto_cuda(kernels: list[Kernel], compiler: Any, where: str | None) -> list[Plan]:
    """CUDA plans: every kernel x dtype built by NVRTC for the first device's arch (a cubin
    for sm_XY; PTX when NVRTC does not know the arch, ``info["fallback"]`` says why), cached
    like host builds; ``info`` holds the build's arch and format, the NVRTC version, the cache
    key and directory, and the device (``device_arch``, ``device_name``)."""
    from eagle import cuda

    wheel = cuda.find_nvrtc()
    if wheel is not None:  # the documented knob, set for this process (NVRTC is read from it)
        os.environ["RAPTOR_NVRTC"] = wheel
    devices = cuda.probe()["devices"]
    arch = devices[0]["arch"] if devices else "compute_75"
    entries, info = _core.build_cuda_plan([k._core for k in kernels], compiler, arch)
    info = dict(info)
    if devices:
        info["device_arch"] = devices[0]["arch"]
        info["device_name"] = devices[0]["name"]
    return [Plan(k, "cuda", {"float32": e32, "float64": e64}, dict(info), where) for k, (e32, e64) in zip(kernels, entries)]
