"""The JAX bridge's second lowering: a kernel's optimized IR as XLA's own operations.

The C++ core hands over the IR of a kernel after its passes as plain data
(``raptor_core._core.Kernel.op_list``: values, stores, the terminate value, the steps); this
module evaluates that op list with ``jax.numpy`` / ``jax.lax`` over arrays of shape (N,), one
per component plane, so that XLA fuses the kernel into the surrounding program and its loops
and an exported module holds no custom call. Nothing here reads kernel source.

Start at ``evaluate``: it runs ``steps`` steps (``_step`` evaluates the values and applies the
stores), with the mask semantics of the FFI path (cpp/ir/interp.hpp with ``zero_finished``):

- a sample whose mask is set on entry is skipped: an in-out Mutable keeps its value, a pure
  Mutable gets 0, it adds nothing to a sum;
- a sample whose ``terminate`` value is true at the end of a step sets its mask and runs no
  further steps (the stores of that step are kept);
- a table index out of range under a holding predicate is an error on the FFI path; here the
  sample's float Mutable outputs become NaN and every sum of the call becomes NaN (no silent
  number; docs/jax.md "Two lowerings"); its integer and bool outputs are what the FFI path
  computes (the failing read gives 0).

Ops are looked up in ``_UNARY`` / ``_BINARY`` / ``_TERNARY`` / ``_SPECIAL``: an op this module does not know
raises ``UnsupportedOp`` naming it (``supported`` says so without raising).

What the language added beside the first lowering:

- Matrix planes are their r * c row-major components: (r, c, N) operands and results are
  reshaped to (r * c, N), tables (M, r, c) to (M, r * c).
- ``stop_grad`` and ``custom_jvp`` are their first operand (only the C++ AD reads them).
- Random draws (``rand_uniform`` / ``rand_normal``) call ``jax.random`` itself on the subkey
  fold_in(fold_in(fold_in(key, step), i), j), i the global sample index: uniform draws equal
  the FFI path's bit for bit, normal ones are jax's own (the FFI path is within 1e-13 / 1e-6 of
  them with jax >= 0.12.1's default erf_inv, docs/language.md "Tolerance of normal").
- I values (integer planes and Params, loop and table indices, `int(x)`, draws of
  `randint` / `poisson`) are integer arrays: int64 with ``jax_enable_x64``, computing as the
  language and the FFI path do (two's complement wrap-around, Python's `//` and `%`), and a
  store to an int32 plane keeps the low 32 bits; B values are bool arrays. Without
  ``jax_enable_x64`` (float32 calls only) JAX has no int64: the I values are int32 arrays,
  exact while they stay within int32, `int(x)` beyond it is an error of the sample (below),
  and integer planes and Params are refused by name (``unsupported_for``), so "auto" takes
  "ffi" for them.
- Loop regions (a `for` too long to unroll, docs/language.md "Long loops") are a
  ``lax.while_loop`` over the carried values of all samples (``_loop``): it runs while a live
  sample has not left and the iterations last, and a sample that left keeps its values, as the
  C++ loop leaves per sample. A draw inside one (``rand_uniform_at``) takes its index at run
  time.
- ``sample_index`` / ``n_samples`` (hawk.math.sample_index(), n_samples()) are an iota over
  the call's samples and their count: under sharding XLA partitions them itself, so a shard
  numbers its samples globally.
- ``//``, ``%`` and ``int(x)`` are Python's (``_int_op``); where they fail (a zero divisor;
  int(x) of NaN, an infinity or beyond int64, or beyond int32 without ``jax_enable_x64``) the
  result is 0 and the sample's float outputs are NaN, as for a table index out of range
  (``OpList.can_fail``); its integer and bool outputs are what the FFI path computes.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

__all__ = ["OpList", "UnsupportedOp", "evaluate", "op_list", "supported"]


class UnsupportedOp(NotImplementedError):
    """The kernel's IR holds an op (or slot kind) the XLA lowering does not implement."""


_UNARY: dict[str, Callable[[Any], Any]] = {
    "neg": lambda a: -a,
    "sqrt": jnp.sqrt,
    "exp": jnp.exp,
    "log": jnp.log,
    "sin": jnp.sin,
    "cos": jnp.cos,
    "tan": jnp.tan,
    "tanh": jnp.tanh,
    "abs": jnp.abs,
    "floor": jnp.floor,
    "sign": jnp.sign,
    "not": jnp.logical_not,
    # NumPy-named functions (cpp/ir/math_fns.hpp): XLA's own implementations, like sin and exp
    # above (within a few ulps of glibc's); the exact ones (ceil, rint, trunc, the predicates)
    # are the same bits
    "asin": jnp.arcsin,
    "acos": jnp.arccos,
    "atan": jnp.arctan,
    "sinh": jnp.sinh,
    "cosh": jnp.cosh,
    "asinh": jnp.arcsinh,
    "acosh": jnp.arccosh,
    "atanh": jnp.arctanh,
    "erf": lax.erf,
    "erfc": lax.erfc,
    "exp2": jnp.exp2,
    "expm1": jnp.expm1,
    "log1p": jnp.log1p,
    "log2": jnp.log2,
    "log10": jnp.log10,
    "cbrt": lax.cbrt,
    "ceil": jnp.ceil,
    "rint": jnp.rint,  # halves to even
    "trunc": jnp.trunc,
    "isnan": jnp.isnan,
    "isinf": jnp.isinf,
    "isfinite": jnp.isfinite,
}


def _remainder(a: Any, b: Any) -> Any:
    """np.remainder (the IR's, cpp/ir/math_fns.hpp): C's fmod plus the divisor where the signs
    differ, and a zero result with the divisor's sign, which jnp.remainder leaves with the
    dividend's."""
    r = lax.rem(a, b)
    plus = (r != 0) & ((r < 0) != (b < 0))
    return jnp.where(r != 0, jnp.where(plus, r + b, r), jnp.copysign(jnp.zeros_like(r), b))


def _fdim(a: Any, b: Any) -> Any:
    """C's fdim: a - b where a > b, 0 where a <= b, NaN where either is NaN (jnp has none)."""
    return jnp.where(a > b, a - b, jnp.where(jnp.isnan(a) | jnp.isnan(b), a + b, jnp.zeros_like(a)))


def _two_sum(x: Any, y: Any) -> tuple[Any, Any]:
    """s = x + y rounded and its error e = x + y - s, exactly (Knuth; additions only)."""
    s = x + y
    bb = s - x
    return s, (x - (s - bb)) + (y - bb)


def _split(x: Any, bits: Any, half: int, shift: int) -> tuple[Any, Any]:
    """x = hi + lo with hi rounded to the top (significand - shift) bits through its bit pattern
    and lo = x - hi, so the products of two such halves are exact (Veltkamp's split, without
    a multiplication that XLA could contract)."""
    ix = lax.bitcast_convert_type(x, bits)
    mask = ~((1 << shift) - 1)
    hi = lax.bitcast_convert_type((ix + half) & jnp.asarray(mask, bits), x.dtype)
    return hi, x - hi


def _fma(a: Any, b: Any, c: Any) -> Any:
    """C's fma, a * b + c rounded once. XLA has no fused multiply-add and its CPU code may or may
    not contract a * b + c, so the single rounding is computed (Boldo and Melquiond, "Emulation
    of FMA and correctly rounded sums: proved algorithms using rounding to odd", 2008): Dekker's
    exact product a * b = uh + ul (uh behind an optimization barrier, so no contraction can
    change it; every other product is exact), (th, tl) = c + uh exactly, v = tl + ul rounded to
    odd, result th + v. Exact while the partial products neither underflow nor overflow
    (|a * b| above about 2^-969 in float64, 2^-102 in float32, and |a|, |b| below 2^995 /
    2^115); beyond, a * b + c is within an ulp or two. Zeros, infinities and NaN take a * b + c,
    which is exact there."""
    a, b, c = jnp.broadcast_arrays(a, b, c)
    f64 = a.dtype == jnp.float64
    bits, shift = (jnp.int64, 27) if f64 else (jnp.int32, 12)
    half = 1 << (shift - 1)
    plain = a * b + c
    uh = lax.optimization_barrier(a * b)
    ah, al = _split(a, bits, half, shift)
    bh, bl = _split(b, bits, half, shift)
    ul = ((ah * bh - uh) + ah * bl + al * bh) + al * bl
    th, tl = _two_sum(c, uh)
    s, e = _two_sum(tl, ul)
    si = lax.bitcast_convert_type(s, bits)
    even = (si & 1) == 0
    toward = jnp.where((e > 0) == (s > 0), jnp.asarray(1, bits), jnp.asarray(-1, bits))
    v = lax.bitcast_convert_type(jnp.where((e != 0) & even & jnp.isfinite(s), si + toward, si), a.dtype)
    r = th + v
    simple = ~jnp.isfinite(uh) | ~jnp.isfinite(c) | (a == 0) | (b == 0) | ~jnp.isfinite(r)
    return jnp.where(simple, plain, r)

_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": jnp.power,
    "atan2": jnp.arctan2,
    "min": jnp.minimum,  # propagates NaN, min(-0, +0) = -0: as the IR's Min
    "max": jnp.maximum,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "and": jnp.logical_and,
    "or": jnp.logical_or,
    "hypot": jnp.hypot,
    "fmod": jnp.fmod,  # lax.rem: C's fmod
    "remainder": _remainder,
    "copysign": jnp.copysign,
    "fdim": _fdim,
    "random_gamma_grad": jax.lax.random_gamma_grad,  # RandGamma's derivative in a (derived kernels)
}

_TERNARY: dict[str, Callable[[Any, Any, Any], Any]] = {
    "fma": _fma,
}

# Evaluated in `_step` itself (they read slots, indices or the immediate).
_SPECIAL = frozenset({"const", "load_param", "load_plane", "load_state", "load_mask", "load_table", "select", "to_index", "powi",
                      "stop_grad", "custom_jvp", "rand_uniform", "rand_normal", "rand_uniform_at", "rand_normal_at", "to_float",
                      "rand_gamma", "rand_poisson", "rand_int", "rand_truncated_normal", "rand_normal_vec",
                      "floordiv", "mod", "to_int", "sample_index", "n_samples"})
# The int ops that fail at run time (a zero divisor; int(x) of NaN, an infinity or beyond int64).
_FAILING = frozenset({"floordiv", "mod", "to_int"})
# A loop region's values (ir.hpp's LoopBegin .. LoopResult), evaluated by `_loop`.
_LOOP = frozenset({"loop_begin", "loop_carry", "loop_index", "loop_next", "loop_end", "loop_result"})
# The most iterations a loop region may have on this path (its counter is an int32).
_MAX_LOOP = 2**31 - 1
_INT32 = (-(2**31), 2**31 - 1)

# The other jax.random distributions (ir.hpp's RandGamma .. RandNormalVec): operand 0 is the
# run-time part of the draw index (a const 0 outside loops), then the distribution's own.
_DISTS = frozenset({"rand_gamma", "rand_poisson", "rand_int", "rand_truncated_normal", "rand_normal_vec"})

_SLOT_KINDS = frozenset({"param", "plane", "mutable", "terminated", "table", "param_sum", "table_sum", "random"})


class OpList:
    """One kernel's IR as ``Kernel.op_list`` gives it, with the names resolved once."""

    def __init__(self, data: dict) -> None:
        self.name: str = data["name"]
        self.steps: int = int(data["steps"])
        self.slots: list[tuple[str, str, int, bool, int]] = [tuple(s) for s in data["slots"]]
        self.values: list[tuple] = [tuple(v) for v in data["values"]]
        self.stores: list[tuple[int, int, int, int, int]] = [tuple(s) for s in data["stores"]]
        self.terminate: int = int(data["terminate"])
        # hawk.min / hawk.max outputs: slot -> "min" / "max" (other sums add).
        self.combine: dict[int, str] = {int(k): str(v) for k, v in data.get("combine", {}).items()}
        # Each slot's value type ("F", "I" or "B"): that of its loads and stores (float where
        # none says otherwise: sums, tables).
        self.slot_type: list[str] = ["F"] * len(self.slots)
        for v in self.values:
            if v[0] in ("load_plane", "load_param", "load_state"):
                self.slot_type[v[3]] = v[1]
        for slot, _, value, _, _ in self.stores:
            if self.slots[slot][1] == "mutable":
                self.slot_type[slot] = self.values[value][1]
        self.unsupported: str = self._first_unsupported()
        # Each Mutable slot's stored values, component by component (the IR stores each once).
        self.mutable_stores: dict[int, tuple[int, ...]] = {}
        for s, (_, kind, width, *_rest) in enumerate(self.slots):
            if kind == "mutable":
                by_comp = {c: v for slot, c, v, _, _ in self.stores if slot == s}
                self.mutable_stores[s] = tuple(by_comp[c] for c in range(width))
        self.lane_sums: dict[int, tuple[int, ...]] = _lane_sums(self.values)
        # Each loop region's LoopBegin -> its LoopEnd.
        self.loop_end: dict[int, int] = {v[2][0]: i for i, v in enumerate(self.values) if v[0] == "loop_end"}

    def unsupported_for(self, dtype: Any) -> str:
        """What this path cannot lower in a call of ``dtype`` ("" when it can): ``unsupported``,
        and without ``jax_enable_x64`` (where the I values are int32) an integer plane or
        Param, whose integers compute in int64, or an integer constant beyond int32."""
        del dtype  # the same in float32 and float64 (the I values are integers in both)
        if self.unsupported:
            return self.unsupported
        if not jax.config.jax_enable_x64:
            for s, (name, kind, *_rest) in enumerate(self.slots):
                if self.slot_type[s] == "I":
                    return (f"the integer plane '{name}', whose integers compute in int64, which JAX holds only with "
                            "jax_enable_x64 (this path's integers are int32 without it)")
            for i, v in enumerate(self.values):
                if v[0] == "const" and v[1] == "I" and not _INT32[0] <= v[6] <= _INT32[1]:
                    return f"the integer constant {v[6]} (value %{i}) beyond int32 without jax_enable_x64"
        return ""

    def _first_unsupported(self) -> str:
        for name, kind, *_ in self.slots:
            if kind not in _SLOT_KINDS:
                return f"slot '{name}' of kind '{kind}'"
        for i, v in enumerate(self.values):
            op, typ = v[0], v[1]
            if op not in _UNARY and op not in _BINARY and op not in _TERNARY and op not in _SPECIAL and op not in _LOOP:
                return f"op '{op}' (value %{i})"
            if op == "loop_begin" and v[6] > _MAX_LOOP:
                return f"a loop of {v[6]} iterations (value %{i}), more than 2^31 - 1"
            if typ not in ("F", "B", "I"):
                return f"value type '{typ}' (value %{i}, op '{op}')"
        # A failing sample shows as NaN in its float outputs; with none, it would not show.
        outputs = [(name, self.slot_type[s]) for s, (name, kind, *_r) in enumerate(self.slots)
                   if kind in ("mutable", "param_sum", "table_sum")]
        if self.can_fail and outputs and all(t != "F" for _, t in outputs):
            return (f"no float output to show a failing sample as NaN (a Table read, a // or % by a divisor that may be 0, "
                    f"or int(x)), only the integer or bool output '{outputs[0][0]}'")
        return ""

    @property
    def has_mask(self) -> bool:
        return any(kind == "terminated" for _, kind, *_ in self.slots)

    @property
    def numbered(self) -> bool:
        """Whether the kernel reads hawk.math.sample_index() or n_samples(): the launch's global
        numbering (under sharding the FFI path runs such a call whole, docs/jax.md)."""
        return any(v[0] in ("sample_index", "n_samples") for v in self.values)

    @property
    def can_fail(self) -> bool:
        """Whether a sample's result may be an error (NaN on this path): a table read or sum
        out of range, a zero divisor, int(x) of a value that is no int64."""
        return self.reads_tables or any(self._fails(v) for v in self.values)

    def _fails(self, v: tuple) -> bool:
        if v[0] == "to_int":
            return True
        if v[0] in ("floordiv", "mod"):
            d = self.values[v[2][1]]
            return not (d[0] == "const" and d[6] != 0)
        return False

    @property
    def reads_tables(self) -> bool:
        return any(v[0] == "load_table" for v in self.values) or any(self.slots[s[0]][1] == "table_sum" for s in self.stores)


# The longest Add chain read as one sum over lanes.
_MAX_SUM_LANES = 64


def _lane_sums(values: Sequence[tuple]) -> dict[int, tuple[int, ...]]:
    """The float Add chains ``((l0 + l1) + l2) + ...`` of three or more terms that compute the
    same op in every term (a dot product, a norm, the adjoint's sum over a vector's
    components): value -> its terms in order. ``_step`` evaluates them as one sum over the terms'
    lanes (``_Lanes.sum``), a reduction XLA computes once, as it does jnp.sum's; written as adds
    of row slices, XLA's CPU fusions copy the chain into every fusion that reads it."""
    out: dict[int, tuple[int, ...]] = {}
    for i, v in enumerate(values):
        if v[0] != "add" or v[1] != "F":
            continue
        # The left spine: rights[d] is the right operand d adds down, lefts[d] the left one.
        rights: list[int] = []
        lefts: list[int] = []
        j = i
        while values[j][0] == "add" and values[j][1] == "F" and len(rights) < _MAX_SUM_LANES:
            rights.append(values[j][2][1])
            lefts.append(values[j][2][0])
            j = lefts[-1]
        # The longest sum from the top whose terms all compute the same op (a term may itself
        # be an add: x * dx + x * dx per component, then summed).
        for d in range(len(rights), 1, -1):
            terms = (lefts[d - 1], *reversed(rights[:d]))
            op = values[terms[0]][0]
            if (all(values[t][0] == op and values[t][1] == "F" for t in terms) and len(set(terms)) == len(terms)
                    and (op in _LANEWISE or op in ("load_plane", "load_state"))):
                out[i] = terms
                break
    return out


def op_list(core: Any) -> OpList:
    """The ``OpList`` of a ``raptor_core._core.Kernel`` (the IR after its passes)."""
    return OpList(core.op_list())


def supported(ops: OpList, dtype: Any = None) -> bool:
    """Whether ``evaluate`` implements every op and slot kind of ``ops`` (in a call of
    ``dtype``, when given)."""
    return not (ops.unsupported_for(dtype) if dtype is not None else ops.unsupported)


def _refuse(ops: OpList, dtype: Any) -> None:
    why = ops.unsupported_for(dtype)
    if why:
        raise UnsupportedOp(
            f"eagle.frameworks.jax: kernel '{ops.name}' has {why}, which the \"xla\" lowering does not implement yet; "
            "use lowering=\"ffi\" (or \"auto\", which picks it for this kernel), or add the op to eagle/frameworks/_jax_xla.py"
        )


def _int_type() -> Any:
    """The I values' dtype: int64, or int32 without jax_enable_x64 (JAX has no int64 then)."""
    return jnp.int64 if jax.config.jax_enable_x64 else jnp.int32


def _to_index(x: Any) -> Any:
    """A float table index as the IR's ToIndex makes it: rounded down; NaN, infinities and
    values beyond +-9e18 (beyond int32 in int32) become -1 (out of range)."""
    int_t = _int_type()
    f = jnp.floor(x)
    ok = (f >= -9.0e18) & (f <= 9.0e18) if int_t == jnp.int64 else (f >= -(2.0**31)) & (f < 2.0**31)
    return jnp.where(ok, f, -1.0).astype(int_t)


class _Run:
    """What every step of one call reads: the operands by slot, N, the dtype."""

    def __init__(self, ops: OpList, slot_of_operand: Sequence[int], operands: Sequence[Any], n: int, dtype: np.dtype) -> None:
        self.ops = ops
        self.cuts, self.last_use, self.top = _cuts(ops)  # (_materialize)
        self.n = n
        self.dtype = np.dtype(dtype)
        self.int_t = _int_type()
        self.arg: dict[int, Any] = dict(zip(slot_of_operand, operands))
        self.table_size: dict[int, int] = {}
        for s, a in self.arg.items():
            kind, width = ops.slots[s][1], ops.slots[s][2]
            if kind == "table" or (kind == "table_sum" and ops.slots[s][3]):  # also a scatter target's bound values
                self.table_size[s] = int(a.shape[0])
                if a.ndim > 2:  # a Table[Matrix[r, c]]: (M, r, c) -> (M, r * c)
                    self.arg[s] = a.reshape(a.shape[0], width)
            elif kind in ("plane", "mutable") and a.ndim > 2:  # a Matrix[r, c] plane: (r, c, N)
                self.arg[s] = a.reshape(width, a.shape[-1])

    def draws(self, slot: int, step: Any, draw: Any, normal: bool) -> Any:
        """Draw `draw` (an int, or per sample an array of integers, in a loop) of every sample in
        `step` from Random slot `slot`'s operand (the key's two words, then the global index of
        sample 0): jax.random's own numbers."""
        block = self.arg[slot]
        key = jax.random.wrap_key_data(block[:2], impl="threefry2x32")
        samples = block[2] + jnp.arange(self.n, dtype=jnp.uint32)  # as the C++ path: uint32(base + s)
        fold = jax.random.fold_in
        at = fold(key, jnp.asarray(step, jnp.uint32))
        js = jnp.broadcast_to(jnp.asarray(draw).astype(jnp.uint32), (self.n,))

        def one(i: Any, j: Any) -> Any:
            k = fold(fold(at, i), j)
            return jax.random.normal(k, (), self.dtype) if normal else jax.random.uniform(k, (), self.dtype)

        return jax.vmap(one)(samples, js)

    def dist(self, op: str, slot: int, step: Any, draw: Any, params: Sequence[Any], element: int) -> Any:
        """Draw `draw` of every sample in `step` of the jax.random distribution of IR op `op`
        (one of _DISTS) with per-sample `params`, on the same subkeys as `draws`; integer
        results come back as this path's I values."""
        block = self.arg[slot]
        key = jax.random.wrap_key_data(block[:2], impl="threefry2x32")
        samples = block[2] + jnp.arange(self.n, dtype=jnp.uint32)
        fold = jax.random.fold_in
        at = fold(key, jnp.asarray(step, jnp.uint32))
        js = jnp.broadcast_to(jnp.asarray(draw).astype(jnp.uint32), (self.n,))
        # float parameters in the dtype, randint's bounds as the integers they are
        ps = [jnp.broadcast_to(p if jnp.issubdtype(jnp.result_type(p), jnp.integer) else jnp.asarray(p, self.dtype), (self.n,))
              for p in params]
        dt = self.dtype
        int_t = self.int_t

        def one(i: Any, j: Any, *p: Any) -> Any:
            k = fold(fold(at, i), j)
            if op == "rand_gamma":
                return jax.random.gamma(k, p[0], (), dt)
            if op == "rand_poisson":
                return jax.random.poisson(k, p[0], ()).astype(int_t)
            if op == "rand_int":
                return jax.random.randint(k, (), p[0], p[1], jnp.int32).astype(int_t)
            if op == "rand_truncated_normal":
                return jax.random.truncated_normal(k, p[0], p[1], (), dt)
            return jax.random.normal(k, (element + 1,), dt)[element]  # rand_normal_vec

        return jax.vmap(one)(samples, js, *ps)

    def value_dtype(self, typ: str) -> Any:
        """The array dtype of an IR value of type ``typ`` ("F", "I" or "B") in this call."""
        return self.dtype if typ == "F" else self.int_t if typ == "I" else jnp.bool_

    def plane(self, slot: int, comp: int) -> Any:
        a = self.arg[slot]
        return a if a.ndim == 1 else a[comp]

    def table_column(self, slot: int, comp: int) -> Any:
        a = self.arg[slot]
        return a if a.ndim == 1 else a[:, comp]

    def entries(self, slot: int) -> int:
        name, kind, _, _, table_of = self.ops.slots[slot]
        return self.table_size[table_of if kind == "table_sum" else slot]


def _step(run: _Run, state: dict[int, Any], step: Any = 0, live: Any = None) -> tuple[list[Any], Any, "_Lanes"]:
    """Evaluates every value of step `step` (of the call) over all samples; returns them, the
    per-sample flag of a table read out of range under a holding predicate, and the lanes over
    them (for the stores). `live`: the samples still running (a loop runs for them only)."""
    vals: list[Any] = [None] * len(run.ops.values)
    lanes = _Lanes(run, state, vals)
    bad = _eval_range(run, state, step, vals, 0, len(vals), live, lanes)
    return vals, bad, lanes


# Above this many values in a step, the step's values are materialized every _REGION values
# (see _materialize); at or below it (every kernel "auto" lowers here) nothing changes.
_REGIONS_ABOVE = 4000
_REGION = 1000


def _cuts(ops: Any) -> tuple[frozenset, list[int], list[bool]]:
    """The value indices before which _materialize runs (none for a step of at most
    _REGIONS_ABOVE values), each value's last use and whether it is outside every loop region."""
    values = ops.values
    if len(values) <= _REGIONS_ABOVE:
        return frozenset(), [], []
    last = list(range(len(values)))
    for i, v in enumerate(values):
        for j in v[2]:
            last[j] = max(last[j], i)
    cuts, top, depth, since = set(), [], 0, 0
    for i, v in enumerate(values):
        if depth == 0 and since >= _REGION:
            cuts.add(i)
            since = 0
        depth += v[0] == "loop_begin"
        top.append(depth == 0 and v[0] != "loop_end")
        depth -= v[0] == "loop_end"
        since += 1
    return frozenset(cuts), last, top


def _materialize(run: _Run, vals: list[Any], i: int, lanes: "_Lanes") -> None:
    """Passes every per-sample value computed before value i and read after it through one
    optimization barrier, so XLA materializes them there: no fusion reaches across it. XLA:CPU
    fuses a producer into each of its consumers, duplicating it; over a step of thousands of
    values (a 4x4 eigh's tangent kernel: 10,116) the fused program grew 18-fold and compiling
    it needed more than 10 GB (tests/found_by_fuzzing/xla_big_tangent.py)."""
    live = [j for j in range(i) if run.top[j] and run.last_use[j] >= i and vals[j] is not None and jnp.ndim(vals[j]) >= 1]
    if live:
        out = lax.optimization_barrier(tuple(vals[j] for j in live))
        for j, x in zip(live, out):
            vals[j] = x
    lanes.after_barrier(i)


def _eval_range(run: _Run, state: dict[int, Any], step: Any, vals: list[Any], lo: int, hi: int, live: Any,
                lanes: "_Lanes | None", own: frozenset = frozenset()) -> Any:
    """Evaluates values [lo, hi) into `vals` (a loop region through `_loop`); returns the
    per-sample flag of a table read out of range. `own`: the values of the region [lo, hi)
    is the body of, which its loop sets (its carries and index) or reads itself (its nexts);
    `lanes` None inside loops (no lane sums there)."""
    dt = run.dtype
    values = run.ops.values
    bad = jnp.zeros((), bool)
    i = lo
    while i < hi:
        op, typ, args, slot, comp, imm, iimm, pred = values[i]
        if i in own:
            i += 1
            continue
        if op == "loop_begin":
            end = run.ops.loop_end[i]
            bad = bad | _loop(run, state, step, vals, i, end, live)
            i = end + 1
            continue
        if op == "loop_result":  # set by _loop
            i += 1
            continue
        if lanes is not None and i in run.cuts:
            _materialize(run, vals, i, lanes)
        terms = run.ops.lane_sums.get(i) if lanes is not None else None
        if terms is not None:
            x = lanes.sum(terms)
            if x is not None:
                vals[i] = x
                i += 1
                continue
        a = [vals[j] for j in args]
        if op == "const":
            x = jnp.asarray(imm != 0.0) if typ == "B" else jnp.asarray(iimm, run.int_t) if typ == "I" else jnp.asarray(imm, dt)
        elif op == "load_param":
            x = jnp.asarray(run.arg[slot]).astype(run.value_dtype(typ)).reshape(())
        elif op == "load_plane":
            x = run.plane(slot, comp).astype(run.value_dtype(typ))  # an int32 plane widened, as in C++
        elif op == "load_state":
            x = state[slot][comp]
        elif op == "load_mask":
            x = jnp.zeros((), bool)  # only live samples' results are kept
        elif op == "load_table":
            m = run.entries(slot)
            idx = a[0]
            out = (idx < 0) | (idx >= m)
            if pred != -1:
                out = out & vals[pred]
            bad = bad | out
            col = run.table_column(slot, comp)
            x = col[jnp.clip(idx, 0, max(m - 1, 0)).astype(jnp.int32)] if m > 0 else jnp.zeros(jnp.shape(idx), dt)
        elif op in ("rand_uniform", "rand_normal"):
            x = run.draws(slot, step + int(iimm), int(comp), op == "rand_normal")
        elif op in ("rand_uniform_at", "rand_normal_at"):  # the index: comp + a run-time integer
            x = run.draws(slot, step + int(iimm), a[0] + int(comp), op == "rand_normal_at")
        elif op in _DISTS:  # operand 0: the run-time part of the index
            x = run.dist(op, slot, step + int(iimm), a[0] + int(comp), a[1:], int(imm))
        elif op == "sample_index":  # the global index: XLA partitions the iota itself
            x = jnp.arange(run.n, dtype=run.int_t)
        elif op == "n_samples":
            x = jnp.asarray(run.n, run.int_t)
        elif op == "to_float":  # correctly rounded, as C++'s conversion
            x = jnp.asarray(a[0]).astype(dt)
        elif op in _FAILING:
            x, fail = _int_op(op, a, run.int_t)
            if pred != -1:
                fail = fail & vals[pred]
            bad = bad | fail
        else:
            x = _elementwise(op, iimm, a)
        vals[i] = x
        i += 1
    return bad


def _int_op(op: str, a: Sequence[Any], int_t: Any) -> tuple[Any, Any]:
    """Python's // and % (floored: the sign of the divisor) of integers, wrapping as C++ does
    (INT_MIN // -1 is INT_MIN), and int(x) (toward zero) of a float, as ``int_t`` values; with
    the samples where they fail (a zero divisor; int(x) of NaN, an infinity or beyond
    ``int_t``), whose result is 0 as on the FFI path."""
    if op == "to_int":
        x = a[0]
        t = jnp.trunc(x)
        if int_t == jnp.int64:
            fail = ~jnp.isfinite(x) | (jnp.abs(x) >= 9.223372036854775807e18)
        else:  # int32: beyond it the FFI path's int64 result is not representable here
            fail = ~jnp.isfinite(x) | (t < -(2.0**31)) | (t >= 2.0**31)
        return jnp.where(fail, jnp.zeros((), x.dtype), t).astype(int_t), fail
    x, y = jnp.broadcast_arrays(*(jnp.asarray(v).astype(int_t) for v in a))
    zero = y == 0
    safe = jnp.where(zero, jnp.ones((), int_t), y)
    # XLA's signed division truncates and gives INT_MIN / -1 = INT_MIN, remainder 0
    q, r = lax.div(x, safe), lax.rem(x, safe)
    low = (r != 0) & ((r < 0) != (safe < 0))  # truncated toward zero, not floored
    q = jnp.where(low, q - 1, q)
    r = jnp.where(low, r + safe, r)
    out = q if op == "floordiv" else r
    return jnp.where(zero, jnp.zeros((), int_t), out), zero


def _loop(run: _Run, state: dict[int, Any], step: Any, vals: list[Any], begin: int, end: int, live: Any) -> Any:
    """The loop region [begin, end] as a lax.while_loop over every sample's carried values: it
    runs while a running sample has not left and iterations are left; a sample that left (or
    never ran: `live`) keeps its values, as the C++ loop leaves per sample. Sets the region's
    LoopResult values in `vals`; returns the table-error flag of its reads."""
    values = run.ops.values
    n, dt = run.n, run.dtype
    carries = [i for i in range(begin + 1, end) if values[i][0] == "loop_carry" and values[i][2][1] == begin]
    index = next((i for i in range(begin + 1, end) if values[i][0] == "loop_index" and values[i][2][0] == begin), -1)
    nexts = {values[i][2][0]: values[i][2][1] for i in range(begin + 1, end)
             if values[i][0] == "loop_next" and values[values[i][2][0]][2][1] == begin}
    own = frozenset(carries) | frozenset(i for i in range(begin + 1, end) if values[i][0] == "loop_next"
                                          and values[values[i][2][0]][2][1] == begin) | ({index} if index >= 0 else frozenset())
    exit_id = values[end][2][1]
    iterations = int(values[begin][6])

    def plane(x: Any, typ: str) -> Any:
        return jnp.broadcast_to(jnp.asarray(x).astype(run.value_dtype(typ)), (n,))

    types = [values[c][1] for c in carries]
    init = tuple(plane(vals[values[c][2][0]], t) for c, t in zip(carries, types))
    running = jnp.ones((n,), bool) if live is None else jnp.broadcast_to(live, (n,))

    def body(c: tuple) -> tuple:
        it, active, bad, cs = c
        local = list(vals)
        for cid, x in zip(carries, cs):
            local[cid] = x
        if index >= 0:
            local[index] = it.astype(run.int_t)
        bad_now = _eval_range(run, state, step, local, begin + 1, end, active, None, own)
        new = tuple(jnp.where(active, plane(local[nexts[cid]], t), x) if cid in nexts else x
                    for cid, t, x in zip(carries, types, cs))
        leave = plane(local[exit_id], "B")
        return it + 1, active & ~leave, bad | (bad_now & active), new

    def cond(c: tuple) -> Any:
        return (c[0] < iterations) & jnp.any(c[1])

    _, _, bad, out = lax.while_loop(cond, body, (jnp.int32(0), running, jnp.zeros((n,), bool), init))
    finals = dict(zip(carries, out))
    for i in range(end + 1, len(values)):
        v = values[i]
        if v[0] == "loop_result" and v[2][1] == end:
            vals[i] = finals[v[2][0]]
    return bad


# The ops that compute a value from their operands alone (no slot, no step): `_elementwise`
# evaluates them, on one component's (N,) arrays in `_step` or on (k, N) lanes in `_Lanes`.
_LANEWISE = frozenset(_UNARY) | frozenset(_BINARY) | frozenset(_TERNARY) | {"select", "to_index", "powi", "stop_grad", "custom_jvp"}


def _elementwise(op: str, iimm: int, a: Sequence[Any]) -> Any:
    """Op `op` (one of _LANEWISE) of operands `a`, elementwise with broadcasting."""
    if op == "select":
        return jnp.where(a[0], a[1], a[2])
    if op == "to_index":
        return _to_index(a[0])
    if op == "powi":
        return lax.integer_pow(a[0], int(iimm))
    if op in ("stop_grad", "custom_jvp"):
        return a[0]
    if op in _UNARY:
        return _UNARY[op](a[0])
    if op in _TERNARY:
        return _TERNARY[op](a[0], a[1], a[2])
    return _BINARY[op](a[0], a[1])


_MAX_LANE_DEPTH = 400  # beyond this, lanes are stacked from their scalar values (no deep recursion)


class _Lanes:
    """The values of several components at once, as one (k, N) array (a size-1 axis where a
    lane's value is the same for all lanes or all samples): the IR holds a Vector[k] plane's
    components as k scalar values, and evaluating them as k (N,) arrays that are stacked at
    the end makes XLA's CPU fusions concatenate row by row, twice as slow as one op over the
    (k, N) plane (measured: a 360-step scan of the drag step at N = 256). So the stores of a
    Mutable plane are evaluated lane-wise, SLP-style: lanes with the same op are one array op
    over the lanes of their operands; a plane's components 0..k-1 are the plane itself; lanes
    that differ fall back to stacking their scalar values (``vals``: every value as one array
    over the samples, which XLA drops where unused)."""

    def __init__(self, run: _Run, state: dict[int, Any], vals: list[Any]) -> None:
        self.run = run
        self.state = state
        self.vals = vals
        self.memo: dict[tuple[int, ...], Any] = {}
        self.stacked = 0  # how many lane sets fell back to stacking scalar values
        self.impure: set[tuple[int, ...]] = set()  # memoized lane sets with a stacking in their making
        self.barrier = 0  # the values before this one are materialized (_materialize): lanes stack them

    def after_barrier(self, i: int) -> None:
        """The values before value i were materialized: lanes made of them are their values."""
        self.barrier = i
        self.memo.clear()
        self.impure.clear()

    def sum(self, ids: Sequence[int]) -> Any:
        """vals[ids[0]] + vals[ids[1]] + ... (in that order) as one reduction over their lanes,
        or None when the lanes are not one array op (they would be stacked: the adds are
        cheaper)."""
        before = self.stacked
        x = self.of(ids)
        if self.stacked != before or jnp.ndim(x) != 2:
            return None
        total = jnp.sum(x, axis=0)
        return total.reshape(()) if total.shape == (1,) else total

    def of(self, ids: Sequence[int], depth: int = 0) -> Any:
        """The lanes ``ids`` as an array that broadcasts to (k, N): (k, N), (k, 1), (N,) or ().
        ``stacked`` counts a stacking wherever one is in the array's making, a memoized one's
        too (``sum`` relies on it)."""
        ids = tuple(ids)
        hit = self.memo.get(ids)
        if hit is None:
            before = self.stacked
            hit = self.memo[ids] = self._make(ids, depth)
            if self.stacked != before:
                self.impure.add(ids)
        elif ids in self.impure:
            self.stacked += 1
        return hit

    def _stacked(self, ids: tuple[int, ...]) -> Any:
        self.stacked += 1
        xs = [self.vals[i] for i in ids]
        if all(jnp.ndim(x) == 0 for x in xs):
            return jnp.stack(xs)[:, None]
        return jnp.stack([jnp.broadcast_to(x, (self.run.n,)) for x in xs])

    def _make(self, ids: tuple[int, ...], depth: int) -> Any:
        values = self.run.ops.values
        if len(set(ids)) == 1:
            # One value for every lane: as it is, () or (N,), which broadcasts against the
            # (k, N) lanes (no reshape: XLA then merges it with the same value elsewhere).
            return self.vals[ids[0]]
        first = values[ids[0]]
        op, typ, _, slot, _, _, iimm, _ = first
        same = all(values[i][0] == op and values[i][1] == typ for i in ids)
        if not same or depth > _MAX_LANE_DEPTH or min(ids) < self.barrier:
            return self._stacked(ids)
        if op in ("load_plane", "load_state") and all(values[i][3] == slot for i in ids):
            a = self.state[slot] if op == "load_state" else self.run.arg[slot]
            if a.ndim == 1:
                return self._stacked(ids)
            comps = [values[i][4] for i in ids]
            c0 = comps[0]
            vt = self.run.value_dtype(typ)  # an int32 plane widened, as its scalar loads are
            if comps == list(range(c0, c0 + len(comps))):
                return a[c0 : c0 + len(comps)].astype(vt)
            return a[np.asarray(comps)].astype(vt)
        # Constants, parameters, table reads and draws differ per lane: stacked.
        if op not in _LANEWISE or (op == "powi" and any(values[i][6] != iimm for i in ids)):
            return self._stacked(ids)
        args = [self.of(tuple(values[i][2][j] for i in ids), depth + 1) for j in range(len(first[2]))]
        return _elementwise(op, iimm, args)


def evaluate(ops: OpList, slot_of_operand: Sequence[int], operands: Sequence[Any], n: int, result_slots: Sequence[int],
             result_shapes: Sequence[tuple], dtype: Any, result_dtypes: Sequence[Any] | None = None) -> list[Any]:
    """The kernel's results (in ``result_slots`` order, of ``result_shapes`` and
    ``result_dtypes``: the call's float dtype where not given) for ``operands`` (of
    ``slot_of_operand``, the bridge's layout: planes (width, N) or (N,), Params (), tables
    (M, width) or (M,), the mask (N,) bool) on ``n`` samples, as jax.numpy operations."""
    _refuse(ops, dtype)
    dt = np.dtype(dtype)
    run = _Run(ops, slot_of_operand, operands, n, dt)
    if ops.numbered and n > np.iinfo(run.int_t).max:
        raise UnsupportedOp(f"kernel '{ops.name}': hawk.math.sample_index() / n_samples() of {n} samples, beyond "
                            "this lowering's int32 integers without jax_enable_x64; use lowering='ffi'")

    # state: each Mutable slot, (width, N); sums: each sum slot, (entries, width) or (width,)
    state: dict[int, Any] = {}
    sums: dict[int, Any] = {}
    for s, (name, kind, width, inout, table_of) in enumerate(ops.slots):
        if kind == "mutable":  # in the slot's value type (an int32 plane widened, as in C++)
            vt = run.value_dtype(ops.slot_type[s])
            state[s] = jnp.asarray(run.arg[s]).astype(vt).reshape(width, n) if inout else jnp.zeros((width, n), vt)
        elif kind == "param_sum" and s in ops.combine:  # hawk.min / hawk.max: +inf / -inf
            sums[s] = jnp.full((width,), np.inf if ops.combine[s] == "min" else -np.inf, dt)
        elif kind == "param_sum":
            sums[s] = jnp.zeros((width,), dt)
        elif kind == "table_sum" and inout:  # a scatter target: its bound values, added to
            sums[s] = jnp.asarray(run.arg[s], dt).reshape(run.entries(s), width)
        elif kind == "table_sum":
            sums[s] = jnp.zeros((run.entries(s), width), dt)
    mask_slot = next((s for s, sl in enumerate(ops.slots) if sl[1] == "terminated"), -1)
    # finished: set on entry, or by a step's `terminate` value (a finished sample runs no more
    # steps). Carried as is, not as its negation: the mask result is then `mask_in | t` for a
    # one-step kernel, as a user writes it, and a kept value is select(finished, old, new).
    finished = jnp.asarray(run.arg[mask_slot], bool) if mask_slot >= 0 else jnp.zeros((n,), bool)
    bad = jnp.zeros((n,), bool)

    def one_step(carry: tuple, step: Any = 0) -> tuple:
        state, sums, finished, bad = carry
        live = ~finished
        vals, step_bad, lanes = _step(run, state, step, live)
        bad = bad | (step_bad & live)
        nxt = dict(state)
        sums = dict(sums)
        for slot, ids in ops.mutable_stores.items():
            x = jnp.broadcast_to(lanes.of(ids), (len(ids), n)).astype(state[slot].dtype)
            nxt[slot] = jnp.where(finished[None, :], state[slot], x) if ops.has_mask else x
        for slot, comp, value, index, pred in ops.stores:
            kind = ops.slots[slot][1]
            x = vals[value]
            if kind == "mutable":
                continue
            on = live if pred == -1 else live & vals[pred]
            if kind == "param_sum" and slot in ops.combine:
                # hawk.min / hawk.max: jnp.min(x, where=on, initial=+inf), folded into the
                # slot's value.
                least = ops.combine[slot] == "min"
                reduce, fold = (jnp.min, jnp.minimum) if least else (jnp.max, jnp.maximum)
                xs = jnp.broadcast_to(jnp.asarray(x, dt), (n,))
                ons = jnp.broadcast_to(on, (n,))
                r = reduce(xs, where=ons, initial=np.inf if least else -np.inf)
                # NaN wins through a flag of its own: XLA's CPU all-reduce min / max, which a
                # sharded call's reduction becomes, drops NaN.
                r = jnp.where(jnp.any(ons & jnp.isnan(xs)), jnp.asarray(np.nan, dt), r)
                sums[slot] = sums[slot].at[comp].set(fold(sums[slot][comp], r))
                continue
            contrib = jnp.where(on, x, jnp.zeros((), dt))
            contrib = jnp.broadcast_to(contrib, (n,))
            if kind == "param_sum":
                sums[slot] = sums[slot].at[comp].add(jnp.sum(contrib))
            else:  # table_sum: scatter-add into entry idx
                m = run.entries(slot)
                idx = jnp.broadcast_to(vals[index], (n,))
                out = on & ((idx < 0) | (idx >= m))
                bad = bad | out
                keep = jnp.where(out, jnp.zeros((), dt), contrib)
                sums[slot] = sums[slot].at[jnp.clip(idx, 0, max(m - 1, 0)).astype(jnp.int32), comp].add(keep)
        if ops.terminate >= 0:
            finished = finished | vals[ops.terminate]
        return nxt, sums, finished, bad

    carry = (state, sums, finished, bad)
    if ops.steps == 1:
        carry = one_step(carry)
    elif ops.terminate >= 0:
        # Stop as soon as every sample has finished: finished samples do not change.
        def cond(c: tuple) -> Any:
            return (c[0] < ops.steps) & ~jnp.all(c[1][2])

        def body(c: tuple) -> tuple:
            return c[0] + 1, one_step(c[1], c[0])

        carry = lax.while_loop(cond, body, (jnp.int32(0), carry))[1]
    else:
        carry = lax.fori_loop(0, ops.steps, lambda i, c: one_step(c, i), carry)
    state, sums, finished, bad = carry

    checked = ops.can_fail  # table reads and sums out of range, failing int ops
    any_bad = jnp.any(bad)
    nan = jnp.asarray(np.nan, dt)
    results = []
    dtypes = result_dtypes if result_dtypes is not None else [dt] * len(result_slots)
    for s, shape, out_t in zip(result_slots, result_shapes, dtypes):
        name, kind, width, inout, table_of = ops.slots[s]
        if kind == "mutable" and ops.slot_type[s] != "F":
            # an int32 plane keeps the low 32 bits of the int64 (NumPy's astype); an error
            # makes the sample's float outputs NaN, its integers and bools stay as computed
            r = state[s].astype(out_t)
        elif kind == "mutable":
            r = jnp.where(bad[None, :], nan, state[s]) if checked else state[s]  # (width, N)
        elif kind in ("param_sum", "table_sum"):
            r = jnp.where(any_bad, nan, sums[s]) if checked else sums[s]
        elif kind == "terminated":
            r = finished  # the mask on entry, and the samples that finished in this call
        else:
            raise UnsupportedOp(f"eagle.frameworks.jax: kernel '{ops.name}': result slot '{name}' of kind '{kind}'")
        results.append(jnp.reshape(r, shape))
    return results
