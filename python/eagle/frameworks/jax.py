"""eagle.frameworks.jax: hawk kernels as JAX functions (docs/jax.md).

``function(kernel, wrt=...)`` returns a ``KernelFunction``: called with JAX (or NumPy)
arrays, it checks them with the messages users read, then binds the bridge's primitive
(eagle/frameworks/_jax_rules.py), so jit, grad, vmap, scan, jacfwd, jacrev and hessian all
work at any order. Outputs are the kernel's Mutable planes in order with the updated mask
last; one output is returned bare.
"""

from __future__ import annotations

from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from eagle.binding import param_number
from eagle.errors import ModeError
from eagle.frameworks import _jax_lowering, _jax_rules
from eagle.frameworks._jax_call import call_for, no_plane_message
from eagle.nodes import copy_results
from eagle.rng import is_typed_key, key_words
from hawk.kernel import Kernel

__all__ = ["JaxNode", "KernelFunction", "export_checks", "function", "node", "preload"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


class KernelFunction:
    """A hawk kernel as a JAX-callable function. Made by ``function(kernel, wrt=...)``."""

    def __init__(self, kernel: Kernel, wrt: Sequence[str], lowering: str = "auto") -> None:
        if lowering not in ("auto", "ffi", "xla"):
            raise ValueError(f"eagle.frameworks.jax.function: {kernel.name}: lowering must be 'auto', 'ffi' or 'xla', got {lowering!r}")
        self.lowering = lowering
        self.kernel = kernel
        iface = kernel.interface()  # the layout (shapes, order) is the same in both dtypes
        self._interface = iface
        self._input_slots = list(iface.operands)
        self.inputs = [kernel.slots[i].name for i in self._input_slots]
        self.outputs = [kernel.slots[i].name for i in iface.results]
        wrt = (wrt,) if isinstance(wrt, str) else tuple(wrt)
        for w in wrt:
            if w not in self.inputs:
                raise ValueError(f"eagle.frameworks.jax.function: {kernel.name}: wrt names {w!r}, which is not an input (inputs: {self.inputs})")
            if kernel.slot(w).kind == "terminated":
                raise ValueError(f"eagle.frameworks.jax.function: {kernel.name}: the Terminated mask {w!r} is a stop decision and carries no derivative")
            if kernel.slot(w).kind == "random":
                raise ValueError(f"eagle.frameworks.jax.function: {kernel.name}: the Random key {w!r} carries no derivative "
                                 "(its draws are constants for AD); differentiate with respect to the Params and planes that scale them")
        self.wrt = list(wrt)
        self.__name__ = kernel.name
        self.__doc__ = f"The hawk kernel {kernel.name} as a JAX function: {self.inputs} -> {self.outputs}."
        _jax_rules.register_targets()

    def __repr__(self) -> str:
        extra = "" if self.lowering == "auto" else f", lowering={self.lowering!r}"
        return f"KernelFunction({self.kernel.name!r}, inputs={self.inputs}, outputs={self.outputs}, wrt={self.wrt}{extra})"

    # --- calling convention
    def _arguments(self, args: tuple, kwargs: dict) -> list[Any]:
        name = self.kernel.name
        if len(args) > len(self.inputs):
            raise TypeError(f"{name}: takes {len(self.inputs)} inputs ({self.inputs}), got {len(args)}")
        values = dict(zip(self.inputs, args))
        for k, v in kwargs.items():
            if k not in self.inputs:
                raise TypeError(f"{name}: {k!r} is not an input (inputs: {self.inputs})")
            if k in values:
                raise TypeError(f"{name}: input {k!r} given twice")
            values[k] = v
        missing = [k for k in self.inputs if k not in values]
        if missing:
            raise TypeError(f"{name}: missing input(s) {missing}")
        return [values[k] for k in self.inputs]

    def _readable(self, v: Any, s: Any) -> Any:
        """``v`` as a JAX array, or a TypeError/ModeError naming the kernel, the input and what
        is accepted, for what JAX cannot read (instead of JAX's error, which names neither)."""
        who = f"eagle.frameworks.jax {self.kernel.name}: input '{s.name}'"
        accepted = "a bool array" if s.kind == "terminated" else "a JAX or NumPy array of float32 or float64" + (", or a number" if s.kind == "param" else "")
        if isinstance(v, jax.Array):  # tracers under jit / vmap / grad included
            return v
        if v is None or isinstance(v, (str, bytes, bytearray, dict, set)):
            raise TypeError(f"{who} is a {type(v).__name__}, which JAX cannot read; pass {accepted}")
        if hasattr(v, "__cuda_array_interface__") and not hasattr(v, "__array_interface__"):
            try:
                return jnp.asarray(v)
            except Exception as err:  # noqa: BLE001 - JAX's error (no CUDA, a bad interface) is named below
                platforms = sorted({d.platform for d in jax.devices()})
                raise ModeError(
                    f"{who} is a GPU array (__cuda_array_interface__), which this JAX (devices: {', '.join(platforms)}) cannot read "
                    f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}); pass {accepted} on a device JAX has"
                ) from err
        if isinstance(v, (np.ndarray, np.generic, memoryview, list, tuple)) or hasattr(v, "__array_interface__") or hasattr(v, "__array__"):
            try:
                host = np.asarray(v)
            except Exception as err:  # noqa: BLE001 - NumPy's error (ragged lists, a bad interface) is named below
                raise TypeError(f"{who} cannot be read as an array ({type(err).__name__}: {err}); pass {accepted}") from err
            if host.dtype.kind not in "biufc":
                raise TypeError(f"{who} has dtype {host.dtype}, which JAX cannot read; pass {accepted}")
            if host.dtype.byteorder == ">":
                raise ModeError(f"{who} is big-endian ({host.dtype.str}), which JAX cannot read; pass x.astype(x.dtype.newbyteorder('=')) instead")
        try:
            return jnp.asarray(v)
        except Exception as err:  # noqa: BLE001 - JAX's error names neither kernel nor input
            raise TypeError(f"{who} ({type(v).__name__}) cannot be read by JAX ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}); pass {accepted}") from err

    def _key_block(self, v: Any, s: Any) -> Any:
        """The Random slot's operand (cpp/runtime/interface.hpp, SlotRole::Random): the key's two
        uint32 words (an int seed, a typed key or a uint32 (2,) key array, traced or not) and
        the global index of sample 0 (0 here; the sharding rule sets it per shard)."""
        who = f"eagle.frameworks.jax {self.kernel.name}"
        if isinstance(v, (bool, np.bool_)) or not (isinstance(v, (int, np.integer, jax.Array, np.ndarray, list, tuple)) or is_typed_key(v)):
            raise TypeError(f"{who}: Random '{s.name}' takes jax.random.key(seed), a uint32 key of shape (2,) or an int seed, got {type(v).__name__}")
        if isinstance(v, (int, np.integer)):
            data = jnp.asarray(np.array(key_words(v, who, s.name), dtype=np.uint32))
        else:
            data = jax.random.key_data(v) if is_typed_key(v) else jnp.asarray(v)
            if tuple(data.shape) != (2,) or data.dtype != np.uint32:
                raise ValueError(f"{who}: Random '{s.name}' needs a threefry2x32 key (uint32 key data of shape (2,)), got {data.dtype} "
                                 f"{tuple(data.shape)}; pass jax.random.key(seed) or jax.random.PRNGKey(seed) (under vmap, one key per entry)")
        return jnp.concatenate([data, jnp.zeros((2,), np.uint32)])
    def _int_input(self, s: Any, v: Any) -> Any:
        """An integer or bool plane's (or Param's) value as a JAX array of exactly its declared
        dtype, or a ModeError/TypeError naming the kernel, the input and the fix."""
        name = self.kernel.name
        decl = s.annotation()
        want = np.dtype(s.dtype)
        if s.kind == "param":
            if isinstance(v, (bool, np.bool_)) != (s.dtype == "bool") or isinstance(v, (float, complex)):
                raise TypeError(f"eagle.frameworks.jax {name}: Param '{s.name}' is a {decl}; pass {'True or False' if s.dtype == 'bool' else 'an int'}, got {v!r}")
            if isinstance(v, (bool, int)):
                info = np.iinfo(want) if want.kind == "i" else None
                if info is not None and not info.min <= v <= info.max:
                    raise ValueError(f"eagle.frameworks.jax {name}: Param '{s.name}' = {v} does not fit a {decl}")
                v = np.asarray(v, dtype=want)
        a = self._readable(v, s)
        dt = np.dtype(a.dtype)
        if s.kind == "param" and dt != want and dt.kind == want.kind and getattr(jax.typeof(a), "weak_type", False):
            return a.astype(want)  # a Python int traced by jit (weakly typed): the declared dtype
        if dt != want:
            fix = f"pass {s.name}.astype(jnp.{'bool_' if s.dtype == 'bool' else s.dtype})"
            if want == np.int64 and not jax.config.jax_enable_x64:
                fix = f"turn jax_enable_x64 on (JAX makes int32 arrays without it) or declare '{s.name}' with hawk.int32"
            raise ModeError(
                f"eagle.frameworks.jax {name}: {'Param' if s.kind == 'param' else 'plane'} '{s.name}' is declared {decl} and takes {want.name}, "
                f"got {dt}; {fix} (integer and bool planes keep their declared dtype in float32 and float64 calls)"
            )
        return a

    def _prepare(self, values: list[Any]) -> tuple[np.dtype, list[Any]]:
        name = self.kernel.name
        slots = [self.kernel.slot(k) for k in self.inputs]
        arrays = []
        dtype = None
        first = ""
        for s, v in zip(slots, values):
            if s.kind == "random":
                arrays.append((self._key_block(v, s), False))
                continue
            if not s.is_float and s.kind != "terminated":  # integer and bool planes keep their dtype
                arrays.append((self._int_input(s, v), False))
                continue
            if s.kind == "param" and isinstance(v, (np.ndarray, np.generic)) and v.dtype.kind in "iu" and v.size == 1:
                v = float(np.asarray(v).reshape(()))  # a NumPy integer: float(value) on the host, as plan.bind reads it
            weak = isinstance(v, (int, float)) and not isinstance(v, bool)
            a = v if weak else self._readable(v, s)
            if not weak:
                weak = bool(getattr(jax.typeof(a), "weak_type", False))
                if weak and jnp.issubdtype(a.dtype, jnp.complexfloating):  # a Python complex: its imaginary part would be dropped
                    raise ModeError(f"eagle.frameworks.jax {name}: '{s.name}' is a complex number ({v!r}); a kernel runs on real numbers: pass its real part (.real)")
                # a JAX integer Param takes the call's float dtype, as a number does
                weak = weak or (s.kind == "param" and jnp.issubdtype(a.dtype, jnp.integer))
            arrays.append((a, weak))
            if s.kind == "terminated" or weak:
                continue
            dt = np.dtype(a.dtype)
            if dt not in _FLOATS and s.kind == "param":
                raise ModeError(f"eagle.frameworks.jax {name}: Param '{s.name}' is {dt}, which a kernel cannot read as a real number; pass a float or integer array, or a number")
            if dt not in _FLOATS:
                raise ModeError(f"eagle.frameworks.jax {name}: plane '{s.name}' is {dt}, which is not supported; a kernel runs float32 or float64 planes")
            if dtype is None:
                dtype, first = dt, s.name
            elif dt != dtype:
                raise ModeError(
                    f"eagle.frameworks.jax {name}: mixed floating dtypes in one call (plane '{s.name}' is {dt}, the first plane is {dtype}); "
                    f"pass every plane in one float dtype (cast with .astype), or turn jax_enable_x64 on or off for all of them"
                )
        if dtype is None:
            dtype = np.dtype(jnp.zeros(()).dtype)
        n = None
        for s, (a, _) in zip(slots, arrays):
            if s.kind in ("plane", "mutable", "terminated") and np.ndim(a) >= 1:
                n = int(np.shape(a)[-1])
                break
        sizes = [0] * len(self.kernel.slots)
        for slot, s, (a, _) in zip(self._input_slots, slots, arrays):
            if s.kind == "table" or (s.kind == "table_sum" and s.inout):  # a scatter target is its own table
                sizes[slot] = int(np.shape(a)[0]) if np.ndim(a) else -1
        out = []
        for slot, s, (a, weak) in zip(self._input_slots, slots, arrays):
            if s.kind == "random":
                out.append(a)
                continue
            if s.kind == "param" and not s.is_float:
                out.append(a.reshape(()))
                continue
            if s.kind == "param":
                if isinstance(a, (int, float)):  # a Python number: read as the host binding reads it
                    a = param_number(a, dtype, f"eagle.frameworks.jax {name}", s.name)
                if np.size(a) != 1:
                    raise ValueError(f"eagle.frameworks.jax: {name}: Param '{s.name}' is one value per call; got shape {np.shape(a)}")
                out.append(jnp.asarray(a, dtype=dtype).reshape(()))
                continue
            if s.kind == "terminated":
                a = jnp.asarray(a)
                if a.dtype != np.bool_:
                    raise ModeError(f"eagle.frameworks.jax {name}: the Terminated mask '{s.name}' must be bool, got {a.dtype}")
            elif s.is_float:
                a = jnp.asarray(a, dtype=dtype)
            want = self._interface.expected_shape(slot, n if n is not None else -1, sizes, True)
            if s.kind not in ("table", "table_sum") and n is None:
                want = want[:-1] + (None,)
            if tuple(np.shape(a)) != tuple(want):
                raise ValueError(f"eagle.frameworks.jax: {name}: input '{s.name}' must have shape {tuple(want)} for n={n}, got {tuple(np.shape(a))}")
            out.append(a)
        return dtype, out

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        dtype, ops = self._prepare(self._arguments(args, kwargs))
        call = call_for(self.kernel, dtype)
        lowering = self.lowering if self.lowering != "auto" else (_jax_lowering.forced() or "auto")
        # "auto" travels as such: it is resolved where the call is lowered, from the platform
        # lowered for and the operands' shapes then (after vmap folded its batch into N).
        outs = _jax_rules.bind_call(call, ops, lowering)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def lowering_for(self, call: Any, ops: Sequence[Any], platform: str | None = None) -> str:
        """The lowering ("ffi" or "xla") a call of ``call`` on ``ops`` gets when lowered for
        ``platform`` (default: JAX's default backend): the function's own, else
        ``$RAPTOR_JAX_LOWERING``, else what "auto" picks (eagle/frameworks/_jax_lowering.py)."""
        if self.lowering != "auto":
            return self.lowering
        forced = _jax_lowering.forced()
        if forced is not None:
            return forced
        n = call.sample_count([tuple(np.shape(o)) for o in ops])
        return _jax_lowering.choose(call.ops(), n, platform or jax.default_backend())


def function(kernel: Kernel, wrt: Sequence[str] = (), lowering: str = "auto") -> Any:
    """A hawk kernel as a JAX function (works under jit, grad, vmap, scan, jacfwd, jacrev,
    hessian). ``wrt`` names the inputs you mean to differentiate; their derived kernels are
    built now, others on first use. ``lowering``: "ffi" (the C++ kernel as an XLA custom
    call), "xla" (the kernel's IR as XLA's own operations, fused with the program around it)
    or "auto" (per call, from N, the steps, the platform and the kernel; docs/jax.md "Two
    lowerings"). Kernels built with ``Guard(active_set=True)`` are refused:
    their index map belongs to eagle's launcher; so are kernels with no plane input, since a
    call takes its sample count N from its planes. A kernel with a stage boundary is its
    stages' functions composed (eagle/frameworks/_jax_stages.py)."""
    if not isinstance(kernel, Kernel):
        raise TypeError(f"eagle.frameworks.jax.function takes a hawk kernel, got {type(kernel).__name__}")
    if kernel.staged:  # a stage boundary: its stages' functions, composed (_jax_stages.py)
        from eagle.frameworks._jax_stages import StagedKernelFunction

        return StagedKernelFunction(kernel, wrt, lowering, function)  # type: ignore[return-value]
    if kernel.guard.active_set:
        raise ModeError(
            f"eagle.frameworks.jax.function: {kernel.name} is built with Guard(active_set=True), whose index map belongs to eagle's "
            "launcher: run it with eagle.plan.auto, or build it without active_set"
        )
    if kernel.interface().n_operand_slot < 0:
        raise ModeError(no_plane_message(kernel.name))
    return KernelFunction(kernel, wrt, lowering)


class JaxNode:
    """A jitted JAX function as a graph node (see ``node``)."""

    kind = "opaque_stream"  # its name in messages (eagle.nodes: the foreign-node protocol)
    node_kind = "jax"  # scheduled as an 'eager_stream' segment on a GPU
    runs_on_host = True

    def __init__(self, fn: Any, reads: dict[str, Any], writes: dict[str, Any]) -> None:
        if not callable(fn):
            raise TypeError(f"eagle.frameworks.jax.node: fn must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.reads = dict(reads)
        self.writes = dict(writes)
        planes = list(self.reads.items()) + list(self.writes.items())
        for name, arr in planes:
            if not isinstance(arr, np.ndarray) and not hasattr(arr, "__cuda_array_interface__"):  # GPU planes: eagle.graph runs the node on streams
                raise ModeError(f"eagle.frameworks.jax.node: plane '{name}' is a {type(arr).__name__}; on the host, planes are NumPy arrays")
        gpu = [(name, arr) for name, arr in planes if not isinstance(arr, np.ndarray)]
        host = [name for name, arr in planes if isinstance(arr, np.ndarray)]
        if gpu and host:  # where JAX's default device is a GPU, jnp arrays are GPU arrays
            raise ModeError(
                f"eagle.frameworks.jax.node: plane '{gpu[0][0]}' is a GPU array ({type(gpu[0][1]).__name__}) and plane '{host[0]}' a NumPy array; "
                "a node's planes are all NumPy arrays (it runs on the host) or all GPU arrays (it runs on the graph's stream)"
            )
        for name, arr in self.writes.items():
            if isinstance(arr, np.ndarray) and (not arr.flags.writeable or not arr.flags.c_contiguous):
                raise ValueError(f"eagle.frameworks.jax.node: write plane '{name}' must be a writeable C-contiguous array")

    def run(self) -> None:
        """Calls the JAX function on the read planes (imported without a copy where JAX can)
        and copies its results into the write planes before returning."""
        # JAX imports host memory without a copy when it can (64-byte aligned); results are
        # copied into the write planes before run() returns, so JAX's buffers outlive the copy.
        args = [jax.dlpack.from_dlpack(a) for a in self.reads.values()]
        copy_results(self.fn(*args), self.writes, "eagle.frameworks.jax.node: the JAX function")


def node(fn: Any, reads: dict[str, Any], writes: dict[str, Any]) -> JaxNode:
    """A jitted JAX function as a graph node between launches: each launch calls
    ``fn(*reads.values())`` and copies its result(s) into ``writes``, in order."""
    return JaxNode(fn, reads, writes)


def preload(cache_dir: str | None = None) -> int:
    """Makes exported modules (``jax.export``) that call hawk kernels runnable in this
    process: registers the XLA FFI targets and every intact kernel compiled into the cache
    directory (``cache_dir``, else ``$RAPTOR_CACHE_DIR``, else ``~/.cache/raptor``).
    Returns how many kernels are registered. Exported modules carry only the kernels'
    digests, so the kernels must have been built into that cache before (by any process)."""
    from raptor_core import _core

    _jax_rules.register_targets()
    registered, _skipped = _core.preload(_core.Compiler(cache_dir))
    return registered


def export_checks() -> list[Any]:
    """The ``disabled_checks`` that ``jax.export.export`` needs for functions calling hawk
    kernels (their custom call is not on JAX's list of stable targets)."""
    return [jax.export.DisabledSafetyCheck.custom_call(_jax_rules.TARGET)]
