"""Random well-typed hawk kernels, and the differential checks run on them (issue 10 item 5).

Not a test module: tests/test_differential.py (a bounded, seeded run) and
scripts/fuzz_kernels.py (the long run) use it. Start at ``generate(seed)``, which writes one
kernel's source text (a small module: imports, ``@hawk.func`` helpers, the kernel), then at
``check_batch``, which compiles a batch of kernels with their tangents and adjoints in one
``eagle.plan.auto`` call and runs every check:

1. compiled C++ against the reference interpreter (``Kernel.interpret``, cpp/ir/interp.hpp),
   both dtypes, for the kernel, its tangent and its adjoint. Planes, the mask and table
   errors must agree **bitwise**: float64 against the interpreter, float32 against the
   interpreter's float32 mode (every value rounded to float, each operator in float
   arithmetic, the C library's float functions as the build calls them). Exact chains
   (+ - * / sqrt, comparisons, min/max, abs, floor, select, integer powers, and the exact
   NumPy-named functions: ceil, rint, trunc, fmod, remainder, copysign, fdim, fma) are compared
   bit for bit; where a library function without a correct-rounding guarantee (exp, log, sin,
   cos, tan, tanh, pow, atan2, and asin .. cbrt, hypot) feeds an output, that output may differ by as much as it moves
   when every such result is moved by 2 ulp (interpreter runs with perturb_ulps = +-2): GCC
   folds a call whose argument it proves constant correctly rounded (MPFR), 1 ulp from glibc
   (seed 1025). Where those runs flip a branch, mask or table error, no bound. Sums over samples
   (ParamSum, TableSum of adjoints) too: the interpreter adds them in a launch's order
   (ir/combine.hpp: the launch's chunks, 16 lanes), in double, and the compiled total, rounded
   to the output's dtype, must equal its total rounded so. Integer outputs are compared too, exactly (an
   integer error, a zero divisor or int() of NaN, like a table error: both sides report it,
   by kind). Kernels drawing random numbers are bound with a key (``make_values``) and the
   interpreter runs with the key the build's launch 0 draws with (``launch_key``, jax's
   ``fold_in(key, 0)``): the draws agree bitwise too.
2. the tangent kernel (float64) against central differences of the interpreted kernel, per
   output element, with steps h and h/3.7 (and 100 h, whose error from a quantized f, computed
   with cancellation, is 100 times smaller): a mismatch needs the tangent to be off all while
   the two differences agree with each other and the value is the mean of its neighbours at
   both steps; otherwise a kink or a jump (a comparison, floor, a table index, a termination
   flipping within h, or at the point itself) lies inside the interval, and the element is
   skipped (counted). Kernels holding ``stop_gradient`` (a quarter of them) skip this
   check: the differences see through it, the tangent does not (counted in fd_stop_gradient).
3. ``<adjoint(ct), t> == <ct, tangent(t)>`` (float64, compiled) to 1e-10 relative to the sum
   of the terms' magnitudes; where rounding inside the kernels is larger than that (terms
   that cancel), to 10 times the rounding estimated by running each direction and each
   cotangent alone (``check_adjoint``).
4. "xla" (when in ``checks``): the kernel through the JAX bridge's "xla" lowering against the
   interpreter with ``zero_finished``, float64, within how far the outputs move when library
   results are moved by XLA_ULPS (``check_xla``); the key given as it is, launch 0's. Integer
   and bool outputs are compared as the interpreter holds them (doubles); what the lowering
   refuses by name (a kernel that can fail with no float output to show it) is counted in
   xla_unsupported.
5. "loop" (when in ``checks``, compiled only): a kernel with a Terminated mask stepped by
   ``eagle.until_done`` (fused passes of lanes refilled as samples finish, where the kernel
   draws nothing and sums over no samples) and by the device loop's plan on the CPU
   (``eagle.loop.device_emulation``), each against its plain loop of ``bound.launch()``
   calls, bit for bit in both dtypes, over the budgets of LOOP_PIECES; and by
   ``eagle.simulate`` (recorded and not) from every sample live (``check_loop``); the tangent
   kernel likewise.
6. "reverse" (when in ``checks``, compiled only): ``eagle.diff.reverse`` of a recorded
   ``eagle.simulate`` run of a kernel with a mask against its tangent kernel stepped in a
   plain loop, by the identity ``<reverse(ct), t> == <ct, tangent(t)>`` (``check_reverse``).

Derivatives (checks 2 and 3) are taken with respect to the float inputs only
(``float_inputs``: not integer planes, integer Params or in-out integer Mutables, nor the
Random key) and of the float outputs (``outputs_of``): integer values have none. Random
draws are constants for AD: the differences, the tangent and the adjoint all draw the same
numbers with the same key, so every check applies to them as to any kernel.

What the generator writes, besides the float scalars, vectors, tables, helpers, ``if``,
``for``, steps and masks of its first version (the ``FEATURES``, each drawn from a random
stream of its own, ``r2``, and only when asked for, so that ``generate(seed, features=())``
writes exactly the kernels of the generator before all of them and ``features=("exits",
"stop_gradient")`` those before the last three):

- "exits": loops with data-dependent ``break`` / ``continue``;
- "stop_gradient": ``hm.stop_gradient`` in a quarter of the kernels;
- "int" (a third of the kernels): ``Scalar[hawk.int32]`` / ``Scalar[hawk.int64]`` planes, a
  ``Vector[k, hawk.int32]``, a ``Param[hawk.int32]``, pure and in-out integer Mutables, int
  locals (also accumulated in unrolled loops); ``+ - * ** // %`` (divisors that are literals,
  ``abs(j) + 1``, or guarded ``i // j if j != 0 else ...``; rarely unguarded, by a divisor that
  is not a compile-time constant: a launch error both sides must report), unary ``-``,
  ``abs``, ``min``, ``max``, conditionals, comparisons (with ints and floats), ``int(cond)``, ``int(x)`` of floats kept finite and in range
  (``int(clamp(x, -40.0, 40.0))``, ``int(x if abs(x) < 1e6 else 0.0)``), ``float(i)``, ints
  meeting floats, ``i / j``, table reads at int indices (``t.at(i % M)``, guarded, rarely
  unguarded). Every int expression keeps a bound (IBOUND = 2**40; inputs within INT_RANGE),
  so the interpreter's doubles hold every int exactly;
- "matrix" (a quarter of the kernels): ``Matrix[r, c]`` planes (r, c in 2, 3), local
  matrices (also assigned by component and row), pure and in-out ``Mutable[Matrix[r, c]]``
  outputs, a ``Table[Matrix[n, n]]``; ``mat`` (of vec rows or tuples), ``identity``,
  ``outer``, ``transpose``, ``@`` (matrix-matrix, matrix-vector, vector-matrix), ``+ - * /``
  and unary functions per component, ``where`` and conditionals, ``m[i, j]``, ``m[i]``,
  negative indices, ``trace``, ``det``, and ``inverse`` / ``det`` of well-conditioned
  matrices only (the identity plus a perturbation of norm < 1, the identity plus 0.1 T^T T,
  or a rotation); unit quaternions (``Vector[4]``, an input normalized, locals, an output)
  through ``quat_mul``, ``quat_conj``, ``quat_rotate``, ``quat_to_matrix``,
  ``quat_from_axis_angle`` (of an axis that is never 0);
- "random" (three in ten kernels): an ``rng: Random`` parameter, ``rng.uniform()`` and
  ``rng.normal()`` (and the other distributions: exponential, lognormal, gamma, poisson,
  randint, bernoulli, truncated_normal) used reparameterized (``mu + sigma * rng.normal()``, ``lo + (hi - lo) *
  rng.uniform()``), in both branches of a conditional or ``where``, in unrolled loops, in
  ``if`` branches and steps; only in statements of their own and as a term of y0, never in
  an expression the generator may repeat;
- "long_loops" (a fifth of the kernels, drawn from a stream of its own, ``r3``, so the other
  kernels are byte for byte those of the generator before it): one or two top-level
  ``for liN in range(K)`` with 4096 < K <= 9000, kept as loop regions (docs/language.md "Long
  loops"), each leaving at an iteration m <= 20 (``if liN >= m: break`` first: the adjoint
  recomputes iterations from checkpoints, about 2 n sqrt(n) body evaluations for n taken),
  then bounded float updates of carried locals, data-dependent ``break`` / ``continue``, a
  temporary of the iteration, a nested loop (unrolled, or long and leaving early), ``if``
  statements, an int counter ("int"), draws ("random"), table reads. An
  adjoint with respect to a Table read inside one is refused: ``adjoint_of`` takes it with
  respect to the other inputs (counted in adjoint_tables_refused; the tangent still takes
  every input).

- "numpy" (three in ten kernels, drawn from a stream of its own, ``r4``, so the other kernels
  are byte for byte those of the generator before it): hawk.math's NumPy-named functions
  (``asin`` .. ``fma``, ``clip``, ``isnan`` / ``isinf`` / ``isfinite`` in ``where`` and
  conditionals, ``hm.inf``), each argument kept inside its domain with a margin (``acosh(x *
  x + 1.5)``, ``log1p(x * x)``, ``atanh(tanh(x) * 0.9)``) and bounded where XLA's own
  implementation loses accuracy with the argument (``exp2(tanh(x) * 3.0)``, ``sinh(tanh(x) *
  2.0)``); the C library's ones count as library functions for the LIBM_ULPS / XLA_ULPS
  bounds (the interpreter perturbs them, cpp/ir/math_fns.hpp's ``Libm`` kind).
- "numbered" (half the kernels, from a stream of its own, ``r7``; it shows in those with
  ints): ``hm.sample_index()`` and ``hm.n_samples()`` among the int leaves.
- "sums" (three in ten kernels of one step, from a stream of its own, ``r6``): one or two
  ``totj: Mutable[Param]`` outputs, ``totj = hawk.sum(expr)``, ``hawk.sum(expr, where=c)``,
  (a quarter, in kernels without a Terminated mask) ``hawk.mean(expr)``, or (an eighth)
  ``hawk.min`` / ``hawk.max(expr[, where=c])``, or (a sixteenth, without a mask)
  ``hawk.mean(expr, where=c)``, which runs as stages (its count first); the same r6 draws as
  before means and min / max were added, so a kernel not drawn "sums" is unchanged, and one
  drawn no min / max or mean with where= is the kernel before them. The derivative checks take the winner Params of min / max
  (``winners``).
  Two in five of those without a mask then cross a stage boundary (drawn from ``r9``, only
  there, so every other kernel is unchanged): ``y0 = y0 + 0.5 * tanh(totj)`` or
  ``y0 = y0 - hawk.mean(expr)``; ``check_batch`` checks such a kernel's stages (each an
  ordinary kernel: compiled against the interpreter, its tangent and adjoint, the xla lowering).
- "scatter" (three in ten kernels of one step, from a stream of its own, ``r8``): a
  ``sct: Mutable[Table[Scalar]]`` (or ``Table[Vector[k]]``) scatter target and one or two
  ``hawk.scatter(sct)[i] += v`` (``_Gen.scatter_adds``), some under an ``if``; the harness
  binds its values like a table's and compares it as a sum (its tangent starts at zero, its
  cotangent is the adjoint's Table).

- "linalg" (a fifth of the kernels, drawn from a stream of its own, ``r5``, likewise): the
  per-sample linear algebra of hawk.math (``solve``, ``inv``, ``lu``/``lu_solve``,
  ``cholesky``/``cho_solve``, ``lstsq``, ``eigh``, ``eye``, ``diag``, ``diagonal``, ``tril``,
  ``triu``, and ``info`` as a float) on 2x2 to 4x4 well-conditioned or SPD matrices, reading
  only values continuous in the inputs (``_Gen.linalg_scal``).

``features_of(seed)`` says which of the per-kernel features a seed's kernel was drawn to have.

A failure is a ``Mismatch`` holding the seed, the check, what differed and the kernel source.
"""

from __future__ import annotations

import linecache
import random
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

MATH_NAMES = (
    "atan2, clamp, cos, cross, dot, exp, floor, log, maximum, minimum, norm, normalize, sign, "
    "sin, sqrt, tan, tanh, vec, where"
)

HEADER = f"""import math
import hawk
import hawk.math as hm
from hawk import Mutable, Param, Scalar, Table, Terminated, Vector
from hawk.math import ({MATH_NAMES})
"""

# The imports of the newer features, after HEADER in the kernels that use them (only there: the
# other kernels' text stays that of the generator before them).
FEATURE_HEADER = """from hawk import Matrix, Random
from hawk.math import (det, identity, inverse, mat, outer, quat_conj, quat_from_axis_angle, quat_mul, quat_rotate,
                       quat_to_matrix, trace, transpose)
"""

CONSTS = ("0.5", "1.25", "-2.0", "3", "0.75", "-0.5", "2", "1e-3", "(2 ** 3 // 3)", "(-7 % 3)", "float(5 // 2)", "1.5e1")


# ---------------------------------------------------------------- the generator

# Integer inputs' ranges (make_values draws them) and the bound every generated int expression
# keeps (_Gen.iexpr): the interpreter's binding holds ints as doubles, exact within 2**53.
INT_RANGE = {"int32": 50, "int64": 3000, "param": 20}
IBOUND = 2**40
# A bound on hawk.math.sample_index() and n_samples() in the fuzzer's launches (a few
# thousand samples at most).
NUMBERED_BOUND = 10**5


def _new_scope() -> dict[str, list]:
    """The scope entries of the newer features: ints (name, bound, may be constant), matrices (name, rows,
    columns), the local matrices a statement may assign components of, unit quaternions."""
    return {"int": [], "mat": [], "ownmat": [], "quat": []}



@dataclass
class GenKernel:
    """One generated kernel: its module source, and what its inputs look like."""

    seed: int
    name: str
    source: str
    table_size: int
    n: int
    kernel: Any = None  # the hawk.Kernel once built

    def build(self) -> Any:
        """Executes the source (registered in linecache, where hawk reads it) and returns the
        hawk.Kernel; a KernelError propagates."""
        filename = f"<hawk-fuzz-{self.seed}>"
        linecache.cache[filename] = (len(self.source), None, self.source.splitlines(True), filename)
        try:
            ns: dict[str, Any] = {"__name__": f"hawk_fuzz_{self.seed}"}
            exec(compile(self.source, filename, "exec"), ns)  # noqa: S102 - our own generated text
            self.kernel = ns[self.name]
        finally:
            linecache.cache.pop(filename, None)
        return self.kernel

    def report(self) -> str:
        return f"# seed {self.seed} (tests/kernelgen.py generate({self.seed}))\n{self.source}"


class _Gen:
    """Writes one kernel. Every expression is text in parentheses; scopes hold the names
    that may be read (scalars, vectors by width, bools)."""

    def __init__(self, seed: int, features: tuple[str, ...] = ()) -> None:
        self.r = random.Random(seed)
        # which newer constructs to write where is drawn from a stream of its own, so that
        # features=() gives exactly the kernels of the generator before them (the seeds in
        # tests/test_differential.py's _FOUND were found then)
        self.r2 = random.Random(seed * 7919 + 17)
        self.features = features
        # stop_gradient in a quarter of the kernels only: their tangents are not compared with
        # differences (which see through it), see _check_one
        self.sg = "stop_gradient" in features and self.r2.random() < 0.25
        # the newer planes and values, each in a share of the kernels (drawn from r2, in this
        # order, only for the features asked for: features without them draw as before)
        self.ints = "int" in features and self.r2.random() < 0.35  # int planes, locals, outputs
        self.mats = "matrix" in features and self.r2.random() < 0.25  # Matrix planes, quaternions
        self.rand = "random" in features and self.r2.random() < 0.3  # rng: Random draws
        self.mn = self.r2.choice([2, 2, 3]) if self.mats else 0  # the size of square matrices
        # long loops (docs/language.md "Long loops") are drawn from a third stream, r3, so that
        # a kernel not drawn to have one is, byte for byte, the kernel of the generator before
        # them (and features without "long_loops" draw nothing from it)
        self.r3 = random.Random(seed * 104729 + 31)
        self.longl = "long_loops" in features and self.r3.random() < 0.2
        # hawk.math's NumPy-named functions from a fourth stream, r4, likewise: a kernel not
        # drawn to have them is the kernel of the generator before them
        self.r4 = random.Random(seed * 130363 + 47)
        self.npf = "numpy" in features and self.r4.random() < 0.3
        # per-sample linear algebra (solve, inv, lu, cholesky, lstsq, eigh, ...) from a fifth
        # stream, r5, likewise
        self.r5 = random.Random(seed * 155921 + 53)
        self.la = "linalg" in features and self.r5.random() < 0.2
        # hawk.math.sample_index() / n_samples() among the int leaves of the kernels with ints,
        # from a sixth stream, r7, likewise (reduce's own, numbered apart from linalg's r5)
        self.r7 = random.Random(seed * 15485863 + 53)
        self.numbered = "numbered" in features and self.r7.random() < 0.5
        # hawk.sum into a Mutable[Param] output (kernels of one step), from a seventh stream, r6
        self.r6 = random.Random(seed * 32452843 + 59)
        self.sums = "sums" in features and self.r6.random() < 0.3
        # hawk.scatter(sct)[i] += v into a Mutable[Table] (kernels of one step), from an eighth
        # stream, r8: kernels not drawn to have it are the generator's before, byte for byte
        self.r8 = random.Random(seed * 49979687 + 61)
        self.scatter = "scatter" in features and self.r8.random() < 0.3
        # a stage boundary (docs/language.md "Stage boundaries"): in a kernel with sums and no
        # mask, a later read of a sum or a hawk.mean inside an expression, from a ninth stream,
        # r9, drawn only there: every other kernel is the generator's before, byte for byte
        self.r9 = random.Random(seed * 67867967 + 71)
        self.mtable: tuple[str, int] | None = None  # a Table[Matrix[mn, mn]]
        self.drew = False  # a draw was written
        self.in_mat = False  # writing a matrix or quaternion expression: none nested in its scalars
        self.seed = seed
        self.m = self.r.choice([1, 3, 5])
        self.k = self.r.choice([2, 3])  # the width of vector values
        self.counter = 0
        self.helpers: list[tuple[str, int, bool]] = []  # (name, arity, returns a pair)
        self.vhelper: str | None = None  # a helper for scalars and vectors alike
        self.tables: list[tuple[str, int]] = []  # (name, width: 1 scalar)

    # --- names
    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def const(self) -> str:
        if self.r.random() < 0.5:
            return repr(round(self.r.uniform(-2.0, 2.0), self.r.choice([1, 2, 3])))
        return self.r.choice(CONSTS)

    # --- scalar expressions
    def scal(self, sc: dict, d: int) -> str:
        r = self.r
        if d <= 0 or r.random() < 0.1:
            return self.leaf(sc)
        a = lambda: self.scal(sc, d - 1)  # noqa: E731
        if self.sg and self.r2.random() < 0.06:
            return f"hm.stop_gradient({a()})"
        if self.ints and self.r2.random() < 0.06:
            return self.int_to_float(sc, d)
        if self.mats and not self.in_mat and not sc.get("in_loop") and self.r2.random() < 0.04:
            return self.nested(self.mat_scal, sc, d)
        if self.npf and self.r4.random() < 0.15:
            return self.numpy_fn(sc, d)
        if self.la and not self.in_mat and not sc.get("in_loop") and self.r5.random() < 0.06:
            return self.nested(self.linalg_scal, sc, d)
        c = r.randrange(26)
        if c < 6:
            return f"({a()} {r.choice(['+', '-', '*'])} {a()})"
        if c == 6:
            b = a()
            return r.choice([f"({a()} / ({b} * {b} + 1.0))", f"({a()} / (abs({b}) + 0.5))", f"({a()} / {r.choice(['3.0', '-0.7', '2'])})"])
        if c == 7:
            return f"({a()} {r.choice(['//', '%'])} {r.choice(['1.5', '2.0', '0.75', '-1.25', '3'])})"
        if c == 8:
            x = a()
            return r.choice([f"({x} ** {r.choice([0, 1, 2, 3, 4, 5])})", f"(({x} * {x} + 0.5) ** -{r.choice([1, 2, 3])})",
                             f"(({x} * {x} + 0.25) ** {r.choice(['0.5', '1.5', '2.5', '-0.5'])})",
                             f"(({x} * {x} + 0.5) ** tanh({a()}))"])
        if c == 9:
            return r.choice([f"(-{a()})", f"abs({a()})", f"hm.abs({a()})", f"floor({a()})", f"sign({a()})"])
        if c == 10:
            x = a()
            return r.choice([f"sqrt({x} * {x} + 0.5)", f"sqrt(abs({x}))", f"math.sqrt({x} * {x} + 1.0)",
                             f"exp(tanh({x}))", f"exp(-({x} * {x}))", f"hm.exp(sin({x}))"])
        if c == 11:
            x = a()
            return r.choice([f"log({x} * {x} + 1.0)", f"log(abs({x}) + 1.0)", f"math.log({x} * {x} + 2.0)"])
        if c == 12:
            return f"{r.choice(['sin', 'cos', 'tanh', 'math.sin', 'math.cos', 'hm.tanh'])}({a()})"
        if c == 13:
            return f"tan({r.choice(['tanh', 'sin'])}({a()}))"
        if c == 14:
            b = a()
            return r.choice([f"atan2({a()}, {b})", f"atan2({a()}, {b} * {b} + 0.1)", f"math.atan2({a()}, 1.5)"])
        if c == 15:
            return f"{r.choice(['min', 'max', 'minimum', 'maximum'])}({a()}, {a()})"
        if c == 16:
            return r.choice([f"clamp({a()}, -1.0, 1.5)", f"clamp({a()}, {a()}, {a()})"])
        if c == 17:
            return f"where({self.cond(sc, d - 1)}, {a()}, {a()})"
        if c == 18:
            return f"({a()} if {self.cond(sc, d - 1)} else {a()})"
        if c == 19 and sc["vec"]:
            u = self.vect(sc, d - 1)
            return r.choice([f"norm({u})", f"dot({u}, {self.vect(sc, d - 1)})", f"({u})[{r.randrange(self.k)}]"])
        if c == 20 and self.tables and not sc.get("in_helper"):
            return self.table_read(sc, d)
        if c == 21 and self.helpers and not sc.get("no_helpers"):  # in a helper: the earlier helpers
            name, arity, pair = r.choice(self.helpers)
            if not pair:
                return f"{name}({', '.join(a() for _ in range(arity))})"
        if c == 22 and self.vhelper and not sc.get("in_helper") and not sc.get("no_helpers"):
            return f"{self.vhelper}({a()}, {a()})"
        if c == 23:
            return f"({a()} * {self.const()} + {self.const()})"
        return self.leaf(sc)

    def numpy_fn(self, sc: dict, d: int) -> str:
        """One of hawk.math's NumPy-named functions (feature "numpy"), its arguments kept inside
        its domain with a margin (so central differences see a smooth function, and XLA's own
        implementations of the "xla" check stay within XLA_ULPS: bounded arguments)."""
        a = lambda: self.scal(sc, d - 1)  # noqa: E731
        x = a()
        forms = [
            lambda: f"hm.asin(tanh({x}) * 0.9)",
            lambda: f"hm.acos(sin({x}) * 0.8)",
            lambda: f"hm.atan({x})",
            lambda: f"hm.sinh(tanh({x}) * 2.0)",
            lambda: f"hm.cosh(sin({x}) * 2.0)",
            lambda: f"{self.r4.choice(['hm.asinh', 'math.asinh'])}({x})",
            lambda: f"hm.acosh({x} * {x} + 1.5)",
            lambda: f"hm.atanh(tanh({x}) * 0.9)",
            lambda: f"hm.erf({x})",
            lambda: f"hm.erfc(tanh({x}) * 2.5)",
            lambda: f"hm.exp2(tanh({x}) * 3.0)",
            lambda: f"hm.expm1(sin({x}))",
            lambda: f"{self.r4.choice(['hm.log1p', 'math.log1p'])}({x} * {x})",
            lambda: f"hm.log2({x} * {x} + 0.5)",
            lambda: f"hm.log10(abs({x}) + 0.5)",
            lambda: f"hm.cbrt({x} * {x} + 0.3)",
            lambda: f"hm.cbrt(-({x} * {x}) - 0.3)",
            lambda: f"hm.hypot({x}, {a()} * 0.5 + 1.0)" if self.r4.random() < 0.5 else f"hm.hypot({x}, 0.75)",
            lambda: f"{self.r4.choice(['hm.pow', 'hm.power'])}({x} * {x} + 0.5, tanh({a()}))",
            lambda: f"hm.power({x}, {self.r4.choice([2, 3, -1])})" if self.r4.random() < 0.3 else f"hm.pow(abs({x}) + 0.5, 1.5)",
            lambda: f"{self.r4.choice(['hm.ceil', 'hm.round', 'hm.rint', 'hm.trunc'])}({x} * {self.r4.choice(['1.0', '2.0', '0.5'])})",
            lambda: f"hm.fmod({x}, {self.r4.choice(['1.5', '-0.75', '2.0'])})",
            lambda: f"hm.remainder({x}, {self.r4.choice(['1.5', '-0.75', '2.0'])})",
            lambda: f"{self.r4.choice(['hm.fmod', 'hm.remainder'])}({x}, {a()} * {a()} + 0.5)",
            lambda: f"hm.copysign({x}, {a()})",
            lambda: f"hm.fdim({x}, {a()})",
            lambda: f"hm.fma({x}, {a()}, {a()})",
            lambda: f"hm.clip({x}, {self.r4.choice(['-1.0', '-0.5'])}, {self.r4.choice(['1.5', '0.25'])})",
            lambda: f"hm.clip({x}, {a()}, {a()})",
            lambda: f"hm.rsqrt({x} * {x} + 0.5)",
            lambda: f"hm.absolute({x})",
            lambda: f"hm.where(hm.{self.r4.choice(['isnan', 'isinf', 'isfinite'])}({x} / ({a()} * 0.5)), {a()}, {x})",
            lambda: f"({a()} if hm.isfinite({x}) else 0.0)",
            lambda: f"hm.minimum({x}, hm.inf)" if self.r4.random() < 0.5 else f"hm.maximum({x}, -hm.inf)",
        ]
        return f"({self.r4.choice(forms)()})"

    def leaf(self, sc: dict) -> str:
        r = self.r
        pool = list(sc["scal"])
        if sc["vec"] and r.random() < 0.25:
            return f"{r.choice(sc['vec'])}[{r.randrange(self.k)}]"
        if not pool or r.random() < 0.15:
            return self.const()
        return r.choice(pool)

    def table_read(self, sc: dict, d: int) -> str:
        r = self.r
        t, w = r.choice(self.tables)
        x = self.scal(sc, d - 1)
        comp = f"[{r.randrange(w)}]" if w > 1 else ""
        if r.random() < 0.04:  # unguarded: may be out of range, a table error both sides report
            return f"{t}.at({x} * 2.0){comp}"
        c = r.randrange(5)
        if c == 0:
            return f"{t}.at(clamp({x}, 0.0, {self.m - 1}.0)){comp}"
        if c == 1:
            return f"{t}.at({r.randrange(self.m)}){comp}"
        if c == 2:  # out of range outside the guard: the read is not checked there
            i = f"({x} * 2.0)"
            return f"({t}.at({i}){comp} if (0.0 <= {i} and {i} < {self.m}) else {self.scal(sc, d - 1)})"
        if c == 3:
            return f"({t}.at(abs({x}) % {self.m}){comp} if abs({x}) < 1e6 else 0.0)"
        i = f"floor({x} * 3.0)"
        return f"({self.scal(sc, d - 1)} if ({i} < 0.0 or {i} >= {self.m}) else {t}.at({i}){comp})"

    # --- bools
    def cond(self, sc: dict, d: int) -> str:
        r = self.r
        a = lambda: self.scal(sc, max(d - 1, 0))  # noqa: E731
        if self.ints and self.r2.random() < 0.12:
            return self.int_cond(sc, d)
        c = r.randrange(10)
        if c < 4 or d <= 0:
            return f"({a()} {r.choice(['<', '<=', '>', '>=', '==', '!='])} {a()})"
        if c == 4:
            return f"({a()} < {a()} <= {a()})"
        if c == 5:
            return f"({self.cond(sc, d - 1)} and {self.cond(sc, d - 1)})"
        if c == 6:
            return f"({self.cond(sc, d - 1)} or {self.cond(sc, d - 1)})"
        if c == 7:
            return f"(not {self.cond(sc, d - 1)})"
        if c == 8 and sc["bool"]:
            return r.choice(sc["bool"])
        if c == 9 and self.tables and not sc.get("in_helper"):
            t, w = r.choice(self.tables)
            i = f"({a()} * 2.0)"
            comp = "[0]" if w > 1 else ""
            return f"(0.0 <= {i} and {i} < {self.m} and {t}.at({i}){comp} > 0.0)"
        return f"(floor({a()}) == {r.choice(['0.0', '1.0', '-1.0'])})"

    # --- vectors (width self.k)
    def vect(self, sc: dict, d: int) -> str:
        r = self.r
        k = self.k
        if d <= 0 or r.random() < 0.25:
            if sc["vec"] and r.random() < 0.7:
                return r.choice(sc["vec"])
            return f"vec({', '.join(self.scal(sc, 1) for _ in range(k))})"
        u = lambda: self.vect(sc, d - 1)  # noqa: E731
        s = lambda: self.scal(sc, d - 1)  # noqa: E731
        if self.mats and not self.in_mat and not sc.get("in_loop") and self.r2.random() < 0.06:
            return self.nested(self.mat_vec, sc, d)
        if self.ints and self.r2.random() < 0.06 and sc["int"]:
            return self.int_vec(sc, d)
        c = r.randrange(12)
        if c < 3:
            return f"({u()} {r.choice(['+', '-', '*'])} {u()})"
        if c == 3:
            return f"({s()} * {u()})" if r.random() < 0.5 else f"({u()} * {s()})"
        if c == 4:
            x = s()
            return f"({u()} / ({x} * {x} + 1.0))"
        if c == 5:
            return f"{r.choice(['sin', 'tanh', 'abs', 'cos'])}({u()})"
        if c == 6:
            return f"{r.choice(['minimum', 'maximum'])}({u()}, {r.choice([s(), u()])})"
        if c == 7:
            return f"where({self.cond(sc, d - 1)}, {u()}, {u()})"
        if c == 8:
            return f"({u()} if {self.cond(sc, d - 1)} else {u()})"
        if c == 9 and k == 3:
            return f"cross({u()}, {u()})"
        if c == 10:
            return f"normalize({u()} + vec({', '.join(['2.5'] * k)}))"
        if c == 11 and self.vhelper and not sc.get("in_helper") and not sc.get("no_helpers"):
            return f"{self.vhelper}({u()}, {s()})"
        vt = [t for t, w in self.tables if w == k]
        if vt and not sc.get("in_helper"):
            return f"{r.choice(vt)}.at(clamp({s()}, 0.0, {self.m - 1}.0))"
        return f"(-{u()})"

    # --- statements
    def statements(self, sc: dict, lines: list[str], ind: str, count: int, depth: int, nest: int = 0) -> None:
        r = self.r
        for _ in range(count):
            if "exits" in self.features and nest < 2 and not sc.get("in_helper") and self.r2.random() < 0.12:
                self.exit_loop(sc, lines, ind, depth, nest)
                continue
            if self.feature_statement(sc, lines, ind, depth):
                continue
            c = r.randrange(14)
            if c < 5:
                name = self.fresh("a")
                lines.append(f"{ind}{name} = {self.scal(sc, depth)}")
                sc["scal"].append(name)
            elif c == 5:
                name = self.fresh("u")
                lines.append(f"{ind}{name} = {self.vect(sc, depth - 1)}")
                sc["vec"].append(name)
            elif c == 6:
                name = self.fresh("b")
                lines.append(f"{ind}{name} = {self.cond(sc, depth - 1)}")
                sc["bool"].append(name)
            elif c == 7 and sc["own"]:
                name = r.choice(sc["own"])
                op = r.choice(["+=", "-=", "*="])
                rhs = self.scal(sc, depth - 1)
                if r.random() < 0.2:
                    op, rhs = "/=", f"({rhs} * {rhs} + 1.0)"
                lines.append(f"{ind}{name} {op} {rhs}")
            elif c == 8 and sc["ownvec"]:
                u = r.choice(sc["ownvec"])
                lines.append(f"{ind}{u}[{r.randrange(self.k)}] = {self.scal(sc, depth - 1)}")
            elif c == 9 and nest < 2:
                self.if_block(sc, lines, ind, depth, nest)
            elif c == 10 and sc["vec"]:
                name = self.fresh("a")
                u = r.choice(sc["vec"])
                lines.append(f"{ind}{name} = 0.0")
                lines.append(f"{ind}for i in range({self.k}):")
                if "exits" in self.features and not sc.get("in_helper") and self.r2.random() < 0.4:  # leave on the partial sum
                    lines.append(f"{ind}    if {name} {r.choice(['>', '<'])} {self.scal(sc, 1)} and {self.live_term()}:")
                    lines.append(f"{ind}        {r.choice(['break', 'continue'])}")
                inner = f"{u}[i] * {self.scal(sc, 1)}"
                if self.tables and not sc.get("in_helper") and r.random() < 0.5:
                    t, w = r.choice(self.tables)
                    inner += f" + {t}.at(i % {self.m}){'[0]' if w > 1 else ''}"
                lines.append(f"{ind}    {name} = {name} + {inner}")
                sc["scal"].append(name)
            elif c == 11:
                x, y = self.fresh("a"), self.fresh("a")
                pairs = [h for h in self.helpers if h[2]]
                if pairs and not sc.get("in_helper") and r.random() < 0.6:
                    h, arity, _ = r.choice(pairs)
                    args = ", ".join(self.scal(sc, depth - 1) for _ in range(arity))
                    lines.append(f"{ind}{x}, {y} = {h}({args})")
                else:
                    lines.append(f"{ind}{x}, {y} = {self.scal(sc, depth - 1)}, {self.scal(sc, depth - 1)}")
                sc["scal"] += [x, y]
            else:
                name = self.fresh("a")
                lines.append(f"{ind}{name} = {self.scal(sc, depth)}")
                sc["scal"].append(name)
                sc["own"].append(name)

    def live_term(self) -> str:
        """A condition on the kernel's plane x0, and'ed to every exit's condition: hawk refuses
        an exit whose condition folds to True followed by more statements of the loop ("never
        run", cpp/ir/lower.cpp), though Python runs it (`if 0.5 < 1.0: continue` then a
        statement); the generated conditions of constants, or of a helper's constant
        arguments, fold so. This keeps every exit data-dependent (exits are not generated in
        helpers for the same reason)."""
        return f"(x0 {self.r.choice(['<', '>', '<=', '>='])} {round(self.r.uniform(-1.5, 1.5), 2)})"

    def exit_loop(self, sc: dict, lines: list[str], ind: str, depth: int, nest: int) -> None:
        """A `for j in range(K)` whose iterations `break` or `continue` under conditions on the
        sample's values (docs/language.md "Loops with exits"): an accumulator assigned before
        the loop, a temporary assigned first in each iteration (before any exit, so it is
        defined for every sample), one or two exits, updates between them. Only the
        accumulator is read after the loop."""
        r = self.r
        acc, j, t = self.fresh("a"), self.fresh("j"), self.fresh("a")
        lines.append(f"{ind}{acc} = {self.scal(sc, depth - 1)}")
        lines.append(f"{ind}for {j} in range({r.choice([2, 3, 4, 6])}):")
        inner = {key: list(v) for key, v in sc.items() if isinstance(v, list)}
        inner["in_helper"] = sc.get("in_helper", False)
        inner["in_loop"] = True  # (no matrices here: unrolled K times, with derivatives)
        inner["scal"].append(acc)
        step = r.choice([f"float({j})", f"{j}", f"({j} % 2)", "0.0"])
        lines.append(f"{ind}    {t} = {self.scal(inner, depth - 1)} * 0.5 + {step}")
        inner["scal"].append(t)
        for _ in range(r.choice([1, 1, 2])):
            lines.append(f"{ind}    if {self.cond(inner, depth - 1)} and {self.live_term()}:")
            lines.append(f"{ind}        {r.choice(['break', 'continue'])}")
            upd = r.choice([f"{acc} + 0.5 * tanh({self.scal(inner, depth - 1)})", f"{acc} * 0.75 + sin({self.scal(inner, depth - 1)})",
                            f"{acc} - {t} * {self.const()}"])
            lines.append(f"{ind}    {acc} = {upd}")
        sc["scal"].append(acc)

    def long_loop(self, sc: dict, lines: list[str], ind: str, depth: int) -> None:
        """A `for liN in range(K)` with K > 4096, compiled as a loop region, not unrolled
        (docs/language.md "Long loops"), at the kernel's top level. The first statement of the
        body leaves at a small iteration (`if liN >= m: break`, m <= 20: the adjoint recomputes
        iterations from checkpoints, about 2 n sqrt(n) body evaluations for n taken, and no
        `continue` comes before it, so every sample leaves there); then a temporary of the
        iteration, float updates of carried locals (assigned before the loop, their kind kept:
        bounded forms, so 20 iterations stay finite), data-dependent `break` / `continue`, a
        loop in the body (unrolled, or long and leaving early itself), `if` statements assigning
        carries, and with "int" an int counter, with "random" draws (numbered per iteration). Table reads
        may be in it (the adjoint w.r.t. such a table is refused: check_batch leaves it out of
        that adjoint's wrt). Nothing first assigned in the body, nor liN, is read after it."""
        r, r3 = self.r, self.r3
        locs = [a for a in sc["scal"] if a.startswith("a")]
        carried = r3.sample(locs, min(len(locs), r3.choice([0, 1, 1, 2])))
        if not carried or r3.random() < 0.5:
            acc = self.fresh("a")
            lines.append(f"{ind}{acc} = {self.scal(sc, depth - 1)}")
            sc["scal"].append(acc)
            carried.append(acc)
        for a in carried:  # a float before the loop: an integer constant (`a = 3`, stop_gradient(2)) would be
            lines.append(f"{ind}{a} = {a} * 1.0")  # an int there and a Scalar after an update, refused (seed 7300120)
        vcarried = [u for u in sc["vec"] if u.startswith("u")][:1] if r3.random() < 0.2 else []
        icount = None
        if self.ints and r3.random() < 0.6:
            icount = self.fresh("k")
            x, bx, _ = self.iexpr(sc, 1)
            lines.append(f"{ind}{icount} = {x} % 97" if bx > 97 else f"{ind}{icount} = {x}")
        li, kk, m = self.fresh("li"), r3.randrange(4097, 9001), r3.choice([1, 2, 3, 5, 8, 12, 20])
        lines.append(f"{ind}for {li} in range({kk}):")
        b = ind + "    "
        lines.append(f"{b}if {li} {r3.choice(['>=', '>=', '=='])} {m}:")
        lines.append(f"{b}    break")
        inner = {key: list(v) for key, v in sc.items() if isinstance(v, list)}
        inner["in_helper"] = False
        inner["in_loop"] = True  # (no matrices here)
        # (@hawk.func calls too: one inside a long loop crashed the front end, a finding of this
        # feature, fixed; test_differential.py)
        inner["int"].append((li, kk, False))  # a runtime integer
        if icount:
            inner["int"].append((icount, 97 + m + 1, False))
        d = min(depth - 1, 2)
        # the values an update adds are computed without the carries (ein), which enter only
        # as `c * a` with |c| <= 1 and through tanh: every iteration's Jacobian of the carries
        # is bounded by about 1, so 20 iterations do not amplify a cotangent past what float64
        # holds (seed 3010557 of the draft: sin(float(i0) * (x0 * a)) in the update, |i0| up
        # to 3000, made the adjoint's cotangent of a ~1e16 after 8 iterations, and the
        # structurally zero a = (x0 - x0) * s * s then added +-1e16 terms into x0's cotangent,
        # which absorbed its other terms; the tangent, exact, cancels x0' - x0' first)
        ein = {key: (list(v) if isinstance(v, list) else v) for key, v in inner.items()}
        ein["scal"] = [x for x in ein["scal"] if x not in carried]
        ein["vec"] = [u for u in ein["vec"] if u not in vcarried]
        if r3.random() < 0.6:
            t = self.fresh("a")
            step = r3.choice([f"float({li})", f"0.1 * float({li})", f"float({li} % 3)", "0.0"])
            lines.append(f"{b}{t} = {self.scal(ein, d)} * 0.5 + {step}")
            inner["scal"].append(t)
            ein["scal"].append(t)
        else:
            t = None
        todo = ["upd"] + [r3.choice(["upd", "upd", "exit", "exit", "int", "rand", "vec", "nest", "if"]) for _ in range(r3.choice([0, 1, 2, 3]))]
        for what in todo:
            if what == "exit":
                lines.append(f"{b}if {self.cond(inner, d)} and {self.live_term()}:")
                lines.append(f"{b}    {r3.choice(['break', 'continue'])}")
            elif what == "int" and icount:
                if r3.random() < 0.5:
                    lines.append(f"{b}{icount} = {icount} + 1")  # at most m + 1 iterations
                else:
                    lines.append(f"{b}{icount} = ({icount} * {r3.choice([2, 3, -1])} + {self.iexpr(inner, 1)[0]}) % 97")
            elif what == "rand" and self.rand:
                a = r3.choice(carried)
                self.drew = True
                lines.append(r3.choice([f"{b}{a} = {a} * 0.5 + {self.scal(ein, 1)} * rng.normal()",
                                        f"{b}{a} = {a} + 0.25 * rng.uniform()"]))
            elif what == "nest":  # a loop in the body updating a carry: unrolled, or a long loop of its own leaving early
                a = r3.choice(carried)
                if r3.random() < 0.5:
                    j = self.fresh("j")
                    lines.append(f"{b}for {j} in range({r3.choice([2, 3])}):")
                    lines.append(f"{b}    {a} = {a} + 0.25 * tanh({self.scal(ein, d)} + float({j}))")
                else:
                    lj = self.fresh("li")
                    lines.append(f"{b}for {lj} in range({r3.randrange(4097, 6000)}):")
                    lines.append(f"{b}    if {lj} >= {r3.choice([1, 2, 3, 5])}:")
                    lines.append(f"{b}        break")
                    lines.append(f"{b}    {a} = {a} * 0.75 + sin({self.scal(ein, d)} * 0.5 + 0.1 * float({lj}))")
            elif what == "if":  # an if statement assigning carries (existing names only: nothing new leaves the body)
                a = r3.choice(carried)
                lines.append(f"{b}if {self.cond(inner, d)}:")
                lines.append(f"{b}    {a} = {a} * 0.5 + tanh({self.scal(ein, d)})")
                if r3.random() < 0.6:
                    lines.append(f"{b}else:")
                    lines.append(f"{b}    {a} = {a} - 0.25 * sin({self.scal(ein, d)})")
            elif what == "vec" and vcarried:
                u = vcarried[0]
                lines.append(f"{b}{u} = {u} * 0.5 + 0.25 * sin({self.vect(ein, d)})")
            else:
                a = r3.choice(carried)
                e, c = self.scal(ein, d), r3.choice(carried)
                upd = r3.choice([f"{a} = {a} * 0.75 + sin({e})", f"{a} = {a} + 0.5 * tanh({e})",
                                 f"{a} = {a} * 0.75 + 0.2 * sin({e} + tanh({c}))", f"{a} = 0.9 * {a} + 0.1 * tanh({e}) * tanh({c})",
                                 f"{a} = 0.9 * {a} + 0.1 * clamp({e}, -3.0, 3.0)", f"{a} += 0.1 * tanh({e})",
                                 f"{a} = ({a} * 0.5 + tanh({e})) if {self.cond(inner, d)} else {a}"]
                                + ([f"{a} = {a} - {t} * {self.const()}"] if t else []))
                lines.append(f"{b}{upd}")
        if icount:
            sc["int"].append((icount, 97 + m + 1, False))

    def if_block(self, sc: dict, lines: list[str], ind: str, depth: int, nest: int) -> None:
        """if / elif* / else? assigning the same new names in every branch (a default before
        the if when there is no else)."""
        r = self.r
        targets = [self.fresh("a") for _ in range(r.choice([1, 1, 2]))]
        vtarget = self.fresh("u") if sc["vec"] and r.random() < 0.3 else None
        has_else = r.random() < 0.6
        if not has_else:
            for t in targets:
                lines.append(f"{ind}{t} = {self.scal(sc, depth - 1)}")
            if vtarget:
                lines.append(f"{ind}{vtarget} = {self.vect(sc, depth - 1)}")
        branches = ["if"] + ["elif"] * r.choice([0, 0, 1, 2]) + (["else"] if has_else else [])
        for b in branches:
            head = f"{ind}else:" if b == "else" else f"{ind}{b} {self.cond(sc, depth - 1)}:"
            lines.append(head)
            inner = {key: list(v) for key, v in sc.items() if isinstance(v, list)}
            inner["in_helper"] = sc.get("in_helper", False)
            self.statements(inner, lines, ind + "    ", r.choice([0, 1, 2]), depth - 1, nest + 1)
            for t in targets:
                lines.append(f"{ind}    {t} = {self.scal(inner, depth - 1)}")
            if vtarget:
                lines.append(f"{ind}    {vtarget} = {self.vect(inner, depth - 1)}")
            for out in sc["outs_in_if"]:
                if r.random() < 0.3:  # an output assigned in some branches only: in-out
                    lines.append(f"{ind}    {out} = {self.scal(inner, depth - 1)}")
        sc["scal"] += targets
        if vtarget:
            sc["vec"].append(vtarget)

    # --- the newer features' statements (each drawn from r2; content from r as the rest)
    def feature_statement(self, sc: dict, lines: list[str], ind: str, depth: int) -> bool:
        """An int, matrix / quaternion or random statement in place of an ordinary one, in the
        kernels that have the feature; True when one was written."""
        if self.ints and self.r2.random() < 0.16:
            self.int_statement(sc, lines, ind, depth)
            return True
        if self.mats and self.r2.random() < 0.12:
            self.nested(self.mat_statement, sc, lines, ind, depth)
            return True
        if self.rand and not sc.get("in_helper") and self.r2.random() < 0.16:
            self.rand_statement(sc, lines, ind, depth)
            return True
        return False

    # --- integers (docs/language.md "Integer and bool planes")
    def int_leaf(self, sc: dict) -> tuple[str, int, bool]:
        """An int value, a bound on its magnitude and whether it may be a compile-time
        constant (see iexpr): a name in scope (planes, Params, locals, an int Vector's
        component), a literal, int(x) of a float kept finite and in range, or int(cond)."""
        r = self.r
        if sc["int"] and r.random() < 0.7:
            return r.choice(sc["int"])
        if self.numbered and self.r7.random() < 0.2:  # the launch's numbering (own stream)
            return self.r7.choice(["hm.sample_index()", "hm.n_samples()"]), NUMBERED_BOUND, False
        c = r.randrange(4)
        if c == 0:
            v = r.choice([0, 1, 2, 3, 5, 7, 12, -1, -4])
            return (str(v) if v >= 0 else f"({v})"), abs(v), True
        if c == 1:  # int() of NaN, an infinity or beyond int64 is a launch error: guarded
            x = self.scal(sc, 1)
            # (a constant where x is an int constant: the condition folds and picks x)
            return f"int({x} if abs({x}) < 1e6 else 0.0)", 10**6, True
        if c == 2:
            return f"int(clamp({self.scal(sc, 1)}, -40.0, 40.0))", 40, False
        return f"int({self.cond(sc, 0)})", 1, False

    @staticmethod
    def _int_typed(text: str, const: bool) -> tuple[str, bool]:
        """hawk makes abs, min, max and `a if c else b` of compile-time integer constants
        floats, where Python gives ints (docs/architecture.md "The differential fuzzer"); a
        conditional whose condition folds is the branch it picks, a constant if that is one.
        Where every argument may be a constant (`const`), the result is made an int again
        through a float, int(float(...)): exact, the values are small (int() of an int
        constant would stay a constant; int() of a float is an int value)."""
        return (f"int(float({text}))", False) if const else (text, False)

    def iexpr(self, sc: dict, d: int) -> tuple[str, int, bool]:
        """An int expression, a bound on its magnitude (kept within IBOUND, so that every int
        the interpreter's binding holds as a double is exact: within 2**53) and whether it may
        be a compile-time constant (built from literals and loop variables only)."""
        r = self.r
        if d <= 0 or r.random() < 0.2:
            return self.int_leaf(sc)
        a = lambda: self.iexpr(sc, d - 1)  # noqa: E731
        c = r.randrange(11)
        if c < 3:
            (x, bx, cx), (y, by, cy) = a(), a()
            op = r.choice(["+", "-", "*"])
            if op == "*" and bx * by > IBOUND:
                op = r.choice(["+", "-"])
            return f"({x} {op} {y})", (bx * by if op == "*" else bx + by), cx and cy
        if c == 3:  # by a nonzero literal: floor division and modulo as Python's
            (x, bx, cx), k = a(), r.choice([2, 3, 4, 7, 10, -2, -3, -5])
            if r.random() < 0.5:
                return f"({x} // {k})", bx // abs(k) + 1, cx
            return f"({x} % {k})", abs(k), cx
        if c == 4:  # by an int that is never 0
            (x, bx, cx), (y, by, cy) = a(), a()
            div, _ = self._int_typed(r.choice([f"(abs({y}) + 1)", f"max(abs({y}), 1)"]), cy)
            if r.random() < 0.5:
                return f"({x} // {div})", bx, False
            return f"({x} % {div})", by + 1, False
        if c == 5:  # by an int that may be 0, guarded as the language asks (the branch not taken never raises)
            (x, bx, cx), (y, by, cy), (z, bz, cz) = a(), a(), a()
            op = r.choice(["//", "%"])
            # unguarded: where y is 0, a launch error both sides report (not where y may be a
            # compile-time constant, which folds: a 0 there is a compile error instead)
            if r.random() < 0.03 and not cy:
                return f"({x} {op} {y})", (bx if op == "//" else by), cx and cy
            # (a condition that folds picks one branch: a constant where that one is)
            t, const = self._int_typed(f"({x} {op} {y} if {y} != 0 else {z})", (cx and cy) or cz)
            return t, max(bx if op == "//" else by, bz), const
        if c == 6:
            x, bx, cx = a()
            if r.random() < 0.5:
                return f"(-{x})", bx, cx
            return self._int_typed(f"abs({x})", cx)[0], bx, False
        if c == 7:
            (x, bx, cx), (y, by, cy) = a(), a()
            return (self._int_typed(f"{r.choice(['min', 'max'])}({x}, {y})", cx and cy)[0], max(bx, by), False)
        if c == 8:
            (x, bx, cx), (y, by, cy) = a(), a()
            return (self._int_typed(f"({x} if {self.cond(sc, d - 1)} else {y})", cx or cy)[0], max(bx, by), False)
        if c == 9:
            x, bx, cx = a()
            n = r.choice([2, 3])
            if bx**n <= IBOUND:
                return f"({x} ** {n})", bx**n, cx
            return f"({x} % 97)", 97, cx
        return self.int_leaf(sc)

    def small_int(self, sc: dict, d: int) -> str:
        """An int expression of magnitude at most 10**4 (reduced by % where larger), for the
        floats made from ints: an int near 2**40 would make the float outputs too large for
        the tangent check."""
        x, bx, _ = self.iexpr(sc, d)
        return x if bx <= 10**4 else f"({x} % {self.r.choice([7, 97, -13, 1000])})"

    def int_to_float(self, sc: dict, d: int) -> str:
        """A float made from ints (always float-typed: an int-typed value assigned to a float
        local would make if branches disagree in type): float(i), an int meeting a float
        literal (float(i) implied), i / j (a float), a table read at an int index."""
        r = self.r
        i = self.small_int(sc, min(d - 1, 3))
        c = r.randrange(7)
        if c == 0:
            return f"float({i})"
        if c == 1:
            return f"({i} * {r.choice(['0.5', '-1.25', '0.01', '2.0'])})"
        if c == 2:
            return f"({self.scal(sc, d - 1)} {r.choice(['+', '-'])} {i} * 0.5)"
        if c == 3:
            j = self.small_int(sc, min(d - 1, 2))
            return f"({i} / ({j} * {j} + 1))"
        if c == 4:
            return f"(float({i}) * {self.scal(sc, d - 1)})"
        if self.tables and not sc.get("in_helper"):
            t, w = r.choice(self.tables)
            comp = f"[{r.randrange(w)}]" if w > 1 else ""
            if r.random() < 0.04:  # unguarded: out of range for some samples, a table error both sides report
                return f"{t}.at({i}){comp}"
            if c == 5:
                return f"{t}.at({i} % {self.m}){comp}"  # % floors: in [0, M)
            return f"({t}.at({i}){comp} if 0 <= {i} and {i} < {self.m} else {self.scal(sc, d - 1)})"
        return f"float({i})"

    def int_cond(self, sc: dict, d: int) -> str:
        r = self.r
        i = self.iexpr(sc, max(min(d, 2), 0))[0]
        c = r.randrange(4)
        if c == 0:
            return f"({i} {r.choice(['<', '<=', '>', '>=', '==', '!='])} {self.iexpr(sc, max(min(d, 2), 0))[0]})"
        if c == 1:
            return f"({i} % {r.choice([2, 3])} == {r.choice([0, 1])})"
        if c == 2:  # an int compared with a float compares float(i)
            return f"({i} {r.choice(['<', '>=', '=='])} {self.scal(sc, max(d - 1, 0))})"
        return f"({i} {r.choice(['>', '<=', '!='])} {r.choice([0, 1, -2, 5])})"

    def int_vec(self, sc: dict, d: int) -> str:
        """A width-k vector read from a table at an int index, or a float vector times an int."""
        r = self.r
        vt = [t for t, w in self.tables if w == self.k]
        i = self.small_int(sc, 2)
        if vt and not sc.get("in_helper") and r.random() < 0.6:
            return f"{r.choice(vt)}.at({i} % {self.m})"
        return f"(float({i}) * {self.vect(sc, d - 1)})"

    def int_statement(self, sc: dict, lines: list[str], ind: str, depth: int) -> None:
        r = self.r
        name = self.fresh("k")
        if r.random() < 0.2:  # a loop over ints, reduced each iteration
            x = self.iexpr(sc, min(depth - 1, 2))[0]
            k = r.choice([97, 1000, -13])
            lines.append(f"{ind}{name} = {x} % {k}")
            lines.append(f"{ind}for i in range({r.choice([2, 3])}):")
            inner = {key: list(v) for key, v in sc.items() if isinstance(v, list)}
            inner["in_helper"] = sc.get("in_helper", False)
            inner["int"] += [(name, abs(k), True), ("i", 3, True)]  # (a constant, for all we know here)
            lines.append(f"{ind}    {name} = ({name} * {r.choice([2, 3, -1])} + {self.iexpr(inner, 1)[0]}) % {k}")
            sc["int"].append((name, abs(k), True))
            return
        x, bx, cx = self.iexpr(sc, min(depth, 3))
        lines.append(f"{ind}{name} = {x}")
        sc["int"].append((name, bx, cx))

    # --- matrices and quaternions (docs/language.md "Matrices and quaternions")
    def vecn(self, sc: dict, d: int, w: int) -> str:
        """A float vector of width w."""
        if w == self.k:
            return self.vect(sc, max(d, 0))
        if w == 4:
            return self.qexpr(sc, max(d, 0))
        return f"vec({', '.join(self.scal(sc, min(max(d, 0), 1)) for _ in range(w))})"

    def mleaf(self, sc: dict, rr: int, cc: int) -> str:
        r = self.r
        c = r.randrange(6)
        if c == 0 and rr == cc:
            return f"identity({rr})"
        if c == 1:
            return f"outer({self.vecn(sc, 0, rr)}, {self.vecn(sc, 0, cc)})"
        if c == 2 and self.mtable and (rr, cc) == (self.mn, self.mn) and not sc.get("in_helper"):
            if self.ints and sc["int"] and r.random() < 0.5:
                return f"{self.mtable[0]}.at({self.small_int(sc, 1)} % {self.m})"
            return f"{self.mtable[0]}.at(clamp({self.scal(sc, 1)}, 0.0, {self.m - 1}.0))"
        if c == 3 and (rr, cc) == (3, 3):
            return f"quat_to_matrix({self.qexpr(sc, 0)})"
        rows = []
        for _ in range(rr):  # (mostly leaves: r * c of them)
            xs = ", ".join(self.scal(sc, 1 if r.random() < 0.3 else 0) for _ in range(cc))
            rows.append(f"vec({xs})" if r.random() < 0.5 else f"({xs})")
        return f"mat({', '.join(rows)})"

    def well(self, sc: dict, d: int, n: int) -> str:
        """A well-conditioned n x n matrix, for inverse and det: the identity plus a small
        perturbation (|entries| <= 0.25, so the perturbation's norm is below 1), the identity
        plus 0.1 T^T T (eigenvalues >= 1), or a rotation."""
        r = self.r
        c = r.randrange(3)
        if c == 0:
            return f"(identity({n}) + {r.choice(['0.1', '0.2', '0.25'])} * tanh({self.mexpr(sc, d, n, n)}))"
        if c == 1 or n != 3:
            t = f"tanh({self.mexpr(sc, d, r.choice([2, 2, 3]) if c == 1 else n, n)})"
            return f"(identity({n}) + 0.1 * (transpose({t}) @ {t}))"
        return f"quat_to_matrix({self.qexpr(sc, d)})"

    def mexpr(self, sc: dict, d: int, rr: int, cc: int) -> str:
        """A Matrix[rr, cc] expression."""
        r = self.r
        if d <= 0 or r.random() < 0.25:
            pool = [m for m, a, b in sc["mat"] if (a, b) == (rr, cc)]
            if pool and r.random() < 0.7:
                return r.choice(pool)
            return self.mleaf(sc, rr, cc)
        m = lambda: self.mexpr(sc, d - 1, rr, cc)  # noqa: E731
        s = lambda: self.scal(sc, min(d - 1, 1))  # noqa: E731
        c = r.randrange(13)
        if c < 2:
            return f"({m()} {r.choice(['+', '-', '*'])} {m()})"
        if c == 2:
            return r.choice([f"({s()} * {m()})", f"({m()} * {s()})", f"({m()} + {s()})"])
        if c == 3:
            x = s()
            return f"({m()} / ({x} * {x} + 1.0))"
        if c < 6:
            p = r.choice([2, 2, 3])
            return f"({self.mexpr(sc, d - 1, rr, p)} @ {self.mexpr(sc, d - 1, p, cc)})"
        if c == 6:
            return f"{r.choice(['sin', 'tanh', 'cos', 'abs', 'hm.tanh'])}({m()})"
        if c == 7:
            return f"transpose({self.mexpr(sc, d - 1, cc, rr)})"
        if c == 8 and rr == cc:
            return f"inverse({self.well(sc, min(d - 1, 1), rr)})"
        if c == 9:
            return r.choice([f"({m()} if {self.cond(sc, d - 1)} else {m()})", f"where({self.cond(sc, d - 1)}, {m()}, {m()})"])
        if c == 10:
            return f"{r.choice(['minimum', 'maximum'])}({m()}, {r.choice([s(), m()])})"
        if c == 11 and self.sg:
            return f"hm.stop_gradient({m()})"
        return f"(-{m()})"

    def qexpr(self, sc: dict, d: int) -> str:
        """A unit quaternion (Vector[4], (x, y, z, w)): what quat_rotate and quat_to_matrix
        assume; products, conjugates and selections of unit quaternions are unit."""
        r = self.r
        if d <= 0 or r.random() < 0.3:
            if sc["quat"] and r.random() < 0.6:
                return r.choice(sc["quat"])
            if r.random() < 0.5:  # an axis that is never 0
                return f"quat_from_axis_angle(vec(1.0, {self.scal(sc, 1)}, {self.scal(sc, 1)}), {self.scal(sc, 1)})"
            w = self.scal(sc, 1)
            return f"normalize(vec({self.scal(sc, 1)}, {self.scal(sc, 1)}, {self.scal(sc, 1)}, {w} * {w} + 1.0))"
        q = lambda: self.qexpr(sc, d - 1)  # noqa: E731
        c = r.randrange(5)
        if c < 2:
            return f"quat_mul({q()}, {q()})"
        if c == 2:
            return f"quat_conj({q()})"
        if c == 3:
            return f"({q()} if {self.cond(sc, d - 1)} else {q()})"
        return f"where({self.cond(sc, d - 1)}, {q()}, {q()})"

    def nested(self, f: Any, *args: Any) -> Any:
        """f(*args) with no matrix or quaternion expression in the scalars it writes (their
        sizes and their derivatives' would multiply)."""
        self.in_mat = True
        try:
            return f(*args)
        finally:
            self.in_mat = False

    def mat_scal(self, sc: dict, d: int) -> str:
        """A Scalar from matrices or quaternions."""
        r = self.r
        n, dm = self.mn, min(d - 1, 1)  # (small: each matrix is r * c values, each with derivatives)
        rr, cc = r.choice([2, 2, 3]), r.choice([2, 2, 3])
        c = r.randrange(8)
        if c == 0:
            return f"det({self.mexpr(sc, dm, n, n)})"
        if c == 1:
            return f"trace({self.mexpr(sc, dm, n, n)})"
        if c == 2:
            i, j = r.randrange(rr), r.randrange(cc)
            if r.random() < 0.2:
                i, j = i - rr, j - cc  # negative indices count from the end
            return r.choice([f"{self.mexpr(sc, dm, rr, cc)}[{i}, {j}]", f"{self.mexpr(sc, dm, rr, cc)}[{i}][{j}]"])
        if c == 3:
            return f"({self.vecn(sc, d - 1, rr)} @ {self.mexpr(sc, dm, rr, cc)} @ {self.vecn(sc, d - 1, cc)})"
        if c == 4:
            q = self.qexpr(sc, min(d - 1, 1))
            return r.choice([f"{q}[{r.randrange(4)}]", f"quat_rotate({q}, {self.vecn(sc, d - 1, 3)})[{r.randrange(3)}]"])
        if c == 5:
            return r.choice([f"dot({self.qexpr(sc, 1)}, {self.qexpr(sc, 1)})", f"({self.qexpr(sc, 1)} @ {self.vecn(sc, 0, 4)})"])
        if c == 6:
            return f"det({self.well(sc, min(d - 1, 1), n)})"
        return f"inverse({self.well(sc, min(d - 1, 1), n)})[{r.randrange(n)}, {r.randrange(n)}]"

    def linalg_scal(self, sc: dict, d: int) -> str:
        """A Scalar from per-sample linear algebra (feature "linalg", docs/language.md "Linear
        algebra") of n x n matrices, n in 2..4: only of well-conditioned matrices (``well``:
        the identity plus a small perturbation, plus 0.1 T^T T, or a rotation) and SPD ones
        (the identity plus 0.1 T^T T), eigh only of matrices whose eigenvalues are at least 0.4
        apart (``spaced``: equal eigenvalues have no eigenvector derivative, and the rotations'
        derivatives there are noise), and only values continuous in the inputs, so rounding
        never moves a result across a pivot choice or an eigenvalue crossing: solutions,
        inverses, Cholesky factors, eigenvalues and V diag(w) V^T, never the packed LU factor
        or single eigenvectors (whose order and sign follow comparisons)."""
        r = self.r5
        n = r.choice([2, 2, 3, 3, 4])
        dm = min(d - 1, 1)
        i, j = r.randrange(n), r.randrange(n)
        W = lambda: self.well(sc, dm, n)  # noqa: E731
        v = lambda: self.vecn(sc, dm, n)  # noqa: E731

        def spd() -> str:
            t = f"tanh({self.mexpr(sc, dm, r.choice([2, 3]), n)})"
            return f"(hm.eye({n}) + 0.1 * (transpose({t}) @ {t}))"

        def spaced() -> str:  # eigenvalues within 0.2 n < 1 of 2, 4, ..: at least 0.4 apart
            diag = ", ".join(f"{2.0 * (k + 1)}" for k in range(n))
            return f"(hm.diag(vec({diag})) + 0.2 * tanh({self.mexpr(sc, dm, n, n)}))"

        c = r.randrange(10)
        if c == 0:
            return f"hm.solve({W()}, {v()})[0][{i}]"
        if c == 1:
            return f"hm.inv({W()})[0][{i}, {j}]"
        if c == 2:
            return f"hm.lu_solve(hm.lu({W()})[0], {v()})[{i}]"
        if c == 3:
            return f"hm.cholesky({spd()})[0][{i}, {j}]"
        if c == 4:
            return f"hm.cho_solve(hm.cholesky({spd()})[0], {v()})[{i}]"
        if c == 5:
            return f"hm.lstsq({W()}, {v()})[0][{i}]"
        if c == 6:
            return f"hm.eigh({spaced()})[0][{i}]"
        if c == 7:
            a = spaced()
            return f"(hm.eigh({a})[1] @ hm.diag(hm.eigh({a})[0]) @ transpose(hm.eigh({a})[1]))[{i}, {j}]"
        if c == 8:
            m = self.mexpr(sc, dm, n, n)
            return r.choice([f"hm.trace(hm.tril({m}) - hm.triu({m}, 1))", f"(hm.diagonal({m}) @ hm.diag({v()}) @ hm.diagonal({m}))"])
        return f"(float(hm.solve({W()}, {v()})[1] + hm.cholesky({spd()})[1]) + hm.eye({n})[{i}, {j}])"

    def mat_vec(self, sc: dict, d: int) -> str:
        """A width-k vector from matrices or quaternions."""
        r = self.r
        k, p, dm = self.k, r.choice([2, 3]), min(d - 1, 1)
        c = r.randrange(5)
        if c == 0:
            return f"({self.mexpr(sc, dm, k, p)} @ {self.vecn(sc, d - 1, p)})"
        if c == 1:
            return f"{self.mexpr(sc, dm, p, k)}[{r.randrange(p)}]"
        if c == 2:
            return f"({self.vecn(sc, d - 1, p)} @ {self.mexpr(sc, dm, p, k)})"
        if c == 3 and k == 3:
            return f"quat_rotate({self.qexpr(sc, min(d - 1, 1))}, {self.vect(sc, d - 1)})"
        return f"(inverse({self.well(sc, min(d - 1, 1), k)}) @ {self.vect(sc, d - 1)})"

    def mat_statement(self, sc: dict, lines: list[str], ind: str, depth: int) -> None:
        r = self.r
        c = r.randrange(6)
        own = [(m, a, b) for m, a, b in sc["ownmat"]]
        if c == 4 and own:  # assign to a component or a row of a local matrix
            m, a, b = r.choice(own)
            if r.random() < 0.6:
                lines.append(f"{ind}{m}[{r.randrange(a)}, {r.randrange(b) - (b if r.random() < 0.2 else 0)}] = {self.scal(sc, depth - 1)}")
            else:
                lines.append(f"{ind}{m}[{r.randrange(a)}] = {self.vecn(sc, depth - 1, b)}")
            return
        if c == 5:
            name = self.fresh("qt")
            lines.append(f"{ind}{name} = {self.qexpr(sc, min(depth, 3))}")
            sc["quat"].append(name)
            return
        name = self.fresh("m")
        rr, cc = (self.mn, self.mn) if r.random() < 0.6 else (r.choice([2, 2, 3]), r.choice([2, 2, 3]))
        lines.append(f"{ind}{name} = {self.mexpr(sc, min(depth, 2), rr, cc)}")
        sc["mat"].append((name, rr, cc))
        sc["ownmat"].append((name, rr, cc))

    # --- random numbers (docs/language.md "Random numbers")
    def rand_statement(self, sc: dict, lines: list[str], ind: str, depth: int) -> None:
        """A local holding draws, used reparameterized (mu + sigma * z): a constant for AD, so
        every check applies. Draws are written only here and as a term of y0 (feature_uses),
        never inside an expression: the generator repeats an expression's text in places
        (`x * x + 1.0`, a guard and the value it guards), which with a draw in it would draw
        twice, two different numbers."""
        r = self.r
        name = self.fresh("a")
        s = lambda: self.scal(sc, depth - 1)  # noqa: E731
        self.drew = True
        c = r.randrange(8)
        if c == 7:  # the other distributions (constant parameters where the draw carries no
            # derivative in them, or jumps: gamma, poisson, randint, bernoulli; the others' are
            # smooth and differentiate)
            d = r.choice([
                "rng.exponential()", f"rng.lognormal({r.choice(['0.25', '0.5'])})",
                f"rng.gamma({r.choice(['0.5', '2.5'])})", f"float(rng.poisson({r.choice(['3.0', '25.0'])}))",
                f"float(rng.randint({r.choice(['-3', '0'])}, {r.choice(['7', '100'])}))",
                # -0.125 and 0.25: bounds whose erf GCC would fold an ulp from glibc's
                # (double and float), which compiled kernels did until RAPTOR_RNG_LIBM
                "(1.0 if rng.bernoulli(0.3) else 0.0)", f"rng.truncated_normal({r.choice(['-1.0', '-0.125', '0.25'])}, 2.0)",
                "rng.truncated_normal(tanh({t}), tanh({t}) + 1.5)",
            ]).replace("{t}", s())
            lines.append(f"{ind}{name} = {s()} + 0.25 * {d}")
        elif c == 0:
            lines.append(f"{ind}{name} = {s()} + {s()} * rng.normal()")
        elif c == 1:
            lines.append(f"{ind}{name} = rng.{r.choice(['uniform', 'normal'])}()")
        elif c == 2:
            lines.append(f"{ind}{name} = {s()} + ({s()} - {s()}) * rng.uniform()")
        elif c == 3:  # both branches draw (numbering counts both)
            lines.append(f"{ind}{name} = rng.normal() if {self.cond(sc, depth - 1)} else {s()} * rng.uniform()")
        elif c == 4:  # draws in an unrolled loop, numbered in iteration order
            lines.append(f"{ind}{name} = {s()}")
            lines.append(f"{ind}for i in range({r.choice([2, 3])}):")
            lines.append(f"{ind}    {name} = {name} * 0.5 + {self.scal(sc, 1)} * rng.normal()")
        elif c == 5:
            lines.append(f"{ind}{name} = {s()} * (1.0 + 0.1 * rng.normal())")
        else:
            lines.append(f"{ind}{name} = where({self.cond(sc, depth - 1)}, rng.uniform(), {s()})")
        sc["scal"].append(name)

    def feature_params(self, sc: dict, steps: int) -> tuple[list[str], list[str], list[str], list[tuple[str, str, Any]]]:
        """The newer features' inputs, outputs and prologue lines (drawn from r2), and what to
        write to the outputs at the end: (name, kind, data)."""
        r2 = self.r2
        ins: list[str] = []
        outs: list[str] = []
        pro: list[str] = []
        ends: list[tuple[str, str, Any]] = []
        if self.ints:
            for j in range(r2.choice([1, 1, 2])):
                dt = r2.choice(["int32", "int64"])
                ins.append(f"i{j}: Scalar[hawk.{dt}]")
                sc["int"].append((f"i{j}", INT_RANGE[dt], False))
            if r2.random() < 0.25:
                ins.append(f"iv: Vector[{self.k}, hawk.int32]")
                sc["int"] += [(f"iv[{c}]", INT_RANGE["int32"], False) for c in range(self.k)]
            if r2.random() < 0.3:
                ins.append("ip: Param[hawk.int32]")
                sc["int"].append(("ip", INT_RANGE["param"], False))
            for j in range(r2.choice([1, 1, 2])):
                dt = r2.choice(["int32", "int64"])
                outs.append(f"n{j}: Mutable[Scalar[hawk.{dt}]]")
                if r2.random() < 0.4:  # in-out: read before its update, which keeps it within max(range + steps, 1000)
                    sc["int"].append((f"n{j}", max(INT_RANGE[dt] + steps, 1000), False))
                    ends.append((f"n{j}", "int_inout", None))
                else:
                    ends.append((f"n{j}", "int", None))
        if self.mats:
            n = self.mn
            if r2.random() < 0.6:
                rr, cc = (n, n) if r2.random() < 0.6 else (r2.choice([2, 2, 3]), r2.choice([2, 2, 3]))
                ins.append(f"A: Matrix[{rr}, {cc}]")
                sc["mat"].append(("A", rr, cc))
            if r2.random() < 0.4:
                ins.append("qin: Vector[4]")
                q = self.fresh("qt")
                pro.append(f"    {q} = normalize(qin)")
                sc["quat"].append(q)
            if r2.random() < 0.25:
                ins.append(f"tm: Table[Matrix[{n}, {n}]]")
                self.mtable = ("tm", n)
            if r2.random() < 0.6:
                rr, cc = (n, n) if r2.random() < 0.6 else (r2.choice([2, 2, 3]), r2.choice([2, 2, 3]))
                outs.append(f"W: Mutable[Matrix[{rr}, {cc}]]")
                inout = r2.random() < 0.4
                if inout:
                    sc["mat"].append(("W", rr, cc))
                ends.append(("W", "mat_inout" if inout else "mat", (rr, cc)))
            if r2.random() < 0.3:
                outs.append("qo: Mutable[Vector[4]]")
                ends.append(("qo", "quat", None))
        if self.rand:
            ins.append("rng: Random")
        return ins, outs, pro, ends

    def feature_ends(self, sc: dict, lines: list[str], ends: list[tuple[str, str, Any]], depth: int) -> None:
        r = self.r
        for name, kind, data in ends:
            if kind == "int":
                lines.append(f"    {name} = {self.iexpr(sc, min(depth, 3))[0]}")
            elif kind == "int_inout":
                if r.random() < 0.5:
                    lines.append(f"    {name} = {name} + 1 if {self.cond(sc, 1)} else {name}")
                else:
                    lines.append(f"    {name} = ({name} + {self.iexpr(sc, 2)[0]}) % {r.choice([97, 1000, -13])}")
            elif kind in ("mat", "mat_inout"):
                rr, cc = data
                c = r.randrange(3) if kind == "mat_inout" else 0
                if c == 0:
                    lines.append(f"    {name} = {self.mexpr(sc, min(depth, 2), rr, cc)}")
                elif c == 1:
                    lines.append(f"    {name} = {name} * 0.5 + {self.mexpr(sc, 2, rr, cc)}")
                else:  # a component only: the others keep their values
                    lines.append(f"    {name}[{r.randrange(rr)}, {r.randrange(cc)}] = {self.scal(sc, depth - 1)}")
            else:
                lines.append(f"    {name} = {self.qexpr(sc, min(depth, 3))}")

    def feature_uses(self, sc: dict) -> str:
        """Terms of y0 that read the newer features' locals (drawn from r2)."""
        r2 = self.r2
        terms = [f" + 0.01 * float({k} % 97)" for k, _, _ in sc["int"] if r2.random() < 0.5]
        terms += [f" + {f'trace({m})' if a == b else f'{m}[{a - 1}, {b - 1}]'}" for m, a, b in sc["mat"] if r2.random() < 0.5]
        terms += [f" + {q}[{r2.randrange(4)}]" for q in sc["quat"] if r2.random() < 0.5]
        if self.rand and (not self.drew or r2.random() < 0.3):  # every Random kernel draws
            terms.append(f" + {r2.choice(['0.5', '0.1', '-0.25'])} * rng.normal()")
        return "".join(terms)

    def uses(self, sc: dict) -> str:
        """Terms that read the temporaries (so that most of the body reaches an output)."""
        r = self.r
        terms = [f" {r.choice(['+', '-'])} {self.const()} * {a}" for a in sc["scal"] if r.random() < 0.7]
        terms += [f" + where({b}, {self.const()}, 0.0)" for b in sc["bool"] if r.random() < 0.7]
        terms += [f" + {u}[{r.randrange(self.k)}]" for u in sc["vec"] if r.random() < 0.5]
        if self.ints or self.mats or self.rand:
            terms.append(self.feature_uses(sc))
        return "".join(terms)

    def helper_defs(self) -> list[str]:
        r = self.r
        lines: list[str] = []
        for h in range(r.choice([0, 1, 1, 2])):
            name = f"h{h}_{self.seed}"
            arity = r.choice([1, 2, 3])
            pair = r.random() < 0.4
            params = [f"q{j}" for j in range(arity)]
            sc = {"scal": list(params), "vec": [], "bool": [], "own": [], "ownvec": [], "outs_in_if": [], "in_helper": True,
                  **_new_scope()}
            lines += ["@hawk.func", f"def {name}({', '.join(params)}):"]
            body: list[str] = []
            self.statements(sc, body, "    ", r.choice([0, 1, 2]), 2)
            lines += body
            if pair:
                lines.append(f"    return {self.scal(sc, 2)}, {self.scal(sc, 2)}")
            else:
                lines.append(f"    return {self.scal(sc, 3)}")
            lines.append("")
            self.helpers.append((name, arity, pair))
        if r.random() < 0.3:
            self.vhelper = f"hv_{self.seed}"
            lines += ["@hawk.func", f"def {self.vhelper}(u, s):", "    return u * s + u / (s * s + 1.0)", ""]
        return lines

    def scatter_adds(self, sc: dict, lines: list[str], sw: int, depth: int) -> None:
        """One or two ``hawk.scatter(sct)[i] += v``: i a float mapped into [0, M) (rounded
        down), an int expression % M, or rarely unguarded (out of range for some samples: the
        table error both sides report); v a Scalar or a Vector[k]; a third under an ``if``."""
        # These lines draw from r8 (the expression writers read self.r), and the other streams
        # they touch (a feature's own, as numpy's r4) are put back after them: the rest of the
        # kernel is the one not drawn to scatter, byte for byte, these lines and the parameter
        # added.
        streams = [name for name in ("r", "r2", "r3", "r4", "r5", "r6", "r7") if hasattr(self, name)]
        saved = {name: getattr(self, name).getstate() for name in streams}
        main, self.r = self.r, self.r8
        try:
            self._scatter_lines(sc, lines, sw, depth)
        finally:
            self.r = main
            for name in streams:
                getattr(self, name).setstate(saved[name])

    def _scatter_lines(self, sc: dict, lines: list[str], sw: int, depth: int) -> None:
        r8 = self.r8
        for _ in range(1 if r8.random() < 0.7 else 2):
            form = r8.random()
            if form < 0.04:
                idx = f"{self.scal(sc, 1)} * 3.0"
            elif form < 0.4 and sc["int"]:
                idx = f"({self.iexpr(sc, 2)[0]}) % M"
            else:
                idx = f"(tanh({self.scal(sc, depth - 1)}) * 0.499 + 0.5) * M"
            val = self.scal(sc, depth - 1) if sw == 1 else self.vect(sc, depth - 1)
            stmt = f"hawk.scatter(sct)[{idx}] += {val}"
            if r8.random() < 0.3:
                lines += [f"    if {self.cond(sc, 1)}:", f"        {stmt}"]
            else:
                lines.append(f"    {stmt}")

    def kernel(self) -> GenKernel:
        r = self.r
        name = f"fz_{self.seed}"
        steps = r.choice([1, 1, 1, 2, 3]) if r.random() < 0.8 else 1
        mask = steps > 1 and r.random() < 0.7 or r.random() < 0.2
        nx = r.choice([1, 2, 3])
        params: list[str] = [f"x{j}: Scalar" for j in range(nx)]
        sc: dict[str, Any] = {"scal": [f"x{j}" for j in range(nx)], "vec": [], "bool": [], "own": [], "ownvec": [], "outs_in_if": [],
                              **_new_scope()}
        if r.random() < 0.5:
            params.append(f"v: Vector[{self.k}]")
            sc["vec"].append("v")
        for j in range(r.choice([0, 1, 2])):
            params.append(f"p{j}: Param")
            sc["scal"].append(f"p{j}")
        if r.random() < 0.5:
            w = r.choice([1, self.k])
            params.append(f"tb: Table[{'Scalar' if w == 1 else f'Vector[{w}]'}]")
            self.tables.append(("tb", w))
        helpers = self.helper_defs()
        new_ins, new_outs, prologue, ends = self.feature_params(sc, steps)
        params += new_ins
        outs = ["y0"] + (["y1"] if r.random() < 0.4 else [])
        params += [f"{o}: Mutable[Scalar]" for o in outs]
        state = steps > 1 or r.random() < 0.3
        if state:  # an in-out plane, read before it is written
            params.append("s: Mutable[Scalar]")
            sc["scal"].append("s")
        wvec = r.random() < 0.3
        winout = wvec and r.random() < 0.5
        if wvec:
            params.append(f"w: Mutable[Vector[{self.k}]]")
            if winout:
                sc["vec"].append("w")
        params += new_outs
        sums = self.sums and steps == 1
        if sums:  # one or two sums over the samples (docs/language.md "Sums over samples")
            nsum = 1 if self.r6.random() < 0.6 else 2
            params += [f"tot{j}: Mutable[Param]" for j in range(nsum)]
        scat = self.scatter and steps == 1
        if scat:  # a scatter target (docs/language.md "Scatter-adds"): its form from r8
            sw = 1 if self.r8.random() < 0.6 else self.k
            params.append(f"sct: Mutable[Table[{'Scalar' if sw == 1 else f'Vector[{sw}]'}]]")
        if mask:
            params.append("done: Terminated")
        sc["outs_in_if"] = [o for o in outs[1:]]
        lines = [f"@hawk.kernel(steps={steps})" if steps > 1 else "@hawk.kernel", f"def {name}({', '.join(params)}):"]
        depth = r.choice([2, 3, 3, 4])
        body: list[str] = list(prologue)
        count = r.choice([1, 2, 3, 4, 5])
        if self.longl:  # the statements split around one or two long loops (the same draws from r up to the first)
            split = self.r3.randrange(count + 1)
            self.statements(sc, body, "    ", split, depth)
            for _ in range(1 if self.r3.random() < 0.8 else 2):
                self.long_loop(sc, body, "    ", depth)
            self.statements(sc, body, "    ", count - split, depth)
        else:
            self.statements(sc, body, "    ", count, depth)
        lines += body
        lines.append(f"    y0 = {self.scal(sc, depth)}{self.uses(sc)}")
        if len(outs) > 1 and (r.random() < 0.7 or "    y1 = " not in "\n".join(body)):
            lines.append(f"    y1 = {self.scal(sc, depth)}")
        if wvec:
            if winout and r.random() < 0.5:
                lines.append(f"    w[{r.randrange(self.k)}] = {self.scal(sc, depth - 1)}")
            else:
                lines.append(f"    w = {self.vect(sc, depth - 1)}")
        if state:
            lines.append(f"    s = s + 0.25 * tanh({self.scal(sc, depth - 1)})")
        if sums:  # (scal draws from r as usual; which form, from r6)
            for j in range(nsum):  # one r6 draw per sum: where= below 0.5, a mean from 0.75 (no mask)
                u = self.r6.random()
                where = f", where={self.cond(sc, 1)}" if u < 0.5 else ""
                fn = "mean" if u >= 0.75 and not mask else "sum"
                # hawk.min / hawk.max from two slices of that same draw, [0.4375, 0.5) with
                # where= and [0.5, 0.5625) without: a kernel drawn no min / max is unchanged
                if 0.4375 <= u < 0.5625:
                    fn = "min" if u < 0.46875 or 0.5 <= u < 0.53125 else "max"
                # hawk.mean(expr, where=c) from the slice [0.375, 0.4375) of where= sums (no
                # mask): its count is an earlier stage, so the kernel runs as stages
                if 0.375 <= u < 0.4375 and not mask:
                    fn = "mean"
                lines.append(f"    tot{j} = hawk.{fn}({self.scal(sc, depth - 1)}{where})")
        if sums and not mask and self.r9.random() < 0.4:  # a stage boundary: which form from r9
            if self.r9.random() < 0.5:
                lines.append(f"    y0 = y0 + 0.5 * tanh(tot{self.r9.randrange(nsum)})")
            else:
                lines.append(f"    y0 = y0 - hawk.mean({self.scal(sc, depth - 1)})")
        if scat:  # (every draw from r8)
            self.nested(self.scatter_adds, sc, lines, sw, depth)
        self.nested(self.feature_ends, sc, lines, ends, depth)
        if mask:
            c = self.cond(sc, 1) if r.random() < 0.5 else f"(s > {r.choice(['0.5', '1.0', '-0.25'])})" if state else self.cond(sc, 1)
            if r.random() < 0.3:
                lines.append(f"    if {self.cond(sc, 1)}:")
                lines.append(f"        done = {c}")
            else:
                lines.append(f"    done = {c}")
        header = HEADER + (FEATURE_HEADER if self.ints or self.mats or self.rand or self.la else "")
        source = header + f"\nM = {self.m}\n\n" + "\n".join(helpers) + "\n" + "\n".join(lines) + "\n"
        return GenKernel(self.seed, name, source, self.m, r.choice([1, 7, 37, 70]))


FEATURES = ("exits", "stop_gradient", "int", "matrix", "random", "long_loops", "numpy", "linalg", "numbered",
            "sums", "scatter")  # the newer constructs generate writes by default


def generate(seed: int, features: tuple[str, ...] = FEATURES) -> GenKernel:
    """The kernel of ``seed`` (the same text for the same seed and features). features:
    "exits" (`break`/`continue` in loops under data-dependent conditions), "stop_gradient"
    (``hm.stop_gradient(...)`` in expressions), "int" (integer planes, Params, locals and
    outputs), "matrix" (Matrix planes and locals, hawk.math's matrix and quaternion
    functions), "random" (an ``rng: Random`` parameter and its draws); () gives the kernels of
    the generator before all of them (the seeds of fuzzer findings made then), ("exits",
    "stop_gradient") those of the generator before the last three."""
    return _Gen(seed, features).kernel()


def features_of(seed: int, features: tuple[str, ...] = FEATURES) -> set[str]:
    """Which of the per-kernel features (of "int", "matrix", "random", "stop_gradient") the
    kernel of ``seed`` was drawn to have (each in a share of the kernels; "exits" is drawn per
    statement instead)."""
    g = _Gen(seed, features)
    drawn = {"int": g.ints, "matrix": g.mats, "random": g.rand, "stop_gradient": g.sg, "long_loops": g.longl,
             "numpy": g.npf, "linalg": g.la, "numbered": g.numbered, "sums": g.sums, "scatter": g.scatter}
    return {f for f, on in drawn.items() if on}


# ---------------------------------------------------------------- running kernels


def _shape(slot: Any, n: int, m: int) -> tuple[int, ...]:
    """The array shape of a slot: a Matrix[r, c] is (r, c, N) as a plane, (M, r, c) as a table."""
    inner = (slot.rows, slot.width // slot.rows) if slot.rows else (slot.width,) if slot.is_vector else ()
    if slot.kind in ("table", "table_sum"):
        return (m, *inner)
    if slot.kind == "param_sum":
        return (slot.width,)
    return (*inner, n)


_INT_DTYPES = {"int32": np.int32, "int64": np.int64, "bool": np.bool_}


def _np_dtype(slot: Any, float_dtype: Any) -> Any:
    """The element type eagle binds a slot with: the build's float dtype, or the slot's own."""
    return float_dtype if slot.dtype == "float" else _INT_DTYPES[slot.dtype]


def float_inputs(kernel: Any) -> list[str]:
    """The inputs derivatives can be taken with respect to (float planes, Params, Tables,
    in-out Mutables; not integer ones, which have no derivative, nor the Random key)."""
    return [s.name for s in kernel.slots
            if s.dtype == "float" and (s.kind in ("plane", "param", "table") or (s.kind == "mutable" and s.inout))]


def outputs_of(kernel: Any) -> list[str]:
    """The outputs with derivatives: float Mutables and sums over samples (hawk.sum's
    Mutable[Param]; an integer output has no tangent or cotangent; the compiled-vs-interpreter
    check compares it all the same, exactly)."""
    return [s.name for s in kernel.slots if (s.kind in ("mutable", "param_sum") or _scatter(s)) and s.dtype == "float"]


def _scatter(slot: Any) -> bool:
    """A scatter target (Mutable[Table], ``hawk.scatter(t)[i] += v``): bound like a table, an
    output like a sum; where a derived kernel's is not given (a tangent's), it starts at 0."""
    return slot.kind == "table_sum" and slot.inout


def make_values(kernel: Any, n: int, m: int, rng: np.random.Generator) -> dict[str, Any]:
    """Random inputs for every input slot of a primal kernel (float64; the mask as bool;
    integer planes and Params as ints within INT_RANGE, the bounds the generator assumes;
    the Random key as the uint32 (2,) key plan.bind takes, see launch_key)."""
    out: dict[str, Any] = {}
    for s in kernel.slots:
        if s.kind == "param" and s.dtype != "float":
            out[s.name] = int(rng.integers(-INT_RANGE["param"], INT_RANGE["param"] + 1))
        elif s.kind == "param":
            out[s.name] = float(rng.uniform(-1.5, 1.5))
        elif (s.kind in ("plane", "table") or (s.kind == "mutable" and s.inout)) and s.dtype in ("int32", "int64"):
            b = INT_RANGE[s.dtype]
            out[s.name] = rng.integers(-b, b + 1, _shape(s, n, m)).astype(_INT_DTYPES[s.dtype])
        elif (s.kind in ("plane", "table") or (s.kind == "mutable" and s.inout)) and s.dtype == "bool":
            out[s.name] = rng.random(_shape(s, n, m)) < 0.5
        elif s.kind in ("plane", "table") or (s.kind == "mutable" and s.inout) or _scatter(s):
            out[s.name] = rng.standard_normal(_shape(s, n, m))
        elif s.kind == "terminated":
            out[s.name] = rng.random(n) < 0.2
        elif s.kind == "random":
            out[s.name] = rng.integers(0, 2**32, 2, dtype=np.uint64).astype(np.uint32)
    return out


# ---------------------------------------------------------------- the Random key

_M32 = 0xFFFFFFFF


def _threefry2x32(k0: int, k1: int, x0: int, x1: int) -> tuple[int, int]:
    """jax's threefry2x32 hash of one pair (jax/_src/prng.py, 20 rounds)."""
    rot = ((13, 15, 26, 6), (17, 29, 16, 24))
    ks = (k0, k1, k0 ^ k1 ^ 0x1BD11BDA)
    x0, x1 = (x0 + ks[0]) & _M32, (x1 + ks[1]) & _M32
    for i in range(5):
        for r in rot[i % 2]:
            x0 = (x0 + x1) & _M32
            x1 = ((x1 << r) | (x1 >> (32 - r))) & _M32
            x1 ^= x0
        x0 = (x0 + ks[(i + 1) % 3]) & _M32
        x1 = (x1 + ks[(i + 2) % 3] + i + 1) & _M32
    return x0, x1


def launch_key(key: Any, launch: int = 0) -> tuple[int, int]:
    """The key words launch `launch` of a kernel bound with ``rng=key`` (a uint32 (2,) key)
    draws with: ``jax.random.fold_in(key, launch)`` (docs/language.md "Random numbers": eagle
    folds the launch count in). The interpreter and the JAX bridge use the key they are given
    as it is, so both are given this one; tests/test_differential.py checks it against jax."""
    k = np.asarray(key, np.uint32)
    return _threefry2x32(int(k[0]), int(k[1]), 0, int(launch) & _M32)


def direction(kernel: Any, values: dict[str, Any], names: Iterable[str], rng: np.random.Generator) -> dict[str, Any]:
    return {w: (float(rng.standard_normal()) if np.ndim(values[w]) == 0 else rng.standard_normal(np.shape(values[w]))) for w in names}


def roles(kernel: Any, role: str) -> dict[str, str]:
    """{primal name: slot name} of a derived kernel's slots with `role` ('t' or 'c')."""
    return {prim: s.name for s, (r, prim) in zip(kernel.slots, kernel._core.slot_roles()) if r == role}


# The interpreter's integer errors (runtime/abi.h) as a Run's error[0]: the words the compiled
# launch's RuntimeError says (runtime/launch.cpp describe_error).
INT_ERRORS = {2: "integer division or modulo by zero", 3: "int() of NaN, an infinity or a float beyond int64"}


@dataclass
class Run:
    """The results of one run: every output and sum (float64, flattened), the final mask and
    the table error (None, or (slot name, index, sample) where known)."""

    outs: dict[str, np.ndarray]
    mask: np.ndarray | None
    error: Any
    sum_abs: dict[str, np.ndarray] = field(default_factory=dict)


def interpret(kernel: Any, n: int, m: int, values: dict[str, Any], float32: bool = False, perturb_ulps: int = 0,
              zero_finished: bool = False, perturb_products: bool = False) -> Run:
    """The reference interpreter over `values` (as the build of that dtype would read them);
    perturb_ulps moves every inexact library result by that many ulps (and with
    perturb_products every product by 1 to 16 ulps, up or down by its place: FMA contraction's model);
    zero_finished: a sample masked on entry gets 0 in its pure outputs (the JAX bridge's
    semantics)."""
    ins: dict[str, list[float]] = {}
    mask: list[int] = []
    for s in kernel.slots:
        if s.kind == "terminated":
            mask = [int(b) for b in np.asarray(values[s.name], bool)]
        elif s.kind == "param":
            ins[s.name] = [float(values[s.name])]
        elif s.kind == "random":  # launch 0's key, as a build bound with rng=values[...] draws
            ins[s.name] = [float(w) for w in launch_key(values[s.name])]
        elif s.kind in ("plane", "table") or (s.kind == "mutable" and s.inout):
            a = np.asarray(values[s.name], np.float64)  # ints as doubles: exact within 2**53
            if float32 and s.dtype == "float":
                a = a.astype(np.float32).astype(np.float64)
            ins[s.name] = a.reshape(-1).tolist()
        elif _scatter(s):  # its bound values (0 where not given: a tangent kernel's)
            a = np.asarray(values.get(s.name, np.zeros(_shape(s, n, m))), np.float64)
            if float32:
                a = a.astype(np.float32).astype(np.float64)
            ins[s.name] = a.reshape(-1).tolist()
    outs, sum_abs, mask_out, _finished, err = kernel._core.interpret(n, ins, mask, zero_finished, float32, perturb_ulps,
                                                                     perturb_products=perturb_products)
    error = None
    if err[0] == 1:  # RAPTOR_ERR_TABLE_INDEX: the table by name (a TableSum's error is its table's, as the runtime says)
        slot = kernel.slots[err[1]]
        error = (kernel.slots[slot.table_of].name if slot.kind == "table_sum" else slot.name, err[2], err[3])
    elif err[0] != 0:  # an integer division by zero (2) or int() of NaN / inf / beyond int64 (3): the line
        error = (INT_ERRORS.get(err[0], f"error code {err[0]}"), err[1], err[3])
    has_mask = any(s.kind == "terminated" for s in kernel.slots)
    return Run({k: np.asarray(v, np.float64) for k, v in outs.items()}, np.asarray(mask_out, bool) if has_mask else None,
               error, {k: np.asarray(v, np.float64) for k, v in sum_abs.items()})


def _bound_copies(k: Any, n: int, m: int, values: dict[str, Any], dtype: Any) -> dict[str, Any]:
    """Fresh arrays (and Param values) for binding `k` to `values` in `dtype`, as ``launch``
    binds them: outputs, sums and a scatter target not in `values` zeroed."""
    arrays: dict[str, Any] = {}
    for s in k.slots:
        if s.kind == "param":
            arrays[s.name] = float(values[s.name]) if s.dtype == "float" else int(values[s.name])
        elif s.kind == "terminated":
            arrays[s.name] = np.array(values[s.name], bool)
        elif s.kind == "random":
            arrays[s.name] = np.array(values[s.name], np.uint32)
        elif s.kind in ("plane", "table") or (s.kind == "mutable" and s.inout) or (_scatter(s) and s.name in values):
            arrays[s.name] = np.array(values[s.name], _np_dtype(s, dtype))
        else:
            arrays[s.name] = np.zeros(_shape(s, n, m), _np_dtype(s, dtype))
    return arrays


def launch(plan: Any, n: int, m: int, values: dict[str, Any], dtype: Any) -> Run:
    """The compiled plan over copies of `values` in `dtype` (outputs and sums zeroed; a scatter
    target not in `values` too)."""
    return _launched(plan, n, m, values, dtype)[0]


def _launched(plan: Any, n: int, m: int, values: dict[str, Any], dtype: Any) -> tuple[Run, dict[str, Any]]:
    """``launch``, and every array the launch bound (a staged plan's hidden sums included)."""
    k = plan.kernel
    arrays = _bound_copies(k, n, m, values, dtype)
    error = None
    bound = plan.bind(**arrays)
    try:
        bound.launch()
    except RuntimeError as err:
        error = str(err)
    outs = {s.name: np.asarray(arrays[s.name], np.float64).reshape(-1) for s in k.slots if s.kind in ("mutable", "param_sum", "table_sum")}
    mask = next((arrays[s.name] for s in k.slots if s.kind == "terminated"), None)
    return Run(outs, mask, error), {**getattr(bound, "arrays", {}), **arrays}


def check_staged(g: GenKernel, k: Any, plan: Any, st: Stats) -> None:
    """A staged kernel launched whole (eagle/stages.py: its stages bound together) in both
    dtypes, each stage against the interpreter run on that stage's inputs with the sums the
    launch's earlier stages wrote (so the sums' order, which the interpreter does not share,
    is not amplified by what reads them): sums and planes exactly
    (or within what LIBM_ULPS moves them), a table error where the interpreter has one."""
    n, m = g.n, g.table_size
    values = make_values(k, n, m, np.random.default_rng(g.seed + 3))
    links = {l.param: l.sum for l in k.stage_links}
    for dtype in (np.float64, np.float32):
        got, arrays = _launched(plan, n, m, values, dtype)
        f32 = dtype is np.float32
        for j, stage in enumerate(k.stages):
            vals = dict(values)
            vals.update({p: float(np.asarray(arrays[s]).reshape(-1)[0]) for p, s in links.items()})
            want = interpret(stage, n, m, vals, float32=f32)
            moved = tuple(interpret(stage, n, m, vals, float32=f32, perturb_ulps=u) for u in (LIBM_ULPS, -LIBM_ULPS) if u)
            outs = {s.name: np.asarray(arrays[s.name], np.float64).reshape(-1) for s in stage.slots
                    if s.kind in ("mutable", "param_sum", "table_sum")}
            last = j == len(k.stages) - 1
            if want.error is not None:  # the launch stops at the stage that reports it
                if got.error is None:
                    st.mismatches.append(Mismatch(g.seed, "staged", f"stage {j + 1}: interpreter {want.error!r}, "
                                                  "the launch none", g.report()))
                    return
                st.table_errors += 1
                break
            why = compare(stage, Run(outs, got.mask, got.error if last else None), want, dtype, moved)
            st.runs_compared += 1
            if why:
                st.mismatches.append(Mismatch(g.seed, f"staged (stage {j + 1})", why, g.report()))
                return


# Budgets of the stepping loop check (check_loop), each a run or runs in pieces: under
# FUSED_MIN launches (single launches), one pass, passes cut at odd places, two passes of 1024
# and 76 launches.
LOOP_PIECES = ((3,), (37,), (9, 1, 30), (1100,))


def _plain_loop(plan: Any, arrays: dict[str, Any], mask: str, budget: int) -> tuple[int, str | None]:
    """``bound.launch()`` over `arrays` until no sample of `mask` is live or `budget` launches
    ran (docs/runtime.md "Stepping loops"): the launches made and the error message, if one
    launch raised."""
    bound = plan.bind(**arrays)
    launches = 0
    try:
        while launches < budget and not arrays[mask].all():
            bound.launch()
            launches += 1
    except RuntimeError as err:
        return launches, str(err)
    return launches, None


def _simulated(plan: Any, mask: str, record: bool) -> Any:
    """A runner of check_loop's for ``eagle.simulate(plan, ..., record=record)``, which takes
    no mask (every sample starts live) and writes the arrays it is given: the launches it
    made, with its result's mask copied into ``arrays[mask]``."""
    import eagle

    def run(arrays: dict[str, Any], pieces: tuple[int, ...]) -> int:
        res = eagle.simulate(plan, max_steps=sum(pieces), record=record, **{k: v for k, v in arrays.items() if k != mask})
        arrays[mask][...] = res.finished
        return res.steps

    return run


def check_loop(g: GenKernel, k: Any, plan: Any, st: Stats, role: str = "") -> None:
    """A kernel with a Terminated mask stepped by ``eagle.until_done([plan])`` against its plain
    loop (``bound.launch()`` until no sample is live or the budget is spent; docs/runtime.md
    "Stepping loops": a run's ``steps`` is that loop's launches), bit for bit in both dtypes:
    every bound array (planes, the mask, sums, scatter targets) and the launch count, for
    each budget of LOOP_PIECES (runs in pieces go on where the last stopped). A loop of one
    kernel without draws or sums over samples runs fused 1024-step passes of lanes refilled
    as samples finish (codegen/host_driver.cpp, refill_body), a different program from the
    plain launch; the others run single launches in the C++ loop. Then the device loop's plan
    on the CPU (``eagle.loop.device_emulation``, both variants) over the same budgets, and
    ``eagle.simulate`` (through until_done, and recorded: a recorded graph launched one step
    at a time) over one pass from every sample live. Where the plain loop reports a kernel
    error the loop must report the same message (the arrays are not compared: loop_errors).
    `role` names a derived kernel in the report ("tangent": _check_one steps the tangent
    kernel too, as a loop of forward sensitivities would)."""
    import eagle.loop

    if not any(s.kind == "terminated" for s in k.slots):
        return
    n, m = g.n, g.table_size
    values = make_values(k, n, m, np.random.default_rng([g.seed, 5]))
    mask = next(s.name for s in k.slots if s.kind == "terminated")
    live = {**values, mask: np.zeros(n, bool)}

    def stepped(make: Any, count_fused: bool) -> Any:
        def run(arrays: dict[str, Any], pieces: tuple[int, ...]) -> int:
            runner = make(arrays)
            if count_fused and runner.fused:
                st.loop_fused += 1
            return sum(runner.run(max_steps=b).steps for b in pieces)
        return run

    # (what, make the runner, whether its fused passes are counted: until_done's are)
    loops = [("until_done", lambda a: eagle.loop.until_done([plan], **a), True)]
    loops += [(f"device_emulation ({v})", lambda a, v=v: eagle.loop.device_emulation([plan], variant=v, **a), False)
              for v in ("while", "batched")]
    cases = [(what, pieces, values, stepped(make, counted)) for pieces in LOOP_PIECES for what, make, counted in loops]
    cases += [(f"simulate (record={r})", (37,), live, _simulated(plan, mask, r)) for r in (False, True)]
    for dtype in (np.float64, np.float32):
        plain_runs: dict[tuple[int, int], tuple[dict[str, Any], int, str | None]] = {}
        for what, pieces, start, run in cases:
            key = (id(start), sum(pieces))
            if key not in plain_runs:
                plain = _bound_copies(k, n, m, start, dtype)
                plain_runs[key] = (plain, *_plain_loop(plan, plain, mask, sum(pieces)))
            plain, launches, error = plain_runs[key]
            looped = _bound_copies(k, n, m, start, dtype)
            why = None
            try:
                steps = run(looped, pieces)
            except RuntimeError as err:
                why = None if error == str(err) else f"the loop raised {err}, the plain loop {error or 'nothing'}"
            else:
                if error is not None:
                    why = f"the plain loop raised {error}, the loop nothing"
                elif steps != launches:
                    why = f"{steps} steps, the plain loop {launches} launches"
                else:
                    names = [nm for nm, x in plain.items() if isinstance(x, np.ndarray)]
                    why = _bits_differ(names, [looped[nm] for nm in names], [plain[nm] for nm in names],
                                       labels=("the loop", "the plain loop"))
            if why:
                of = f" of the {role}" if role else ""
                st.mismatches.append(Mismatch(g.seed, f"{what}{of} ({np.dtype(dtype).name}, runs of {pieces})-vs-plain loop", why,
                                              g.report()))
                return
            if error is not None:
                st.loop_errors += 1
            st.loop_compared += 1


REVERSE_LAUNCHES = 37  # the recorded run of check_reverse: at most this many launches
REVERSE_RTOL = 1e-8  # of the identity's terms' magnitudes: rounding over a few dozen launches


def check_reverse(g: GenKernel, k: Any, plan: Any, tk: Any, ptk: Any, wrt: list[str], st: Stats) -> None:
    """Reverse gradients through a record (eagle/diff.py) against forward sensitivities: a
    kernel with a Terminated mask run by ``eagle.simulate(..., record=True)`` (at most
    REVERSE_LAUNCHES launches from every sample live), ``eagle.diff.reverse`` of its record
    seeded with a random cotangent of every float output, against the tangent kernel `tk`
    (with its primal) stepped in a plain loop from the same start along a random direction
    of every float input: ``<reverse(ct), t> == <ct, tangent(t)>`` within REVERSE_RTOL of the
    terms' magnitudes. The two share nothing but the kernel: the reverse sweep restores each
    launch's overwritten planes from the record and runs the adjoint kernel backwards over
    them, the tangent runs forwards. Kernels with sums over samples (which the sweep refuses
    for scatters and folds) and tangents without their primal are not checked; neither is a
    run that errs, a sum that is not finite, nor a kernel whose adjoint the compiler refuses
    (a Table read in a long loop: the sweep differentiates every float input) (reverse_skipped)."""
    import eagle
    import eagle.diff

    mask = next((s.name for s in k.slots if s.kind == "terminated"), None)
    primal = {s.name for s in k.slots if s.kind == "mutable"}
    if mask is None or k.sums_over_samples() or not primal <= {s.name for s in tk.slots}:
        return
    n, m = g.n, g.table_size
    rng = np.random.default_rng([g.seed, 7])
    values = {**make_values(k, n, m, rng), mask: np.zeros(n, bool)}
    t = direction(k, values, wrt, rng)
    tn = roles(tk, "t")
    outs = outputs_of(k)
    ct = {o: rng.standard_normal(_shape(k.slot(o), n, m)) for o in outs}
    arrays = _bound_copies(k, n, m, values, np.float64)
    try:
        res = eagle.simulate(plan, max_steps=REVERSE_LAUNCHES, record=True, **{x: v for x, v in arrays.items() if x != mask})
    except RuntimeError:
        st.reverse_skipped += 1
        return
    tarrays = _bound_copies(tk, n, m, {**values, **{tn[w]: t[w] for w in wrt}}, np.float64)
    launches, error = _plain_loop(ptk, tarrays, mask, REVERSE_LAUNCHES)
    if error is not None:
        st.mismatches.append(Mismatch(g.seed, "reverse-vs-tangent", f"the tangent loop raised {error}, the recorded run nothing",
                                      g.report()))
        return
    why = None
    if launches != res.steps:
        why = f"the recorded run made {res.steps} launches, the tangent loop {launches}"
    else:
        names = sorted(primal)
        why = _bits_differ(names, [tarrays[x] for x in names], [arrays[x] for x in names], labels=("the tangent loop", "the run"))
    if why:
        st.mismatches.append(Mismatch(g.seed, "reverse-vs-tangent (the primal run)", why, g.report()))
        return
    try:
        grads = eagle.diff.reverse(res.record, seeds=ct)
    except ValueError as err:  # the sweep takes every float input: a Table read in a long loop is refused
        if "not available yet" not in str(err):
            raise
        st.reverse_skipped += 1
        return
    keys = {w: w if k.slot(w).kind != "param" else f"{k.name}.{w}" for w in wrt}  # (a Param's: "node.param")
    missing = [key for key in keys.values() if key not in grads]
    if missing:
        st.mismatches.append(Mismatch(g.seed, "reverse-vs-tangent", f"no cotangent for {missing} (got {sorted(grads)})", g.report()))
        return
    terms = [np.asarray(grads[keys[w]], np.float64).reshape(-1) * np.asarray(t[w], np.float64).reshape(-1) for w in wrt]
    lhs_terms = np.concatenate(terms) if terms else np.zeros(0)
    rhs_terms = np.concatenate([ct[o].reshape(-1) * np.asarray(tarrays[tn[o]], np.float64).reshape(-1) for o in outs]) if outs else np.zeros(0)
    lhs, rhs = float(lhs_terms.sum()), float(rhs_terms.sum())
    scale = float(np.abs(lhs_terms).sum() + np.abs(rhs_terms).sum())
    if not np.isfinite(scale):
        st.reverse_skipped += 1
        return
    if abs(lhs - rhs) > REVERSE_RTOL * scale + 1e-300:
        st.mismatches.append(Mismatch(g.seed, "reverse-vs-tangent", f"<reverse(ct), t> = {lhs!r}, <ct, tangent(t)> = {rhs!r} "
                                      f"(terms' magnitudes {scale:.3g}) after {launches} launches", g.report()))
        return
    st.reverse_checked += 1


def check_jax_staged(g: GenKernel, k: Any, plan: Any, st: Stats) -> None:
    """A staged kernel through ``eagle.frameworks.jax.function(k, lowering="ffi")`` (its
    stages' functions composed, each link's sum handed on as a 0-d array) against the launch
    of its `plan` (eagle/stages.py: the stages bound together on eagle's launcher), bit for
    bit in float64 and, for kernels without int64 slots, in float32 (JAX without x64): the
    same compiled stages, and a sum never depends on the thread count or the chunking
    (docs/runtime.md), so the call on XLA's thread equals the launch. Then jax.vmap of it
    over two input sets (every argument batched on its leading axis), each entry the call
    on its set, bit for bit. A set whose launch reports an error is not compared
    (jax_staged_skipped); each dtype compared counts once in jax_staged_compared."""
    import jax

    from eagle.frameworks import jax as eagle_jax

    n, m = g.n, g.table_size
    sets = [make_values(k, n, m, np.random.default_rng(g.seed + 3)), make_values(k, n, m, np.random.default_rng([g.seed, 3]))]
    prev = jax.config.jax_enable_x64
    try:
        for dtype in (np.float64, np.float32):
            if dtype is np.float32 and any(s.dtype == "int64" for s in k.slots):
                break
            jax.config.update("jax_enable_x64", dtype is np.float64)
            launched = [_launched(plan, n, m, v, dtype) for v in sets]
            if any(run.error is not None for run, _ in launched):
                st.jax_staged_skipped += 1
                continue
            f = eagle_jax.function(k, lowering="ffi")
            args = [[x.astype(dtype) if x.dtype.kind == "f" else x for x in _bridge_args(f, k, v)] for v in sets]
            calls = []
            for (run, arrays), a in zip(launched, args):
                got = f(*a)
                got = got if isinstance(got, tuple) else (got,)
                calls.append(got)
                want = [np.asarray(arrays[name]).reshape(np.shape(x)) for name, x in zip(f.outputs, got)]
                why = _bits_differ(f.outputs, got, want, labels=("the bridge", "the launch"))
                if why:
                    st.mismatches.append(Mismatch(g.seed, f"staged through jax ({np.dtype(dtype).name})-vs-launch", why, g.report()))
                    return
            res = jax.vmap(f)(*[np.stack(xs) for xs in zip(*args)])
            res = res if isinstance(res, tuple) else (res,)
            for e, want in enumerate(calls):
                why = _bits_differ(f.outputs, [np.asarray(r)[e] for r in res], want)
                if why:
                    st.mismatches.append(Mismatch(g.seed, f"staged through jax.vmap ({np.dtype(dtype).name})-vs-calls",
                                                  f"entry {e}, {why}", g.report()))
                    return
            st.jax_staged_compared += 1
    finally:
        jax.config.update("jax_enable_x64", prev)


# ---------------------------------------------------------------- the checks


@dataclass
class Mismatch:
    """One failed check: enough to reproduce it (the seed, the kernel source)."""

    seed: int
    check: str
    detail: str
    source: str

    def __str__(self) -> str:
        return f"MISMATCH seed={self.seed} check={self.check}: {self.detail}\n--- kernel source (seed {self.seed}) ---\n{self.source}"


COUNTS = ("seeds", "kernels", "stages", "runs_compared", "fd_elements", "fd_skipped", "adjoint_checked", "adjoint_skipped", "table_errors",
          "xla_compared", "xla_int_compared", "xla_unsupported", "xla_skipped", "xla_table_errors", "fd_stop_gradient", "adjoint_tables_refused",
          "jax_jvp_compared", "jax_vjp_compared", "jax_ad_skipped", "jax_f32_compared", "jax_vmap_compared", "jax_vmap_skipped",
          "jax_vmap_f32_compared", "jax_vmap_nested_compared", "jax_staged_compared", "jax_staged_skipped", "loop_compared",
          "loop_fused", "loop_errors", "reverse_checked", "reverse_skipped")


@dataclass
class Stats:
    seeds: int = 0  # kernels generated (one per seed)
    kernels: int = 0  # kernels checked: a staged kernel's stages each
    stages: int = 0  # of those, stages of staged kernels (each also compared in the whole launch)
    runs_compared: int = 0
    fd_elements: int = 0
    fd_skipped: int = 0  # elements near a kink or a jump, or not finite
    adjoint_checked: int = 0
    adjoint_skipped: int = 0  # not finite
    table_errors: int = 0  # runs where both sides reported the same table error
    xla_compared: int = 0  # kernels run through the JAX "xla" lowering against the interpreter
    xla_int_compared: int = 0  # of those, kernels with integer planes or Params
    xla_unsupported: int = 0  # kernels the "xla" lowering refuses (it names why: _jax_xla.OpList.unsupported)
    xla_skipped: int = 0  # xla runs not compared: the mask flips within XLA_ULPS
    xla_table_errors: int = 0  # xla runs where the interpreter reported a table error (NaN there)
    fd_stop_gradient: int = 0  # kernels with stop_gradient: no tangent-vs-differences check
    adjoint_tables_refused: int = 0  # kernels whose adjoint leaves out a Table read in a long loop (refused there)
    jax_jvp_compared: int = 0  # jax.jvp through the bridge (one per lowering) against the tangent kernel
    jax_vjp_compared: int = 0  # jax.vjp through the bridge (one per lowering) against the adjoint kernel
    jax_ad_skipped: int = 0  # lowerings whose derivatives were not compared: a mask or error flips when moved
    jax_f32_compared: int = 0  # float32 calls (JAX without x64) and their jax.jvp on "ffi", bit for bit
    jax_vmap_compared: int = 0  # jax.vmap of the bridge over two input sets (one per lowering) against the calls
    jax_vmap_skipped: int = 0  # of those not compared: an input set errors, or ("xla") the moved runs flip a mask
    jax_vmap_f32_compared: int = 0  # the "ffi" jax.vmap again in float32 (JAX without x64) against the calls
    jax_vmap_nested_compared: int = 0  # jax.vmap of jax.vmap on "ffi" over a 2 x 2 grid of sets against the calls
    jax_staged_compared: int = 0  # staged kernels through the bridge ("ffi") against their launch, per dtype
    jax_staged_skipped: int = 0  # of those not compared: a launch reports an error
    loop_compared: int = 0  # stepping loops (until_done, the device plan on the CPU, simulate) against the plain loop, per budget and dtype
    loop_fused: int = 0  # of the until_done runs, those that ran fused passes of refilled lanes
    loop_errors: int = 0  # of the loops compared, those where both reported the same kernel error
    reverse_checked: int = 0  # recorded runs whose reverse sweep met the tangent loop (check_reverse)
    reverse_skipped: int = 0  # of those not checked: the run errs, or the identity's terms are not finite
    mismatches: list[Mismatch] = field(default_factory=list)

    def add(self, other: "Stats") -> None:
        for f in COUNTS:
            setattr(self, f, getattr(self, f) + getattr(other, f))
        self.mismatches += other.mismatches

    def summary(self, mismatches: int | None = None) -> str:
        """Every count in words (scripts/fuzz_kernels.py prints it for all its workers, whose
        mismatches it has printed already: ``mismatches`` is their number)."""
        mismatches = len(self.mismatches) if mismatches is None else mismatches
        return (f"{self.kernels} kernels ({self.seeds} generated, {self.stages} of them stages), {self.runs_compared} compiled runs compared with the interpreter, "
                f"{self.fd_elements} tangent elements against differences ({self.fd_skipped} skipped near kinks), "
                f"{self.fd_stop_gradient} kernels with stop_gradient not compared with differences, {self.adjoint_checked} adjoint identities ({self.adjoint_skipped} not finite, "
                f"{self.adjoint_tables_refused} without a Table read in a long loop), "
                f"{self.table_errors} table errors agreed, {self.xla_compared} xla-lowering runs compared "
                f"({self.xla_int_compared} with integer planes) "
                f"({self.xla_unsupported} kernels unsupported, {self.xla_skipped} skipped, {self.xla_table_errors} table errors), "
                f"{self.jax_jvp_compared} jax.jvp and {self.jax_vjp_compared} jax.vjp through the bridge "
                f"({self.jax_ad_skipped} skipped), {self.jax_f32_compared} float32 calls with their jax.jvp, "
                f"{self.jax_vmap_compared} jax.vmap calls ({self.jax_vmap_skipped} skipped), "
                f"{self.jax_vmap_f32_compared} float32 jax.vmap calls, {self.jax_vmap_nested_compared} jax.vmap of jax.vmap, "
                f"{self.jax_staged_compared} staged kernels' calls through the bridge ({self.jax_staged_skipped} skipped), "
                f"{self.loop_compared} stepping loops against the plain loop ({self.loop_fused} fused, {self.loop_errors} with an error), "
                f"{self.reverse_checked} reverse sweeps of records against the tangent loop ({self.reverse_skipped} skipped), "
                f"{mismatches} mismatches")


def _same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return ((a == b) & (np.signbit(a) == np.signbit(b))) | (np.isnan(a) & np.isnan(b))


# How far a library function's result may differ between the build and the interpreter: 0
# since generated host code calls glibc's functions through noipa wrappers (host_driver.cpp's
# prelude) rather than letting GCC fold calls with constant arguments correctly rounded (seeds
# 1025, 200881): compiled host kernels equal the interpreter bitwise, sums apart.
LIBM_ULPS = 0


def compare(kernel: Any, got: Run, want: Run, dtype: Any, moved: tuple[Run, ...] = ()) -> str | None:
    """Why a compiled run differs from the interpreter's, or None. `moved`: interpreter runs
    with the inexact library results moved by +-LIBM_ULPS; a value may differ from `want` by
    as much as those moved it (0 where the chain of operators is exact: bitwise)."""
    if any((r.error is None) != (want.error is None) or not _same_mask(r.mask, want.mask) for r in moved):
        return None  # a branch, a table index or a termination flips within LIBM_ULPS: no bound
    if (got.error is None) != (want.error is None):
        return f"table error: compiled {got.error!r}, interpreter {want.error!r}"
    if want.error is not None:
        # the table by name, or the kind of integer error (its line and sample may be another
        # sample's: the build's chunks report their own first error)
        tname = want.error[0] if want.error[0] in INT_ERRORS.values() else f"table '{want.error[0]}'"
        if tname not in str(got.error):
            return f"the error differs: compiled {got.error!r}, interpreter {want.error!r}"
        return None  # outputs after an error are not specified beyond the error
    if not _same_mask(got.mask, want.mask):
        return f"mask: compiled {got.mask}, interpreter {want.mask}"
    for s in kernel.slots:
        if s.name not in want.outs:
            continue
        a, b = got.outs[s.name], want.outs[s.name]
        if a.shape != b.shape:
            return f"{s.name}: {a.size} values, interpreter {b.size}"
        others = [r.outs[s.name] for r in moved]
        if s.kind != "mutable":
            # a sum: the interpreter adds in the launch's order (ir/combine.hpp) in double, and
            # the launch writes the total rounded to its dtype
            b, others = _as_dtype(b, dtype), [_as_dtype(o, dtype) for o in others]
        with np.errstate(invalid="ignore", over="ignore"):
            spread = np.zeros_like(b)
            for o in others:
                d = np.abs(o - b)
                d[~_same_bits(o, b) & ~np.isfinite(d)] = np.inf
                spread = np.maximum(spread, np.nan_to_num(d, nan=np.inf))
            bad = ~(_same_bits(a, b) | (np.abs(a - b) <= spread))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            return (f"{s.name}[{i}] ({np.dtype(dtype).name}): compiled {a[i]!r}, interpreter {b[i]!r} "
                    f"({int(bad.sum())} of {a.size} differ)")
    return None


def _as_dtype(x: np.ndarray, dtype: Any) -> np.ndarray:
    """`x` (float64) rounded to `dtype` and back, as a launch of that dtype writes it."""
    with np.errstate(over="ignore"):
        return np.asarray(x, np.float64).astype(dtype).astype(np.float64)


def _same_mask(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    return (a is None) == (b is None) and (a is None or np.array_equal(a, b))


def _perturb(values: dict[str, Any], t: dict[str, Any], h: float) -> dict[str, Any]:
    out = dict(values)
    for w, tw in t.items():
        out[w] = np.asarray(values[w], np.float64) + h * np.asarray(tw)
        if np.ndim(out[w]) == 0:
            out[w] = float(out[w])
    return out


FD_H = 1e-6
H2 = FD_H / 3.7  # not a power-of-2 ratio: a quantized f (see check_tangent) rounds differently there
H3 = 1e-4  # a tangent may match this one instead: 100 times less of f's quantization (seed 2031372)
FD_RTOL = 1e-5
FD3_RTOL = 1e-4  # fd at H3 against fd at FD_H: the truncation error of H3 is ~1e4 times FD_H's
ADJ_RTOL = 1e-10


def check_tangent(g: GenKernel, k: Any, tdot: dict[str, np.ndarray], values: dict[str, Any], t: dict[str, Any], st: Stats) -> None:
    """Tangent outputs against central differences of the interpreted primal (steps h, h2)."""
    n, m = g.n, g.table_size
    runs = {h: interpret(k, n, m, _perturb(values, t, h)) for h in (FD_H, -FD_H, H2, -H2, H3, -H3)}
    base = interpret(k, n, m, values)
    if any(r.error is not None for r in runs.values()) or base.error is not None:
        return  # a perturbed point reads a table out of range: no differences there
    for out in outputs_of(k):
        fd1 = (runs[FD_H].outs[out] - runs[-FD_H].outs[out]) / (2 * FD_H)
        fd2 = (runs[H2].outs[out] - runs[-H2].outs[out]) / (2 * H2)
        tan = tdot[out]
        f0 = base.outs[out]
        # finite and moderate: where values reach 1e6, floor, // and % of them are staircases
        # finer than h, which the differences see as slopes (seed 1019821: 1e19 after 3 steps)
        finite = np.isfinite(fd1) & np.isfinite(fd2) & np.isfinite(tan) & (np.abs(f0) < 1e6) & (np.abs(fd1) < 1e8)
        # the differences' own rounding error: f computed with cancellation is quantized
        # (seed 2031372: (u + w) - u with |u| ~ 1e7), and then each difference is off by about
        # the second difference over the step, which a smooth f makes O(h f'')
        sd1 = np.abs(runs[FD_H].outs[out] + runs[-FD_H].outs[out] - 2 * f0)
        sd2 = np.abs(runs[H2].outs[out] + runs[-H2].outs[out] - 2 * f0)
        noise = 2 * (sd1 / (2 * FD_H) + sd2 / (2 * H2))
        tol = lambda fd: FD_RTOL * (np.abs(fd) + np.abs(tan)) + 1e-7 * (1.0 + np.abs(f0)) + noise  # noqa: E731
        with np.errstate(invalid="ignore"):
            fd3 = (runs[H3].outs[out] - runs[-H3].outs[out]) / (2 * H3)
            ok = (np.abs(tan - fd1) <= tol(fd1)) | (np.abs(tan - fd2) <= tol(fd2)) | (np.abs(tan - fd3) <= tol(fd3))
            # smooth: the two differences agree, and the value is the mean of its neighbours
            # (not so at a jump exactly at the point, e.g. floor of an expression that is 0
            # up to rounding, whose sign the rounding of each perturbed point decides)
            mid1 = (runs[FD_H].outs[out] + runs[-FD_H].outs[out]) / 2
            mid2 = (runs[H2].outs[out] + runs[-H2].outs[out]) / 2
            near = 1e-7 * (1.0 + np.abs(f0))
            # (the two differences compared on their own scale, not the tangent's: a wrong
            # tangent cannot make them agree, and at a high frequency (sin of 1e5 x) they differ)
            agree = np.abs(fd1 - fd2) <= FD_RTOL * (np.abs(fd1) + np.abs(fd2)) + 1e-7 * (1.0 + np.abs(f0))
            # ... and over two decades of h: a value computed with catastrophic cancellation
            # (seed 2093136: (c - u) + (u + a) with |u| ~ 1e10) is a staircase with steps of
            # ulp(u) ~ 2e-6, flat at h <= 1e-6, so h and h2 agree on the slope of the staircase
            # (not the function's); at H3 the truncation error of a smooth f is ~1e-8 relative
            agree &= np.abs(fd1 - fd3) <= FD3_RTOL * (np.abs(fd1) + np.abs(fd3)) + 1e-7 * (1.0 + np.abs(f0))
            smooth = agree & (np.abs(mid1 - f0) <= near) & (np.abs(mid2 - f0) <= near)
        st.fd_elements += int(finite.sum())
        st.fd_skipped += int((finite & ~ok & ~smooth).sum()) + int((~finite).sum())
        bad = finite & ~ok & smooth
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            st.mismatches.append(Mismatch(g.seed, "tangent-vs-differences",
                                          f"d{out}[{i}]: tangent {tan[i]!r}, differences {fd1[i]!r} (h) {fd2[i]!r} (h2), "
                                          f"value {f0[i]!r} (inputs and direction: np.random.default_rng(seed))", g.report()))
            return


def _identity_sides(tdot: dict[str, np.ndarray], bars: dict[str, np.ndarray], t: dict[str, Any], ct: dict[str, Any]) -> tuple[float, float, float]:
    """(<bars, t>, <ct, tdot>, the sum of the terms' magnitudes)."""
    lhs = rhs = scale = 0.0
    for w, tw in t.items():
        prod = bars[w] * np.asarray(tw, np.float64).reshape(-1)
        lhs += float(prod.sum())
        scale += float(np.abs(prod).sum())
    for o, c in ct.items():
        prod = np.asarray(c, np.float64).reshape(-1) * tdot[o]
        rhs += float(prod.sum())
        scale += float(np.abs(prod).sum())
    return lhs, rhs, scale


def check_adjoint(g: GenKernel, tdot: dict[str, np.ndarray], bars: dict[str, np.ndarray], t: dict[str, Any], ct: dict[str, Any],
                  st: Stats, split: Any = None, rescaled: Any = None) -> None:
    """<bars, t> == <ct, tdot> within ADJ_RTOL of the terms' magnitudes. Where it fails,
    `split()` (when given) returns (tdot, bars) computed again one input direction and one
    output cotangent at a time and summed: both sides are linear, so what the sums differ by
    from the single runs is rounding inside the kernels (terms that cancel, far larger than
    the outputs: seed 1091689, a cross(cross(w, w), w) that is 0 after 3 steps of growth);
    the identity must then hold to 10 times that. `rescaled()` (when given) returns (tdot,
    bars) of the direction and the cotangents times RESCALE, divided by it: exact linearity
    again, so what those differ by is rounding too, of the kind the split runs keep (seed
    3045046: the adjoint adds +c and -c with |c| ~ 1e15 around the sample's other terms, so
    its result moves with the cotangent's low bits; the tangent had cancelled them first).
    A wrong derivative is off in every one of these ways alike, which they do not hide."""
    lhs, rhs, scale = _identity_sides(tdot, bars, t, ct)
    if not (np.isfinite(lhs) and np.isfinite(rhs) and np.isfinite(scale)):
        st.adjoint_skipped += 1
        return
    st.adjoint_checked += 1
    if abs(lhs - rhs) <= ADJ_RTOL * max(scale, 1e-300):
        return
    noise = 0.0
    if split is not None:
        tdot2, bars2 = split()
        lhs2, rhs2, _ = _identity_sides(tdot2, bars2, t, ct)
        noise = abs(lhs2 - lhs) + abs(rhs2 - rhs)
        if abs(lhs - rhs) <= ADJ_RTOL * scale + 10 * noise:
            return
    if rescaled is not None:
        tdot3, bars3 = rescaled()
        lhs3, rhs3, _ = _identity_sides(tdot3, bars3, t, ct)
        noise += abs(lhs3 - lhs) + abs(rhs3 - rhs)
        if abs(lhs - rhs) <= ADJ_RTOL * scale + 10 * noise:
            return
    st.mismatches.append(Mismatch(g.seed, "adjoint-identity",
                                  f"<adjoint(ct), t> = {lhs!r}, <ct, tangent(t)> = {rhs!r}, scale {scale!r}, "
                                  f"rounding estimate {noise!r}", g.report()))


RESCALE = 1.37  # not a power of 2: the scaled runs round differently


def rescaled_runs(k: Any, tk: Any, ak: Any, n: int, m: int, values: dict[str, Any], t: dict[str, Any], ct: dict[str, Any]) -> tuple[dict, dict]:
    """Tangent outputs for RESCALE * t and adjoint outputs for RESCALE * ct, divided by RESCALE
    (interpreter, float64): equal to the plain runs but for rounding."""
    tn, cn = roles(tk, "t"), roles(ak, "c")
    outs = outputs_of(k)
    scaled = lambda v: RESCALE * (float(v) if np.ndim(v) == 0 else np.asarray(v, np.float64))  # noqa: E731
    rt = interpret(tk, n, m, {**values, **{tn[x]: scaled(v) for x, v in t.items()}})
    ra = interpret(ak, n, m, {**values, **{cn[o]: scaled(c) for o, c in ct.items()}})
    return ({o: rt.outs[tn[o]] / RESCALE for o in outs}, {w: ra.outs[cn[w]] / RESCALE for w in t})


def split_runs(k: Any, tk: Any, ak: Any, n: int, m: int, values: dict[str, Any], t: dict[str, Any], ct: dict[str, Any]) -> tuple[dict, dict]:
    """Tangent outputs summed over runs with one input direction each, and adjoint outputs
    summed over runs with one output cotangent each (interpreter, float64)."""
    tn, cn = roles(tk, "t"), roles(ak, "c")
    zero = lambda v: 0.0 if np.ndim(v) == 0 else np.zeros_like(np.asarray(v, np.float64))  # noqa: E731
    outs = outputs_of(k)
    tdot = {o: 0.0 for o in outs}
    for w in t:
        tv = dict(values)
        tv.update({tn[x]: (t[x] if x == w else zero(t[x])) for x in t})
        r = interpret(tk, n, m, tv)
        tdot = {o: tdot[o] + r.outs[tn[o]] for o in outs}
    bars = {w: 0.0 for w in t}
    for o in ct:
        av = dict(values)
        av.update({cn[x]: (ct[x] if x == o else zero(ct[x])) for x in ct})
        r = interpret(ak, n, m, av)
        bars = {w: bars[w] + r.outs[cn[w]] for w in t}
    return tdot, bars


_LOOP_TABLE_REFUSAL = re.compile(r"table '(\w+)' is read at line \d+ inside a loop of more than 4096 iterations")


def adjoint_of(kernel: Any, wrt: list[str]) -> tuple[Any, list[str]]:
    """(kernel.adjoint(wrt), wrt), or where that is refused because a Table in wrt is read
    inside a long loop (docs/language.md "Long loops": each iteration would scatter its own
    cotangent; a ValueError naming the table), the adjoint with respect to the other inputs
    and those inputs. Any other refusal propagates."""
    awrt = list(wrt)
    while True:
        try:
            return kernel.adjoint(awrt), awrt
        except ValueError as err:
            m = _LOOP_TABLE_REFUSAL.search(str(err))
            if m is None or m.group(1) not in awrt or len(awrt) == 1:
                raise
            awrt.remove(m.group(1))


def winners(k: Any, n: int, m: int, values: dict[str, Any], float32: bool = False) -> dict[str, float]:
    """The "<s>_win" Params the tangent and adjoint kernels of a kernel with hawk.min /
    hawk.max outputs take (cpp/ad/winner.hpp): the winner kernel run by the interpreter on
    ``values`` and the kernel's results ({} for a kernel without such outputs, or one whose
    run reports an error)."""
    folds = [s.name for s in k.slots if s.kind == "param_sum" and s.combine != "sum"]
    if not folds:
        return {}
    prim = interpret(k, n, m, values, float32=float32)
    if prim.error is not None:
        return {f"{o}_win": np.inf for o in folds}
    wk = k.winner()
    run = interpret(wk, n, m, {**values, **{o: float(prim.outs[o][0]) for o in folds}}, float32=float32)
    return {f"{o}_win": float(run.outs[f"{o}_win"][0]) for o in folds}


def check_batch(seeds: Iterable[int | GenKernel], cache_dir: str | None, checks: tuple[str, ...] = ("interp", "tangent", "adjoint"),
                compiled: bool = True, features: tuple[str, ...] = FEATURES) -> Stats:
    """Generates, builds and checks the kernels of `seeds`: all of them, their tangents and
    adjoints in one eagle.plan.auto call (one translation unit) into `cache_dir`.

    compiled=False checks the IR only (no C++ build): the tangent and adjoint kernels are run
    by the interpreter, for the derivative checks; "interp" is then ignored."""
    import eagle.plan

    st = Stats()
    items = []
    staged = []  # (g, kernel): staged kernels, also launched whole ("interp")
    for seed in seeds:  # (or a GenKernel itself: a kernel kept in tests/found_by_fuzzing)
        g = seed if isinstance(seed, GenKernel) else generate(seed, features)
        seed = g.seed
        st.seeds += 1
        try:
            built = g.build()
            if built.staged:
                staged.append((g, built))
                st.stages += len(built.stages)
            # A staged kernel is checked as its stages: each an ordinary kernel, its links' Params
            # given values like any Param (tests/test_stages.py checks the stages run together).
            for k in built.stages if built.staged else (built,):
                wrt = float_inputs(k)
                tk = k.tangent(wrt, with_primal=bool(seed % 2))
                ak, awrt = adjoint_of(k, wrt)
                items.append((g, k, tk, ak, wrt, awrt))
        except Exception as err:  # every generated kernel is in the language: a refusal is a bug
            st.mismatches.append(Mismatch(seed, "compile", f"{type(err).__name__}: {err}", g.report()))
            continue
    kernels = [x for g, k, tk, ak, _, _ in items for x in (k, tk, ak)]
    plans: list[Any] = [None] * len(kernels)
    if compiled and kernels:
        plans = eagle.plan.auto(kernels + [k for _, k in staged], cache_dir=cache_dir)
        for (g, k), plan in zip(staged, plans[len(kernels):]):
            for check, run in (("interp", check_staged), ("jax", check_jax_staged)):
                if check not in checks:
                    continue
                try:
                    run(g, k, plan, st)
                except Exception as err:  # a crash of the harness or of a launch is reported
                    st.mismatches.append(Mismatch(g.seed, "staged" if check == "interp" else "staged through jax",
                                                  f"{type(err).__name__}: {err}", g.report()))
    for j, (g, k, tk, ak, wrt, awrt) in enumerate(items):
        st.kernels += 1
        pk, ptk, pak = plans[3 * j: 3 * j + 3]
        try:
            _check_one(g, k, tk, ak, wrt, pk, ptk, pak, st, checks, awrt)
        except Exception as err:  # a crash of the harness or of a launch is reported, not raised
            st.mismatches.append(Mismatch(g.seed, "exception", f"{type(err).__name__}: {err}", g.report()))
    return st


# How far XLA's library functions (its own exp, log, sin, tanh... on the CPU, not glibc's) may
# be from glibc's, in ulps, for the "xla" check's tolerance (see check_xla).
XLA_ULPS = 4
XLA_RTOL = 1e-10  # plus this, relative: two results moved in opposite directions and cancelling


def through_jax(k: Any, values: dict[str, Any], lowering: str) -> dict[str, np.ndarray]:
    """The kernel through ``eagle.frameworks.jax.function(k, lowering=lowering)`` in float64
    (the bridge's layout: inputs in ``f.inputs`` order, the Random key as launch 0's, as the
    interpreter draws): its outputs by name."""
    import jax

    from eagle.frameworks import jax as eagle_jax

    prev = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        f = eagle_jax.function(k, lowering=lowering)
        args = _bridge_args(f, k, values)
        res = f(*args)
        res = res if isinstance(res, tuple) else (res,)
        return {name: np.asarray(r) for name, r in zip(f.outputs, res)}
    finally:
        jax.config.update("jax_enable_x64", prev)


def check_xla(g: GenKernel, k: Any, values: dict[str, Any], st: Stats) -> tuple[Run, list[Run]] | None:
    """The kernel through ``eagle.frameworks.jax.function(k, lowering="xla")`` (float64,
    the bridge's layout: inputs in ``f.inputs`` order, outputs the Mutables then the mask)
    against the interpreter with ``zero_finished`` (a sample masked on entry is 0 in its pure
    outputs), for kernels the lowering supports (others are counted in xla_unsupported).

    The rule: XLA's transcendental functions are not glibc's, so an output may differ from the
    interpreter by 8 times as much as it moves when every inexact library result is moved by
    +-XLA_ULPS ulps (interpreter runs with perturb_ulps; that bound grows with the steps and
    chaos as the kernel does, and is huge where a branch flips within it, so such samples are
    in effect not compared), plus XLA_RTOL * (1 + |value|) for results moved in opposite
    directions that then cancel (the uniform shifts move them alike). The moved runs also move
    every product by 1 to 16 ulps, up or down by its place (perturb_products): XLA:CPU contracts
    a * b + c into an FMA where it likes, which moves a product's rounding, and where the
    interpreter's a*b - b*a cancels exactly and a branch tests the result, the moved runs then
    flip it too. Where the mask or a table error of those moved runs differs from the plain
    run (a termination flips), the run is skipped (xla_skipped). Where the interpreter reports
    a table error, the xla path gives NaN for that sample's float outputs: agreed
    (xla_table_errors), but the erroring sample's float outputs must be NaN there (integer and
    bool outputs cannot be). The mask must agree exactly elsewhere.

    Returns the interpreter runs it compared with (plain_and_moved), for check_jax_vmap's first
    input set, which is the same; None for a kernel the lowering refuses."""
    if not xla_supported(k):
        st.xla_unsupported += 1
        return None
    runs = plain_and_moved(k, g.n, g.table_size, values)
    verdict, why = _xla_vs_interpreter(k, g.n, g.table_size, values, through_jax(k, values, "xla"), runs)
    if verdict == "skipped":
        st.xla_skipped += 1
        return runs
    st.xla_compared += 1
    st.xla_int_compared += any(s.dtype in ("int32", "int64") for s in k.slots)
    st.xla_table_errors += verdict == "table error"
    if why:
        st.mismatches.append(Mismatch(g.seed, "xla-vs-interpreter", why, g.report()))
    return runs


def xla_supported(k: Any) -> bool:
    """Whether the "xla" lowering takes kernel `k` (it names what it refuses otherwise)."""
    from eagle.frameworks import _jax_xla

    try:
        return _jax_xla.supported(_jax_xla.op_list(k._core))
    except _jax_xla.UnsupportedOp:
        return False


def plain_and_moved(kern: Any, n: int, m: int, values: dict[str, Any], contract: bool = True,
                    moved: bool = True) -> tuple[Run, list[Run]]:
    """The interpreter runs the "xla" checks compare with, each with ``zero_finished`` (the
    bridge's semantics): the plain run and (where `moved`) the two runs with every inexact
    library result moved by +-XLA_ULPS ulps and, where `contract`, every product by 1 to 16
    (``perturb_products``: XLA:CPU's FMA contraction)."""
    return interpret(kern, n, m, values, zero_finished=True), _moved(kern, n, m, values, contract) if moved else []


def _moved(kern: Any, n: int, m: int, values: dict[str, Any], contract: bool = True) -> list[Run]:
    """plain_and_moved's two moved runs."""
    return [interpret(kern, n, m, values, perturb_ulps=u, zero_finished=True, perturb_products=contract)
            for u in (XLA_ULPS, -XLA_ULPS)]


def _flips(want: Run, moved: list[Run]) -> bool:
    """Whether a moved run's mask or error differs from the plain run's (then the runs bound
    nothing: a termination or a branch flips within the tolerance; such a case is skipped)."""
    return any((r.error is None) != (want.error is None) or not _same_mask(r.mask, want.mask) for r in moved)


def _xla_vs_interpreter(k: Any, n: int, m: int, values: dict[str, Any], got: dict[str, Any],
                        runs: tuple[Run, list[Run]] | None = None) -> tuple[str, str | None]:
    """check_xla's rule for one set of "xla" outputs `got` (by name) of `values`, against
    `runs` (plain_and_moved of `values`, made here where not given): ("skipped", None) where
    the moved runs flip the mask or an error; ("table error", why) where the interpreter
    reports one (why: None, or the erroring sample's float output that is not NaN); else
    ("compared", None or what differs)."""
    want, moved = runs if runs is not None else plain_and_moved(k, n, m, values)
    if _flips(want, moved):
        return "skipped", None
    mask_name = next((s.name for s in k.slots if s.kind == "terminated"), None)
    if want.error is not None:
        sample = want.error[2]
        for s in k.slots:
            if s.kind == "mutable" and s.name in got and 0 <= sample < n and np.asarray(got[s.name]).dtype.kind == "f":
                col = np.asarray(got[s.name]).reshape(-1, n)[:, sample]
                if not np.isnan(col).all():
                    return "table error", (f"table error {want.error!r} in the interpreter, but xla's {s.name} at sample {sample} "
                                           f"is {col!r}, not NaN")
        return "table error", None
    if mask_name is not None and not np.array_equal(np.asarray(got[mask_name]).reshape(-1), want.mask):
        return "compared", f"mask: xla {np.asarray(got[mask_name]).reshape(-1)}, interpreter {want.mask}"
    for s in k.slots:
        if s.kind == "mutable":
            why = _outside_moved(s.name, got[s.name], want.outs[s.name], [r.outs[s.name] for r in moved])
            if why:
                return "compared", why
    return "compared", None


def _outside_moved(name: str, got: Any, want: np.ndarray, moved: list[np.ndarray], sum_abs: Any = None, n: int = 0) -> str | None:
    """None where `got` equals `want` bit for bit or within 8 times the spread of the `moved`
    runs plus XLA_RTOL * (1 + |want|) (check_xla's rule), plus for a sum over `n` samples
    (`sum_abs`: the interpreter's sum of its terms' magnitudes) its reordering bound, as
    compare() allows; else what differs."""
    a, b = np.asarray(got).astype(np.float64).reshape(-1), np.asarray(want, np.float64).reshape(-1)
    if a.shape != b.shape:
        return f"{name}: {a.size} values, interpreter {b.size}"
    with np.errstate(invalid="ignore", over="ignore"):
        spread = np.zeros_like(b)
        for r in moved:
            r = np.asarray(r, np.float64).reshape(-1)
            d = np.abs(r - b)
            d[~_same_bits(r, b) & ~np.isfinite(d)] = np.inf
            spread = np.maximum(spread, np.nan_to_num(d, nan=np.inf))
        tol = 8 * spread + XLA_RTOL * (1.0 + np.abs(b))
        if sum_abs is not None:
            tol = tol + (n + 1) * 2.0 ** -52 * np.asarray(sum_abs, np.float64).reshape(-1)
        bad = ~(_same_bits(a, b) | (np.abs(a - b) <= tol))
    if not bad.any():
        return None
    i = int(np.flatnonzero(bad)[0])
    return (f"{name}[{i}]: bridge {a[i]!r}, interpreter {b[i]!r}, tolerance {tol[i]!r} "
            f"({int(bad.sum())} of {a.size} differ)")


def _bridge_args(f: Any, k: Any, values: dict[str, Any]) -> list[Any]:
    """`values` as the bridge's arguments in float64, in ``f.inputs`` order: the Random key as
    launch 0's (the interpreter's, launch_key), the mask as bool, scalar Params as 0-d arrays."""
    args = []
    for name in f.inputs:
        v, s = values[name], k.slot(name)
        if s.kind == "random":  # the key as given: launch 0's, the interpreter's (launch_key)
            args.append(np.asarray(launch_key(v), np.uint32))
        elif s.kind == "terminated":
            args.append(np.asarray(v, bool))
        else:
            args.append(np.asarray(v, _np_dtype(s, np.float64)))
    return args


def bridge_tangents(f: Any, args: list[Any], t: dict[str, Any]) -> tuple[Any, ...]:
    """jax.jvp's tangents for the bridge's `args` (``f.inputs`` order): `t`'s where it has one,
    in the argument's dtype, zeros for the other float inputs, float0 for integers, bools and keys."""
    import jax

    out = []
    for name, a in zip(f.inputs, args):
        if a.dtype.kind == "f":
            out.append(np.asarray(t[name], a.dtype).reshape(np.shape(a)) if name in t else np.zeros_like(a))
        else:
            out.append(np.zeros(np.shape(a), jax.dtypes.float0))
    return tuple(out)


def bridge_vjp(f: Any, args: Sequence[Any], at: Sequence[int]) -> tuple[tuple[Any, ...], Any]:
    """jax.vjp of the bridge's `f` with respect to its arguments at places `at`, the other
    `args` closed over: (the outputs as a tuple, the pullback)."""
    import jax

    def fa(*xs: Any) -> Any:
        full = list(args)
        for i, x in zip(at, xs):
            full[i] = x
        return f(*full)

    out, back = jax.vjp(fa, *[args[i] for i in at])
    return (out if isinstance(out, tuple) else (out,)), back


def check_jax_ad(g: GenKernel, k: Any, tk: Any, ak: Any, awrt: list[str], values: dict[str, Any], t: dict[str, Any],
                 ct: dict[str, Any], st: Stats) -> None:
    """``jax.jvp`` and ``jax.vjp`` of ``eagle.frameworks.jax.function(k, lowering=...)`` (float64)
    on both lowerings against the interpreter's tangent kernel `tk` (direction `t`) and adjoint
    kernel `ak` (cotangents `ct`, with respect to `awrt`), each with ``zero_finished`` (the
    bridge's semantics). The bridge builds its own derived kernels, for the inputs whose
    tangents are not zero: jvp along `t` with a zero tangent for the other float inputs, vjp
    with the inputs outside `awrt` closed over (a Table read in a long loop has no adjoint).

    The rules: on "ffi" the tangents are the compiled tangent kernel's, so compare()'s (the
    interpreter's bit for bit, sums included); the cotangents (JAX transposes the linearized call: the adjoint kernel with saved
    residuals, whose additions may come in another order) and everything on "xla" (XLA's library
    functions and its FMA contraction) within check_xla's rule, against interpreter runs with
    every library result moved by +-XLA_ULPS ulps and every product by 1 to 16
    (`perturb_products`). A lowering whose moved runs flip a mask or an error is skipped.

    Then, for kernels without int64 slots (JAX without x64 has no int64), the call and its
    jax.jvp in float32 (jax_enable_x64 off, JAX's default) on "ffi" against the float32
    interpreter by compare()'s rule: every output, the mask, the tangents."""
    import jax

    from eagle.frameworks import jax as eagle_jax

    n, m = g.n, g.table_size
    tn, cn = roles(tk, "t"), roles(ak, "c")
    tvals = {**values, **{tn[w]: tw for w, tw in t.items()}}
    avals = {**values, **{cn[o]: c for o, c in ct.items()}}
    outs = [o for o in outputs_of(k) if o in ct]

    xla_ok = xla_supported(k)
    prev = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        for lowering in ("ffi", "xla") if xla_ok else ("ffi",):
            contract = lowering == "xla"
            # "ffi"'s tangents go by compare()'s rule, which needs no moved runs
            tw, tmoved = plain_and_moved(tk, n, m, tvals, contract, moved=contract)
            aw, amoved = plain_and_moved(ak, n, m, avals, contract)
            if any(r.error is not None for r in (tw, aw)):
                return  # the primal reports an error there: the bridge's NaNs are check_xla's matter
            if _flips(tw, tmoved) or _flips(aw, amoved):
                st.jax_ad_skipped += 1
                continue
            f = eagle_jax.function(k, lowering=lowering)
            args = _bridge_args(f, k, values)
            _, tout = jax.jvp(f, tuple(args), bridge_tangents(f, args, t))
            tout = tout if isinstance(tout, tuple) else (tout,)
            st.jax_jvp_compared += 1
            for name, dot in zip(f.outputs, tout):
                if name not in outs:
                    continue
                if lowering == "ffi":  # the compiled tangent kernel: compare()'s rule
                    why = _bridge_vs(tk, {tn[name]: dot}, tw, np.float64)
                else:
                    why = _outside_moved(name, dot, tw.outs[tn[name]], [r.outs[tn[name]] for r in tmoved], tw.sum_abs.get(tn[name]), n)
                if why:
                    st.mismatches.append(Mismatch(g.seed, f"jax.jvp ({lowering})-vs-tangent", why, g.report()))
                    return
            at = [i for i, name in enumerate(f.inputs) if name in awrt]
            prim, vjp = bridge_vjp(f, args, at)
            cts = []
            for name, p in zip(f.outputs, prim):
                if name in outs:
                    cts.append(np.asarray(ct[name], np.float64).reshape(np.shape(p)))
                elif np.issubdtype(p.dtype, np.floating):
                    cts.append(np.zeros(np.shape(p), p.dtype))
                else:
                    cts.append(np.zeros(np.shape(p), jax.dtypes.float0))
            bars = vjp(tuple(cts) if len(f.outputs) > 1 else cts[0])
            st.jax_vjp_compared += 1
            for i, bar in zip(at, bars):
                name = f.inputs[i]
                why = _outside_moved(name, bar, aw.outs[cn[name]], [r.outs[cn[name]] for r in amoved], aw.sum_abs.get(cn[name]), n)
                if why:
                    st.mismatches.append(Mismatch(g.seed, f"jax.vjp ({lowering})-vs-adjoint", why, g.report()))
                    return
        if not any(s.dtype == "int64" for s in k.slots):
            jax.config.update("jax_enable_x64", False)
            _check_jax_f32(g, k, tk, values, tvals, t, st)
    finally:
        jax.config.update("jax_enable_x64", prev)


def _check_jax_f32(g: GenKernel, k: Any, tk: Any, values: dict[str, Any], tvals: dict[str, Any], t: dict[str, Any],
                   st: Stats) -> None:
    """check_jax_ad's float32 part (x64 already off)."""
    import jax

    from eagle.frameworks import jax as eagle_jax

    n, m = g.n, g.table_size
    tn = roles(tk, "t")
    # a hawk.min / hawk.max output's winner in float32 (the tangent picks the sample whose
    # value is the float32 result)
    values = {**values, **winners(k, n, m, values, float32=True)}
    tvals = {**tvals, **{w: x for w, x in values.items() if w.endswith("_win")}}
    want = interpret(k, n, m, values, float32=True, zero_finished=True)
    twant = interpret(tk, n, m, tvals, float32=True, zero_finished=True)
    if want.error is not None or twant.error is not None:
        return
    f = eagle_jax.function(k, lowering="ffi")
    args = [a.astype(np.float32) if a.dtype == np.float64 else a for a in _bridge_args(f, k, values)]
    prim, tout = jax.jvp(f, tuple(args), bridge_tangents(f, args, t))
    prim = prim if isinstance(prim, tuple) else (prim,)
    tout = tout if isinstance(tout, tuple) else (tout,)
    st.jax_f32_compared += 1
    got, tgot = {}, {}
    for name, p, dot in zip(f.outputs, prim, tout):
        p = np.asarray(p)
        if p.dtype == np.float64:
            st.mismatches.append(Mismatch(g.seed, "jax float32 (ffi)", f"{name}: float64 in a float32 call", g.report()))
            return
        if k.slot(name).kind == "terminated":
            if not _same_mask(p.reshape(-1), want.mask):
                st.mismatches.append(Mismatch(g.seed, "jax float32 (ffi)-vs-interpreter",
                                              f"mask: bridge {p.reshape(-1)}, interpreter {want.mask}", g.report()))
                return
            continue
        got[name] = p
        if name in tn and k.slot(name).dtype == "float":
            tgot[tn[name]] = dot
    why = _bridge_vs(k, got, want, np.float32) or _bridge_vs(tk, tgot, twant, np.float32)
    if why:
        st.mismatches.append(Mismatch(g.seed, "jax float32 (ffi)-vs-interpreter", why, g.report()))


def _bridge_vs(kernel: Any, got: dict[str, Any], want: Run, dtype: Any) -> str | None:
    """compare()'s rule (bit for bit, sums included) for the outputs the
    bridge returned, by `kernel`'s slot names."""
    return compare(kernel, Run({name: np.asarray(v).astype(np.float64).reshape(-1) for name, v in got.items()}, None, None),
                   Run({name: want.outs[name] for name in got}, None, None, want.sum_abs), dtype)


def check_jax_vmap(g: GenKernel, k: Any, st: Stats, awrt: list[str] | None = None, tk: Any = None, ak: Any = None,
                   first_runs: tuple[Run, list[Run]] | None = None) -> None:
    """``jax.vmap`` of ``eagle.frameworks.jax.function(k, lowering=...)`` (float64) over two
    input sets, on both lowerings: each argument batched on its leading axis, on its last, or
    not at all (then both entries take the first set's value), chosen by the seed (in half
    the calls Params and Tables never), with at least one batched, the vmap jitted or not
    (also by the seed). That reaches each of the bridge's batching rules (_jax_rules._batch:
    JAX batching the "xla" operations, the batch folded into the sample axis, one launch per
    entry for batched Params and Tables, sums and draws). Entry i must be the call on set i:
    on "ffi" the bridge's own call on that set, bit for bit (the same compiled kernel); on
    "xla" the interpreter by check_xla's rule (`first_runs`: check_xla's runs of the first
    set, which is its input set, where it made them). Where the interpreter reports an error
    for a set (the call raises; under vmap it must too, but which entry's is not compared)
    or, on "xla", the moved runs flip a mask, not compared (jax_vmap_skipped).

    Then, with `awrt` (the float inputs an adjoint takes), jax.vmap of jax.jvp and of jax.vjp
    the same way (_vmap_of_derivatives): on "ffi" each entry against that set's own jvp / vjp
    bit for bit; on "xla", given the tangent and adjoint kernels `tk` and `ak`, against the
    interpreter's runs of those by check_xla's rule (as check_jax_ad on one set). Each counted
    in jax_vmap_compared too. Then on "ffi" jax.vmap of jax.vmap over a 2 x 2 grid of input
    sets (_vmap_of_vmap: jax_vmap_nested_compared). Last, for kernels without int64 slots, the
    "ffi" vmap again in float32 (JAX without x64), each entry the float32 call bit for bit
    (jax_vmap_f32_compared)."""
    import jax

    from eagle.frameworks import jax as eagle_jax

    n, m = g.n, g.table_size
    first = make_values(k, n, m, np.random.default_rng(g.seed))
    second = make_values(k, n, m, np.random.default_rng([g.seed, 1]))
    pick = np.random.default_rng([g.seed, 2])
    # The interpreter's runs of each input set, keyed by the inputs it takes from the second
    # set: the plain run, and the moved runs once "xla" needs them.
    memo: dict[frozenset[str], tuple[Run, list[Run] | None]] = {}
    if first_runs is not None:
        memo[frozenset()] = first_runs

    def runs_of(vals: dict[str, Any], which: frozenset[str], moved: bool) -> tuple[Run, list[Run] | None]:
        plain, moved_runs = memo.get(which, (None, None))
        if plain is None:
            plain = interpret(k, n, m, vals, zero_finished=True)
        if moved and moved_runs is None:
            moved_runs = _moved(k, n, m, vals)
        memo[which] = (plain, moved_runs)
        return plain, moved_runs

    ffi_case = None  # (a, b, axes, sets) of the "ffi" vmap compared: the nested case and the float32 repeat build on it
    prev = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        for lowering in ("ffi", "xla") if xla_supported(k) else ("ffi",):
            f = eagle_jax.function(k, lowering=lowering)
            a = _bridge_args(f, k, first)
            # half the time only per-sample inputs batched (the fold into the sample axis),
            # else any input (a batched Param or Table: one launch per entry)
            samples_only = bool(pick.integers(2))
            axes: list[int | None] = [None if samples_only and k.slot(name).kind in ("param", "table")
                                      else [None, 0, np.ndim(x)][int(pick.integers(3))] for name, x in zip(f.inputs, a)]
            if all(ax is None for ax in axes):
                axes[int(pick.integers(len(axes)))] = 0
            which = [frozenset(), frozenset(name for name, ax in zip(f.inputs, axes) if ax is not None)]
            sets = [first, {name: (second[name] if name in which[1] else first[name]) for name in f.inputs}]
            runs = [runs_of(v, w, moved=lowering == "xla") for v, w in zip(sets, which)]
            if any(plain.error is not None for plain, _ in runs):
                st.jax_vmap_skipped += 1
                continue
            b = _bridge_args(f, k, sets[1])
            stacked = _stack(a, b, axes)
            vf = jax.vmap(f, in_axes=tuple(axes))
            res = (jax.jit(vf) if pick.integers(2) else vf)(*stacked)
            res = res if isinstance(res, tuple) else (res,)
            entries = [{name: np.asarray(r)[i] for name, r in zip(f.outputs, res)} for i in range(2)]
            where = f"jax.vmap ({lowering}, in_axes={tuple(axes)})"
            for i, (vals, got) in enumerate(zip(sets, entries)):
                if lowering == "ffi":
                    want = f(*(a if i == 0 else b))
                    want = want if isinstance(want, tuple) else (want,)
                    why = _bits_differ(f.outputs, [got[name] for name in f.outputs], want)
                    if why:
                        st.mismatches.append(Mismatch(g.seed, f"{where}-vs-calls", f"entry {i}, {why}", g.report()))
                        return
                    continue
                verdict, why = _xla_vs_interpreter(k, n, m, vals, got, runs[i])
                if verdict == "skipped":
                    st.jax_vmap_skipped += 1
                    break
                if why:
                    st.mismatches.append(Mismatch(g.seed, f"{where}-vs-interpreter", f"entry {i}: {why}", g.report()))
                    return
            else:
                st.jax_vmap_compared += 1
                if lowering == "ffi":
                    ffi_case = (a, b, axes, sets)
            if awrt is None or (lowering == "xla" and (tk is None or ak is None)):
                continue
            against = None if lowering == "ffi" else _AgainstInterpreter(g, k, tk, ak, sets)
            why = _vmap_of_derivatives(f, a, b, stacked, axes, [name in awrt for name in f.inputs], pick, st, against)
            if why:
                vs = "calls" if against is None else "interpreter"
                st.mismatches.append(Mismatch(g.seed, f"{where} of jax.jvp / jax.vjp-vs-{vs}", why, g.report()))
                return
        if ffi_case is not None:
            why = _vmap_of_vmap(k, n, m, g.seed, ffi_case[2], pick, st)
            if why:
                st.mismatches.append(Mismatch(g.seed, f"jax.vmap of jax.vmap (ffi, inner in_axes={tuple(ffi_case[2])})-vs-calls",
                                              why, g.report()))
                return
        if ffi_case is not None and not any(s.dtype == "int64" for s in k.slots):
            jax.config.update("jax_enable_x64", False)
            why = _vmap_f32(k, n, m, *ffi_case, st)
            if why:
                st.mismatches.append(Mismatch(g.seed, f"jax.vmap (ffi, float32, in_axes={tuple(ffi_case[2])})-vs-calls",
                                              why, g.report()))
    finally:
        jax.config.update("jax_enable_x64", prev)


def _stack(a: Sequence[Any], b: Sequence[Any], axes: Sequence[int | None]) -> list[Any]:
    """The arguments of two entries `a` and `b` as jax.vmap takes them with `axes`: stacked on
    the argument's axis, or `a`'s alone where it is None (not batched)."""
    return [x if ax is None else np.stack([x, y], axis=ax) for x, y, ax in zip(a, b, axes)]


def _vmap_f32(k: Any, n: int, m: int, a: list[Any], b: list[Any], axes: list[int | None], sets: list[dict[str, Any]],
              st: Stats) -> str | None:
    """check_jax_vmap's float32 repeat on "ffi" (x64 already off): the float64 case's
    arguments `a`, `b` (of input `sets`) in float32, batched on the same `axes`; each entry the
    float32 call on its set bit for bit. A set the float32 interpreter reports an error for is
    skipped."""
    import jax

    from eagle.frameworks import jax as eagle_jax

    f = eagle_jax.function(k, lowering="ffi")
    if any(interpret(k, n, m, v, float32=True).error is not None for v in sets):
        st.jax_vmap_skipped += 1
        return None
    a32, b32 = ([x.astype(np.float32) if x.dtype == np.float64 else x for x in xs] for xs in (a, b))
    res = jax.vmap(f, in_axes=tuple(axes))(*_stack(a32, b32, axes))
    res = res if isinstance(res, tuple) else (res,)
    for e, xs in enumerate((a32, b32)):
        want = f(*xs)
        want = want if isinstance(want, tuple) else (want,)
        why = _bits_differ(f.outputs, [np.asarray(r)[e] for r in res], want)
        if why:
            return f"entry {e}, {why}"
    st.jax_vmap_f32_compared += 1
    return None


def _vmap_of_vmap(k: Any, n: int, m: int, seed: int, inner: list[int | None], pick: np.random.Generator,
                  st: Stats) -> str | None:
    """check_jax_vmap's nested case on "ffi" (float64, x64 on): jax.vmap of jax.vmap over a
    2 x 2 grid of input sets, the inner in_axes `inner` (the one-level case's), the outer
    batching each argument on its leading axis or not (drawn from `pick`; at least one). An
    argument batched by neither takes one value, by one level only the values along that
    level. Entry (i, j) must be the call on its set bit for bit: the bridge's batching rule
    applied to what it made itself (a fold of a fold, a fold inside one launch per entry, ...).
    A grid with a set the interpreter reports an error for is skipped. None, or what differs."""
    import jax

    from eagle.frameworks import jax as eagle_jax

    f = eagle_jax.function(k, lowering="ffi")
    outer: list[int | None] = [None if pick.integers(2) else 0 for _ in f.inputs]
    if all(o is None for o in outer):
        outer[int(pick.integers(len(outer)))] = 0
    grid = [[make_values(k, n, m, np.random.default_rng([seed, 10 + 2 * i + j])) for j in range(2)] for i in range(2)]
    sets = [[{name: grid[i if o is not None else 0][j if ax is not None else 0][name] for name, o, ax in zip(f.inputs, outer, inner)}
             for j in range(2)] for i in range(2)]
    if any(interpret(k, n, m, v, zero_finished=True).error is not None for row in sets for v in row):
        st.jax_vmap_skipped += 1
        return None
    args = [[_bridge_args(f, k, v) for v in row] for row in sets]
    stacked = []
    for p, (o, ax) in enumerate(zip(outer, inner)):
        rows = [args[i][0][p] if ax is None else np.stack([args[i][0][p], args[i][1][p]], axis=ax) for i in range(2)]
        stacked.append(rows[0] if o is None else np.stack(rows))
    res = jax.vmap(jax.vmap(f, in_axes=tuple(inner)), in_axes=tuple(outer))(*stacked)
    res = res if isinstance(res, tuple) else (res,)
    for i in range(2):
        for j in range(2):
            want = f(*args[i][j])
            want = want if isinstance(want, tuple) else (want,)
            why = _bits_differ(f.outputs, [np.asarray(r)[i, j] for r in res], want)
            if why:
                return f"outer in_axes={tuple(outer)}, entry ({i}, {j}), {why}"
    st.jax_vmap_nested_compared += 1
    return None


def _bits_differ(names: Sequence[str], got: Sequence[Any], want: Sequence[Any],
                 labels: tuple[str, str] = ("vmap", "the call")) -> str | None:
    """None where each of `got` equals `want`'s array of the same place in shape, dtype and
    bits; else the first that differs, by name, the two sides called by `labels`."""
    for name, x, w in zip(names, got, want):
        x, w = np.asarray(x), np.asarray(w)
        if x.shape != w.shape or x.dtype != w.dtype or not _same_bits(x, w).all():
            return f"{name}: {labels[0]} {x!r}, {labels[1]} {w!r}"
    return None


_SKIP = object()  # _AgainstInterpreter's answer where the moved runs flip a mask or an error


class _AgainstInterpreter:
    """_vmap_of_derivatives's reference on "xla": an entry's jvp / vjp against the
    interpreter's tangent kernel `tk` / adjoint kernel `ak` on that entry's input set (of
    `sets`) by check_xla's rule, as check_jax_ad compares one set. The kernels take tangents
    of their wrt inputs and cotangents of the float outputs only: others must be zero."""

    def __init__(self, g: GenKernel, k: Any, tk: Any, ak: Any, sets: list[dict[str, Any]]) -> None:
        self.g, self.k, self.tk, self.ak, self.sets = g, k, tk, ak, sets
        self.tn, self.cn = roles(tk, "t"), roles(ak, "c")
        self.outs = set(outputs_of(k))
        # each set's "<s>_win" Params (hawk.min / hawk.max outputs), for both derived kernels
        self.wins = [winners(k, g.n, g.table_size, v) for v in sets]

    def has_tangent(self, name: str) -> bool:
        return name in self.tn

    def has_cotangent(self, name: str) -> bool:
        return name in self.cn

    def _shaped(self, e: int, name: str, x: Any) -> Any:
        """A bridge-shaped tangent or cotangent of `name` in the interpreter's shape."""
        s = self.k.slot(name)
        vals = self.sets[e]
        shape = () if s.kind == "param_sum" else np.shape(vals[name]) if name in vals else _shape(s, self.g.n, self.g.table_size)
        x = np.asarray(x, np.float64).reshape(shape)
        return float(x) if x.ndim == 0 else x

    def jvp(self, e: int, t: dict[str, Any], got: dict[str, Any]) -> Any:
        """None, what differs, or _SKIP: entry `e`'s tangents `got` (by output) of tangents `t` (by input)."""
        return self._judge(e, self.tk, self.tn, t, {x: v for x, v in got.items() if x in self.outs and x in self.tn})

    def vjp(self, e: int, c: dict[str, Any], got: dict[str, Any]) -> Any:
        """None, what differs, or _SKIP: entry `e`'s cotangents `got` (by input) of cotangents `c` (by output)."""
        return self._judge(e, self.ak, self.cn, c, got)

    def _judge(self, e: int, kern: Any, names: dict[str, str], given: dict[str, Any], got: dict[str, Any]) -> Any:
        """The derived kernel `kern` (its slots by primal name: `names`) on entry `e`'s set
        with `given` (tangents or cotangents by primal name) against `got` (by primal name),
        by check_xla's rule: None, what differs, or _SKIP."""
        n, m, vals = self.g.n, self.g.table_size, self.sets[e]
        vals = {**vals, **self.wins[e], **{names[x]: self._shaped(e, x, v) for x, v in given.items() if x in names}}
        want, moved = plain_and_moved(kern, n, m, vals)
        if want.error is not None or _flips(want, moved):
            return _SKIP
        for name, x in got.items():
            slot = names[name]
            why = _outside_moved(name, x, want.outs[slot], [r.outs[slot] for r in moved], want.sum_abs.get(slot), n)
            if why:
                return why
        return None


def _vmap_of_derivatives(f: Any, a: list[Any], b: list[Any], stacked: list[Any], axes: list[int | None], in_awrt: list[bool],
                         pick: np.random.Generator, st: Stats, against: _AgainstInterpreter | None = None) -> str | None:
    """check_jax_vmap's derivatives: jax.vmap of jax.jvp (tangents batched as their primals)
    and of jax.vjp (with respect to the float inputs in `in_awrt`, the others closed over;
    cotangents batched on their leading axis) over the two argument sets `a`, `b` (`stacked`
    with `axes`). Each entry against the same jvp / vjp of that set's call, bit for bit (the
    same derived kernels, run per entry or over the folded samples), or where `against` is
    given ("xla"), against the interpreter's derived kernels (an entry whose moved runs flip
    a mask is skipped: jax_vmap_skipped). None, or what differs."""
    import jax

    fl = [i for i, x in enumerate(a) if x.dtype.kind == "f"]
    if not fl:
        return None

    def tangents(args: Sequence[Any], tfl: Sequence[Any]) -> tuple[Any, ...]:
        ts = [np.zeros(np.shape(x), jax.dtypes.float0) for x in args]
        for i, t in zip(fl, tfl):
            ts[i] = t
        return tuple(ts)

    def jvp_of(args: Sequence[Any], tfl: Sequence[Any]) -> Any:
        return jax.jvp(f, tuple(args), tangents(args, tfl))[1]

    def given(names: Sequence[str], xs: list[Any], takes: str) -> list[Any]:
        """`xs`, zero where `against`'s kernels take none (its `takes` method says)."""
        if against is None:
            return xs
        return [x if getattr(against, takes)(name) else np.zeros_like(x) for name, x in zip(names, xs)]

    fnames = [f.inputs[i] for i in fl]
    ta = given(fnames, [pick.standard_normal(np.shape(a[i])) for i in fl], "has_tangent")
    tb = given(fnames, [ta[j] if axes[i] is None else pick.standard_normal(np.shape(b[i])) for j, i in enumerate(fl)], "has_tangent")
    t_stacked = [x if axes[i] is None else np.stack([x, y], axis=axes[i]) for i, x, y in zip(fl, ta, tb)]
    got = jax.vmap(jvp_of, in_axes=(axes, [axes[i] for i in fl]))(stacked, t_stacked)
    got = got if isinstance(got, tuple) else (got,)
    floats = [j for j, o in enumerate(got) if np.asarray(o).dtype.kind == "f"]
    for e, (args, t) in enumerate(((a, ta), (b, tb))):
        mine = [np.asarray(got[j])[e] for j in floats]
        if against is None:
            want = jvp_of(args, t)
            want = want if isinstance(want, tuple) else (want,)
            why = _bits_differ([f.outputs[j] for j in floats], mine, [want[j] for j in floats])
        else:
            why = against.jvp(e, {f.inputs[i]: x for i, x in zip(fl, t)}, {f.outputs[j]: x for j, x in zip(floats, mine)})
        if why is _SKIP:
            st.jax_vmap_skipped += 1
            break
        if why:
            return f"jvp, entry {e}, tangent of {why}"
    else:
        st.jax_vmap_compared += 1

    at = [i for i in fl if in_awrt[i]]
    if not at:
        return None
    prim = f(*a)
    prim = prim if isinstance(prim, tuple) else (prim,)
    outs = [j for j, p in enumerate(prim) if np.asarray(p).dtype.kind == "f"]

    def vjp_of(args: Sequence[Any], cfl: Sequence[Any]) -> Any:
        out, back = bridge_vjp(f, args, at)
        cts = [np.zeros(np.shape(o), jax.dtypes.float0) for o in out]
        for j, c in zip(outs, cfl):
            cts[j] = c
        return back(tuple(cts) if len(out) > 1 else cts[0])

    onames = [f.outputs[j] for j in outs]
    ca = given(onames, [pick.standard_normal(np.shape(prim[j])) for j in outs], "has_cotangent")
    cb = given(onames, [pick.standard_normal(np.shape(prim[j])) for j in outs], "has_cotangent")
    got = jax.vmap(vjp_of, in_axes=(axes, 0))(stacked, [np.stack([x, y]) for x, y in zip(ca, cb)])
    for e, (args, c) in enumerate(((a, ca), (b, cb))):
        mine = [np.asarray(x)[e] for x in got]
        if against is None:
            why = _bits_differ([f.inputs[i] for i in at], mine, vjp_of(args, c))
        else:
            why = against.vjp(e, dict(zip(onames, c)), {f.inputs[i]: x for i, x in zip(at, mine)})
        if why is _SKIP:
            st.jax_vmap_skipped += 1
            return None
        if why:
            return f"vjp, entry {e}, cotangent of {why}"
    st.jax_vmap_compared += 1
    return None


def _check_one(g, k, tk, ak, wrt, pk, ptk, pak, st: Stats, checks, awrt=None) -> None:
    xla_runs = None  # check_xla's interpreter runs of its input set, check_jax_vmap's first set
    if "xla" in checks:
        xla_runs = check_xla(g, k, make_values(k, g.n, g.table_size, np.random.default_rng(g.seed)), st)
    n, m = g.n, g.table_size
    rng = np.random.default_rng(g.seed)
    values = make_values(k, n, m, rng)
    values.update(winners(k, n, m, values))
    t = direction(k, values, wrt, rng)
    outs = outputs_of(k)
    # (a sum's cotangent is one number: the adjoint's Param)
    ct = {o: rng.standard_normal(() if k.slot(o).kind == "param_sum" else np.shape(values[o]) if o in values else _shape(k.slot(o), n, m))
          for o in outs}
    tn, cn = roles(tk, "t"), roles(ak, "c")
    tvals = dict(values)
    for w, tw in t.items():
        tvals[tn[w]] = tw
    avals = dict(values)
    for o, c in ct.items():
        avals[cn[o]] = c
    runs64 = {}
    for kern, plan, vals, what in ((k, pk, values, "kernel"), (tk, ptk, tvals, "tangent"), (ak, pak, avals, "adjoint")):
        if plan is None:  # the IR only
            runs64[what] = interpret(kern, n, m, vals)
            continue
        for dtype in (np.float64, np.float32):
            got = launch(plan, n, m, vals, dtype)
            if dtype is np.float64:
                runs64[what] = got
            if "interp" not in checks:
                continue
            f32 = dtype is np.float32
            want = interpret(kern, n, m, vals, float32=f32)
            moved = tuple(interpret(kern, n, m, vals, float32=f32, perturb_ulps=u) for u in (LIBM_ULPS, -LIBM_ULPS) if u)
            st.runs_compared += 1
            if want.error is not None and got.error is not None:
                st.table_errors += 1
            why = compare(kern, got, want, dtype, moved)
            if why:
                st.mismatches.append(Mismatch(g.seed, f"compiled-vs-interpreter ({what})", why, g.report()))
                return
    if "loop" in checks and pk is not None:
        check_loop(g, k, pk, st)
        check_loop(g, tk, ptk, st, "tangent")  # (its mask is the kernel's; with_primal or not)
    if "reverse" in checks and pk is not None:
        check_reverse(g, k, pk, tk, ptk, wrt, st)
    if runs64["kernel"].error is not None or runs64["tangent"].error is not None or runs64["adjoint"].error is not None:
        return
    if "jax" in checks:
        check_jax_ad(g, k, tk, ak, wrt if awrt is None else awrt, values, t, ct, st)
    if "vmap" in checks:
        check_jax_vmap(g, k, st, wrt if awrt is None else awrt, tk, ak, xla_runs)
    tdot = {o: runs64["tangent"].outs[tn[o]] for o in outs}
    if tk.slots and any(r == "p" and s.kind == "mutable" for s, (r, _) in zip(tk.slots, tk._core.slot_roles())):
        for o in (s.name for s in k.slots if s.kind == "mutable" and s.name in runs64["tangent"].outs):
            # the tangent's primal outputs are the kernel's (integer ones too)
            if not _same_bits(runs64["tangent"].outs[o], runs64["kernel"].outs[o]).all():
                st.mismatches.append(Mismatch(g.seed, "tangent-primal", f"{o}: tangent kernel's primal output differs from the kernel's", g.report()))
                return
    if "tangent" in checks and "stop_gradient(" in g.source:
        # central differences see through stop_gradient (its argument moves with the inputs),
        # the tangent by definition does not: no reference here; the adjoint identity, the
        # compiled and the xla checks still run on these kernels
        st.fd_stop_gradient += 1
    elif "tangent" in checks:
        check_tangent(g, k, tdot, values, t, st)
    if "adjoint" in checks:
        awrt = wrt if awrt is None else awrt
        ta, avalues = {w: t[w] for w in awrt}, values
        if len(awrt) < len(wrt):  # a Table read in a long loop is not in the adjoint's wrt: the tangent along the others
            st.adjoint_tables_refused += 1
            zero = {tn[w]: np.zeros_like(np.asarray(t[w], np.float64)) for w in wrt if w not in awrt}
            avalues = {**values, **zero}
            ra = interpret(tk, n, m, {**tvals, **zero})
            if ra.error is not None:
                return
            tdot = {o: ra.outs[tn[o]] for o in outs}
        bars = {w: runs64["adjoint"].outs[cn[w]] for w in awrt}
        check_adjoint(g, tdot, bars, ta, ct, st, lambda: split_runs(k, tk, ak, n, m, avalues, ta, ct),
                      lambda: rescaled_runs(k, tk, ak, n, m, avalues, ta, ct))
