"""hawk.scatter: an add into a shared table, inside a kernel body (docs/language.md
"Scatter-adds"). ``hawk.scatter(t)[i] += v`` with ``t: Mutable[Table[Scalar]]`` (or
``Mutable[Table[Vector[k]]]``) adds v of every sample into entry i of t, as
``np.add.at(t, i, v)`` does: the table ends as its bound values plus every sample's adds,
with the same bits on any thread count. The compiler gives the name its meaning
(cpp/ir/lower.cpp, Lowerer::scatter_stmt); used from plain Python it raises.
"""

from __future__ import annotations

from typing import Any


def scatter(t: Any) -> Any:
    """scatter(t)[i] += v: add v into entry i of the Mutable[Table] t, from every sample (many
    samples may add into one entry); only as the target of ``+=`` in a @hawk.kernel body."""
    raise TypeError("hawk.scatter can only be used inside a @hawk.kernel body (`hawk.scatter(t)[i] += v` with "
                    "`t: Mutable[Table[Scalar]]`); use numpy.add.at(t, i, v) in plain Python")
