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

from jinja2 import StrictUndefined, TemplateError, UndefinedError, nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

from .errors import RenderError

MAX_OUTPUT = 100_000  # characters a template may produce
MAX_SEQUENCE = 100_000  # length of a string or list built with * inside a template
MAX_POWER = 10_000
RENDER_SECONDS = 1.0
_IMAGE_LINK = re.compile(r"!\[")


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
    return a * b


def _bounded_pow(a, b):
    if isinstance(b, (int, float)) and abs(b) > MAX_POWER:
        raise SecurityError(f"a template may not raise to a power above {MAX_POWER:,}")
    return a ** b


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
    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context, operator_, left, right):
        if operator_ == "*":
            return _bounded_mul(left, right)
        if operator_ == "**":
            return _bounded_pow(left, right)
        return super().call_binop(context, operator_, left, right)


def _finalize(value: Any) -> Any:
    return _IMAGE_LINK.sub("! [", value) if isinstance(value, str) else value


def _make_env(url: bool) -> _Environment:
    env = _Environment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=False,
                       finalize=(lambda v: quote(str(v), safe="")) if url else _finalize)
    env.filters.update(thousands=thousands, round=round_, percent=percent, date=date, join_names=join_names,
                       _bounded=_bounded)
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
        self._compiled = None  # compiled on first render: `validate` never pays for code generation
        # Plain text needs no rendering: it is its own output.
        self.constant = source if len(self.ast.body) == 1 and isinstance(self.ast.body[0], nodes.Output) and all(
            isinstance(n, nodes.TemplateData) for n in self.ast.body[0].nodes) else None

    @property
    def _template(self):
        if self._compiled is None:
            self._compiled = self.env.from_string(_bound_loops(self.env.parse(self.source)))
        return self._compiled

    def names(self) -> set[str]:
        """Variables the template reads from its context (not ones it sets itself)."""
        loaded = {n.name for n in self.ast.find_all(nodes.Name) if n.ctx == "load"}
        stored = {n.name for n in self.ast.find_all(nodes.Name) if n.ctx in ("store", "param")}
        return loaded - stored

    def render(self, context: dict[str, Any], seconds: float = RENDER_SECONDS, limit: int = MAX_OUTPUT) -> str:
        """Render within a time and size budget; raise RenderError with one sentence."""
        if self.constant is not None:
            return self.constant.strip()
        _deadline.value = time.monotonic() + seconds
        out: list[str] = []
        size = 0
        try:
            for chunk in self._template.generate(context):
                size += len(chunk)
                if size > limit:
                    raise RenderError(f"the template produced more than {limit:,} characters")
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


class _Overtime(BaseException):
    """Raised when a loop runs past the deadline; a BaseException so nothing in between swallows it."""

