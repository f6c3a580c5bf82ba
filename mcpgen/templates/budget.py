"""What a template may build: bounds on every string, list and number, checked as it is built.

The sandbox stops a template from reaching Python's internals but not from doing work:
`('x\\n' * 20000) | indent(20000)` asks for 400 million characters in one filter call, and
`range(100000) | map('center', 100000) | list` for ten billion in a loop no `{% for %}` sees.
So, for one render:

- every filter, call and operator first checks the clock (loops too, through `bounded`);
- an operation whose result size follows from its inputs (`*`, `+`, `~`, `%`, `center`,
  `indent`, `wordwrap`, `replace`, `join`, `format`, `sum`, `str.expandtabs`, ...) is refused
  *before* it runs if that result would be longer than MAX_OUTPUT characters or MAX_SEQUENCE
  items; any other string or list a filter or call returns is held to the same bounds;
- what all operations build together is counted against MAX_BUILT, so many small results
  cannot add up to gigabytes either, and so is every value printed and every loop's own text,
  since inside a `{% set %}` block, a macro or a `{% filter %}` block output piles up where
  the final output cap does not see it;
- turning a value into text (output, `~`, `join`, `%`) first walks it, and a value that would
  print as more than MAX_OUTPUT characters is refused unprinted (a list repeated inside a list
  is small in memory but huge as text).

>>> start(1.0)
>>> bounded_mul("ab", 3)
'ababab'
>>> bounded_mul("ab", 10**6)
Traceback (most recent call last):
...
jinja2.exceptions.SecurityError: a template may not build a sequence longer than 100,000
"""

from __future__ import annotations

import datetime as dt
import math
import re
import threading
import time
from typing import Any

from jinja2 import nodes
from jinja2.sandbox import SecurityError
from jinja2.visitor import NodeTransformer

from ..limits import MAX_BUILT, MAX_INT_BITS, MAX_OUTPUT, MAX_POWER, MAX_SEQUENCE

RENDER_SECONDS = 1.0


class Overtime(BaseException):
    """A render ran past its deadline; a BaseException so that nothing in between swallows it."""


class _Limits(threading.local):
    deadline = math.inf
    left = MAX_BUILT


_limits = _Limits()


def start(seconds: float = RENDER_SECONDS) -> None:
    """Begin a render on this thread: a fresh deadline and a fresh budget."""
    _limits.deadline = time.monotonic() + seconds
    _limits.left = MAX_BUILT


def tick() -> None:
    if time.monotonic() > _limits.deadline:
        raise Overtime


def spend(result: Any, source: Any = None) -> Any:
    """Count a value an operation built (not `source`, its input handed back) against the bounds."""
    tick()
    if result is source:
        return result
    if isinstance(result, str):
        if len(result) > MAX_OUTPUT:
            raise too_big("a filter or call")
    elif isinstance(result, (list, tuple, dict)):
        if len(result) > MAX_SEQUENCE:
            raise SecurityError(f"a template may not build a sequence longer than {MAX_SEQUENCE:,}")
    else:
        return result
    _limits.left -= len(result)
    if _limits.left < 0:
        raise SecurityError(f"a template may not build more than {MAX_BUILT:,} characters and items in all")
    return result


def too_big(what: str) -> SecurityError:
    return SecurityError(f"a template may not build a string longer than {MAX_OUTPUT:,} characters ({what})")


def text_size(value: Any, limit: int = MAX_OUTPUT) -> int:
    """About how many characters `str(value)` has, walking at most `limit` of them (then limit + 1).

    >>> len(str([[0] * 10] * 3)), text_size([[0] * 10] * 3), text_size([[0] * 100_000] * 100_000) > MAX_OUTPUT
    (96, 134, True)
    """
    size, stack = 0, [value]
    while stack and size <= limit:
        item = stack.pop()
        if isinstance(item, str):
            size += len(item) + 2
        elif isinstance(item, (list, tuple, set, frozenset)):
            size += 2 + 2 * len(item)
            stack.extend(item if len(item) <= limit else list(item)[: limit + 1])
        elif isinstance(item, dict):
            size += 2 + 4 * len(item)
            stack.extend(list(item.items())[: limit + 1])
        elif isinstance(item, int):
            size += item.bit_length() // 3 + 2  # digits, without printing (Python refuses past 4,300)
        elif isinstance(item, float):
            size += len(repr(item))
        else:
            size += 20
    return size if not stack else max(size, limit + 1)


def printable(value: Any) -> Any:
    """`value`, refused first if printing it would give more than MAX_OUTPUT characters."""
    if isinstance(value, (list, tuple, set, frozenset, dict)) and text_size(value) > MAX_OUTPUT:
        raise too_big("a value printed as text")
    return value


# Operators ----------------------------------------------------------------------------------------


def bounded_mul(a: Any, b: Any) -> Any:
    for seq, n in ((a, b), (b, a)):
        if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and len(seq) * n > MAX_SEQUENCE:
            raise SecurityError(f"a template may not build a sequence longer than {MAX_SEQUENCE:,}")
        if isinstance(seq, (list, tuple)) and isinstance(n, int) and n > 1 and text_size(seq) * n > MAX_BUILT:
            raise SecurityError("a template may not repeat a list that large")  # [[0] * 10**5] * 10**5
    if isinstance(a, int) and isinstance(b, int) and a.bit_length() + b.bit_length() > MAX_INT_BITS:
        raise SecurityError(f"a template may not build an integer of more than {MAX_INT_BITS:,} bits")
    return spend(a * b)


def bounded_pow(a: Any, b: Any) -> Any:
    if isinstance(b, (int, float)) and abs(b) > MAX_POWER:
        raise SecurityError(f"a template may not raise to a power above {MAX_POWER:,}")
    if isinstance(a, int) and isinstance(b, int) and b > 0 and a.bit_length() * b > MAX_INT_BITS:
        raise SecurityError(f"a template may not build an integer of more than {MAX_INT_BITS:,} bits")
    return a**b


def bounded_add(a: Any, b: Any) -> Any:
    if isinstance(a, str) and isinstance(b, str) and len(a) + len(b) > MAX_OUTPUT:
        raise too_big("+")
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) + len(b) > MAX_SEQUENCE:
        raise SecurityError(f"a template may not build a sequence longer than {MAX_SEQUENCE:,}")
    return spend(a + b)


def concat(values: list) -> str:
    """`a ~ b ~ ...`, with the size of the result known before it is built."""
    parts = [str(printable(v)) for v in values]
    if sum(map(len, parts)) > MAX_OUTPUT:
        raise too_big("~")
    return spend("".join(parts))


# Checks before a filter or method runs -------------------------------------------------------------

_PRINTF_SPEC = re.compile(r"%(?:\([^)]*\))?[#0 +-]*(\d*|\*)(?:\.(\d*|\*))?")
_FORMAT_SPEC = re.compile(r"\{[^{}]*?:([^{}]*)\}")
_FORMAT_FIELD = re.compile(r"(?<!\{)\{[^{}]*\}")


def check_format(fmt: Any, *args: Any) -> None:
    """Refuse %-style or {}-style formats whose widths, or fields times arguments, make a huge string.

    A field may name the same argument again and again (`'{0}{0}{0}'`, `'%(a)s%(a)s'`), so the
    estimate is every field filled with the largest argument.
    """
    if not isinstance(fmt, str):
        return
    printf = _PRINTF_SPEC.findall(fmt)
    numbers = [n for m in printf for n in m if n.isdigit()]
    fields = _FORMAT_FIELD.findall(fmt)
    numbers += [n for spec in _FORMAT_SPEC.findall(fmt) for n in re.findall(r"\d+", spec)]
    if any(int(n) > MAX_SEQUENCE for n in numbers):
        raise too_big("a format width")
    check_ints(args)
    values = [
        v for a in args for v in (a.values() if isinstance(a, dict) else a if isinstance(a, (list, tuple)) else [a])
    ]
    largest = max((text_size(v) for v in values), default=0)
    if len(fmt) + (len(printf) + len(fields)) * largest > MAX_OUTPUT:
        raise too_big("format")


def check_ints(values) -> None:
    for value in values:
        items = value if isinstance(value, (tuple, list)) else value.values() if isinstance(value, dict) else [value]
        if any(isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_SEQUENCE for v in items):
            raise too_big("a width or count")


def check_replace(text: Any, old: Any, new: Any, count: Any = -1) -> None:
    if isinstance(text, str) and isinstance(old, str) and isinstance(new, str):
        hits = len(text) + 1 if old == "" else text.count(old)
        if isinstance(count, int) and count >= 0:
            hits = min(hits, count)
        if len(text) + hits * (len(new) - len(old)) > MAX_OUTPUT:
            raise too_big("replace")


def check_join(items: list, sep: Any) -> None:
    if not isinstance(sep, str):
        return
    size = len(sep) * max(len(items) - 1, 0)
    for item in items:  # stops at the first item past the bound: printing them all could take minutes
        size += len(item) if isinstance(item, str) else text_size(item)
        if size > MAX_OUTPUT:
            raise too_big("join")


def check_str_call(text: str, name: str, args: tuple, kwargs: dict) -> tuple:
    """Checks for a str method called from a template; returns the arguments to call it with."""
    check_ints([args, kwargs])
    if name in ("format", "format_map"):
        check_format(text, args, kwargs)
    elif name == "replace" and len(args) >= 2:
        check_replace(text, *args[:3])
    elif name == "join" and args:
        args = (list(args[0]), *args[1:])
        check_join(args[0], text)
    elif name == "expandtabs":
        width = args[0] if args else kwargs.get("tabsize", 8)
        if isinstance(width, int) and len(text) + text.count("\t") * width > MAX_OUTPUT:
            raise too_big("expandtabs")
    elif name == "translate" and args and isinstance(args[0], dict):
        longest = max((len(v) for v in args[0].values() if isinstance(v, str)), default=1)
        if len(text) * longest > MAX_OUTPUT:
            raise too_big("translate")
    return args


def guard_filters(filters: dict) -> dict:
    """Every filter, wrapped: the clock first, size checks before the growing ones, `spend` after."""
    checked = {**filters, **_plain_guards(filters), **_context_guards(filters)}
    counts = ("batch", "center", "indent", "slice", "truncate", "wordwrap", "urlize", "round", "tojson", "pprint")
    return {name: _spending(f, name in counts, name in _TEXT_FILTERS) for name, f in checked.items()}


def _plain_guards(filters: dict) -> dict:
    """Size checks for the growing filters that take only their value and arguments."""
    center, indent, fmt = filters["center"], filters["indent"], filters["format"]

    def center_(value, width=80):
        check_ints([width])
        return center(value, width)

    def indent_(value, width=4, *args, **kwargs):
        pad = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
        if len(str(printable(value))) + pad * (str(value).count("\n") + 1) > MAX_OUTPUT:
            raise too_big("indent")
        return indent(value, width, *args, **kwargs)

    def format_(value, *args, **kwargs):
        check_format(value, args, kwargs)
        return fmt(value, *args, **kwargs)

    return {"center": center_, "indent": indent_, "format": format_}


def _context_guards(filters: dict) -> dict:
    """Size checks for the growing filters that Jinja passes its eval context or environment."""
    replace, join, wordwrap, sum_, tojson, urlize = (
        filters[n] for n in ("replace", "join", "wordwrap", "sum", "tojson", "urlize")
    )

    def replace_(eval_ctx, value, old, new, count=None):
        check_replace(str(printable(value)), str(old), str(new), -1 if count is None else count)
        return replace(eval_ctx, value, old, new, count)

    def join_(eval_ctx, value, d="", attribute=None):
        items = list(value)
        check_join(items, d)
        return join(eval_ctx, items, d, attribute)

    def wordwrap_(environment, s, width=79, break_long_words=True, wrapstring=None, *args, **kwargs):
        breaks = len(str(s)) // max(int(width), 1) + 1
        if len(str(s)) + len(str(wrapstring or "\n")) * breaks > MAX_OUTPUT:
            raise too_big("wordwrap")
        return wordwrap(environment, s, width, break_long_words, wrapstring, *args, **kwargs)

    def sum__(environment, iterable, attribute=None, start=0):
        items = list(iterable)
        if not isinstance(start, (int, float)) and text_size([start, *items]) > MAX_OUTPUT:
            raise SecurityError("a template may not sum sequences that large")  # lists: sum concatenates
        return sum_(environment, items, attribute, start)

    def tojson_(eval_ctx, value, indent=None):
        if isinstance(indent, int) and text_size(value) * (indent + 1) > MAX_OUTPUT:
            raise too_big("tojson")  # each nesting level adds `indent` spaces to every line below it
        return tojson(eval_ctx, value, indent)

    def urlize_(eval_ctx, value, *args, **kwargs):
        extra = sum(len(str(v)) for v in (*args[1:], *kwargs.values()) if isinstance(v, str))
        words = len(str(value).split())  # each may become a link carrying the extra attributes
        if 3 * len(str(value)) + words * (extra + 40) > MAX_OUTPUT:
            raise too_big("urlize")
        return urlize(eval_ctx, value, *args, **kwargs)

    passing: list[tuple[Any, Any]] = [
        (replace_, replace),
        (join_, join),
        (wordwrap_, wordwrap),
        (sum__, sum_),
        (tojson_, tojson),
        (urlize_, urlize),
    ]
    for wrapper, original in passing:
        wrapper.jinja_pass_arg = original.jinja_pass_arg  # eval context / environment, as the originals take
    return {
        "replace": replace_,
        "join": join_,
        "wordwrap": wordwrap_,
        "sum": sum__,
        "tojson": tojson_,
        "urlize": urlize_,
    }


# Filters that turn their value into text: a value that would print huge is refused unprinted.
_TEXT_FILTERS = frozenset(
    [
        "capitalize",
        "center",
        "e",
        "escape",
        "forceescape",
        "format",
        "indent",
        "lower",
        "pprint",
        "replace",
        "safe",
        "string",
        "striptags",
        "title",
        "tojson",
        "trim",
        "truncate",
        "upper",
        "urlencode",
        "urlize",
        "wordcount",
        "wordwrap",
        "xmlattr",
    ]
)


def _spending(filter_, check_counts: bool, makes_text: bool):
    """`filter_` with the clock checked before, widths, counts and printing too if asked, and its result spent."""
    pass_arg = getattr(filter_, "jinja_pass_arg", None)

    def spending(*args, **kwargs):
        tick()
        value = args[1] if pass_arg is not None else args[0] if args else None
        if check_counts:
            check_ints([args[2 if pass_arg is not None else 1 :], kwargs])
        if makes_text:
            printable(value)
        return spend(filter_(*args, **kwargs), value)

    spending.jinja_pass_arg = pass_arg  # type: ignore[attr-defined]
    spending.__name__ = getattr(filter_, "__name__", "filter")
    spending.__wrapped__ = filter_  # type: ignore[attr-defined]  # its signature: validate checks keywords by it
    return spending


def bounded_lipsum(lipsum):
    """Jinja's `lipsum(n, html, min, max)` global, refused when it would write too many words."""

    def lipsum_(n=5, html=True, min=20, max=100):
        if not all(isinstance(v, int) for v in (n, min, max)) or n * max > MAX_SEQUENCE // 10:
            raise too_big("lipsum")
        return lipsum(n, html, min, max)

    return lipsum_


# The template's own syntax: loops, `~` and `{% set %}` blocks --------------------------------------


def as_text(value: Any) -> str:
    """How a `{{ value }}` prints. The plain-Python renderer (mcpgen.templates.fast) prints through
    this alone: it has no blocks that capture output, and its output cap sees all it writes."""
    if type(value) is str:
        return value
    if isinstance(value, (dt.datetime, dt.time)):
        return value.isoformat()  # as the table shows it (str() would put a space for the ISO T)
    return str(printable(value))


def emit(value: Any) -> str:
    """Every `{{ value }}` Jinja renders is printed through this (the environment's finalize), inside a
    `{% set %}` block, a macro or a `{% filter %}` block too, where the output cap does not see it."""
    text = as_text(value)
    _limits.left -= len(text)
    if _limits.left < 0:
        raise SecurityError(f"a template may not build more than {MAX_BUILT:,} characters and items in all")
    return text


def bounded(iterable, literal: int = 0):
    """Every `{% for %}` iterates through this, so no loop outlives the render's deadline, and the
    `literal` characters of template text its body writes each time count against the budget."""
    for item in iterable:
        tick()
        _limits.left -= literal
        if _limits.left < 0:
            raise SecurityError(f"a template may not build more than {MAX_BUILT:,} characters and items in all")
        yield item


class _Bounds(NodeTransformer):
    """Routes loops, `~` and captured blocks through the checks above (filters named `_bounded` etc.)."""

    def visit_For(self, node: nodes.For) -> nodes.For:
        literal = nodes.Const(_literal_text(node.body), lineno=node.lineno)
        self.generic_visit(node)
        node.iter = nodes.Filter(node.iter, "_bounded", [literal], [], None, None, lineno=node.lineno)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Filter:
        self.generic_visit(node)
        return nodes.Filter(
            nodes.List(node.nodes, lineno=node.lineno), "_concat", [], [], None, None, lineno=node.lineno
        )

    def visit_AssignBlock(self, node: nodes.AssignBlock) -> nodes.AssignBlock:
        self.generic_visit(node)
        node.filter = nodes.Filter(node.filter, "_spend", [], [], None, None, lineno=node.lineno)
        return node


def _literal_text(body: list[nodes.Node]) -> int:
    """Characters of template text in a loop body, not counting nested loops (they count their own)."""
    size, stack = 0, list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, nodes.TemplateData):
            size += len(node.data)
        elif not isinstance(node, (nodes.For, nodes.Macro)):
            stack.extend(node.iter_child_nodes())
    return size


def bound_ast(ast: nodes.Template) -> nodes.Template:
    return _Bounds().visit(ast)


INTERNAL_FILTERS = {"_bounded": bounded, "_concat": concat, "_spend": spend}
