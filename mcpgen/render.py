"""Sandboxed Jinja2 for prose, force text and source URLs.

Templates come from analysts and values from the database, so: an immutable
sandbox, StrictUndefined, `*` and `**` bounded, output size and render time
bounded (every loop checks the clock), and values never evaluated. Markdown image links in values are broken
up so that a row cannot put a live image in front of the user.

>>> t = Template("{{ n | thousands }} people in {{ names | join_names }}")
>>> t.render({"n": 1234567, "names": ["Oslo", "Bergen", "Bodø"]})
'1,234,567 people in Oslo, Bergen and Bodø'
"""

from __future__ import annotations

import datetime as dt
import re
import threading
import time
from decimal import Decimal
from typing import Any
from urllib.parse import quote

import jinja2
from jinja2 import StrictUndefined, TemplateError, UndefinedError, nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

from .errors import RenderError
from .fastrender import compile_simple
from .limits import MAX_OUTPUT, MAX_POWER, MAX_SEQUENCE

RENDER_SECONDS = 1.0


def thousands(value: Any, sep: str = ",") -> str:
    """1234567 -> '1,234,567'; 1234.5 -> '1,234.5'."""
    if value is None:
        return ""
    if isinstance(value, (int, Decimal)) and (not isinstance(value, Decimal) or value == value.to_integral()):
        return f"{int(value):,}".replace(",", sep)
    if isinstance(value, (float, Decimal)):
        text = f"{value:,.2f}".rstrip("0").rstrip(".")
        return text.replace(",", sep)
    return str(value)


def round_(value: Any, ndigits: int = 0) -> Any:
    if value is None:
        return None
    result = round(float(value), ndigits)
    return int(result) if ndigits <= 0 else result


def percent(value: Any, ndigits: int = 1) -> str:
    """0.1234 -> '12.3%'."""
    if value is None:
        return ""
    return f"{float(value) * 100:.{ndigits}f}%"


def date(value: Any, fmt: str = "%Y-%m-%d") -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    return value.strftime(fmt)


def join_names(values: Any, sep: str = ", ", last: str = " and ") -> str:
    """['a', 'b', 'c'] -> 'a, b and c'."""
    items = [str(v) for v in values]
    return items[0] if len(items) == 1 else sep.join(items[:-1]) + last + items[-1] if items else ""


def _bounded_mul(a, b):
    for seq, n in ((a, b), (b, a)):
        if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and len(seq) * n > MAX_SEQUENCE:
            raise SecurityError(f"a template may not build a sequence longer than {MAX_SEQUENCE:,}")
    if isinstance(a, int) and isinstance(b, int) and a.bit_length() + b.bit_length() > MAX_INT_BITS:
        raise SecurityError(f"a template may not build an integer of more than {MAX_INT_BITS:,} bits")
    return a * b


def _bounded_pow(a, b):
    if isinstance(b, (int, float)) and abs(b) > MAX_POWER:
        raise SecurityError(f"a template may not raise to a power above {MAX_POWER:,}")
    if isinstance(a, int) and isinstance(b, int) and b > 0 and a.bit_length() * b > MAX_INT_BITS:
        raise SecurityError(f"a template may not build an integer of more than {MAX_INT_BITS:,} bits")
    return a**b


# One operation must not build a huge string either: widths, padding, replace and join are checked first.
MAX_INT_BITS = 100_000
_PRINTF_SPEC = re.compile(r"%(?:\([^)]*\))?[#0 +-]*(\d*|\*)(?:\.(\d*|\*))?")
_FORMAT_SPEC = re.compile(r"\{[^{}]*?:([^{}]*)\}")


def _too_big(what: str):
    return SecurityError(f"a template may not build a string longer than {MAX_OUTPUT:,} characters ({what})")


def _check_format(fmt: Any, *args: Any) -> None:
    """Refuse %-style or {}-style widths and precisions that would build a huge string."""
    if not isinstance(fmt, str):
        return
    numbers = [n for m in _PRINTF_SPEC.findall(fmt) for n in m if n.isdigit()]
    numbers += [n for spec in _FORMAT_SPEC.findall(fmt) for n in re.findall(r"\d+", spec)]
    if any(int(n) > MAX_SEQUENCE for n in numbers):
        raise _too_big("a format width")
    _check_ints(args)


def _check_ints(values) -> None:
    for value in values:
        items = value if isinstance(value, (tuple, list)) else value.values() if isinstance(value, dict) else [value]
        if any(isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_SEQUENCE for v in items):
            raise _too_big("a width or count")


def _check_replace(text: Any, old: Any, new: Any, count: Any = -1) -> None:
    if isinstance(text, str) and isinstance(old, str) and isinstance(new, str):
        hits = len(text) + 1 if old == "" else text.count(old)
        if isinstance(count, int) and count >= 0:
            hits = min(hits, count)
        if len(text) + hits * (len(new) - len(old)) > MAX_OUTPUT:
            raise _too_big("replace")


def _check_join(items: list, sep: Any) -> None:
    if isinstance(sep, str) and sum(len(str(i)) for i in items) + len(sep) * max(len(items) - 1, 0) > MAX_OUTPUT:
        raise _too_big("join")


def _guarded_filters(filters: dict) -> dict:
    """Builtin filters that can make a string far bigger than their input, checked before they run."""
    center, indent, fmt, replace, join, wordwrap = (
        filters[n] for n in ("center", "indent", "format", "replace", "join", "wordwrap")
    )

    def center_(value, width=80):
        _check_ints([width])
        return center(value, width)

    def indent_(value, width=4, *args, **kwargs):
        if isinstance(width, str) and len(width) * (str(value).count("\n") + 1) > MAX_OUTPUT:
            raise _too_big("indent")
        _check_ints([width])
        return indent(value, width, *args, **kwargs)

    def format_(value, *args, **kwargs):
        _check_format(value, args, kwargs)
        return fmt(value, *args, **kwargs)

    def replace_(eval_ctx, value, old, new, count=None):
        _check_replace(str(value), str(old), str(new), -1 if count is None else count)
        return replace(eval_ctx, value, old, new, count)

    def join_(eval_ctx, value, d="", attribute=None):
        items = list(value)
        _check_join(items, d)
        return join(eval_ctx, items, d, attribute)

    def wordwrap_(environment, s, width=79, break_long_words=True, wrapstring=None, *args, **kwargs):
        if wrapstring and len(str(wrapstring)) * (len(str(s)) // max(int(width), 1) + 1) > MAX_OUTPUT:
            raise _too_big("wordwrap")
        return wordwrap(environment, s, width, break_long_words, wrapstring, *args, **kwargs)

    wrapped: list[tuple[Any, Any]] = [(replace_, replace), (join_, join), (wordwrap_, wordwrap)]
    for wrapper, original in wrapped:
        wrapper.jinja_pass_arg = original.jinja_pass_arg  # eval context / environment, as the originals take
    return dict(center=center_, indent=indent_, format=format_, replace=replace_, join=join_, wordwrap=wordwrap_)


_deadline = threading.local()


def _bounded(iterable):
    """Every `{% for %}` iterates through this, so no loop outlives the render's deadline."""
    deadline = _deadline.value
    for item in iterable:
        if time.monotonic() > deadline:
            raise _Overtime
        yield item


def _bound_loops(ast: nodes.Template) -> nodes.Template:
    for loop in ast.find_all(nodes.For):
        loop.iter = nodes.Filter(loop.iter, "_bounded", [], [], None, None, lineno=loop.lineno)
    return ast


class _Environment(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset({"*", "**", "%"})

    def getattr(self, obj, attribute):
        # `r.city` on a row is its column: a dict item is data, so no attribute check is needed,
        # and a column named like a dict method (`r.items`) is the column, not the method.
        if type(obj) is dict and attribute in obj:
            return obj[attribute]
        return super().getattr(obj, attribute)

    def call_binop(self, context, operator_, left, right):
        if operator_ == "*":
            return _bounded_mul(left, right)
        if operator_ == "**":
            return _bounded_pow(left, right)
        if operator_ == "%" and isinstance(left, str):
            _check_format(left, right)
        return super().call_binop(context, operator_, left, right)

    def call(__self, __context, __obj, *args, **kwargs):
        owner = getattr(getattr(__obj, "__wrapped__", __obj), "__self__", None)  # the sandbox wraps str.format
        if isinstance(owner, str):  # str methods: ljust, center, zfill, format, replace, join, ...
            name = getattr(__obj, "__name__", "")
            _check_ints([args, kwargs])
            if name in ("format", "format_map"):
                _check_format(owner)
            elif name == "replace" and len(args) >= 2:
                _check_replace(owner, *args[:3])
            elif name == "join" and args:
                args = (list(args[0]), *args[1:])
                _check_join(args[0], owner)
        return super().call(__context, __obj, *args, **kwargs)


def _finalize(value: Any) -> Any:
    return value.replace("![", "! [") if isinstance(value, str) else value


def _make_env(url: bool) -> _Environment:
    env = _Environment(
        undefined=StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        finalize=(lambda v: quote(str(v), safe="")) if url else _finalize,
    )
    env.filters.update(
        thousands=thousands, round=round_, percent=percent, date=date, join_names=join_names, _bounded=_bounded
    )
    env.filters.update(_guarded_filters(env.filters))
    return env


PROSE = _make_env(url=False)
URL = _make_env(url=True)


class Template:
    """A compiled template. `line` is where its text starts in the YAML file, for messages."""

    def __init__(self, source: str, url: bool = False):
        self.source = source
        self.env = URL if url else PROSE
        if "{" not in source:  # no Jinja syntax at all: skip the parser (most source URLs)
            self.ast = nodes.Template([nodes.Output([nodes.TemplateData(source)])])
        else:
            self.ast = self.env.parse(source)  # raises TemplateSyntaxError
        self._compiled: jinja2.Template | None = (
            None  # compiled on first render: `validate` never pays for code generation
        )
        self._fast: Any = None  # the plain-Python renderer (mcpgen.fastrender), False when Jinja must render
        # Plain text needs no rendering: it is its own output.
        self.constant = (
            source
            if len(self.ast.body) == 1
            and isinstance(self.ast.body[0], nodes.Output)
            and all(isinstance(n, nodes.TemplateData) for n in self.ast.body[0].nodes)
            else None
        )

    @property
    def _template(self):
        if self._compiled is None:
            self._compiled = self.env.from_string(_bound_loops(self.env.parse(self.source)))
        return self._compiled

    def names(self) -> set[str]:
        """Variables the template reads from its context (not ones it sets itself)."""
        loaded, stored = set(), set()
        for n in self.ast.find_all(nodes.Name):  # one walk of the tree
            if n.ctx == "load":
                loaded.add(n.name)
            elif n.ctx in ("store", "param"):
                stored.add(n.name)
        return loaded - stored

    def loops_over(self, name: str) -> bool:
        """Whether a `{% for %}` iterates over all of variable `name` (perhaps through filters)."""
        for loop in self.ast.find_all(nodes.For):
            node: nodes.Node | None = loop.iter
            while isinstance(node, nodes.Filter):
                node = node.node
            if isinstance(node, nodes.Name) and node.name == name:
                return True
        return False

    def render(
        self, context: dict[str, Any], seconds: float = RENDER_SECONDS, limit: int = MAX_OUTPUT, cut: bool = False
    ) -> str:
        """Render within a time and size budget; raise RenderError with one sentence.

        With `cut`, text past `limit` is cut at the last line or sentence that fits, and a
        sentence says so, instead of failing (prose: a long answer is still an answer)."""
        if self.constant is not None:
            return self.constant.strip()
        if self._fast is None:
            self._fast = compile_simple(self.ast, self.env.finalize or (lambda value: value)) or False
        if self._fast:
            try:
                text = self._fast(dict(context), limit)
            except Exception:  # Fallback, or anything unexpected: Jinja gives the answer or the error
                pass
            else:
                if len(text) <= limit:
                    return text.strip()
                if cut:
                    return cut_text(text, limit)
                raise RenderError(f"the template produced more than {limit:,} characters")
        _deadline.value = time.monotonic() + seconds
        out: list[str] = []
        size = 0
        try:
            for chunk in self._template.generate(context):
                size += len(chunk)
                if size > limit:
                    if not cut:
                        raise RenderError(f"the template produced more than {limit:,} characters")
                    out.append(chunk)
                    return cut_text("".join(out), limit)
                out.append(chunk)
        except RecursionError:
            raise RenderError("the template recursed too deeply") from None
        except _Overtime:
            raise RenderError(f"the template took longer than {seconds:g} s to render") from None
        except UndefinedError as exc:
            raise RenderError(f"the template uses an undefined value: {exc.message}") from None
        except SecurityError as exc:
            raise RenderError(f"the template did something unsafe: {exc}") from None
        except TemplateError as exc:
            raise RenderError(f"the template failed: {exc}") from None
        except (ArithmeticError, TypeError, ValueError, LookupError) as exc:
            raise RenderError(f"the template failed: {type(exc).__name__}: {exc}") from None
        return "".join(out).strip()


def cut_text(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, where a reader would cut it, with a sentence saying so.

    >>> cut_text("One. Two. Three.", 12)
    'One. Two.\\n\\n(The text stops here: it reached the limit of 12 characters.)'
    """
    head = text[:limit]
    for mark in ("\n", ". ", " "):
        at = head.rfind(mark)
        if at >= limit // 2:
            head = head[: at + (1 if mark == ". " else 0)]
            break
    return f"{head.strip()}\n\n(The text stops here: it reached the limit of {limit:,} characters.)"


class _Overtime(BaseException):
    """Raised when a loop runs past the deadline; a BaseException so nothing in between swallows it."""
