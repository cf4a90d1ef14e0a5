"""``kernel.trace``: every named local of a kernel, per step, for a few samples.

Start at ``trace``. The kernel's source is lowered again without optimization passes (so no
local is folded away) and run by the reference interpreter (cpp/ir/interp.hpp) on the chosen
samples only; each local's value at the end of every step is recorded
(``raptor_core._core.trace``). It is the debugging view a ``print`` in the body would give:
kernels run compiled, so ``print`` is refused and its message points here.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
from raptor_core import _core

__all__ = ["trace"]


def trace(kernel: Any, spec: Mapping[str, Any] | None, samples: Sequence[int], inputs: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Runs ``kernel`` (a ``hawk.Kernel`` made by ``@hawk.kernel``) on ``samples`` of
    ``inputs`` in the reference interpreter and returns ``{local name: values}``.

    ``inputs`` are what ``plan.bind`` takes: planes ``(N,)`` / ``(k, N)``, Params as numbers,
    Tables ``(M,)`` / ``(M, k)``, in-out Mutables' old values, the Terminated mask (optional,
    all False when left out). The values are ``(steps, len(samples))`` for Scalars and
    integers, ``(steps, len(samples), k)`` for Vectors and bool arrays for conditions, in the
    planes' dtype (float32 planes: the interpreter computes as a float32 build does). A step a
    sample did not run (it was terminated before, or its mask was set) is NaN (False for
    bools). Locals assigned in only some branches or loop iterations are left out.
    """
    if spec is None:
        raise TypeError(
            f"kernel.trace: '{kernel.name}' is a derived kernel (a tangent, adjoint or trimmed "
            f"kernel); trace the @hawk.kernel it came from"
        )
    picked = np.asarray(list(samples), dtype=np.int64)
    if picked.ndim != 1 or picked.size == 0:
        raise ValueError(f"kernel.trace: '{kernel.name}' takes samples=[i, j, ...], a non-empty list of sample indices")
    slots = {s.name: s for s in kernel.slots}
    unknown = sorted(set(inputs) - set(slots))
    if unknown:
        raise TypeError(f"kernel.trace: '{kernel.name}' has no parameter {unknown[0]!r} (its parameters: {', '.join(slots)})")
    flat: dict[str, list[float]] = {}
    mask: list[int] = []
    dtype = None
    n_total = None
    for name, value in inputs.items():
        s = slots[name]
        a = np.asarray(value)
        if s.kind == "param":
            flat[name] = [float(a.reshape(-1)[0])] if a.size == 1 else a.astype(np.float64).reshape(-1).tolist()
            continue
        if s.kind == "table":
            flat[name] = a.astype(np.float64).reshape(-1).tolist()
            continue
        n = a.shape[-1] if a.ndim else 0
        if n_total is not None and n != n_total:
            raise ValueError(f"kernel.trace: '{kernel.name}': plane '{name}' has {n} samples, another plane {n_total}")
        n_total = n
        chosen = a[..., picked]
        if s.kind == "terminated":
            mask = chosen.astype(np.uint8).reshape(-1).tolist()
            continue
        if np.issubdtype(a.dtype, np.floating) and dtype is None:
            dtype = a.dtype
        flat[name] = chosen.astype(np.float64).reshape(-1).tolist()
    dtype = np.dtype(dtype or np.float64)
    if dtype not in (np.float32, np.float64):
        dtype = np.dtype(np.float64)
    run_spec = dict(spec)
    run_spec["steps"] = kernel.steps
    locals_, _ = _core.trace(run_spec, int(picked.size), flat, mask, dtype == np.float32)
    steps = kernel.steps
    out: dict[str, np.ndarray] = {}
    for name, is_vector, is_bool, width, data in locals_:
        v = np.asarray(data, dtype=np.float64).reshape(picked.size, steps, width).transpose(1, 0, 2)
        if is_bool:
            v = np.nan_to_num(v, nan=0.0) != 0.0
        else:
            v = v.astype(dtype)
        out[name] = v if is_vector else v[..., 0]
    return out
