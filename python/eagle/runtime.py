"""The process's host runtime: the one thread pool every eagle launch on the CPU shares.

It is created on first use with ``$RAPTOR_NUM_THREADS`` threads (default: all cores);
``set_num_threads`` replaces it. This is the single piece of process-wide state in eagle,
kept here so it is in one place.
"""

from __future__ import annotations

from raptor_core import _core

__all__ = ["host_runtime", "set_num_threads"]

_state: dict[str, _core.Runtime] = {}


def host_runtime() -> _core.Runtime:
    """The shared host thread pool (created on first use)."""
    rt = _state.get("host")
    if rt is None:
        rt = _state["host"] = _core.Runtime(0)
    return rt


def set_num_threads(n: int) -> None:
    """Replaces the host thread pool with one of ``n`` threads (the caller included)."""
    if n < 1:
        raise ValueError(f"eagle.set_num_threads: n must be >= 1, got {n}")
    _state["host"] = _core.Runtime(int(n))
