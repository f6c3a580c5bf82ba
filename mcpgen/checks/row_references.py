"""The columns of a result row a template reads, so `validate --live` can check they exist.

>>> from mcpgen.templates.render import PROSE
>>> row_references(PROSE.parse("{% for r in rows %}{{ r.city }}{% endfor %}"))
[(1, 'city')]
"""

from __future__ import annotations

from collections.abc import Iterable

from jinja2 import nodes

_ROWS, _ROW, _GROUPS, _GROUP = "rows", "row", "groups", "group"  # groups: rows | groupby(...)
_LIST_FILTERS = {"sort", "reverse", "list", "unique", "selectattr", "rejectattr", "select", "reject"}
_ITEM_FILTERS = {"first", "last", "random", "min", "max"}
_ATTRIBUTE_FILTERS = {"sum", "map", "sort", "min", "max", "groupby", "unique"}
_DICT_METHODS = {"items", "keys", "values", "get"}


def row_references(ast: nodes.Template) -> list[tuple[int, str]]:
    """(line, column name) for every column of a result row the template reads.

    Rows are `rows` itself, filtered or sliced lists of it, `rows[0]`, `rows | first`,
    loop variables over those, the `list` of each `rows | groupby(...)` group, and
    `{% set %}` names bound to any of them."""
    found: list[tuple[int, str]] = []
    callees: set[int] = set()  # what calls call (`r.get` in `r.get('x')`), noted as the walk passes each call

    def kind(expr: nodes.Node, env: dict) -> str | None:
        if isinstance(expr, nodes.Name):
            return env.get(expr.name)
        if isinstance(expr, nodes.Filter) and expr.node is not None:
            base = kind(expr.node, env)
            if base == _ROWS and expr.name in _LIST_FILTERS:
                return _ROWS
            if base == _ROWS and expr.name in _ITEM_FILTERS:
                return _ROW
            if base == _ROWS and expr.name == "groupby":
                return _GROUPS
        if isinstance(expr, nodes.Getattr) and expr.attr == "list" and kind(expr.node, env) == _GROUP:
            return _ROWS
        if isinstance(expr, nodes.Getitem) and kind(expr.node, env) == _ROWS:
            if isinstance(expr.arg, nodes.Slice):
                return _ROWS
            if isinstance(expr.arg, (nodes.Const, nodes.Neg)) and not isinstance(getattr(expr.arg, "value", 0), str):
                return _ROW
        if isinstance(expr, nodes.CondExpr):
            a, b = kind(expr.expr1, env), kind(expr.expr2, env) if expr.expr2 is not None else None
            return a if a == b else None
        return None

    def attribute_names(node: nodes.Filter) -> Iterable[str]:
        values = [k.value for k in node.kwargs if k.key == "attribute"]
        if node.name in ("selectattr", "rejectattr", "groupby") and node.args:
            values.append(node.args[0])
        for v in values:
            if isinstance(v, nodes.Const) and isinstance(v.value, str):
                for part in v.value.split(","):
                    if part.strip():
                        yield part.strip().split(".")[0]

    def check(node: nodes.Node, env: dict) -> None:
        if isinstance(node, nodes.Getattr) and kind(node.node, env) == _ROW:
            if not (id(node) in callees and node.attr in _DICT_METHODS):
                found.append((node.lineno, node.attr))
        elif isinstance(node, nodes.Getitem) and kind(node.node, env) == _ROW:
            if isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str):
                found.append((node.lineno, node.arg.value))
        elif (
            isinstance(node, nodes.Filter)
            and node.node is not None
            and kind(node.node, env) == _ROWS
            and node.name in _ATTRIBUTE_FILTERS | {"selectattr", "rejectattr"}
        ):
            found.extend((node.lineno, name) for name in attribute_names(node))

    def visit(node: nodes.Node, env: dict) -> None:
        if isinstance(node, nodes.For):
            visit(node.iter, env)
            inner = dict(env)
            names = (
                [n.name for n in node.target.find_all(nodes.Name)]
                if not isinstance(node.target, nodes.Name)
                else [node.target.name]
            )
            for name in names:
                inner[name] = None
            over = kind(node.iter, env)
            if isinstance(node.target, nodes.Name) and over in (_ROWS, _GROUPS):
                inner[node.target.name] = _ROW if over == _ROWS else _GROUP
            elif (
                isinstance(node.target, nodes.Tuple)
                and over == _GROUPS
                and len(node.target.items) == 2
                and isinstance(node.target.items[1], nodes.Name)
            ):
                inner[node.target.items[1].name] = _ROWS  # {% for key, items in rows | groupby('x') %}
            for child in [node.test, *node.body]:
                if child is not None:
                    visit(child, inner)
            for child in node.else_:
                visit(child, env)
            return
        if isinstance(node, nodes.Assign):
            visit(node.node, env)
            if isinstance(node.target, nodes.Name):
                env[node.target.name] = kind(node.node, env)
            return
        if isinstance(node, (nodes.Macro, nodes.CallBlock)):
            return  # their own scope; not followed
        if isinstance(node, nodes.Call):
            callees.add(id(node.node))  # before its children: the callee is one of them
        check(node, env)
        for child in node.iter_child_nodes():
            visit(child, env)

    visit(ast, {"rows": _ROWS})
    return found
