"""Template constructs the sandbox refuses or that would blow its limits.

>>> from mcpgen.templates.render import PROSE
>>> template_hazards(PROSE.parse("{{ ''.__class__ }}"))[0][1]
"reads the internal attribute '__class__', which the sandbox refuses"
>>> template_hazards(PROSE.parse("{{ 'ab' * 3 }}"))
[]
"""

from __future__ import annotations

import math

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
    kinds = (
        nodes.Getattr,
        nodes.Getitem,
        nodes.Filter,
        nodes.Call,
        nodes.Mul,
        nodes.Pow,
        nodes.Include,
        nodes.Import,
        nodes.FromImport,
        nodes.Extends,
    )
    for node in ast.find_all(kinds):
        line = node.lineno
        if isinstance(node, nodes.Getattr):
            if node.attr.startswith("_") or node.attr in _UNSAFE_ATTRS:
                out.append((line, f"reads the internal attribute '{node.attr}', which the sandbox refuses"))
        elif isinstance(node, nodes.Getitem):
            if isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str) and node.arg.value.startswith("_"):
                out.append((line, f"reads the internal item '{node.arg.value}', which the sandbox refuses"))
        elif isinstance(node, nodes.Filter):
            if node.name == "attr":
                out.append(
                    (
                        line,
                        "uses the attr filter, which reaches attributes by name; write r.column or r['column'] instead",
                    )
                )
            elif node.name == "format" and not isinstance(node.node, nodes.Const):
                out.append(
                    (
                        line,
                        "uses the format filter, but its format string is not a literal (values must never act as "
                        "templates); write e.g. '%s km' | format(r.distance)",
                    )
                )
        elif isinstance(node, nodes.Call):
            if isinstance(node.node, nodes.Getattr) and node.node.attr in ("format", "format_map"):
                out.append(
                    (
                        line,
                        f"calls .{node.node.attr}(), which can reach into objects; use the format "
                        "filter ('%s' | format(x)), ~ or the thousands/round filters",
                    )
                )
            elif isinstance(node.node, nodes.Name) and node.node.name == "range" and node.args:
                size = _const_number(node.args[-1] if len(node.args) < 3 else node.args[1])
                if isinstance(size, int) and abs(size) > MAX_RANGE:
                    out.append((line, f"calls range() with {size:,} items; the sandbox allows {MAX_RANGE:,}"))
        elif isinstance(node, nodes.Pow):
            exponent = _const_number(node.right)
            if isinstance(exponent, (int, float)) and abs(exponent) > MAX_POWER:
                out.append((line, f"raises to the power {exponent:,}; templates may not go above {MAX_POWER:,}"))
        elif isinstance(node, nodes.Mul):
            for seq, n in ((node.left, node.right), (node.right, node.left)):
                count = _const_number(n)
                if isinstance(seq, (nodes.Const, nodes.List, nodes.Tuple)) and isinstance(count, int):
                    length = (
                        len(seq.value)
                        if isinstance(seq, nodes.Const) and isinstance(seq.value, str)
                        else (len(seq.items) if not isinstance(seq, nodes.Const) else None)
                    )
                    if length is not None and length * count > MAX_SEQUENCE:
                        items = f"{length * count:,}" if count < _HUGE else "an astronomical number of"
                        out.append(
                            (
                                line,
                                f"builds a sequence of {items} items with *; "
                                f"templates may not build more than {MAX_SEQUENCE:,}",
                            )
                        )
                        break
        else:  # include, import, extends
            words: dict[type[nodes.Node], str] = {
                nodes.Include: "include",
                nodes.Import: "import",
                nodes.FromImport: "from ... import",
                nodes.Extends: "extends",
            }
            word = words[type(node)]
            out.append((line, f"uses {{% {word} %}}; spec templates cannot load other templates"))
    return list(dict.fromkeys(out))


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
