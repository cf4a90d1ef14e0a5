"""The JAX bridge's one primitive, ``raptor_kernel``, and its rules: kernels all the way down.

The primitive is parameterized by a ``KernelCall`` (a kernel in one dtype). Its rules:

- abstract eval: output shapes and dtypes from the kernel's interface (``KernelCall.output_shapes``:
  cpp/runtime/interface.hpp's shape rules) and the sample count N;
- lowering, by the static parameter ``lowering``: "ffi", an XLA FFI custom call
  "raptor_kernel" whose one attribute is the digest (the handler, cpp/ffi/xla_handler.cpp,
  finds the compiled kernel by digest); "xla", the kernel's optimized IR as jax.numpy
  operations (eagle/frameworks/_jax_xla.py), which XLA fuses with the program around it;
  "auto", one of the two chosen when the call is lowered (eagle/frameworks/_jax_lowering.py);
- JVP (every rule keeps the call's ``lowering`` for the calls it makes): the primal call, plus a call of the kernel's tangent kernel (tangents only, linear
  in the tangent inputs) with respect to exactly the inputs whose tangents are not zero;
- transpose: a call linear in its undefined inputs U is transposed by a call of its
  adjoint kernel with respect to U (a tangent kernel is linear in its tangents; an adjoint
  kernel in its cotangents), so every order of jvp/vjp is again a kernel call;
- batching: a call lowered "xla" whose operations hold no while loop is replaced by those
  operations under ``jax.vmap`` (JAX batches XLA's own operations best; ``_inline_batched``).
  Otherwise batched planes fold into the sample axis (free for a trailing batch axis, one
  transpose otherwise); a batched Param or Table, a kernel with sums over samples, or one
  that draws random numbers or reads hawk.math.sample_index() / n_samples() (its sample
  numbering), runs one launch per batch entry (``lax.map``).
"""

from __future__ import annotations

from functools import partial
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from raptor_core import _core

from eagle.frameworks import _jax_aliases, _jax_compat, _jax_lowering, _jax_xla
from eagle.frameworks._jax_call import KernelCall
from eagle.frameworks._jax_sharding import partitioned

__all__ = ["kernel_p", "bind_call", "LOWERINGS"]

TARGET = "raptor_kernel"
# The values of the primitive's static parameter ``lowering``; "auto" is resolved when the
# call is lowered, from the platform and the operands' shapes (eagle/frameworks/_jax_lowering.py).
LOWERINGS = ("ffi", "xla", "auto")

kernel_p = Primitive("raptor_kernel")
kernel_p.multiple_results = True

_registered = False


def register_targets() -> None:
    """Registers the XLA FFI handlers with JAX (once per process), and marks the target as
    one whose calling convention is stable, so ``jax.export`` serializes calls to it: the
    handler's operands, results and its one attribute (the kernel digest) are versioned by
    raptor's ABI, and handlers are built against the oldest supported XLA FFI API."""
    global _registered
    if _registered:
        return
    # A JAX internal, version-guarded (_jax_compat); else pass eagle.frameworks.jax.export_checks().
    _jax_compat.mark_export_stable(TARGET)
    targets = _core.ffi_targets()
    if "cpu" not in targets:
        raise RuntimeError("eagle.frameworks.jax: this build of raptor_core has no XLA FFI handlers (it was built without the XLA FFI headers); reinstall raptor with jaxlib available at build time")
    jax.ffi.register_ffi_target(TARGET, targets["cpu"], platform="cpu", api_version=1)
    if "cuda" in targets:
        try:  # a JAX without CUDA support may refuse the platform: the CPU target still works
            jax.ffi.register_ffi_target(TARGET, targets["cuda"], platform="CUDA", api_version=1)
        except Exception:  # noqa: BLE001 - any refusal means no CUDA here
            pass
    _registered = True


def bind_call(call: KernelCall, args: Sequence[Any], lowering: str = "ffi") -> list[Any]:
    """Binds the primitive: ``call`` on ``args``, lowered as ``lowering`` ("ffi", "xla" or "auto")."""
    if lowering not in LOWERINGS:
        raise ValueError(f"eagle.frameworks.jax: lowering must be one of {LOWERINGS}, got {lowering!r}")
    return kernel_p.bind(*args, call=call, lowering=lowering)


# ---------------------------------------------------------------------------------------------
# abstract evaluation and lowering


def _varying(aval: Any) -> frozenset:
    """The manual mesh axes a value varies over inside shard_map (empty elsewhere)."""
    mat = getattr(aval, "mat", None)
    axes = getattr(mat, "varying", None)
    if axes is None:
        axes = getattr(aval, "vma", None)
    return frozenset(axes or ())


def _abstract_eval(*avals: Any, call: KernelCall, lowering: str = "ffi") -> list[jax.core.ShapedArray]:
    # Inside shard_map, outputs vary over the axes the planes vary over: derive them from the
    # most varying input, which carries those axes.
    ref = max(avals, key=lambda a: len(_varying(a)), default=None)
    if ref is not None and _varying(ref):
        make = lambda shape, dtype: ref.update(shape=shape, dtype=dtype, weak_type=False)  # noqa: E731
    else:
        make = jax.core.ShapedArray
    shapes = call.output_shapes([tuple(a.shape) for a in avals])
    return [make(shape, dtype) for shape, dtype in zip(shapes, call.output_dtypes)]


kernel_p.def_abstract_eval(_abstract_eval)


def _ffi_lowering(ctx: Any, *operands: Any, call: KernelCall, entry: bool = False) -> Any:
    """The FFI custom call. ``entry``: the call is lowered in the module's own function (not
    in custom partitioning's per-device one), so an in-out operand that is an undonated
    parameter of the jitted function is given its own result buffer instead of an alias
    (which would make XLA copy it first: _jax_aliases)."""
    call.ensure_host()  # the C++ build the handler runs (cached on disk), made on first use
    aliases = _jax_aliases.kept_aliases(operands, call.aliases()) if entry else call.aliases()
    rule = jax.ffi.ffi_lowering(TARGET, operand_output_aliases=aliases or None)
    return rule(ctx, *operands, digest=call.digest)


# The per-device call: one FFI custom call over the samples this device holds.
kernel_local_p = Primitive("raptor_kernel_local")
kernel_local_p.multiple_results = True
kernel_local_p.def_abstract_eval(_abstract_eval)
mlir.register_lowering(kernel_local_p, _ffi_lowering, platform="cpu")


def _ffi_lowering_cuda(ctx: Any, *operands: Any, call: KernelCall) -> Any:
    call.ensure_cuda()  # the CUDA build (NVRTC) happens when a GPU program is lowered
    return _ffi_lowering(ctx, *operands, call=call)


mlir.register_lowering(kernel_local_p, _ffi_lowering_cuda, platform="cuda")


def _xla_function(*operands: Any, call: KernelCall) -> list[Any]:
    """The call as jax.numpy operations over its operands (the "xla" lowering)."""
    shapes = [tuple(o.shape) for o in operands]
    return _jax_xla.evaluate(call.ops(), call.input_slots, operands, call.sample_count(shapes), call.output_slots, call.output_shapes(shapes), call.dtype,
                               call.output_dtypes)


def _resolve(ctx: Any, call: KernelCall, lowering: str, platform: str) -> str:
    """``lowering``, with "auto" resolved for this call on ``platform``."""
    if lowering != "auto":
        return lowering
    n = call.sample_count([tuple(a.shape) for a in ctx.avals_in])
    return _jax_lowering.choose(call.ops(), n, platform, call.dtype)


def _lowering(ctx: Any, *operands: Any, call: KernelCall, lowering: str = "ffi") -> Any:
    lowering = _resolve(ctx, call, lowering, "cpu")
    if lowering == "xla":  # XLA's own operations: XLA partitions them itself under sharding
        return mlir.lower_fun(partial(_xla_function, call=call), multiple_results=True)(ctx, *operands)
    # Through custom partitioning, so that under jit with inputs sharded along the sample
    # axis every device runs its own shard (no all-gather); on one device it is inlined to
    # the plain custom call (and so survives jax.export).
    # A kernel that reads hawk.math.sample_index() / n_samples() needs the whole launch's
    # numbering, which a shard's custom call does not have: XLA runs the plain call on
    # gathered planes (the same results as one device; docs/jax.md "Sharding").
    if not _several_devices(ctx) or call.ops().numbered:
        return _ffi_lowering(ctx, *operands, call=call, entry=True)
    return mlir.lower_fun(partitioned(call, kernel_local_p), multiple_results=True)(ctx, *operands)


def _several_devices(ctx: Any) -> bool:
    """Whether this lowering is for a computation partitioned over several devices (not
    inside shard_map's manual per-device body)."""
    axis_context = ctx.module_context.axis_context
    devices = getattr(axis_context, "device_assignment", None)
    if devices is not None:
        return len(devices) > 1
    if getattr(axis_context, "num_devices", 1) > 1:
        # Several devices but no device assignment (JAX gives it only to primitives in an
        # internal set, _jax_compat.require_devices_at_lowering): custom partitioning cannot
        # run, so the plain call, which XLA runs on gathered planes.
        return False
    mesh = getattr(axis_context, "mesh", None)
    manual = set(getattr(axis_context, "manual_axes", ()) or ())
    if mesh is not None and manual == set(mesh.axis_names):
        return False
    return mesh is not None and mesh.size > 1


def _lowering_cuda(ctx: Any, *operands: Any, call: KernelCall, lowering: str = "ffi") -> Any:
    lowering = _resolve(ctx, call, lowering, "cuda")
    if lowering != "xla":
        call.ensure_cuda()
    return _lowering(ctx, *operands, call=call, lowering=lowering)


# Not cacheable: JAX's lowering cache would lower the call once without the device
# assignment that custom partitioning needs to split it over several devices.
for _platform, _rule in (("cpu", _lowering), ("cuda", _lowering_cuda)):
    try:
        mlir.register_lowering(kernel_p, _rule, platform=_platform, cacheable=False)
    except TypeError:  # a JAX without the flag lowers every call in place
        mlir.register_lowering(kernel_p, _rule, platform=_platform)
# Custom partitioning needs the device assignment at lowering time; JAX provides it only to
# computations that contain a primitive in an internal set, as custom_partitioning is. Version-
# guarded (_jax_compat): outside the guard, sharded calls are gathered (the same results).
_jax_compat.require_devices_at_lowering(kernel_p)

_eager: dict[tuple[KernelCall, str], Any] = {}


def _impl(*args: Any, call: KernelCall, lowering: str = "ffi") -> Any:
    fn = _eager.get((call, lowering))
    if fn is None:
        fn = _eager[(call, lowering)] = jax.jit(lambda *a: kernel_p.bind(*a, call=call, lowering=lowering))
    return fn(*args)


kernel_p.def_impl(_impl)

# ---------------------------------------------------------------------------------------------
# forward mode


def _jvp(primals: Sequence[Any], tangents: Sequence[Any], *, call: KernelCall, lowering: str = "ffi") -> tuple[list, list]:
    # Integer and bool inputs carry no derivative (their tangents are float0, as JAX gives ints);
    # integer outputs keep Zero(float0) tangents: the tangent kernel has none for them. Nor does
    # a Random key.
    nz = [i for i, t in enumerate(tangents)
          if type(t) is not ad.Zero and call.inputs[i].kind not in ("terminated", "random") and call.inputs[i].is_float]
    by_name_primal = {s.name: p for s, p in zip(call.inputs, primals)}
    by_name_tangent = {call.inputs[i].name: tangents[i] for i in nz}
    # A scatter target (Mutable[Table]) is no wrt entry: its input tangent passes to its output
    # tangent, the tangent kernel's in-out "t_dot" adds the scattered tangents to it.
    scatter = {s.name for s in call.inputs if _is_scatter(s)}
    nz = [i for i in nz if call.inputs[i].name not in scatter]
    split = _split_for(call, [call.inputs[i].name for i in nz], primals, lowering) if nz else None
    if split is not None:
        # XLA's own operations: the primal computes each value once and hands the tangent
        # kernel its residuals, as JAX's own JVP rules do (docs/jax.md "How it works").
        pcall, tcall = split
        p_outs = kernel_p.bind(*[by_name_primal[pcall.role(s)[1]] for s in pcall.inputs], call=pcall, lowering=lowering)
        outs: list[Any] = [None] * len(call.outputs)
        for s, o in zip(pcall.outputs, p_outs):
            role, primal = pcall.role(s)
            if role == "r":
                by_name_primal[primal] = o
            else:
                outs[call.output_index(primal)] = o
    else:
        outs = kernel_p.bind(*primals, call=call, lowering=lowering)
        tcall = call.tangent([call.inputs[i].name for i in nz]) if nz else None
    zeros = [ad.Zero(jax.typeof(o).to_tangent_aval()) for o in outs]
    if tcall is not None and call.folds:
        by_name_primal.update(_winners(call, primals, outs, lowering))
    if tcall is None:
        for name in scatter:  # nothing else varies: a scatter target's tangent passes through
            if name in by_name_tangent:
                zeros[call.output_index(name)] = by_name_tangent[name]
        return outs, zeros
    t_args = []
    for s in tcall.inputs:
        role, primal = tcall.role(s)
        if role == "t" and primal in scatter and primal not in by_name_tangent:
            t_args.append(jnp.zeros(jnp.shape(by_name_primal[primal]), call.dtype))
            continue
        t_args.append(by_name_tangent[primal] if role == "t" else by_name_primal[primal])
    t_outs = kernel_p.bind(*t_args, call=tcall, lowering=lowering)
    out_tangents = list(zeros)
    for s, t in zip(tcall.outputs, t_outs):
        role, primal = tcall.role(s)
        if role == "t":
            out_tangents[call.output_index(primal)] = t
    return outs, out_tangents


def winner_range_check(call: KernelCall, n: int) -> None:
    """Refuses the derivative of a float32 call's hawk.min / hawk.max over more than 2^24
    samples: the winner's index is a float of the kernel's dtype (cpp/ad/winner.hpp)."""
    if call.dtype == np.float32 and n > 2**24:
        raise ValueError(f"eagle.frameworks.jax: kernel '{call.kernel.name}': the derivative of hawk.min / hawk.max "
                         f"({', '.join(call.folds)}) over {n} samples in float32, where the winning sample's index is "
                         "exact up to 2^24 only; call it in float64")


def _winners(call: KernelCall, primals: Sequence[Any], outs: Sequence[Any], lowering: str) -> dict[str, Any]:
    """The winning samples of the call's hawk.min / hawk.max outputs, by the tangent kernel's
    Param names ("<s>_win"): the winner kernel (cpp/ad/winner.hpp) run on the primal inputs and
    results, its derivative cut (a sample index is piecewise constant)."""
    winner_range_check(call, call.sample_count([tuple(jnp.shape(p)) for p in primals]))
    wcall = call.winner()
    values = {s.name: jax.lax.stop_gradient(p) for s, p in zip(call.inputs, primals)}
    for name in call.folds:
        values[name] = jax.lax.stop_gradient(outs[call.output_index(name)])
    w_outs = kernel_p.bind(*[values[s.name] for s in wcall.inputs], call=wcall, lowering=lowering)
    return {s.name: w for s, w in zip(wcall.outputs, w_outs) if s.kind == "param_sum"}


def _traced_lowering(call: KernelCall, lowering: str, shapes: Sequence[tuple]) -> str:
    """``lowering`` as a rule must know it while tracing, before the call is lowered: "auto"
    resolved for operands of ``shapes`` on the default backend (or as the environment forces
    it)."""
    if lowering != "auto":
        return lowering
    return _jax_lowering.forced() or _jax_lowering.choose(call.ops(), call.sample_count(shapes), jax.default_backend(), call.dtype)


# The most residuals a linearize split may pass: beyond, the JVP keeps the tangent kernel.
MAX_RESIDUALS = 64


def _split_for(call: KernelCall, wrt: Sequence[str], primals: Sequence[Any],
               lowering: str) -> tuple[KernelCall, KernelCall] | None:
    """The linearize split (cpp/ad/linearize.hpp) this call's JVP binds, or None where it binds
    the primal call and the tangent kernel, which recomputes the primal. The split is for
    XLA's own operations, where residuals are values inside one fused program; through the
    custom call each residual would be a plane written to memory and read back. Only for a
    kernel of one step: the split's primal is the steps unrolled, where the kernel itself is
    one loop body, and XLA's compile time grows with the operations (a 5-step kernel with a
    loop inside went from 116 values to 610 and 148 residuals; its order-2 check_grads took
    twice as long). A split with more than MAX_RESIDUALS residuals is not taken either."""
    if call.ops().steps != 1 or any(_is_scatter(s) for s in call.inputs) or call.folds:
        return None  # (a scatter target's tangent is an in-out of the tangent kernel; a
        # hawk.min / hawk.max tangent reads its winner, a result of the winner kernel)
    lowering = _traced_lowering(call, lowering, [tuple(jnp.shape(p)) for p in primals])
    if lowering != "xla" or call.ops().loop_end:  # OpList.loop_end: the loop regions
        return None  # a loop region's values are one per iteration: no residual planes for them
    split = call.linearized(wrt)
    return split if sum(r == "r" for r, _ in split[0].roles) <= MAX_RESIDUALS else None


ad.primitive_jvps[kernel_p] = _jvp

# ---------------------------------------------------------------------------------------------
# reverse mode


def _zeros(aval: Any) -> Any:
    return jnp.zeros(aval.shape, aval.dtype)


def _is_scatter(s: Any) -> bool:
    """Whether a slot is a scatter target (Mutable[Table], ``hawk.scatter(t)[i] += v``): its
    result is its bound values plus the adds, linear in both with coefficient one."""
    return s.kind == "table_sum" and s.inout


def _transpose(cts: Sequence[Any], *args: Any, call: KernelCall, lowering: str = "ffi") -> list[Any]:
    undefined = [i for i, a in enumerate(args) if ad.is_undefined_primal(a)]
    # A scatter target's input cotangent is its output's (the adjoint gathers the rest).
    passed = {}
    for i in undefined:
        if _is_scatter(call.inputs[i]):
            ct = cts[call.output_index(call.inputs[i].name)]
            passed[i] = ad.Zero(args[i].aval) if type(ct) is ad.Zero else ct
    undefined = [i for i in undefined if i not in passed]
    if not undefined:
        result = [None] * len(args)
        for i, ct in passed.items():
            result[i] = ct
        return result
    acall = call.adjoint([call.inputs[i].name for i in undefined])
    values = {}
    for s, a in zip(call.inputs, args):
        values[s.name] = _zeros(a.aval) if ad.is_undefined_primal(a) else a
    out_cts = {}
    for s, ct in zip(call.outputs, cts):
        if s.kind == "terminated":
            continue
        out_cts[s.name] = ct
    a_args = []
    for s in acall.inputs:
        role, primal = acall.role(s)
        if role == "c":
            ct = out_cts[primal]
            if type(ct) is ad.Zero:
                ct = _zeros(ct.aval)
            a_args.append(ct)
        else:
            a_args.append(values[primal])
    a_outs = kernel_p.bind(*a_args, call=acall, lowering=lowering)
    result: list[Any] = [None] * len(args)
    for s, v in zip(acall.outputs, a_outs):
        role, primal = acall.role(s)
        if role != "c":
            continue
        i = call.input_index(primal)
        if i in undefined:
            v = v.reshape(args[i].aval.shape)
            extra = _varying(jax.typeof(v)) - _varying(args[i].aval)
            if extra:  # a replicated input's cotangent sums over the shards (inside shard_map)
                v = jax.lax.psum(v, tuple(sorted(extra)))
            result[i] = v
    for i in undefined:
        if result[i] is None:
            result[i] = ad.Zero(args[i].aval)
    for i, ct in passed.items():
        result[i] = ct
    return result


ad.primitive_transposes[kernel_p] = _transpose

# ---------------------------------------------------------------------------------------------
# vmap


def _batch(args: Sequence[Any], dims: Sequence[Any], *, call: KernelCall, lowering: str = "ffi") -> tuple[list, list]:
    if _inline_batched(call, args, dims, lowering):
        outs = _batched_xla_function(call, tuple(dims))(*args)
        return list(outs), [0] * len(outs)
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    uniform_batched = any(d is not None and s.kind in ("param", "table") for s, d in zip(call.inputs, dims))
    has_sums = any(s.kind in ("param_sum", "table_sum") for s in call.outputs)
    # Draws use the sample index within the call, and hawk.math.sample_index() / n_samples()
    # are it and the call's N: folding the batch into the sample axis would renumber the
    # samples (and multiply N), so vmap of a kernel with a Random key or that reads them runs
    # per entry.
    numbered = any(s.kind == "random" for s in call.inputs) or call.ops().numbered
    if uniform_batched or has_sums or numbered:
        return _batch_by_entry(args, dims, call, size, lowering)
    folded = []
    for s, a, d in zip(call.inputs, args, dims):
        if s.kind in ("param", "table"):
            folded.append(a)
            continue
        if d is None:
            a = jnp.broadcast_to(a[..., None], a.shape + (size,))
        else:
            a = jnp.moveaxis(a, d, -1)
        folded.append(a.reshape(a.shape[:-2] + (a.shape[-2] * size,)))
    outs = kernel_p.bind(*folded, call=call, lowering=lowering)
    result = [o.reshape(o.shape[:-1] + (o.shape[-1] // size, size)) for o in outs]
    return result, [r.ndim - 1 for r in result]


def _inline_batched(call: KernelCall, args: Sequence[Any], dims: Sequence[Any], lowering: str) -> bool:
    """Whether this batched call is lowered "xla" (``_traced_lowering``) and
    its operations hold no while loop, so that JAX batches them itself: the call's operations
    under ``jax.vmap``, one program over every batch entry. No fold into the sample axis and
    no squeeze of a one-entry batch, whose reshapes at the batch's edges made XLA copy a
    scan's tangent carry each step (jacfwd through a scan). A while loop (a mask's early
    stop over several steps, a loop region's exit) is kept inside the primitive: JAX cannot
    transpose a while loop, and grad of a vmap transposes whatever the batching made. These
    operations are then differentiated by JAX's own rules, which agree with the derived
    kernels' (tests/test_jax_lowerings.py)."""
    ops = call.ops()
    shapes = [tuple(a.shape) if d is None else tuple(a.shape[:d] + a.shape[d + 1:]) for a, d in zip(args, dims)]
    return _traced_lowering(call, lowering, shapes) == "xla" and not ops.loop_end and (ops.steps == 1 or ops.terminate < 0)


_batched: dict[tuple[KernelCall, tuple], Any] = {}


def _batched_xla_function(call: KernelCall, dims: tuple) -> Any:
    """The call's operations under ``jax.vmap`` with ``dims``, jitted: called eagerly, one
    compiled program instead of each operation dispatched on its own (thousands of small
    compiles for a derived kernel); under an outer jit, a nested call XLA inlines."""
    fn = _batched.get((call, dims))
    if fn is None:
        fn = _batched[(call, dims)] = jax.jit(jax.vmap(partial(_xla_function, call=call), in_axes=list(dims)))
    return fn


def _batch_by_entry(args: Sequence[Any], dims: Sequence[Any], call: KernelCall, size: int, lowering: str) -> tuple[list, list]:
    moved = [a if d is None else jnp.moveaxis(a, d, 0) for a, d in zip(args, dims)]
    mapped = [i for i, d in enumerate(dims) if d is not None]
    if size == 1:  # one entry (jacfwd with respect to one number): one call, no loop around it
        full = [a[0] if i in mapped else a for i, a in enumerate(moved)]
        return [o[None] for o in kernel_p.bind(*full, call=call, lowering=lowering)], [0] * len(call.outputs)

    def one(xs: Sequence[Any]) -> list[Any]:
        full = list(moved)
        for i, x in zip(mapped, xs):
            full[i] = x
        return kernel_p.bind(*full, call=call, lowering=lowering)

    outs = jax.lax.map(one, [moved[i] for i in mapped])
    return list(outs), [0] * len(outs)


batching.primitive_batchers[kernel_p] = _batch
