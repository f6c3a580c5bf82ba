"""Simple templates as plain Python: the common prose shapes, rendered without Jinja's machinery.

`compile_simple(ast)` turns a parsed template into a function `fn(context) -> str`, or
returns None when the template uses anything beyond a small subset: text, `{{ }}` of
names, `row.column`, `rows[0]`, constants, `not`/`and`/`or`, comparisons, `a if b else c`,
the filters mcpgen adds plus `length`, one level of `{% for x in seq %}` (with `loop.index`,
`loop.index0`, `loop.first`, `loop.last`, `loop.length`) and `{% if %}/{% elif %}/{% else %}`.
The function is Python source written from the template's nodes and compiled once, as Jinja
compiles its own, so a row costs a few lines rather than a call per value. Every value the subset
does not expect (an undefined name, a missing column, a row that is not a dict) raises, so the
caller renders with Jinja itself: the answer, or the error, is always Jinja's. Nothing here calls
a method or reads an attribute of an object, so the sandbox has nothing to guard; the source holds
no text of the template (constants are passed in a tuple).

>>> from mcpgen.templates.budget import as_text
>>> from mcpgen.templates.render import PROSE
>>> source = "{% for r in rows %}{{ r.city }}{{ ', ' if not loop.last }}{% endfor %}"
>>> fn = compile_simple(PROSE.parse(source), as_text)
>>> fn({"rows": [{"city": "Oslo"}, {"city": "Bergen"}]}, 1000)
'Oslo, Bergen'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jinja2 import nodes

from .filters import FILTERS

Renderer = Callable[[dict[str, Any], int], str]
_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "lteq": "<=", "gt": ">", "gteq": ">="}
_LOOP = {"index": "(_i + 1)", "index0": "_i", "first": "(_i == 0)", "last": "(_i == _n - 1)", "length": "_n"}
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


def _fallback() -> Any:
    raise Fallback


def compile_simple(ast: nodes.Template, finalize: Callable[[Any], str]) -> Renderer | None:
    """A function `(context, limit) -> text` rendering `ast` (not stripped; it stops soon after
    `limit` characters), or None outside the subset.

    `finalize`: how every `{{ }}` value prints (`budget.as_text`, URL-quoted in a source URL)."""
    source = _Source({**FILTERS, "length": len})
    try:
        source.statements(ast.body, None, "        ")
    except (_Unsupported, RecursionError):
        return None
    code = "\n".join(
        [
            "def render(context, limit):",
            "    out = _Output(limit)",
            "    append = out.append",
            "    try:",
            *source.lines,
            "    except _Full:",  # past `limit`: the caller cuts the text or refuses it, as with Jinja
            "        pass",
            "    return ''.join(out)",
        ]
    )
    scope: dict[str, Any] = {"K": tuple(source.constants), "finalize": finalize, "LONG_VALUE": LONG_VALUE}
    scope.update(_Output=_Output, _Full=_Full, _fallback=_fallback)
    try:
        exec(compile(code, "<mcpgen template>", "exec"), scope)
    except (SyntaxError, RecursionError, MemoryError):  # nested deeper than Python parses: Jinja decides
        return None
    return scope["render"]


def _const(node: nodes.Node) -> Any:
    """The value of a constant: `3`, `'a'`, or a negative number (`-1` parses as Neg(Const(1)))."""
    if isinstance(node, nodes.Const):
        return node.value
    if isinstance(node, nodes.Neg) and isinstance(node.node, nodes.Const):
        value = node.node.value
        if type(value) in (int, float):
            return -value
    raise _Unsupported


class _Source:
    """The lines of the render function's body. Statements append lines; expressions return Python
    expressions, whose values come from the context, the constants `K[i]`, and the loop's `_item`, `_i`
    and `_n`; a walrus name `_tN` holds a value that is looked at before it is used."""

    def __init__(self, filters: dict[str, Callable]):
        self.filters = filters
        self.lines: list[str] = []
        self.constants: list[Any] = []
        self.temps = 0

    def const(self, value: Any) -> str:
        self.constants.append(value)
        return f"K[{len(self.constants) - 1}]"

    def temp(self) -> str:
        self.temps += 1
        return f"_t{self.temps}"

    # statements

    def statements(self, body: list[nodes.Node], loop: str | None, indent: str) -> None:
        if not body:
            self.lines.append(f"{indent}pass")
        for node in body:
            if isinstance(node, nodes.Output):
                self.output(node, loop, indent)
            elif isinstance(node, nodes.If):
                self.if_(node, loop, indent)
            elif isinstance(node, nodes.For) and loop is None:
                self.for_(node, indent)
            else:
                raise _Unsupported

    def output(self, node: nodes.Output, loop: str | None, indent: str) -> None:
        text: list[str] = []  # template text not yet appended
        for child in node.nodes:
            if isinstance(child, nodes.TemplateData):
                text.append(child.data)
                continue
            if text:
                self.lines.append(f"{indent}append({self.const(''.join(text))})")
                text = []
            if isinstance(child, nodes.CondExpr) and child.expr2 is None:  # `{{ a if b }}`: '' when b is false
                child = nodes.CondExpr(child.test, child.expr1, nodes.Const(""))
            self.lines += [
                f"{indent}_s = finalize({self.expr(child, loop)})",
                f"{indent}append(_s)",
                f"{indent}if len(_s) > LONG_VALUE and out.past_limit():",  # long values: looked at now
                f"{indent}    raise _Full",
            ]
        if text:
            self.lines.append(f"{indent}append({self.const(''.join(text))})")

    def if_(self, node: nodes.If, loop: str | None, indent: str) -> None:
        keyword = "if"
        for branch in [node, *node.elif_]:
            self.lines.append(f"{indent}{keyword} {self.expr(branch.test, loop)}:")
            self.statements(branch.body, loop, indent + "    ")
            keyword = "elif"
        if node.else_:
            self.lines.append(f"{indent}else:")
            self.statements(node.else_, loop, indent + "    ")

    def for_(self, node: nodes.For, indent: str) -> None:
        if node.else_ or node.test is not None or node.recursive or not isinstance(node.target, nodes.Name):
            raise _Unsupported
        name = node.target.name
        if name == "loop":
            raise _Unsupported
        self.lines.append(f"{indent}_seq = list({self.expr(node.iter, None)})")
        if not node.body:
            return
        self.lines += [f"{indent}_n = len(_seq)", f"{indent}for _i, _item in enumerate(_seq):"]
        self.statements(node.body, name, indent + "    ")
        self.lines += [f"{indent}    if _i % 32 == 31 and out.past_limit():", f"{indent}        raise _Full"]

    # expressions

    def expr(self, node: nodes.Node, loop: str | None) -> str:
        if isinstance(node, (nodes.Const, nodes.Neg)):
            return self.const(_const(node))
        if isinstance(node, nodes.Name) and node.ctx == "load":
            if node.name == "loop":
                raise _Unsupported  # only loop.<attribute> inside a for
            return "_item" if node.name == loop else f"context[{self.const(node.name)}]"
        if isinstance(node, nodes.Getattr):
            return self.getattr(node, loop)
        if isinstance(node, nodes.Getitem) and type(_const(node.arg)) is int:
            return self.item(self.expr(node.node, loop), self.const(_const(node.arg)), "type({}) in (list, tuple)")
        if isinstance(node, nodes.Filter):
            return self.filter(node, loop)
        if isinstance(node, nodes.Not):
            return f"(not {self.expr(node.node, loop)})"
        if isinstance(node, (nodes.And, nodes.Or)):
            word = "and" if isinstance(node, nodes.And) else "or"
            return f"({self.expr(node.left, loop)} {word} {self.expr(node.right, loop)})"
        if isinstance(node, nodes.CondExpr) and node.expr2 is not None:
            test, yes, no = (self.expr(n, loop) for n in (node.test, node.expr1, node.expr2))
            return f"({yes} if {test} else {no})"
        if isinstance(node, nodes.Compare) and len(node.ops) == 1 and node.ops[0].op in _COMPARE:
            return f"({self.expr(node.expr, loop)} {_COMPARE[node.ops[0].op]} {self.expr(node.ops[0].expr, loop)})"
        raise _Unsupported

    def getattr(self, node: nodes.Getattr, loop: str | None) -> str:
        if isinstance(node.node, nodes.Name) and node.node.name == "loop":
            if loop is None or node.attr not in _LOOP:
                raise _Unsupported
            return _LOOP[node.attr]
        return self.item(self.expr(node.node, loop), self.const(node.attr), "type({}) is dict")

    def filter(self, node: nodes.Filter, loop: str | None) -> str:
        function = self.filters.get(node.name)
        if function is None or node.node is None or node.kwargs or node.dyn_args or node.dyn_kwargs:
            raise _Unsupported
        args = [self.expr(node.node, loop), *(self.const(_const(a)) for a in node.args)]
        return f"{self.const(function)}({', '.join(args)})"

    def item(self, obj: str, key: str, check: str) -> str:
        """`obj[key]` when `check` holds for obj (a row's column: a dict; a list's item), else Jinja decides."""
        if obj == "_item":
            return f"(_item[{key}] if {check.format('_item')} else _fallback())"
        name = self.temp()
        return f"({name}[{key}] if {check.format(f'({name} := {obj})')} else _fallback())"
