"""hawk.sum, hawk.mean, hawk.min and hawk.max: reductions over the samples of a launch, inside
a kernel body (docs/language.md "Sums over samples", "Minimum and maximum over samples").
``total = hawk.sum(x, where=c)`` with ``total: Mutable[Param]`` adds x of every sample where
c holds into one value per launch; ``m = hawk.mean(x)`` is the mean of x over every sample
of the launch; ``lo = hawk.min(x, where=c)`` / ``hi = hawk.max(x, where=c)`` their least /
greatest x. The compiler gives the names their meaning (cpp/ir/lower.cpp,
Lowerer::reduce_stmt); called from plain Python they raise. Not in ``hawk.__all__``:
``from hawk import *`` must not shadow the builtins sum, min and max (nor bring in a
``mean`` users did not ask for).
"""

from __future__ import annotations

from typing import Any


def sum(x: Any, *, where: Any = True) -> Any:  # noqa: A001 - the kernel language's hawk.sum
    """sum(x, where=c): the sum of x over the samples of the launch where c holds (all when
    where is left out), assigned to a Mutable[Param] output. Deterministic: the same bits on
    any thread count (docs/runtime.md). Its value read later in the body, or the call inside an
    expression, is a stage boundary (docs/language.md "Stage boundaries")."""
    raise TypeError("hawk.sum can only be used inside a @hawk.kernel body (`total = hawk.sum(x)` with "
                    "`total: Mutable[Param]`); use numpy.sum in plain Python")


def mean(x: Any, *, where: Any = True) -> Any:
    """mean(x, where=c): the mean of x over the samples of the launch where c holds (all when
    where is left out), assigned to a Mutable[Param] output: the sum of x / n_samples(), or with
    where= the sum of x / count where c, the count a sum of an earlier stage (so the launch
    runs as stages). Deterministic as hawk.sum; 0 when no sample is selected (NumPy: NaN).
    ``x - hawk.mean(x)`` (a read of the mean in the same body) is a stage boundary."""
    raise TypeError("hawk.mean can only be used inside a @hawk.kernel body (`m = hawk.mean(x)` with "
                    "`m: Mutable[Param]`); use numpy.mean in plain Python")


def min(x: Any, *, where: Any = True) -> Any:  # noqa: A001 - the kernel language's hawk.min
    """min(x, where=c): the least x over the samples of the launch where c holds (all when
    where is left out), assigned to a Mutable[Param] output. As NumPy's np.min: a NaN among
    them gives NaN. No sample selected (every where false, every sample finished, or no
    samples) gives +inf, jnp.min(x, initial=inf, where=c)'s convention (np.min raises).
    Exact, so the same bits on any thread count and sharding."""
    raise TypeError("hawk.min can only be used inside a @hawk.kernel body (`lo = hawk.min(x)` with "
                    "`lo: Mutable[Param]`); use numpy.min in plain Python")


def max(x: Any, *, where: Any = True) -> Any:  # noqa: A001 - the kernel language's hawk.max
    """max(x, where=c): the greatest x over the samples of the launch where c holds (all when
    where is left out), assigned to a Mutable[Param] output. As NumPy's np.max: a NaN among
    them gives NaN. No sample selected gives -inf (jnp.max(x, initial=-inf, where=c))."""
    raise TypeError("hawk.max can only be used inside a @hawk.kernel body (`hi = hawk.max(x)` with "
                    "`hi: Mutable[Param]`); use numpy.max in plain Python")
