"""The stop rule of a stepping kernel read as a continuous function, for events located inside
a step (``eagle.simulate(..., events="refine")``; docs/runtime.md, "One call").

A kernel that declares ``@hawk.kernel(steps=1, time="t", time_step="dt")`` stops a sample
with one assignment to its Terminated mask, the stop rule. ``stop_rule(kernel)`` reads that
assignment from the kernel's source: each comparison ``a < b`` (``<=``, ``>``, ``>=``) is a
component with the continuous form g = a - b (its truth is the sign of g), and ``and``, ``or``,
``not`` and chained comparisons combine components (``StopRule.holds``). A rule with no such
form (a bool plane, ``==``, a call, a comparison on an integer plane or on a random draw) has
``continuous`` False and ``why`` says what it is.

Two kernels are derived from the kernel's source, compiled like any kernel:
- ``event_kernel``: the step with the mask assignment replaced by ``_event_g<i> = (a) - (b)``
  (one Mutable output per component) and ``time_step`` a per-sample plane when it was a
  Param, so that every sample can take its own fraction of the step (``theta * dt``);
- ``saving_kernel``: the step that also copies every in-out Mutable into
  ``_event_prev_<name>`` at the start of each step, so a stopped sample keeps the state its
  last step started from (the fused loops of ``until_done`` run it without Python per step).
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["StopRule", "stop_rule", "event_kernel", "saving_kernel", "G_PREFIX", "PREV_PREFIX"]

G_PREFIX = "_event_g"
PREV_PREFIX = "_event_prev_"
_CMP = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


@dataclass(frozen=True)
class StopRule:
    """A kernel's stop rule: where it is, its components' continuous forms and how they
    combine. ``tree`` is ("cmp", i, op) | ("and", [...]) | ("or", [...]) | ("not", t)."""

    kernel: str
    file: str
    line: int
    text: str
    components: tuple[tuple[str, str], ...]  # (a, b) source texts: g = (a) - (b)
    ops: tuple[str, ...]                     # the comparison of each component
    tree: Any
    continuous: bool
    why: str = ""

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    def truth(self, i: int, g: Any) -> Any:
        """Whether component ``i``'s comparison holds for the values ``g`` of its form."""
        op = self.ops[i]
        return g < 0 if op == "<" else g <= 0 if op == "<=" else g > 0 if op == ">" else g >= 0

    def holds(self, truths: list[Any], xp: Any = np) -> Any:
        """The rule's value from its components' truths (arrays of bools)."""

        def ev(t: Any) -> Any:
            if t[0] == "cmp":
                return truths[t[1]]
            if t[0] == "not":
                return xp.logical_not(ev(t[1]))
            parts = [ev(s) for s in t[1]]
            out = parts[0]
            for p in parts[1:]:
                out = xp.logical_and(out, p) if t[0] == "and" else xp.logical_or(out, p)
            return out

        return ev(self.tree)


def _source(kernel: Any) -> tuple[dict[str, Any], str, ast.FunctionDef]:
    spec = getattr(kernel, "_spec", None)
    if spec is None:
        raise ValueError(f"kernel '{kernel.name}' has no source of its own (a derived kernel): events='refine' reads the "
                         "stop rule of a kernel defined with @hawk.kernel")
    text = textwrap.dedent(spec["fn"]["source"])
    fn = ast.parse(text).body[0]
    assert isinstance(fn, ast.FunctionDef)
    return spec, text, fn


def _mask_name(kernel: Any) -> str:
    return next(s.name for s in kernel.slots if s.kind == "terminated")


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _tainted(fn: ast.FunctionDef, seeds: set[str]) -> set[str]:
    """Names whose values depend on ``seeds`` through the body's assignments (a fixpoint over
    every assignment, whatever branch it sits in: a conservative answer)."""
    out = set(seeds)
    changed = True
    while changed:
        changed = False
        for node in ast.walk(fn):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if _names_in(node.value) & out or (isinstance(node, ast.AugAssign) and _names_in(node.target) & out):
                    for t in targets:
                        for n in _names_in(t):
                            if n not in out:
                                out.add(n)
                                changed = True
    return out


def stop_rule(kernel: Any) -> StopRule:
    """The kernel's stop rule (module docstring). Raises ValueError when the kernel has no mask
    or assigns it other than once at the top level of its body."""
    spec, text, fn = _source(kernel)
    mask = _mask_name(kernel)
    file, first = spec["fn"]["file"], int(spec["fn"]["first_line"])
    assigns = [n for n in ast.walk(fn) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
               and any(isinstance(t, ast.Name) and t.id == mask
                       for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))]
    top = [n for n in fn.body if n in assigns]
    if len(assigns) != 1 or len(top) != 1 or not isinstance(top[0], ast.Assign) or len(top[0].targets) != 1:
        line = first + (assigns[0].lineno - 1 if assigns else fn.lineno - 1)
        return StopRule(kernel.name, file, line, "", (), (), None, False,
                        f"the mask '{mask}' is assigned {len(assigns)} times or inside a branch or loop; events='refine' "
                        "reads one assignment at the top level of the body")
    node = top[0]
    line = first + node.lineno - 1
    rule_text = ast.get_source_segment(text, node) or ""
    comps: list[tuple[str, str]] = []
    ops: list[str] = []
    why: list[str] = []

    def walk(e: ast.expr) -> Any:
        if isinstance(e, ast.BoolOp):
            return ("and" if isinstance(e.op, ast.And) else "or", [walk(v) for v in e.values])
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
            return ("not", walk(e.operand))
        if isinstance(e, ast.Compare):
            parts = []
            left = e.left
            for op, right in zip(e.ops, e.comparators):
                if type(op) not in _CMP:
                    why.append(f"'{ast.get_source_segment(text, e)}' compares with {type(op).__name__} (==, != and "
                               "'is' have no crossing to locate)")
                    return ("cmp", -1)
                comps.append((ast.get_source_segment(text, left) or ast.unparse(left),
                               ast.get_source_segment(text, right) or ast.unparse(right)))
                ops.append(_CMP[type(op)])
                parts.append(("cmp", len(comps) - 1))
                left = right
            return parts[0] if len(parts) == 1 else ("and", parts)
        why.append(f"'{ast.get_source_segment(text, e)}' is not a comparison of floats")
        return ("cmp", -1)

    tree = walk(node.value)
    # A component on an integer or bool plane, or on a random draw, has no continuous form.
    ints = {s.name for s in kernel.slots if not s.is_float and s.kind != "terminated"}
    rnd = {s.name for s in kernel.slots if s.kind == "random"}
    int_names = _tainted(fn, ints)
    rnd_names = _tainted(fn, rnd)
    for a, b in comps:
        used = _names_in(ast.parse(f"({a}) - ({b})", mode="eval"))
        if used & rnd_names:
            why.append(f"'{a}' or '{b}' depends on a random draw")
        elif used & int_names:
            why.append(f"'{a}' or '{b}' is an integer or bool value")
    return StopRule(kernel.name, file, line, rule_text, tuple(comps), tuple(ops), tree, not why, "; ".join(why))


def _splice_params(text: str, fn: ast.FunctionDef, extra: list[str]) -> str:
    """``text`` with ``extra`` parameter texts added after the function's last parameter."""
    last = fn.args.args[-1]
    end = last.annotation if last.annotation is not None else last
    lines = text.splitlines(keepends=True)
    row, col = end.end_lineno - 1, end.end_col_offset
    lines[row] = lines[row][:col] + "".join(f", {p}" for p in extra) + lines[row][col:]
    return "".join(lines)


def _param_tuple(s: Any, name: str) -> tuple:
    kind = "mutable"
    return (name, kind, s.width, s.is_vector, "", s.rows, "float" if s.is_float else s.dtype)


def event_kernel(kernel: Any, rule: StopRule) -> Any:
    """The step with g outputs for each component instead of the mask assignment, and its time
    step a per-sample plane (module docstring)."""
    from raptor_core import _core

    from hawk.kernel import Kernel

    spec, text, fn = _source(kernel)
    node = next(n for n in fn.body if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)
                and n.targets[0].id == _mask_name(kernel))
    lines = text.splitlines(keepends=True)
    indent = lines[node.lineno - 1][: node.col_offset]
    body = "; ".join(f"{G_PREFIX}{i} = ({a}) - ({b})" for i, (a, b) in enumerate(rule.components))
    head = lines[node.lineno - 1][: node.col_offset]
    tail = lines[node.end_lineno - 1][node.end_col_offset:]
    new = lines[: node.lineno - 1] + [head + body + tail] + ["\n"] * (node.end_lineno - node.lineno) + lines[node.end_lineno:]
    assert indent == head
    text2 = "".join(new)
    gnames = [f"{G_PREFIX}{i}" for i in range(len(rule.components))]
    text2 = _splice_params(text2, fn, [f"{g}: Mutable[Scalar]" for g in gnames])
    params = []
    for p in spec["params"]:
        if p[0] == kernel.time_step and p[1] == "param":
            params.append((p[0], "plane", 1, False, "", 0, "float"))
        else:
            params.append(p)
    params += [(g, "mutable", 1, False, "", 0, "float") for g in gnames]
    # Launched over gathered samples with a fresh mask: no active set to keep.
    spec2 = dict(spec, fn=dict(spec["fn"], source=text2), params=params, active_set=False)
    core = _core.lower(spec2)
    return Kernel(core, None, f"event form of {kernel.name}")


def saving_kernel(kernel: Any) -> Any:
    """The step that copies each in-out Mutable into ``_event_prev_<name>`` as each step starts
    (module docstring)."""
    from raptor_core import _core

    from hawk.kernel import Kernel

    spec, text, fn = _source(kernel)
    state = [s for s in kernel.slots if s.kind == "mutable" and s.inout]
    first = fn.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        first = fn.body[1] if len(fn.body) > 1 else first
    lines = text.splitlines(keepends=True)
    head = lines[first.lineno - 1][: first.col_offset]
    if head.strip():
        raise ValueError(f"kernel '{kernel.name}': events='refine' needs the body on its own lines after 'def ...:'")
    copy = head + "; ".join(f"{PREV_PREFIX}{s.name} = {s.name}" for s in state) + "\n"
    text2 = "".join(lines[: first.lineno - 1] + [copy] + lines[first.lineno - 1:])
    text2 = _splice_params(text2, fn, [f"{PREV_PREFIX}{s.name}: Mutable" for s in state])
    params = list(spec["params"]) + [_param_tuple(s, f"{PREV_PREFIX}{s.name}") for s in state]
    spec2 = dict(spec, fn=dict(spec["fn"], source=text2), params=params)
    core = _core.lower(spec2)
    return Kernel(core, kernel.guard, f"{kernel.name} keeping each step's start", spec2)
