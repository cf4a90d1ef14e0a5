"""One kernel call as the JAX bridge sees it: a hawk kernel built for one dtype, its input
and output slots in the bridge's order, and its derived kernels (tangent and adjoint, each
again a ``KernelCall``). A ``KernelCall`` is the static parameter of the bridge's one
primitive (eagle/frameworks/_jax_rules.py); it is hashable by digest.

Order (docs/jax.md): inputs are the kernel's input slots in signature order (Params, planes,
in-out Mutables, the mask, tables); outputs are the Mutable planes and sums in signature
order, then the updated mask last. Both orders, the shapes and the aliases are the kernel's
interface (``Kernel.interface``, described once in C++: cpp/runtime/interface.hpp), which the
XLA handlers check every call against.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable, Sequence

import numpy as np

import eagle.plan
from eagle.frameworks import _jax_exit
from hawk.kernel import Kernel, SlotInfo

__all__ = ["KernelCall", "call_for", "no_plane_message"]

_lock = threading.Lock()
# JAX can keep a program's globals (its kernels and bridge functions) alive past shutdown:
# at exit, raptor's objects release their C++ handles (eagle/frameworks/_jax_exit.py).
_jax_exit.install()
# By (digest, dtype, cache directory): two cache directories in one process never share builds.
_calls: dict[tuple[str, str, str], "KernelCall"] = {}


class KernelCall:
    """A kernel compiled for one dtype, with the bridge's view of its slots."""

    def __init__(self, kernel: Kernel, dtype: np.dtype, cache_dir: str | None) -> None:
        self.kernel = kernel
        self.dtype = np.dtype(dtype)
        self.cache_dir = cache_dir
        self._plan: Any = None  # the host build, made when the FFI path first needs it
        self.interface = kernel.interface(self.dtype)
        self.digest = self.interface.digest
        self.inputs: tuple[SlotInfo, ...] = tuple(kernel.slots[i] for i in self.interface.operands)
        self.outputs: tuple[SlotInfo, ...] = tuple(kernel.slots[i] for i in self.interface.results)
        # The slot of each operand / result, and each result's dtype (for abstract evaluation).
        self.input_slots: tuple[int, ...] = tuple(self.interface.operands)
        self.output_slots: tuple[int, ...] = tuple(self.interface.results)
        slots = self.interface.slots
        self.output_dtypes: tuple[np.dtype, ...] = tuple(np.dtype(slots[i].dtype) for i in self.output_slots)
        self._n_operand = slots[self.interface.n_operand_slot].operand if self.interface.n_operand_slot >= 0 else -1
        self._aliases: dict[int, int] = dict(self.interface.aliases)
        self.roles = kernel._core.slot_roles()  # per slot: (role, primal name)
        self._derived_calls: dict[tuple, KernelCall] = {}
        self._cuda_built = False
        self._ops: Any = None

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
        return dict(self._aliases)

    def sample_count(self, shapes: Sequence[tuple]) -> int:
        """N of a call whose operands have ``shapes``: the last axis of the first plane or mask
        operand. A kernel with none is refused by ``eagle.frameworks.jax.function``."""
        if self._n_operand < 0:
            raise ValueError(no_plane_message(self.kernel.name))
        shape = shapes[self._n_operand]
        return int(shape[-1]) if shape else 1

    def output_shapes(self, shapes: Sequence[tuple]) -> list[tuple]:
        """The shape of each result for operands of ``shapes`` (the bridge's layout)."""
        n = self.sample_count(shapes)
        sizes = [0] * len(self.kernel.slots)
        for slot, shape in zip(self.input_slots, shapes):
            k = self.kernel.slots[slot]
            if k.kind == "table" or (k.kind == "table_sum" and k.inout):  # a scatter target is its own table
                sizes[slot] = int(shape[0]) if shape else -1
        return [self.interface.expected_shape(slot, n, sizes, True) for slot in self.output_slots]

    def ops(self) -> Any:
        """The kernel's optimized IR as an op list (``_jax_xla.OpList``), for the "xla"
        lowering; read from the C++ core once."""
        if self._ops is None:
            from eagle.frameworks import _jax_xla

            self._ops = _jax_xla.op_list(self.kernel._core)
        return self._ops

    @property
    def plan(self) -> Any:
        """The kernel's host build (``eagle.plan.auto``), compiled (or loaded from the cache)
        and registered for the XLA handlers on first use: only the "ffi" path needs it, so a
        call lowered with "xla" never compiles C++."""
        with _lock:
            plan = self._plan
        if plan is None:
            (plan,) = eagle.plan.auto([self.kernel], cache_dir=self.cache_dir)
            if plan.digest(self.dtype) != self.digest:
                raise RuntimeError(f"eagle.frameworks.jax: kernel '{self.kernel.name}': its build and its interface disagree on the digest")
            with _lock:
                self._plan = plan
        return plan

    def ensure_host(self) -> None:
        """Builds and registers the kernel for the XLA CPU handler (see ``plan``)."""
        _ = self.plan

    def ensure_cuda(self) -> None:
        """Builds this kernel for CUDA (NVRTC to PTX, cached on disk) and registers it for the
        XLA CUDA handler, once per process."""
        with _lock:
            if self._cuda_built:
                return
        from raptor_core import _core

        _core.build_cuda([self.kernel._core], _core.Compiler(self.cache_dir))
        with _lock:
            self._cuda_built = True

    # --- derived kernels (trimmed to the inputs they read: hawk.Kernel.without_unread_inputs)
    def tangent(self, wrt: Sequence[str]) -> "KernelCall":
        """The call of the tangent kernel (tangents only) with respect to ``wrt``."""
        return self._derived("t", wrt, lambda: self.kernel.tangent(list(wrt), with_primal=False))

    def winner(self) -> "KernelCall":
        """The call of the winner kernel (hawk.min / hawk.max outputs' winning samples)."""
        return self._derived("w", (), lambda: self.kernel.winner())

    @property
    def folds(self) -> tuple[str, ...]:
        """The names of the hawk.min / hawk.max outputs."""
        return tuple(s.name for s in self.outputs if s.kind == "param_sum" and s.combine != "sum")

    def adjoint(self, wrt: Sequence[str]) -> "KernelCall":
        """The call of the adjoint kernel with respect to ``wrt``."""
        return self._derived("a", wrt, lambda: self.kernel.adjoint(list(wrt)))

    def linearized(self, wrt: Sequence[str]) -> tuple["KernelCall", "KernelCall"]:
        """The calls of the linearize split with respect to ``wrt`` (hawk.Kernel.linearize):
        the primal with residual outputs (role 'r'), and the linear tangent kernel reading them."""
        key = ("l", tuple(wrt))
        with _lock:
            hit = self._derived_calls.get(key)
        if hit is None:
            primal, linear = self.kernel.linearize(list(wrt))
            hit = (self._call_of(primal), self._call_of(linear))
            with _lock:
                self._derived_calls[key] = hit
        return hit  # type: ignore[return-value]

    def _derived(self, kind: str, wrt: Sequence[str], make: Callable[[], Kernel]) -> "KernelCall":
        key = (kind, tuple(wrt))
        with _lock:
            hit = self._derived_calls.get(key)
        if hit is None:
            hit = self._call_of(make())
            with _lock:
                self._derived_calls[key] = hit
        return hit  # type: ignore[return-value]

    def _call_of(self, full: Kernel) -> "KernelCall":
        """The call of a derived kernel, trimmed to the inputs it reads."""
        trimmed = full.without_unread_inputs()
        # A call takes N from its planes: keep the unread ones if trimming left none.
        keep = trimmed.interface().n_operand_slot >= 0 or full.interface().n_operand_slot < 0
        return call_for(trimmed if keep else full, self.dtype, self.cache_dir)


def no_plane_message(name: str) -> str:
    """Why a kernel without a plane input cannot be a JAX call, and what to do."""
    return (
        f"eagle.frameworks.jax.function: kernel '{name}' has no plane input (its inputs are only Params and Tables); "
        "a JAX call takes its sample count N from the planes it is given, so it could not know N. Give the kernel a "
        "plane input (e.g. a Scalar parameter) and pass it a jnp.zeros((N,)) plane, or run it with eagle.plan.auto, "
        "whose bind takes N from the output planes"
    )


def _cache_key(cache_dir: str | None) -> str:
    """The cache directory a plan of ``cache_dir`` lands in, as eagle.plan.auto resolves it
    (``cache_dir``, else ``$RAPTOR_CACHE_DIR`` read now, else the default: "")."""
    return os.fspath(cache_dir) if cache_dir is not None else os.environ.get("RAPTOR_CACHE_DIR", "")


def call_for(kernel: Kernel, dtype: Any, cache_dir: str | None = None) -> KernelCall:
    """The KernelCall of ``kernel`` in ``dtype``; its C++ build is made (or loaded from the
    cache) and registered for the XLA handlers when the "ffi" path first lowers it."""
    dtype = np.dtype(dtype)
    key = (kernel.digest(dtype.name), dtype.name, _cache_key(cache_dir))
    with _lock:
        hit = _calls.get(key)
    if hit is not None:
        return hit
    # The directory is the one in force now: a later change of $RAPTOR_CACHE_DIR makes a new call.
    call = KernelCall(kernel, dtype, _cache_key(cache_dir) or None)
    with _lock:
        return _calls.setdefault(key, call)
