"""Errors eagle raises beyond Python's own: ``ModeError`` names a wrong dtype or build mode
(a float32 plane in a float64 launch, an integer plane, a kernel the caller cannot run)."""

from __future__ import annotations

__all__ = ["ModeError"]


class ModeError(TypeError):
    """A value has a dtype or mode the kernel is not built for (a kernel is built once per
    float dtype: float32 and float64), or a kernel is used in a mode it does not support."""
