"""Reading a kernel's Python function for the compiler: its source text and where it is,
its parameters' annotations, and its free names resolved to numbers, hawk.math functions,
modules or helpers. The result is the plain ``spec`` dict that ``raptor_core._core.lower``
takes. Nothing here parses the body: the compiler (C++) does.

Start at ``kernel_spec``.
"""

from __future__ import annotations

import builtins
import inspect
import linecache
import math as _pymath
import numbers
import sys
import textwrap
import types
from typing import Any, Callable

from hawk import math as hmath
from hawk.types import matrix_rows, param_kind

__all__ = ["kernel_spec", "function_source"]

# Builtins a kernel may use, mapped to the hawk.math function that gives their meaning.
_BUILTINS = {"abs": "abs", "min": "minimum", "max": "maximum", "float": "float", "int": "int"}
# Python's math functions with hawk.math's meaning (math.remainder is IEEE's, not NumPy's: left
# out; math.ceil/trunc/floor give floats in a kernel, as floor always did).
_PYMATH = {"sqrt", "exp", "log", "sin", "cos", "tan", "tanh", "atan2", "floor", "fabs",
           "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc",
           "exp2", "expm1", "log1p", "log2", "log10", "cbrt", "hypot", "pow", "ceil", "trunc",
           "fmod", "copysign", "fma", "isnan", "isinf", "isfinite"}


class SourceUnavailable(Exception):
    """The function's source text cannot be found."""


def function_source(fn: Callable[..., Any]) -> tuple[str, str, int]:
    """``(source, file, first_line)`` of a function, decorators included.

    Looks in the function's file and in linecache (IPython cells, Python 3.13's REPL); for a
    function defined by ``exec`` of a string, in the strings held by the calling frames,
    accepting a candidate only if it compiles to the same bytecode.
    """
    code = fn.__code__
    file = code.co_filename
    if file.startswith("<") and file.endswith(">"):
        # A pseudo-file ("<string>", "<ipython-input-3>"): linecache may hold another text
        # under the same name (exec'd by a library, e.g. pytest-xdist's execnet), so a text
        # found there is taken only if it compiles to this function's bytecode.
        cached = linecache.getlines(file)
        hit = _match_whole_text(cached, code) if cached else None
        if hit is not None:
            return hit
        found = _source_from_frames(fn)
        if found is not None:
            return found
        raise _unavailable(fn, file)
    try:
        lines, first = inspect.getsourcelines(fn)
        return "".join(lines), file, max(first, 1)
    except (OSError, TypeError):
        pass
    cached = linecache.getlines(file)
    if cached:
        try:
            block = inspect.getblock(cached[code.co_firstlineno - 1 :])
            return "".join(block), file, code.co_firstlineno
        except (IndexError, SyntaxError, TypeError):
            pass
    found = _source_from_frames(fn)
    if found is not None:
        return found
    raise _unavailable(fn, file)


def _unavailable(fn: Callable[..., Any], file: str) -> SourceUnavailable:
    return SourceUnavailable(
        f"hawk: kernel '{fn.__name__}' ({file}): cannot read its source text. hawk compiles "
        "the function's source: define it in a file, a notebook cell or an exec() of a string "
        "that is still held in a variable, or register the text with "
        "linecache before exec (as IPython does)"
    )


def _source_from_frames(fn: Callable[..., Any]) -> tuple[str, str, int] | None:
    """Finds the text of a function defined by exec() among the strings of calling frames."""
    code = fn.__code__
    frame = sys._getframe(1)
    depth = 0
    while frame is not None and depth < 12:
        for scope in (frame.f_locals, frame.f_globals):
            for value in list(scope.values()):
                if isinstance(value, str) and f"def {fn.__name__}" in value and "\n" in value:
                    hit = _match_source(value, code)
                    if hit is not None:
                        return hit
        frame = frame.f_back
        depth += 1
    return None


def _match_whole_text(lines: list[str], code: types.CodeType) -> tuple[str, str, int] | None:
    """The function's block in a file's whole text (as linecache holds it), if compiling that
    text gives this function's code at the same line: the whole text, since the bytecode of a
    block compiled alone may differ (CPython 3.13 calls `mod.f()` of a module-level import
    differently)."""
    try:
        compiled = compile("".join(lines), code.co_filename, "exec")
    except (SyntaxError, ValueError):
        return _match_source("".join(lines), code)
    pending = [compiled]
    while pending:
        c = pending.pop()
        for const in c.co_consts:
            if not isinstance(const, types.CodeType):
                continue
            if const.co_name == code.co_name and const.co_firstlineno == code.co_firstlineno:
                if not _same_code(const, code):
                    return None
                try:
                    block = "".join(inspect.getblock(lines[code.co_firstlineno - 1 :]))
                except (IndexError, SyntaxError, TypeError):
                    return None
                return block, code.co_filename, code.co_firstlineno
            pending.append(const)
    return None


def _match_source(text: str, code: types.CodeType) -> tuple[str, str, int] | None:
    lines = text.splitlines(keepends=True)
    start = code.co_firstlineno - 1
    if start >= len(lines):
        return None
    try:
        block = "".join(inspect.getblock(lines[start:]))
        compiled = compile(textwrap.dedent(block), code.co_filename, "exec")
    except (SyntaxError, IndexError, TypeError):
        return None
    for const in compiled.co_consts:
        if isinstance(const, types.CodeType) and const.co_name == code.co_name:
            if _same_code(const, code):
                return block, code.co_filename, code.co_firstlineno
    return None


def _same_code(a: types.CodeType, b: types.CodeType) -> bool:
    """Whether two code objects compile the same function: the same bytecode, names, local
    names and constants, nested functions (lambdas, comprehensions) compared the same way. Two
    sources that differ only in a constant (``x * 2.0`` and ``x * 3.0``) do not match."""
    if (a.co_code, a.co_names, a.co_varnames, a.co_freevars, a.co_cellvars) != (
        b.co_code, b.co_names, b.co_varnames, b.co_freevars, b.co_cellvars
    ):
        return False
    if len(a.co_consts) != len(b.co_consts):
        return False
    for x, y in zip(a.co_consts, b.co_consts):
        if isinstance(x, types.CodeType) or isinstance(y, types.CodeType):
            if not (isinstance(x, types.CodeType) and isinstance(y, types.CodeType) and _same_code(x, y)):
                return False
        elif type(x) is not type(y) or repr(x) != repr(y):  # repr: 0.0 vs -0.0, nan, 1 vs True
            return False
    return True


def _closure_vars(fn: Callable[..., Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                out[name] = cell.cell_contents
            except ValueError:  # an empty cell: the name is not bound yet
                pass
    return out


def _describe(value: Any) -> str:
    if isinstance(value, types.ModuleType):
        return f"the module {value.__name__}"
    if isinstance(value, (list, tuple, dict, set)):
        return f"a {type(value).__name__}"
    if callable(value):
        return f"a Python function or object ({type(value).__name__}); only @hawk.func helpers and hawk.math functions can be called"
    return f"a {type(value).__name__}"


class _Resolver:
    """Resolves free names of a kernel and of the helpers it reaches, numbering helpers."""

    def __init__(self) -> None:
        self.helpers: list[dict[str, Any]] = []
        self._index: dict[int, int] = {}

    def symbol(self, name: str, value: Any) -> tuple | None:
        from hawk.kernel import Helper, Kernel  # a cycle only at call time

        if isinstance(value, bool) or (hasattr(value, "dtype") and getattr(value, "shape", None) == () and str(value.dtype) == "bool"):
            return ("bool", bool(value))
        if isinstance(value, numbers.Integral):
            # The exact decimal text too: the compiler's integer constants are Python's.
            exact = int(value)
            try:
                approx = float(exact)
            except OverflowError:
                approx = _pymath.copysign(_pymath.inf, exact)
            return ("number", approx, True, str(exact))
        if isinstance(value, numbers.Real):
            return ("number", float(value), False)
        if getattr(value, "__hawk_math__", None):
            return ("math", value.__hawk_math__)
        if value is hmath:
            return ("module", "hawk.math")
        if isinstance(value, types.ModuleType):
            if value.__name__ == "hawk":
                return ("module", "hawk")
            if value is _pymath:
                return ("module", "math")
            return ("unsupported", _describe(value))
        if isinstance(value, Helper):
            return ("helper", self.helper(value))
        if isinstance(value, Kernel):
            return ("unsupported", f"the kernel '{value.name}'; kernels cannot call kernels, mark shared code with @hawk.func")
        if isinstance(value, types.BuiltinFunctionType) and getattr(value, "__module__", None) == "math" and value.__name__ in _PYMATH:
            return ("math", "abs" if value.__name__ == "fabs" else value.__name__)
        return ("unsupported", _describe(value))

    def helper(self, h: Any) -> int:
        key = id(h)
        if key in self._index:
            return self._index[key]
        index = len(self.helpers)
        self._index[key] = index
        self.helpers.append({})  # reserve the slot before resolving (recursion)
        self.helpers[index] = self.function(h.fn)
        rule = getattr(h, "jvp_rule", None)
        if rule is not None:  # @h.defjvp: the rule is lowered like a helper (cpp/ir/lower_jvp.cpp)
            at = len(self.helpers)
            self.helpers.append({})
            self.helpers[index]["jvp"] = at
            self.helpers[at] = self.function(rule)
        return index

    def function(self, fn: Callable[..., Any]) -> dict[str, Any]:
        source, file, first_line = function_source(fn)
        scope = {**fn.__globals__, **_closure_vars(fn)}
        names = set(fn.__code__.co_names) | set(fn.__code__.co_freevars)
        resolved: dict[str, tuple] = {}
        for name in sorted(names):
            if name in scope:
                sym = self.symbol(name, scope[name])
            elif name in _BUILTINS and hasattr(builtins, name):
                sym = ("math", _BUILTINS[name])
            elif hasattr(builtins, name) and name not in ("range",):
                sym = ("unsupported", f"the Python builtin {name}()")
            else:
                sym = None
            if sym is not None:
                resolved[name] = sym
        return {"name": fn.__name__, "file": file, "first_line": first_line, "source": source, "globals": resolved}


def _annotations(fn: Callable[..., Any]) -> dict[str, Any]:
    """The function's annotations, evaluating string annotations (``from __future__ import
    annotations``) in its globals and closure."""
    raw = dict(getattr(fn, "__annotations__", {}) or {})
    scope = {**fn.__globals__, **_closure_vars(fn)}
    out: dict[str, Any] = {}
    for name, ann in raw.items():
        if isinstance(ann, str):
            try:
                ann = eval(ann, scope)  # noqa: S307 - the user's own annotation text
            except Exception as err:  # the message names the parameter below
                ann = _Unresolved(ann, err)
        out[name] = ann
    return out


class _Unresolved:
    def __init__(self, text: str, err: Exception) -> None:
        self.__name__ = f"{text!r} (which cannot be evaluated: {err})"


def kernel_spec(fn: Callable[..., Any], steps: int, active_set: bool) -> dict[str, Any]:
    """The compiler's input for kernel ``fn``."""
    resolver = _Resolver()
    main = resolver.function(fn)
    annotations = _annotations(fn)
    params = []
    sig = inspect.signature(fn)
    for name, p in sig.parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            params.append((name, "plane", 1, False, "*args/**kwargs parameters are not allowed in a kernel"))
            continue
        if name not in annotations:
            params.append((name, "plane", 1, False, f"parameter '{name}' has no annotation; annotate it as one of Param, Scalar, Vector[k], Mutable[...], Terminated, Table[...]"))
            continue
        kind = param_kind(annotations[name])
        if isinstance(kind, str):
            params.append((name, "plane", 1, False, f"parameter '{name}' {kind}" if kind.startswith("is ") else f"parameter '{name}': {kind}"))
        else:
            params.append((name, kind[0], kind[1], kind[2], "", matrix_rows(annotations[name]),
                           kind[3] if len(kind) > 3 else "float"))
    return {"fn": main, "params": params, "steps": int(steps), "active_set": bool(active_set), "helpers": resolver.helpers}
