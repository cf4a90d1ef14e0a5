"""hawk: the raptor kernel language.

A Python function decorated with ``@hawk.kernel``, whose parameters carry the annotation
types below, is compiled (by raptor's C++ core) into a kernel that runs once per sample over
structure-of-arrays planes, with derived tangent and adjoint kernels. See
docs/language.md. Names are defined in hawk.kernel, hawk.types, hawk.math and hawk.errors.
"""

from hawk import math
from hawk.errors import KernelError
from hawk.kernel import Helper, Kernel, SlotInfo, func, kernel
from hawk.reduce import max, mean, min, sum  # noqa: A004 - hawk.sum/mean/min/max, reductions over samples (not in __all__)
from hawk.scatter import scatter
from hawk.types import Guard, Matrix, Mutable, Param, Random, Scalar, Table, Terminated, Vector, bool_, int32, int64

__version__ = "0.6.0"

__all__ = [
    "Guard", "Helper", "Kernel", "KernelError", "Matrix", "Mutable", "Param", "Random", "Scalar", "SlotInfo",
    "Table", "Terminated", "Vector", "bool_", "func", "int32", "int64", "kernel", "math",
    "scatter",
]
