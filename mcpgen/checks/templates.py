"""Template constructs the sandbox refuses or that would blow its limits.

>>> from mcpgen.templates.render import PROSE
>>> template_hazards(PROSE.parse("{{ ''.__class__ }}"))[0][1]
"reads the internal attribute '__class__', which the sandbox refuses"
>>> template_hazards(PROSE.parse("{{ 'ab' * 3 }}"))
[]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from jinja2 import nodes

from ..limits import MAX_POWER, MAX_RANGE, MAX_SEQUENCE

_UNSAFE_ATTRS = frozenset(
    {
        "mro",
        "func_globals",
        "func_code",
        "func_closure",
        "f_globals",
        "f_locals",
        "f_builtins",
        "f_code",
        "gi_frame",
        "gi_code",
        "gi_yieldfrom",
        "cr_frame",
        "cr_code",
        "cr_await",
        "ag_frame",
        "ag_code",
        "tb_frame",
        "tb_next",
        "im_func",
        "im_self",
        "im_class",
        "co_code",
    }
)


def template_hazards(ast: nodes.Template) -> list[tuple[int, str]]:
    """(line, what) for each construct a spec template may not use; `what` completes "the template ..."."""
    out: list[tuple[int, str]] = []
    node: nodes.Node
    for node in ast.find_all(tuple(_HAZARDS)):
        what = _HAZARDS[type(node)](node)
        if what is not None:
            out.append((node.lineno, what))
    return list(dict.fromkeys(out))


def _getattr(node: nodes.Getattr) -> str | None:
    if node.attr.startswith("_") or node.attr in _UNSAFE_ATTRS:
        return f"reads the internal attribute '{node.attr}', which the sandbox refuses"
    return None


def _getitem(node: nodes.Getitem) -> str | None:
    if isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str) and node.arg.value.startswith("_"):
        return f"reads the internal item '{node.arg.value}', which the sandbox refuses"
    return None


def _filter(node: nodes.Filter) -> str | None:
    if node.name == "attr":
        return "uses the attr filter, which reaches attributes by name; write r.column or r['column'] instead"
    if node.name == "format" and not isinstance(node.node, nodes.Const):
        return (
            "uses the format filter, but its format string is not a literal (values must never act as "
            "templates); write e.g. '%s km' | format(r.distance)"
        )
    return None


def _call(node: nodes.Call) -> str | None:
    if isinstance(node.node, nodes.Getattr) and node.node.attr in ("format", "format_map"):
        return (
            f"calls .{node.node.attr}(), which can reach into objects; use the format "
            "filter ('%s' | format(x)), ~ or the thousands/round filters"
        )
    if isinstance(node.node, nodes.Name) and node.node.name == "range" and node.args:
        size = _const_number(node.args[-1] if len(node.args) < 3 else node.args[1])
        if isinstance(size, int) and abs(size) > MAX_RANGE:
            return f"calls range() with {size:,} items; the sandbox allows {MAX_RANGE:,}"
    return None


def _pow(node: nodes.Pow) -> str | None:
    exponent = _const_number(node.right)
    if isinstance(exponent, (int, float)) and abs(exponent) > MAX_POWER:
        return f"raises to the power {exponent:,}; templates may not go above {MAX_POWER:,}"
    return None


def _mul(node: nodes.Mul) -> str | None:
    for seq, n in ((node.left, node.right), (node.right, node.left)):
        count = _const_number(n)
        length = _literal_length(seq)
        if length is not None and isinstance(count, int) and length * count > MAX_SEQUENCE:
            items = f"{length * count:,}" if count < _HUGE else "an astronomical number of"
            return f"builds a sequence of {items} items with *; templates may not build more than {MAX_SEQUENCE:,}"
    return None


def _literal_length(node: nodes.Node) -> int | None:
    """The length of a literal string, list or tuple; None for anything else."""
    if isinstance(node, nodes.Const):
        return len(node.value) if isinstance(node.value, str) else None
    return len(node.items) if isinstance(node, (nodes.List, nodes.Tuple)) else None


def _loads(word: str):
    def hazard(node: nodes.Node) -> str:
        return f"uses {{% {word} %}}; spec templates cannot load other templates"

    return hazard


_HAZARDS: dict[type, Callable[[Any], str | None]] = {
    nodes.Getattr: _getattr,
    nodes.Getitem: _getitem,
    nodes.Filter: _filter,
    nodes.Call: _call,
    nodes.Mul: _mul,
    nodes.Pow: _pow,
    nodes.Include: _loads("include"),
    nodes.Import: _loads("import"),
    nodes.FromImport: _loads("from ... import"),
    nodes.Extends: _loads("extends"),
}


_HUGE = 10**30  # stands for any constant too big to compute


def _const_number(node: nodes.Node) -> int | float | None:
    """The value of a constant numeric expression (ints, + - * ** //), never building a big value."""
    if isinstance(node, nodes.Const) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, nodes.Neg):
        value = _const_number(node.node)
        return None if value is None else -value
    if isinstance(node, (nodes.Add, nodes.Sub, nodes.Mul, nodes.Pow, nodes.FloorDiv)):
        left, right = _const_number(node.left), _const_number(node.right)
        if left is None or right is None:
            return None
        try:
            if isinstance(node, nodes.Pow):
                if abs(right) > MAX_POWER:
                    return None  # a power above the bound is its own hazard
                if abs(left) > 1 and abs(right) * math.log2(abs(left)) > 4096:
                    return _HUGE  # too big to compute here
                value = left**right
                return value if isinstance(value, (int, float)) else None
            if (
                isinstance(node, nodes.Mul)
                and abs(left) > 1
                and abs(right) > 1
                and math.log2(abs(left)) + math.log2(abs(right)) > 4096
            ):
                return _HUGE
            return {
                nodes.Add: lambda: left + right,
                nodes.Sub: lambda: left - right,
                nodes.Mul: lambda: left * right,
                nodes.FloorDiv: lambda: left // right,
            }[type(node)]()
        except (OverflowError, ZeroDivisionError, ValueError, TypeError):
            return None
    return None
