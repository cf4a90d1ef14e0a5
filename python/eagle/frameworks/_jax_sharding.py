"""Sharding of kernel calls along the sample axis (JAX's own distribution,
docs/jax.md). A kernel is independent per sample, so a call whose planes are sharded along
their last (sample) axis runs on every device over its own shard: no all-gather. Params
and Tables are replicated, and so is a Random key, whose operand gets each shard's global
index of its sample 0, so draws are numbered by the global sample index. Sums over samples (the cotangents of Params and Tables in
adjoint kernels) are summed across the devices that hold the shards (``psum``); the outputs of
``hawk.min`` / ``hawk.max`` take ``pmin`` / ``pmax`` instead.

This is a ``custom_partitioning`` rule around the per-device primitive, with a Shardy
sharding rule (``"k1 n, , -> k2 n"``: ``n`` the sample factor, shared by every plane).
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
from jax.experimental.custom_partitioning import custom_partitioning
from jax.sharding import NamedSharding, PartitionSpec as P

__all__ = ["partitioned"]


def _dims(slot: Any, shape: tuple, tag: str) -> str:
    if slot.kind in ("param", "param_sum") and len(shape) == 0:
        return ""
    if slot.kind in ("plane", "mutable", "terminated"):
        return f"{tag} n" if len(shape) == 2 else "n"
    # tables and their sums: their own factors (replicated)
    return " ".join(f"{tag}{i}" for i in range(len(shape)))


def _rule(call: Any, in_avals: list[Any], out_avals: list[Any]) -> str:
    ins = [_dims(s, a.shape, f"i{j}_") for j, (s, a) in enumerate(zip(call.inputs, in_avals))]
    # (a scatter target, an in-out table_sum, is its own table)
    tables = {s.name: ins[j] for j, s in enumerate(call.inputs) if s.kind == "table" or (s.kind == "table_sum" and s.inout)}
    outs = []
    for j, (s, a) in enumerate(zip(call.outputs, out_avals)):
        if s.kind == "table_sum":
            outs.append(tables[call.kernel.slots[s.table_of].name])
        else:
            outs.append(_dims(s, a.shape, f"o{j}_"))
    return ", ".join(ins) + " -> " + ", ".join(outs)


def _sample_axes(call: Any, arg_shapes: Any) -> Any:
    for s, a in zip(call.inputs, arg_shapes):
        if s.kind in ("plane", "mutable", "terminated") and len(a.shape) >= 1:
            spec = tuple(a.sharding.spec) if a.sharding is not None else ()
            spec = spec + (None,) * (len(a.shape) - len(spec))
            return spec[-1]
    return None


def _local_n(call: Any, args: Any) -> int:
    """This shard's sample count: the last axis of the first plane operand."""
    for s, a in zip(call.inputs, args):
        if s.kind in ("plane", "mutable", "terminated") and a.ndim >= 1:
            return int(a.shape[-1])
    return 0


def _with_sample_base(block: Any, axes: Any, local_n: int) -> Any:
    """The Random operand with the global index of this shard's sample 0 (words 2, 3): draws
    are numbered by the global sample index whatever the sharding."""
    import jax.numpy as jnp

    base = jax.lax.axis_index(axes).astype(jnp.uint32) * jnp.uint32(local_n)
    return block.at[2].set(base).at[3].set(jnp.uint32(0))


def _spec(slot: Any, ndim: int, axes: Any) -> P:
    if slot.kind in ("plane", "mutable", "terminated") and ndim >= 1:
        return P(*([None] * (ndim - 1) + [axes]))
    return P()


def _pfold(r: Any, axes: Any, combine: str) -> Any:
    """A hawk.min / hawk.max output across the shards: pmin / pmax, and NaN when a shard's is NaN
    (NumPy's rule, which the kernel follows; XLA's CPU all-reduce min / max drops NaN)."""
    folded = jax.lax.pmin(r, axes) if combine == "min" else jax.lax.pmax(r, axes)
    nan = jax.lax.pmax(jnp.isnan(r).astype(jnp.int32), axes) > 0
    return jnp.where(nan, jnp.asarray(jnp.nan, r.dtype), folded)


@functools.lru_cache(maxsize=None)
def _make(call: Any, local_p: Any, in_shapes: tuple, out_shapes: tuple) -> Any:
    def fn(*args: Any) -> Any:
        return tuple(local_p.bind(*args, call=call))

    part = custom_partitioning(fn)

    def shardings(mesh: Any, arg_shapes: Any) -> tuple[list, list, Any]:
        axes = _sample_axes(call, arg_shapes)
        ins = [NamedSharding(mesh, _spec(s, len(a.shape), axes)) for s, a in zip(call.inputs, arg_shapes)]
        outs = [NamedSharding(mesh, _spec(s, len(shape), axes)) for s, shape in zip(call.outputs, out_shapes)]
        return ins, outs, axes

    def partition(mesh: Any, arg_shapes: Any, result_shape: Any) -> Any:
        ins, outs, axes = shardings(mesh, arg_shapes)

        def lower_fn(*args: Any) -> Any:
            args = list(args)
            for i, s in enumerate(call.inputs):
                if s.kind == "random" and axes is not None:
                    args[i] = _with_sample_base(args[i], axes, _local_n(call, args))
                if s.kind == "table_sum" and s.inout and axes is not None:
                    # A scatter target's bound values enter once: the first shard adds its
                    # samples to them, the others to zeros, and the psum below adds the shards.
                    first = jax.lax.axis_index(axes) == 0
                    args[i] = jnp.where(first, args[i], jnp.zeros_like(args[i]))
            results = list(local_p.bind(*args, call=call))
            if axes is not None:
                for i, s in enumerate(call.outputs):
                    if s.kind == "param_sum" and s.combine in ("min", "max"):
                        results[i] = _pfold(results[i], axes, s.combine)
                    elif s.kind in ("param_sum", "table_sum"):
                        results[i] = jax.lax.psum(results[i], axes)
            return tuple(results)

        return mesh, lower_fn, tuple(outs), tuple(ins)

    def infer(mesh: Any, arg_shapes: Any, result_shape: Any) -> Any:
        return tuple(shardings(mesh, arg_shapes)[1])

    class _Aval:
        def __init__(self, shape: tuple) -> None:
            self.shape = shape

    # Sums over samples have no sample dimension; Shardy cannot mark n as reduced for them
    # while plane results keep it, so the partition callback sums them across the shards.
    rule = _rule(call, [_Aval(s) for s in in_shapes], [_Aval(s) for s in out_shapes])
    part.def_partition(partition=partition, infer_sharding_from_operands=infer, sharding_rule=rule)
    return part


def partitioned(call: Any, local_p: Any) -> Any:
    """A function of the call's operands that runs ``local_p`` per shard of the samples."""

    def fn(*args: Any) -> Any:
        in_shapes = tuple(tuple(a.shape) for a in args)
        out_avals = local_p.abstract_eval(*[jax.typeof(a) for a in args], call=call)[0]
        out_shapes = tuple(tuple(o.shape) for o in out_avals)
        return _make(call, local_p, in_shapes, out_shapes)(*args)

    return fn
