"""One kernel call as the JAX bridge sees it: a hawk kernel built for one dtype, its input
and output slots in the bridge's order, and its derived kernels (tangent and adjoint, each
again a ``KernelCall``). A ``KernelCall`` is the static parameter of the bridge's one
primitive (eagle/frameworks/_jax_rules.py); it is hashable by digest.

Order (SPEC §3): inputs are the kernel's input slots in signature order (Params, planes,
in-out Mutables, the mask, tables); outputs are the Mutable planes and sums in signature
order, then the updated mask last.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

import numpy as np

import eagle.plan
from hawk.kernel import Kernel, SlotInfo

__all__ = ["KernelCall", "call_for"]

_lock = threading.Lock()
_calls: dict[tuple[str, str], "KernelCall"] = {}


class KernelCall:
    """A kernel compiled for one dtype, with the bridge's view of its slots."""

    def __init__(self, kernel: Kernel, dtype: np.dtype, plan: Any) -> None:
        self.kernel = kernel
        self.dtype = np.dtype(dtype)
        self.plan = plan
        self.digest = plan.digest(self.dtype)
        self.inputs: tuple[SlotInfo, ...] = tuple(s for s in kernel.slots if s.is_input)
        outs = [s for s in kernel.slots if s.kind in ("mutable", "param_sum", "table_sum")]
        outs += [s for s in kernel.slots if s.kind == "terminated"]
        self.outputs: tuple[SlotInfo, ...] = tuple(outs)
        self.roles = kernel._core.slot_roles()  # per slot: (role, primal name)
        self._derived_calls: dict[tuple, KernelCall] = {}
        self._cuda_built = False

    # --- identity (a primitive parameter)
    def __hash__(self) -> int:
        return hash(self.digest)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KernelCall) and other.digest == self.digest

    def __repr__(self) -> str:
        return f"KernelCall({self.kernel.name}, {self.dtype.name})"

    # --- slots
    def input_index(self, name: str) -> int:
        for i, s in enumerate(self.inputs):
            if s.name == name:
                return i
        raise KeyError(name)

    def output_index(self, name: str) -> int:
        for i, s in enumerate(self.outputs):
            if s.name == name:
                return i
        raise KeyError(name)

    def role(self, slot: SlotInfo) -> tuple[str, str]:
        return tuple(self.roles[self.kernel.slots.index(slot)])  # type: ignore[return-value]

    def aliases(self) -> dict[int, int]:
        """Operand -> result aliases: an in-out Mutable's old value and the mask are updated in
        place when their input buffer is donated."""
        out = {}
        for i, s in enumerate(self.inputs):
            if (s.kind == "mutable" and s.inout) or s.kind == "terminated":
                out[i] = self.output_index(s.name)
        return out

    def ensure_cuda(self) -> None:
        """Builds this kernel for CUDA (NVRTC to PTX, cached on disk) and registers it for the
        XLA CUDA handler, once per process."""
        with _lock:
            if self._cuda_built:
                return
        from raptor_core import _core

        _core.build_cuda([self.kernel._core], _core.Compiler(self.plan.cache_dir))
        with _lock:
            self._cuda_built = True

    # --- derived kernels (trimmed to the inputs they read: hawk.Kernel.without_unread_inputs)
    def tangent(self, wrt: Sequence[str]) -> "KernelCall":
        """The call of the tangent kernel (tangents only) with respect to ``wrt``."""
        return self._derived("t", wrt, lambda: self.kernel.tangent(list(wrt), with_primal=False))

    def adjoint(self, wrt: Sequence[str]) -> "KernelCall":
        """The call of the adjoint kernel with respect to ``wrt``."""
        return self._derived("a", wrt, lambda: self.kernel.adjoint(list(wrt)))

    def _derived(self, kind: str, wrt: Sequence[str], make: Callable[[], Kernel]) -> "KernelCall":
        key = (kind, tuple(wrt))
        with _lock:
            hit = self._derived_calls.get(key)
        if hit is None:
            hit = call_for(make().without_unread_inputs(), self.dtype)
            with _lock:
                self._derived_calls[key] = hit
        return hit


def call_for(kernel: Kernel, dtype: Any, cache_dir: str | None = None) -> KernelCall:
    """The KernelCall of ``kernel`` in ``dtype``, compiling (or loading from the cache) and
    registering it for the XLA handlers on first use."""
    dtype = np.dtype(dtype)
    key = (kernel.digest(dtype.name), dtype.name)
    with _lock:
        hit = _calls.get(key)
    if hit is not None:
        return hit
    (plan,) = eagle.plan.auto([kernel], cache_dir=cache_dir)
    call = KernelCall(kernel, dtype, plan)
    with _lock:
        return _calls.setdefault(key, call)
