"""Reverse-mode gradients through recorded graph launches (SPEC §2).

``reverse(record, seeds, vjps={})`` walks a record (eagle/record.py) backwards. It keeps a
copy of every plane's state, rebuilt launch by launch from the record's saved copies (the
user's arrays are never written), and a cotangent per plane. For a kernel node it launches
the kernel's adjoint kernel (hawk's derivative, compiled like any kernel) with respect to
every float input; for a foreign node it calls ``vjps[node](primals, cotangents)``, where
primals maps the node's read planes to their values at that launch and cotangents its
write planes to theirs, and which returns cotangents for (some of) the read planes.

Seeds are ``{"node.plane": cotangent}``: the cotangent of a plane as the graph left it.
The result maps each plane read by the graph (by the name it was bound under) to its
cotangent, and each kernel's Params to theirs as ``"node.param"``.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

import eagle.plan
from eagle.binding import Bound
from eagle.graph import node_planes, plane_key
from eagle.record import Record

__all__ = ["reverse"]

_adjoint_plans: dict[tuple[str, tuple[str, ...]], Any] = {}


def _adjoint_plan(bound: Bound, wrt: tuple[str, ...]) -> Any:
    key = (bound.kernel.digest(bound.dtype.name), wrt)
    plan = _adjoint_plans.get(key)
    if plan is None:
        (plan,) = eagle.plan.auto([bound.kernel.adjoint(list(wrt))])
        _adjoint_plans[key] = plan
    return plan


def _host(value: Any) -> np.ndarray:
    return value.get() if hasattr(value, "get") else np.asarray(value)


def reverse(record: Record, seeds: Mapping[str, Any], vjps: Mapping[str, Callable[..., Any]] | None = None) -> dict[str, Any]:
    """Gradients of the seeded planes with respect to the graph's input planes and Params."""
    if record is None or not isinstance(record, Record):
        raise TypeError("eagle.diff.reverse: pass graph.record of a graph built with build(record=True)")
    vjps = dict(vjps or {})
    nodes = dict(record.nodes)
    for name, node in record.nodes:
        if not isinstance(node, Bound) and name not in vjps and any(name == nl.node for launch in record.launches for nl in launch):
            raise ValueError(f"eagle.diff.reverse: foreign node '{name}' has no VJP; pass vjps={{'{name}': fn}} with fn(primals, cotangents) -> cotangents of its reads")

    arrays: dict[tuple, np.ndarray] = {}   # plane key -> the user's array
    names: dict[tuple, str] = {}           # plane key -> a name it was bound under
    read_keys: list[tuple] = []
    for name, node in record.nodes:
        reads, writes = node_planes(node)
        for plane, arr in list(reads.items()) + list(writes.items()):
            key = plane_key(arr)
            arrays.setdefault(key, np.asarray(arr))
            names.setdefault(key, plane)
        for arr in reads.values():
            if plane_key(arr) not in read_keys:
                read_keys.append(plane_key(arr))

    state = {key: arr.copy() for key, arr in arrays.items()}
    ct: dict[tuple, np.ndarray] = {}
    grads_params: dict[str, float] = {}

    for target, seed in seeds.items():
        node_name, _, plane = target.partition(".")
        if node_name not in nodes:
            raise KeyError(f"eagle.diff.reverse: seed {target!r} names no node (nodes: {list(nodes)})")
        _, writes = node_planes(nodes[node_name])
        reads, _ = node_planes(nodes[node_name])
        arr = writes.get(plane, reads.get(plane))
        if arr is None:
            raise KeyError(f"eagle.diff.reverse: node '{node_name}' has no plane '{plane}'")
        key = plane_key(arr)
        ct[key] = ct.get(key, 0) + _host(seed).astype(np.asarray(arr).dtype)

    def ct_of(key: tuple) -> np.ndarray:
        c = ct.get(key)
        if c is None:
            c = ct[key] = np.zeros_like(state[key], dtype=state[key].dtype if state[key].dtype != np.bool_ else np.float64)
        return c

    for launch in reversed(record.launches):
        for nl in reversed(launch):
            node = nodes[nl.node]
            for key, saved in nl.saved.items():  # the state just before this node ran
                state[key] = saved.copy()
            if isinstance(node, Bound):
                _kernel_adjoint(node, nl, state, ct, ct_of, grads_params)
            else:
                _foreign_vjp(nl.node, node, vjps[nl.node], state, ct, ct_of)

    out: dict[str, Any] = {}
    for key in read_keys:
        out[names[key]] = ct.get(key, np.zeros_like(state[key]) if state[key].dtype != np.bool_ else None)
    out = {k: v for k, v in out.items() if v is not None}
    out.update(grads_params)
    return out


def _kernel_adjoint(node: Bound, nl: Any, state: dict, ct: dict, ct_of: Callable, grads: dict) -> None:
    kernel = node.kernel
    wrt = tuple(s.name for s in kernel.slots if s.kind in ("plane", "param", "table") or (s.kind == "mutable" and s.inout))
    if not wrt:
        return
    plan = _adjoint_plan(node, wrt)
    adj = plan.kernel
    roles = adj._core.slot_roles()
    values: dict[str, Any] = {}
    results: list[tuple[str, str, np.ndarray]] = []  # (kind, primal name, array)
    primal_slot = {s.name: s for s in kernel.slots}
    for s, (role, primal) in zip(adj.slots, roles):
        src = primal_slot.get(primal)
        key = plane_key(node.arrays[primal]) if src is not None and src.kind != "param" else None
        if role == "p":
            if src.kind == "param":
                values[s.name] = nl.params[primal]
            elif src.kind == "table":
                values[s.name] = nl.tables[primal].copy()
            else:
                values[s.name] = state[key].copy()
        elif s.kind == "plane":  # the cotangent of an output, read-only
            values[s.name] = ct_of(key).copy()
        elif s.kind == "mutable" and s.inout:  # in-out: ct of the output in, ct of the input out
            arr = ct_of(key).copy()
            values[s.name] = arr
            results.append(("inout", primal, arr))
        elif s.kind == "mutable":
            arr = np.zeros_like(state[key])
            values[s.name] = arr
            results.append(("plane", primal, arr))
        elif s.kind == "param_sum":
            arr = np.zeros(1, node.dtype)
            values[s.name] = arr
            results.append(("param", primal, arr))
        elif s.kind == "table_sum":
            arr = np.zeros_like(node.arrays[primal])
            values[s.name] = arr
            results.append(("table", primal, arr))
    plan.bind(**values).launch()
    # Pure outputs were overwritten: their earlier values get no cotangent from here on.
    for s in kernel.slots:
        if s.kind == "mutable" and not s.inout:
            ct[plane_key(node.arrays[s.name])] = np.zeros_like(state[plane_key(node.arrays[s.name])])
    for kind, primal, arr in results:
        if kind == "param":
            name = f"{nl.node}.{primal}"
            grads[name] = grads.get(name, 0.0) + float(arr[0])
            continue
        key = plane_key(node.arrays[primal])
        if kind == "inout":
            ct[key] = arr
        else:
            ct[key] = ct_of(key) + arr


def _foreign_vjp(name: str, node: Any, vjp: Callable, state: dict, ct: dict, ct_of: Callable) -> None:
    reads, writes = node_planes(node)
    primals = {p: state[plane_key(a)].copy() for p, a in reads.items()}
    cotangents = {p: ct_of(plane_key(a)).copy() for p, a in writes.items()}
    result = vjp(primals, cotangents) or {}
    for p, a in writes.items():  # overwritten by this node
        ct[plane_key(a)] = np.zeros_like(state[plane_key(a)])
    for p, value in result.items():
        if p not in reads:
            raise KeyError(f"eagle.diff.reverse: the VJP of node '{name}' returned a cotangent for '{p}', which it does not read (reads: {list(reads)})")
        key = plane_key(reads[p])
        ct[key] = ct_of(key) + _host(value).reshape(state[key].shape).astype(ct_of(key).dtype)
