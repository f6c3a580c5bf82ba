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
    walker = _Walker()
    walker.visit(ast, {"rows": _ROWS})
    return walker.found


class _Walker:
    """One walk of a template's tree, knowing what each name holds (`env`: name -> kind or None)."""

    def __init__(self) -> None:
        self.found: list[tuple[int, str]] = []
        self.callees: set[int] = set()  # what calls call (`r.get` in `r.get('x')`), noted as the walk passes each call

    def kind(self, expr: nodes.Node, env: dict) -> str | None:
        """What `expr` holds: rows, one row, groups of rows, one group, or None (anything else)."""
        if isinstance(expr, nodes.Name):
            return env.get(expr.name)
        if isinstance(expr, nodes.Filter) and expr.node is not None:
            return _filtered(self.kind(expr.node, env), expr.name)
        if isinstance(expr, nodes.Getattr) and expr.attr == "list" and self.kind(expr.node, env) == _GROUP:
            return _ROWS
        if isinstance(expr, nodes.Getitem) and self.kind(expr.node, env) == _ROWS:
            return _item_of_rows(expr.arg)
        if isinstance(expr, nodes.CondExpr):
            a, b = self.kind(expr.expr1, env), self.kind(expr.expr2, env) if expr.expr2 is not None else None
            return a if a == b else None
        return None

    def check(self, node: nodes.Node, env: dict) -> None:
        """Note the columns `node` reads of a row."""
        if isinstance(node, nodes.Getattr) and self.kind(node.node, env) == _ROW:
            if not (id(node) in self.callees and node.attr in _DICT_METHODS):
                self.found.append((node.lineno, node.attr))
        elif isinstance(node, nodes.Getitem) and self.kind(node.node, env) == _ROW:
            if isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str):
                self.found.append((node.lineno, node.arg.value))
        elif (
            isinstance(node, nodes.Filter)
            and node.node is not None
            and self.kind(node.node, env) == _ROWS
            and node.name in _ATTRIBUTE_FILTERS | {"selectattr", "rejectattr"}
        ):
            self.found.extend((node.lineno, name) for name in _attribute_names(node))

    def visit(self, node: nodes.Node, env: dict) -> None:
        if isinstance(node, nodes.For):
            self.visit_for(node, env)
            return
        if isinstance(node, nodes.Assign):
            self.visit(node.node, env)
            if isinstance(node.target, nodes.Name):
                env[node.target.name] = self.kind(node.node, env)
            return
        if isinstance(node, (nodes.Macro, nodes.CallBlock)):
            return  # their own scope; not followed
        if isinstance(node, nodes.Call):
            self.callees.add(id(node.node))  # before its children: the callee is one of them
        self.check(node, env)
        for child in node.iter_child_nodes():
            self.visit(child, env)

    def visit_for(self, node: nodes.For, env: dict) -> None:
        """A loop's body sees its target: a row when it loops over rows, a group over groups."""
        self.visit(node.iter, env)
        inner = dict(env)
        target = node.target
        names = [n.name for n in target.find_all(nodes.Name)] if not isinstance(target, nodes.Name) else [target.name]
        for name in names:
            inner[name] = None
        over = self.kind(node.iter, env)
        if isinstance(target, nodes.Name) and over in (_ROWS, _GROUPS):
            inner[target.name] = _ROW if over == _ROWS else _GROUP
        elif over == _GROUPS and _second_name(target):
            inner[_second_name(target)] = _ROWS  # {% for key, items in rows | groupby('x') %}
        for child in [node.test, *node.body]:
            if child is not None:
                self.visit(child, inner)
        for child in node.else_:
            self.visit(child, env)


def _filtered(base: str | None, name: str) -> str | None:
    """What `base | name` holds, when `base` is rows."""
    if base != _ROWS:
        return None
    if name in _LIST_FILTERS:
        return _ROWS
    if name in _ITEM_FILTERS:
        return _ROW
    return _GROUPS if name == "groupby" else None


def _item_of_rows(arg: nodes.Node) -> str | None:
    """What `rows[arg]` holds: rows for a slice, one row for a number."""
    if isinstance(arg, nodes.Slice):
        return _ROWS
    if isinstance(arg, (nodes.Const, nodes.Neg)) and not isinstance(getattr(arg, "value", 0), str):
        return _ROW
    return None


def _second_name(target: nodes.Node) -> str:
    """`items` of a `key, items` loop target, else ''."""
    if isinstance(target, nodes.Tuple) and len(target.items) == 2 and isinstance(target.items[1], nodes.Name):
        return target.items[1].name
    return ""


def _attribute_names(node: nodes.Filter) -> Iterable[str]:
    """The columns a filter names with `attribute=` (or its first argument, for selectattr and groupby)."""
    values = [k.value for k in node.kwargs if k.key == "attribute"]
    if node.name in ("selectattr", "rejectattr", "groupby") and node.args:
        values.append(node.args[0])
    for v in values:
        if isinstance(v, nodes.Const) and isinstance(v.value, str):
            for part in v.value.split(","):
                if part.strip():
                    yield part.strip().split(".")[0]
