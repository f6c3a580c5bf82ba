"""Parameter `pattern`s, matched in linear time with the meaning JSON Schema gives them.

A pattern comes from a spec and the text from the model, so matching must not backtrack:
Python's `re` takes exponential time on `^([A-Za-z]+ ?)*$` and holds the GIL meanwhile.
RE2 matches in time linear in the text, and agrees with ECMA-262 (JSON Schema's regex
dialect) where Python does not: `$` is the end of the text, never "before a trailing
newline", and `\\d`, `\\w` are ASCII. Patterns RE2 cannot run in linear time (backreferences,
lookaround) are refused when the spec is read.

>>> matches("^[A-Z]{2}$", "JP"), matches("^[A-Z]{2}$", "JP\\n"), matches("[0-9]", "Zone 9")
(True, False, True)
>>> compile_pattern("(a)\\\\1")
Traceback (most recent call last):
...
mcpgen.patterns.PatternError: pattern is not a valid regular expression for linear-time matching (RE2 syntax: no backreferences or lookaround): invalid escape sequence: \\1
"""

from __future__ import annotations

from functools import lru_cache

from .errors import MCPGenError


class PatternError(MCPGenError, ValueError):
    """A `pattern` RE2 cannot compile."""


@lru_cache(maxsize=1024)
def compile_pattern(pattern: str):
    """The compiled RE2 pattern, or PatternError with RE2's reason."""
    import re2  # here, not at the top: projects without patterns start without it

    options = re2.Options()
    options.log_errors = False  # RE2 would print its own line on stderr for every bad pattern
    try:
        return re2.compile(pattern, options=options)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise PatternError(
            "pattern is not a valid regular expression for linear-time matching "
            f"(RE2 syntax: no backreferences or lookaround): {reason}"
        ) from None


def matches(pattern: str, text: str) -> bool:
    """JSON Schema's `pattern`: found anywhere in `text` unless anchored."""
    return compile_pattern(pattern).search(text) is not None
