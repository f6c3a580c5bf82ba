"""Sandboxed Jinja2 for prose, force text and source URLs.

Templates come from analysts and values from the database, so: an immutable
sandbox, StrictUndefined, everything a template builds bounded in size and time
(`budget`), and values never evaluated. Markdown images and raw HTML tags
in the rendered prose are broken up so that a row cannot put a live image in front of the user.

>>> t = Template("{{ n | thousands }} people in {{ names | join_names }}")
>>> t.render({"n": 1234567, "names": ["Oslo", "Bergen", "Bodø"]})
'1,234,567 people in Oslo, Bergen and Bodø'
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote, urlsplit

import jinja2
from jinja2 import StrictUndefined, TemplateError, TemplateSyntaxError, UndefinedError, nodes
from jinja2.parser import Parser
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

from .. import cachefile
from ..errors import RenderError
from ..limits import MAX_OUTPUT
from ..text import neutralise
from . import budget
from .fast import compile_simple
from .filters import FILTERS


class _Environment(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset({"*", "**", "%", "+"})

    def getattr(self, obj, attribute):
        # `r.city` on a row is its column: a dict item is data, so no attribute check is needed,
        # and a column named like a dict method (`r.items`) is the column, not the method.
        if type(obj) is dict and attribute in obj:
            return obj[attribute]
        return super().getattr(obj, attribute)

    def call_binop(self, context, operator_, left, right):
        budget.tick()
        if operator_ == "*":
            return budget.bounded_mul(left, right)
        if operator_ == "**":
            return budget.bounded_pow(left, right)
        if operator_ == "+":
            return budget.bounded_add(left, right)
        if operator_ == "%" and isinstance(left, str):
            budget.check_format(left, right)
        return budget.spend(super().call_binop(context, operator_, left, right))

    def call(__self, __context, __obj, *args, **kwargs):
        budget.tick()
        owner = getattr(getattr(__obj, "__wrapped__", __obj), "__self__", None)  # the sandbox wraps str.format
        if isinstance(owner, str):  # str methods: ljust, center, zfill, format, replace, join, ...
            args = budget.check_str_call(owner, getattr(__obj, "__name__", ""), args, kwargs)
        return budget.spend(super().call(__context, __obj, *args, **kwargs))

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        parser = Parser(self, source, name, filename)
        try:
            return parser.parse()
        except RecursionError:  # Jinja's parser recurses once per nested bracket, if/else, not, ...
            raise TemplateSyntaxError(
                "the template nests too deeply here (brackets or if/else inside one another); split it with {% set %}",
                parser.stream.current.lineno,
                name,
                filename,
            ) from None

    def compile(self, *args, **kwargs):
        budget.start()  # constant folding runs filters at compile time: a fresh clock for them
        return super().compile(*args, **kwargs)


def _url_text(value: Any) -> str:
    """How a value prints in a source URL rendered by the plain-Python renderer (Jinja's: `_make_env`)."""
    return quote(budget.as_text(value), safe="")


def _make_env(url: bool) -> _Environment:
    env = _Environment(
        undefined=StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        finalize=(lambda v: quote(budget.emit(v), safe="")) if url else budget.emit,
    )
    env.filters.update(FILTERS)
    env.filters = {**budget.guard_filters(env.filters), **budget.INTERNAL_FILTERS}
    env.globals["lipsum"] = budget.bounded_lipsum(env.globals["lipsum"])
    return env


PROSE = _make_env(url=False)
URL = _make_env(url=True)


class Template:
    """A compiled template. `origin`: (file, the line its text starts on there, its key), which a failure
    to render names (`specs/x.yaml:14: content: the template ...`)."""

    def __init__(self, source: str, url: bool = False, origin: tuple[str, int | None, str] | None = None):
        self.source = source
        self.origin = origin
        self.env = URL if url else PROSE
        self.ast = self._parse()  # raises TemplateSyntaxError
        self._compiled: jinja2.Template | None = None  # compiled on first render: `validate` never pays for it
        # A source URL keeps the host its literal text names, whatever the values (checked after rendering).
        self.host = _netloc(re.split(r"\{[{%#]", source, maxsplit=1)[0]) if url else None
        self._fast: Any = None  # the plain-Python renderer (mcpgen.templates.fast), False when Jinja must render
        # Plain text needs no rendering: it is its own output.
        self.constant = (
            (source.strip() if url else neutralise(source.strip()))
            if len(self.ast.body) == 1
            and isinstance(self.ast.body[0], nodes.Output)
            and all(isinstance(n, nodes.TemplateData) for n in self.ast.body[0].nodes)
            else None
        )

    def _parse(self) -> nodes.Template:
        if "{" not in self.source:  # no Jinja syntax at all: skip the parser (most source URLs)
            return nodes.Template([nodes.Output([nodes.TemplateData(self.source)])])
        return cachefile.parse(self.env, "url" if self.env is URL else "prose", self.source)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (`load.checked`) without its tree, which is parsed again when first read (`ast`):
        most of a kept spec's templates are not looked at before their first call."""
        return {k: v for k, v in self.__dict__.items() if k != "ast"} | {"_compiled": None, "_fast": None}

    def __getattr__(self, name: str) -> Any:
        if name != "ast" or "source" not in self.__dict__:
            raise AttributeError(name)
        self.ast = self._parse()  # a text that was parsed before: it parses again
        return self.ast

    @property
    def _template(self):
        if self._compiled is None:
            self._compiled = self.env.from_string(budget.bound_ast(self.env.parse(self.source)))
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
        self,
        context: dict[str, Any],
        seconds: float = budget.RENDER_SECONDS,
        limit: int = MAX_OUTPUT,
        cut: bool = False,
    ) -> str:
        """Render within a time and size budget; raise RenderError with one sentence, after the place
        in `origin` that failed.

        With `cut`, text past `limit` is cut at the last line or sentence that fits, and a
        sentence says so, instead of failing (prose: a long answer is still an answer)."""
        try:
            return self._render(context, seconds, limit, cut)
        except RenderError as exc:
            if self.origin is None:
                raise
            path, first, key = self.origin
            at = f"{path}:{first + exc.line - 1}" if first and exc.line else path
            raise RenderError(str(exc), exc.line, f"{at}: {key}") from None

    def _render(self, context: dict[str, Any], seconds: float, limit: int, cut: bool) -> str:
        if self.constant is not None:
            return self.constant
        if self._fast is None:
            self._fast = compile_simple(self.ast, _url_text if self.env is URL else budget.as_text) or False
        text = self._render_fast(context, limit) if self._fast else None
        if text is None:
            text = self._render_jinja(context, seconds, limit)
        if len(text) > limit:
            if not cut:
                raise RenderError(f"the template produced more than {limit:,} characters")
            text = cut_text(text, limit)
        text = text.strip()
        if self.host is None:
            return neutralise(text)
        if _netloc(text) != self.host:
            raise RenderError(f"the source URL's host became {_netloc(text)!r}, not {self.host!r} as the spec says")
        return text

    def _render_fast(self, context: dict[str, Any], limit: int) -> str | None:
        """The plain-Python rendering, or None when Jinja must decide (a fallback, or anything unexpected)."""
        try:
            return self._fast(dict(context), limit)
        except Exception:
            return None

    def _render_jinja(self, context: dict[str, Any], seconds: float, limit: int) -> str:
        """Jinja's rendering, stopped one chunk past `limit` characters."""
        out: list[str] = []
        size = 0
        try:
            template = self._template  # compiled on first use (an unknown filter is found here)
            budget.start(seconds)
            for chunk in template.root_render_func(template.new_context(context)):
                size += len(chunk)
                out.append(chunk)
                if size > limit:
                    break
        except RecursionError:
            raise RenderError("the template recursed too deeply") from None
        except SyntaxError:  # Jinja's Python source for it nests deeper than Python parses
            raise RenderError("the template nests its expressions too deeply") from None
        except budget.Overtime as exc:
            raise RenderError(f"the template took longer than {seconds:g} s to render", self._line(exc)) from None
        except UndefinedError as exc:
            raise RenderError(f"the template uses an undefined value: {exc.message}", self._line(exc)) from None
        except SecurityError as exc:
            raise RenderError(f"the template did something unsafe: {exc}", self._line(exc)) from None
        except (TemplateError, ArithmeticError, TypeError, ValueError, LookupError) as exc:
            raise RenderError(f"the template failed: {exc}", self._line(exc)) from None
        return "".join(out)

    def _line(self, exc: BaseException) -> int | None:
        """The line of the template that raised `exc` (its innermost frame of the compiled template)."""
        line, tb = None, exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == "<template>" and self._compiled is not None:
                line = self._compiled.get_corresponding_lineno(tb.tb_lineno)
            tb = tb.tb_next
        return line


def cut_text(text: str, limit: int, cap: str = "") -> str:
    """`text` cut to at most `limit` characters, where a reader would cut it, with a sentence saying so
    (that it reached `cap`, by default `limit` characters).

    >>> cut_text("One. Two. Three.", 12)
    'One. Two.\\n\\n(The text stops here: it reached the limit of 12 characters.)'
    """
    head = text[:limit]
    for mark in ("\n", ". ", " "):
        at = head.rfind(mark)
        if at >= limit // 2:
            head = head[: at + (1 if mark == ". " else 0)]
            break
    return f"{head.strip()}\n\n(The text stops here: it reached the limit of {cap or f'{limit:,} characters'}.)"


def _netloc(url: str) -> str:
    try:
        return urlsplit(url).netloc.lower()
    except ValueError:  # e.g. an unbalanced '[' in the host
        return "(not a URL)"
