"""The annotation types of hawk kernel parameters (docs/language.md, "Parameters").

``Param``, ``Scalar``, ``Vector[k]``, ``Matrix[r, c]``, ``Mutable[T]``, ``Terminated``, ``Table[T]`` and
``Random`` are markers: hawk reads them from a kernel's signature and never instantiates them. ``Guard``
configures how eagle launches a kernel. ``param_kind`` turns one annotation into the
``(kind, width, is_vector)`` triple the compiler takes (plus the element type of an integer or
bool plane), or an error message; ``matrix_rows`` gives a Matrix's rows (0 for anything else).

Integer and bool planes (docs/language.md "Integer and bool planes"): ``Scalar[hawk.int32]``,
``Scalar[hawk.int64]``, ``Scalar[hawk.bool_]``, ``Vector[k, hawk.int32]``, ``Param[hawk.int32]``
(and int64), also inside ``Mutable[...]``. ``hawk.int32``, ``hawk.int64`` and ``hawk.bool_`` are
the dtype markers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "Param", "Scalar", "Vector", "Matrix", "Mutable", "Terminated", "Table", "Random", "Guard",
    "param_kind", "matrix_rows", "DType", "int32", "int64", "bool_",
]


@dataclass(frozen=True)
class DType:
    """An element type of an integer or bool plane: ``hawk.int32``, ``hawk.int64``, ``hawk.bool_``
    (NumPy's ``int32``, ``int64`` and ``bool``). Float planes take the build's float dtype."""

    name: str

    def __repr__(self) -> str:
        return f"hawk.{'bool_' if self.name == 'bool' else self.name}"


int32 = DType("int32")
int64 = DType("int64")
bool_ = DType("bool")
_DTYPES = (int32, int64, bool_)


def _dtype_of(d: Any, where: str) -> DType:
    if isinstance(d, DType):
        return d
    raise TypeError(f"{where} takes hawk.int32, hawk.int64 or hawk.bool_ as its element type, got {d!r}")


class _Marker:
    """Base of the annotation markers; they are types for annotation only."""

    def __init__(self, *_: Any, **__: Any) -> None:
        raise TypeError(f"{type(self).__name__} is a kernel parameter annotation, not a value")


@dataclass(frozen=True)
class ParamType:
    """``Param[hawk.int32]``: one integer (or bool) for every sample of a launch."""

    dtype: DType

    def __repr__(self) -> str:
        return f"Param[{self.dtype!r}]"


class Param(_Marker):
    """One float for every sample of a launch (a Python float, 0-d or 1-element array);
    ``Param[hawk.int32]`` / ``Param[hawk.int64]``: one integer."""

    def __class_getitem__(cls, dtype: Any) -> ParamType:
        return ParamType(_dtype_of(dtype, "Param[...]"))


@dataclass(frozen=True)
class ScalarType:
    """``Scalar[hawk.int32]`` (int64, bool_): a plane of shape ``(N,)`` of that dtype."""

    dtype: DType

    def __repr__(self) -> str:
        return f"Scalar[{self.dtype!r}]"


class Scalar(_Marker):
    """A plane of shape ``(N,)``: one float per sample; ``Scalar[hawk.int32]``,
    ``Scalar[hawk.int64]``, ``Scalar[hawk.bool_]``: one integer or bool per sample."""

    def __class_getitem__(cls, dtype: Any) -> ScalarType:
        return ScalarType(_dtype_of(dtype, "Scalar[...]"))


class Random(_Marker):
    """Random numbers: ``rng.uniform()`` and ``rng.normal()`` draw one number of the kernel's
    dtype per call, as ``jax.random`` draws them from ``fold_in(fold_in(fold_in(key, step),
    sample), draw)`` (docs/language.md, "Random numbers"). No derivative. Bound with
    ``plan.bind(rng=seed_or_key)`` in eagle, a key operand in the JAX bridge."""


class Terminated(_Marker):
    """The stop mask, a bool plane ``(N,)``: a finished sample is skipped."""


@dataclass(frozen=True)
class VectorType:
    """``Vector[k]``: a plane of shape ``(k, N)``, k floats per sample; ``Vector[k, hawk.int32]``
    k integers."""

    k: int
    dtype: DType | None = None

    def __repr__(self) -> str:
        return f"Vector[{self.k}]" if self.dtype is None else f"Vector[{self.k}, {self.dtype!r}]"


class Vector(_Marker):
    """``Vector[k]``: a plane of shape ``(k, N)`` (components leading); ``Vector[k, hawk.int32]``
    (or int64) holds integers."""

    def __class_getitem__(cls, k: Any) -> VectorType:
        dtype = None
        if isinstance(k, tuple):
            if len(k) != 2:
                raise TypeError(f"Vector[k] or Vector[k, dtype], got Vector{list(k)!r}")
            k, dtype = k[0], _dtype_of(k[1], "Vector[k, ...]")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise TypeError(f"Vector[k] needs a positive integer k, got {k!r}")
        return VectorType(k, dtype)


@dataclass(frozen=True)
class MatrixType:
    """``Matrix[r, c]``: a plane of shape ``(r, c, N)``, r x c floats per sample (row-major)."""

    r: int
    c: int

    def __repr__(self) -> str:
        return f"Matrix[{self.r}, {self.c}]"


class Matrix(_Marker):
    """``Matrix[r, c]``: a plane of shape ``(r, c, N)`` (rows, columns, then samples)."""

    def __class_getitem__(cls, rc: Any) -> MatrixType:
        if not isinstance(rc, tuple) or len(rc) != 2:
            raise TypeError(f"Matrix[r, c] needs two sizes, rows and columns, got {rc!r}")
        for k in rc:
            if isinstance(k, bool) or not isinstance(k, int) or k < 1:
                raise TypeError(f"Matrix[r, c] needs positive integers r and c, got {rc!r}")
        return MatrixType(rc[0], rc[1])


@dataclass(frozen=True)
class MutableType:
    """``Mutable[T]``: a plane of type T the kernel writes."""

    of: Any

    def __repr__(self) -> str:
        return f"Mutable[{_name(self.of)}]"


class Mutable(_Marker):
    """``Mutable[Scalar]`` or ``Mutable[Vector[k]]``: a plane the kernel writes."""

    def __class_getitem__(cls, of: Any) -> MutableType:
        return MutableType(of)


@dataclass(frozen=True)
class TableType:
    """``Table[T]``: one buffer of M entries of T shared by all samples."""

    of: Any

    def __repr__(self) -> str:
        return f"Table[{_name(self.of)}]"


class Table(_Marker):
    """``Table[Scalar]`` (shape ``(M,)``) or ``Table[Vector[k]]`` (shape ``(M, k)``)."""

    def __class_getitem__(cls, of: Any) -> TableType:
        return TableType(of)


@dataclass(frozen=True)
class Guard:
    """How eagle launches a kernel. ``active_set=True``: keep an index map of live samples
    and launch only over them (for kernels whose samples finish at very different times)."""

    active_set: bool = False


ALLOWED = (
    "Param, Scalar, Vector[k], Matrix[r, c], Mutable[Scalar], Mutable[Vector[k]], Mutable[Matrix[r, c]], Mutable[Param], "
    "Mutable[Table[Scalar]], Mutable[Table[Vector[k]]], Terminated, "
    "Table[Scalar], Table[Vector[k]], Table[Matrix[r, c]] or Random "
    "(integer and bool planes: Scalar[hawk.int32], Vector[k, hawk.int64], Param[hawk.int32], Scalar[hawk.bool_], ...)"
)


def _name(t: Any) -> str:
    return getattr(t, "__name__", None) or repr(t)


def _elem(dtype: DType | None) -> str:
    return "float" if dtype is None else dtype.name


def param_kind(annotation: Any) -> tuple[str, int, bool] | tuple[str, int, bool, str] | str:
    """``(kind, width, is_vector)`` for an annotation, or a message saying what is wrong;
    integer and bool planes add their element type: ``(kind, width, is_vector, "int32")``.

    kind is one of "param", "plane", "mutable", "terminated", "table", "random", "param_sum"
    (Mutable[Param]: a sum over the samples, ``out = hawk.sum(x)``), "table_scatter"
    (Mutable[Table[Scalar]] / Mutable[Table[Vector[k]]]: ``hawk.scatter(t)[i] += v``).
    """
    if annotation is Param:
        return ("param", 1, False)
    if annotation is Random:
        return ("random", 1, False)
    if isinstance(annotation, ParamType):
        return ("param", 1, False, annotation.dtype.name)
    if annotation is Scalar:
        return ("plane", 1, False)
    if isinstance(annotation, ScalarType):
        return ("plane", 1, False, annotation.dtype.name)
    if isinstance(annotation, VectorType):
        if annotation.dtype is not None:
            return ("plane", annotation.k, True, annotation.dtype.name)
        return ("plane", annotation.k, True)
    if isinstance(annotation, MatrixType):
        return ("plane", annotation.r * annotation.c, True)
    if annotation is Terminated:
        return ("terminated", 1, False)
    if isinstance(annotation, MutableType):
        inner = annotation.of
        if inner is Param:  # one value per launch: `out = hawk.sum(x)` (docs/language.md)
            return ("param_sum", 1, False)
        if isinstance(inner, TableType):  # a scatter target: `hawk.scatter(t)[i] += v`
            entry = inner.of
            if entry is Scalar:
                return ("table_scatter", 1, False)
            if isinstance(entry, VectorType) and entry.dtype is None:
                return ("table_scatter", entry.k, True)
            return (f"Mutable[Table[...]] (a scatter target, hawk.scatter(t)[i] += v) takes Table[Scalar] or "
                    f"Table[Vector[k]], got Mutable[{_name(inner)}]")
        if inner is Scalar:
            return ("mutable", 1, False)
        if isinstance(inner, ScalarType):
            return ("mutable", 1, False, inner.dtype.name)
        if isinstance(inner, VectorType):
            if inner.dtype is not None:
                return ("mutable", inner.k, True, inner.dtype.name)
            return ("mutable", inner.k, True)
        if isinstance(inner, MatrixType):
            return ("mutable", inner.r * inner.c, True)
        return f"Mutable[...] takes Scalar or Vector[k] (or Matrix[r, c], Scalar[hawk.int32], Vector[k, hawk.int32], ..., or Param for a sum over samples), got {_name(inner)}"
    if isinstance(annotation, TableType):
        inner = annotation.of
        if inner is Scalar:
            return ("table", 1, False)
        if isinstance(inner, VectorType) and inner.dtype is None:
            return ("table", inner.k, True)
        if isinstance(inner, MatrixType):
            return ("table", inner.r * inner.c, True)
        if isinstance(inner, (ScalarType, VectorType)):
            return f"Table[...] holds floats, got Table[{_name(inner)}]; index a float Table with an int (w.at(i))"
        return f"Table[...] takes Scalar or Vector[k] (or Matrix[r, c]), got {_name(inner)}"
    if isinstance(annotation, DType):
        return f"is annotated {annotation!r}, an element type; write Scalar[{annotation!r}] (or Vector[k, {annotation!r}], Param[{annotation!r}])"
    if annotation is Vector:
        return "Vector needs its size: Vector[k]"
    if annotation is Matrix:
        return "Matrix needs its shape: Matrix[r, c]"
    if annotation is Mutable:
        return "Mutable needs its type: Mutable[Scalar] or Mutable[Vector[k]]"
    if annotation is Table:
        return "Table needs its entry type: Table[Scalar] or Table[Vector[k]]"
    return f"is annotated {_name(annotation)}; use {ALLOWED}"


def matrix_rows(annotation: Any) -> int:
    """The rows of a ``Matrix[r, c]`` annotation (also inside ``Mutable``/``Table``); 0 otherwise."""
    if isinstance(annotation, (MutableType, TableType)):
        annotation = annotation.of
    return annotation.r if isinstance(annotation, MatrixType) else 0
