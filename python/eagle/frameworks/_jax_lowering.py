"""Which lowering a kernel call gets: "ffi" (the C++ custom call) or "xla" (XLA's own
operations, eagle/frameworks/_jax_xla.py). Start at ``choose``.

``eagle.frameworks.jax.function(kernel, lowering=...)`` takes "ffi", "xla" or "auto"; "auto"
is resolved here when a call is lowered (the primitive's lowering rule, with the platform it
is lowered for and the operands' shapes), per call (docs/jax.md "Two lowerings"):

- "ffi" when the XLA lowering does not implement one of the kernel's ops (``_jax_xla.supported``);
- "ffi" when a sample's result can be an error (``OpList.can_fail``): a Table read, or a `//`
  or `%` whose divisor is not a nonzero constant, or `int(x)`; it then stays an error (the
  FFI path's message) rather than the XLA path's NaN, whatever N is;
- "ffi" off the CPU (the threshold below was measured on the CPU only);
- "ffi" when the step has more than ``MAX_XLA_VALUES`` values (XLA's compile time grows with
  the op count, the C++ build is compiled once and cached on disk);
- otherwise "xla" when the work of the call, N x steps, is at most ``XLA_MAX_WORK``, else
  "ffi": below it the custom call's fixed cost (and the fusion barrier it puts into a
  surrounding loop) dominates, above it raptor's threaded C++ loop wins.

``RAPTOR_JAX_LOWERING=ffi|xla`` (read at each call) forces every function made with
``lowering="auto"`` (the default) onto one path: the way to run a test suite or a page on
both lowerings.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["ENV", "MAX_XLA_VALUES", "XLA_MAX_WORK", "choose", "forced"]

ENV = "RAPTOR_JAX_LOWERING"
# Samples x steps at which "auto" switches from "xla" to "ffi"; measured with
# benchmarks/jax_bridge.py --crossover on the 2-core build machine, idle (docs/jax.md): in a
# 50-step scan "xla" took 0.72-0.74x the FFI path's time at N = 512 and 1.04-1.06x at 1024.
XLA_MAX_WORK = 512
MAX_XLA_VALUES = 4000


def forced() -> str | None:
    """The lowering ``RAPTOR_JAX_LOWERING`` forces ("ffi" or "xla"), None when unset or "auto"."""
    value = os.environ.get(ENV, "").strip().lower()
    if value in ("", "auto"):
        return None
    if value not in ("ffi", "xla"):
        raise ValueError(f"eagle.frameworks.jax: {ENV}={value!r}; set it to 'ffi', 'xla' or 'auto' (or unset it)")
    return value


def choose(ops: Any, n: int, platform: str, dtype: Any = None) -> str:
    """The lowering "auto" picks for a call of the kernel ``ops`` (a ``_jax_xla.OpList``) on
    ``n`` samples on ``platform`` ("cpu", "cuda", ...), in ``dtype`` (the call's float dtype,
    when known: a float32 call of a long loop may be beyond the XLA lowering)."""
    from eagle.frameworks import _jax_xla

    if not _jax_xla.supported(ops, dtype) or ops.can_fail or platform != "cpu" or len(ops.values) > MAX_XLA_VALUES:
        return "ffi"
    return "xla" if max(n, 1) * max(ops.steps, 1) <= XLA_MAX_WORK else "ffi"
