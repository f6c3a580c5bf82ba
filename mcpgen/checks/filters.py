"""Filters and tests a template names that do not exist, and filter arguments they do not take.

Jinja2 only finds these when a template is compiled or rendered, that is, when a model calls
the tool; here they are found from the syntax tree.

>>> from mcpgen.templates.render import PROSE
>>> filter_problems(PROSE.parse("{{ x | thousand }}"), PROSE)
[(1, 'thousand', "uses the filter 'thousand', which does not exist; did you mean 'thousands'?")]
>>> filter_problems(PROSE.parse("{{ y | percent(n=2) }}"), PROSE)[0][2]
"calls the filter 'percent' with n=, which it does not take (it takes ndigits)"
"""

from __future__ import annotations

import inspect
from functools import lru_cache
from typing import Any

from jinja2 import Environment, nodes

from ..text import did_you_mean


def filter_problems(ast: nodes.Template, env: Environment) -> list[tuple[int, str, str]]:
    """(line, the word to point at, what) for each unknown filter or test and each keyword argument a
    filter does not take; `what` completes "the template ..."."""
    out: list[tuple[int, str, str]] = []
    public = [name for name in env.filters if not name.startswith("_")]
    for node in ast.find_all((nodes.Filter, nodes.Test)):
        if isinstance(node, nodes.Test):
            if node.name not in env.tests:
                hint = did_you_mean(node.name, env.tests)
                out.append((node.lineno, node.name, f"uses the test 'is {node.name}', which does not exist{hint}"))
            continue
        if node.name not in env.filters:
            hint = did_you_mean(node.name, public)
            out.append((node.lineno, node.name, f"uses the filter '{node.name}', which does not exist{hint}"))
            continue
        keywords = _keywords(env.filters[node.name])
        if keywords is None:
            continue
        for kwarg in node.kwargs:
            assert isinstance(kwarg, nodes.Keyword)  # Filter.kwargs holds Keyword nodes
            if kwarg.key not in keywords:
                takes = f"it takes {', '.join(keywords)}" if keywords else "it takes no keyword arguments"
                what = f"calls the filter '{node.name}' with {kwarg.key}=, which it does not take ({takes})"
                out.append((node.lineno, kwarg.key, what))
    return list(dict.fromkeys(out))


@lru_cache(maxsize=256)
def _keywords(fn: Any) -> tuple[str, ...] | None:
    """The keyword arguments a filter takes after its input, or None when it takes any (**kwargs)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    named = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    skip = int(bool(getattr(fn, "jinja_pass_arg", None)))  # the context, eval context or environment
    return tuple(p.name for p in named[skip + 1 :])
