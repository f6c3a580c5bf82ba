"""Simple templates as plain Python: the common prose shapes, rendered without Jinja's machinery.

`compile_simple(ast)` turns a parsed template into a function `fn(context) -> str`, or
returns None when the template uses anything beyond a small subset: text, `{{ }}` of
names, `row.column`, `rows[0]`, constants, `not`/`and`/`or`, comparisons, `a if b else c`,
the filters mcpgen adds plus `length`, one level of `{% for x in seq %}` (with `loop.index`,
`loop.index0`, `loop.first`, `loop.last`, `loop.length`) and `{% if %}/{% elif %}/{% else %}`.
Everything else, and every value the subset does not expect (an undefined name, a
missing column, a row that is not a dict), raises `Fallback` so the caller renders with
Jinja itself: the answer, or the error, is always Jinja's. Nothing here calls a method or
reads an attribute of an object, so the sandbox has nothing to guard.

>>> from mcpgen.templates.budget import as_text
>>> from mcpgen.templates.render import PROSE
>>> source = "{% for r in rows %}{{ r.city }}{{ ', ' if not loop.last }}{% endfor %}"
>>> fn = compile_simple(PROSE.parse(source), as_text)
>>> fn({"rows": [{"city": "Oslo"}, {"city": "Bergen"}]}, 1000)
'Oslo, Bergen'
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from jinja2 import nodes

from .filters import FILTERS

Fn = Callable[[dict[str, Any]], Any]
Renderer = Callable[[dict[str, Any], int], str]
_COMPARE = {
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "lteq": operator.le,
    "gt": operator.gt,
    "gteq": operator.ge,
}
_LOOP = {
    "index": lambda i, n: i + 1,
    "index0": lambda i, n: i,
    "first": lambda i, n: i == 0,
    "last": lambda i, n: i == n - 1,
    "length": lambda i, n: n,
}
_MISSING = object()
LONG_VALUE = 1000  # characters of a printed value past which the output's size is looked at at once


class Fallback(Exception):
    """This render needs Jinja itself."""


class _Unsupported(Exception):
    """The template uses something outside the subset."""


class _Full(Exception):
    """The output has passed its size limit: no need to render the rest."""


class _Output(list):
    """The pieces rendered so far; a loop asks `past_limit()` now and then, so a long loop
    stops soon after the text passes `limit` instead of building all of it."""

    def __init__(self, limit: int):
        super().__init__()
        self.limit, self.size, self.counted = limit, 0, 0

    def past_limit(self) -> bool:
        self.size += sum(map(len, self[self.counted :]))
        self.counted = len(self)
        return self.size > self.limit


def compile_simple(ast: nodes.Template, finalize: Callable[[Any], str]) -> Renderer | None:
    """A function `(context, limit) -> text` rendering `ast` (not stripped; it stops soon after
    `limit` characters), or None outside the subset.

    `finalize`: how every `{{ }}` value prints (`budget.as_text`, URL-quoted in a source URL)."""
    compiler = _Compiler({**FILTERS, "length": len}, finalize)
    try:
        body = compiler.statements(ast.body, loop=None)
    except _Unsupported:
        return None

    def render(context: dict[str, Any], limit: int) -> str:
        out = _Output(limit)
        try:
            body(context, out)
        except _Full:  # past `limit`: the caller cuts the text or refuses it, as with Jinja
            pass
        return "".join(out)

    return render


def _const(node: nodes.Node) -> Any:
    """The value of a constant: `3`, `'a'`, or a negative number (`-1` parses as Neg(Const(1)))."""
    if isinstance(node, nodes.Const):
        return node.value
    if isinstance(node, nodes.Neg) and isinstance(node.node, nodes.Const):
        value = node.node.value
        if type(value) in (int, float):
            return -value
    raise _Unsupported


class _Compiler:
    def __init__(self, filters: dict[str, Callable], finalize: Callable[[Any], str]):
        self.filters = filters
        self.finalize = finalize

    # statements: functions (context, out) -> None

    def statements(self, body: list[nodes.Node], loop: str | None) -> Callable[[dict, list], None]:
        parts = [self.statement(node, loop) for node in body]

        def run(context: dict, out: list) -> None:
            for part in parts:
                part(context, out)

        return parts[0] if len(parts) == 1 else run

    def statement(self, node: nodes.Node, loop: str | None) -> Callable[[dict, list], None]:
        if isinstance(node, nodes.Output):
            return self.output(node, loop)
        if isinstance(node, nodes.If):
            return self.if_(node, loop)
        if isinstance(node, nodes.For) and loop is None:
            return self.for_(node)
        raise _Unsupported

    def output(self, node: nodes.Output, loop: str | None) -> Callable[[dict, list], None]:
        pieces: list[str | Fn] = []  # template text, or the value of a `{{ }}`, printed by finalize
        for child in node.nodes:
            if isinstance(child, nodes.TemplateData):
                pieces.append(child.data)
            elif isinstance(child, nodes.CondExpr) and child.expr2 is None:  # `{{ a if b }}`: '' when b is false
                pieces.append(self.expr(nodes.CondExpr(child.test, child.expr1, nodes.Const("")), loop))
            else:
                pieces.append(self.expr(child, loop))
        if all(isinstance(p, str) for p in pieces):
            text = "".join(pieces)  # type: ignore[arg-type]
            return lambda context, out: out.append(text)
        finalize = self.finalize

        def run(context: dict, out: list) -> None:
            for piece in pieces:
                if type(piece) is str:
                    out.append(piece)
                    continue
                text = finalize(piece(context))  # type: ignore[operator]
                out.append(text)
                if len(text) > LONG_VALUE and isinstance(out, _Output) and out.past_limit():
                    raise _Full  # long values: the limit is looked at now, not at the loop's next look

        return run

    def if_(self, node: nodes.If, loop: str | None) -> Callable[[dict, list], None]:
        branches = [(self.expr(node.test, loop), self.statements(node.body, loop) if node.body else None)]
        branches += [(self.expr(e.test, loop), self.statements(e.body, loop) if e.body else None) for e in node.elif_]
        otherwise = self.statements(node.else_, loop) if node.else_ else None

        def run(context: dict, out: list) -> None:
            for test, body in branches:
                if test(context):
                    if body is not None:
                        body(context, out)
                    return
            if otherwise is not None:
                otherwise(context, out)

        return run

    def for_(self, node: nodes.For) -> Callable[[dict, list], None]:
        if node.else_ or node.test is not None or node.recursive or not isinstance(node.target, nodes.Name):
            raise _Unsupported
        name = node.target.name
        if name == "loop":
            raise _Unsupported
        items = self.expr(node.iter, None)
        body = self.statements(node.body, loop=name) if node.body else None

        def run(context: dict, out: list) -> None:
            seq = list(items(context))
            if body is None:
                return
            n = len(seq)
            saved = context.get(name, _MISSING), context.get("loop", _MISSING)
            try:
                for i, item in enumerate(seq):
                    context[name] = item
                    context["loop"] = (i, n)
                    body(context, out)
                    if i % 32 == 31 and isinstance(out, _Output) and out.past_limit():
                        raise _Full
            finally:
                for key, value in zip((name, "loop"), saved):
                    if value is _MISSING:
                        context.pop(key, None)
                    else:
                        context[key] = value

        return run

    # expressions: functions context -> value

    def expr(self, node: nodes.Node, loop: str | None) -> Fn:
        if isinstance(node, (nodes.Const, nodes.Neg)):
            value = _const(node)
            return lambda context: value
        if isinstance(node, nodes.Name) and node.ctx == "load":
            return self.name(node.name, loop)
        if isinstance(node, nodes.Getattr):
            return self.getattr(node, loop)
        if isinstance(node, nodes.Getitem) and type(_const(node.arg)) is int:
            return self.getitem(self.expr(node.node, loop), _const(node.arg))
        if isinstance(node, nodes.Filter):
            return self.filter(node, loop)
        if isinstance(node, nodes.Not):
            inner = self.expr(node.node, loop)
            return lambda context: not inner(context)
        if isinstance(node, nodes.And):
            left, right = self.expr(node.left, loop), self.expr(node.right, loop)
            return lambda context: left(context) and right(context)
        if isinstance(node, nodes.Or):
            left, right = self.expr(node.left, loop), self.expr(node.right, loop)
            return lambda context: left(context) or right(context)
        if isinstance(node, nodes.CondExpr) and node.expr2 is not None:
            test, yes, no = self.expr(node.test, loop), self.expr(node.expr1, loop), self.expr(node.expr2, loop)
            return lambda context: yes(context) if test(context) else no(context)
        if isinstance(node, nodes.Compare) and len(node.ops) == 1 and node.ops[0].op in _COMPARE:
            op = _COMPARE[node.ops[0].op]
            left, right = self.expr(node.expr, loop), self.expr(node.ops[0].expr, loop)
            return lambda context: op(left(context), right(context))
        raise _Unsupported

    @staticmethod
    def name(name: str, loop: str | None) -> Fn:
        if name == "loop":
            raise _Unsupported  # only loop.<attribute> inside a for

        def lookup(context: dict) -> Any:
            value = context.get(name, _MISSING)
            if value is _MISSING:
                raise Fallback  # Jinja says which name is undefined
            return value

        return lookup

    def getattr(self, node: nodes.Getattr, loop: str | None) -> Fn:
        attr = node.attr
        if isinstance(node.node, nodes.Name) and node.node.name == "loop":
            if loop is None or attr not in _LOOP:
                raise _Unsupported
            field = _LOOP[attr]

            def loop_value(context: dict) -> Any:
                i, n = context["loop"]
                return field(i, n)

            return loop_value
        if isinstance(node.node, nodes.Name) and node.node.name == loop:  # `r.city` in `for r in rows`
            name = loop

            def loop_column(context: dict) -> Any:
                row = context[name]  # the loop sets it
                if type(row) is dict and attr in row:
                    return row[attr]
                raise Fallback

            return loop_column
        obj = self.expr(node.node, loop)

        def column(context: dict) -> Any:
            row = obj(context)
            if type(row) is dict and attr in row:
                return row[attr]
            raise Fallback  # not a row's column: Jinja's sandboxed getattr decides

        return column

    @staticmethod
    def getitem(obj: Fn, index: int) -> Fn:
        def item(context: dict) -> Any:
            seq = obj(context)
            if type(seq) in (list, tuple) and -len(seq) <= index < len(seq):
                return seq[index]
            raise Fallback

        return item

    def filter(self, node: nodes.Filter, loop: str | None) -> Fn:
        function = self.filters.get(node.name)
        if function is None or node.node is None or node.kwargs or node.dyn_args or node.dyn_kwargs:
            raise _Unsupported
        args = tuple(_const(a) for a in node.args)
        value = self.expr(node.node, loop)

        def apply(context: dict) -> Any:
            try:
                return function(value(context), *args)
            except Exception:
                raise Fallback from None  # Jinja reports the failure in its words

        return apply
