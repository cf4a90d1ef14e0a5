"""Errors hawk raises. ``KernelError`` is raised when a kernel or helper is defined with
something outside the language; its message names the kernel, the file, line and column,
and what is allowed instead. It comes from the compiler (raptor_core) unchanged."""

from __future__ import annotations

from raptor_core._core import KernelError

__all__ = ["KernelError"]

KernelError.__doc__ = (
    "A kernel or helper uses something outside the hawk language. The message names the kernel, "
    "the file, line and column, and what is allowed instead. Raised by the compiler (raptor_core)."
)
