"""Parameter `pattern`s, matched in linear time with the meaning JSON Schema gives them.

A pattern comes from a spec and the text from the model, so matching must not backtrack:
Python's `re` takes exponential time on `^([A-Za-z]+ ?)*$` and holds the GIL meanwhile.
RE2 matches in time linear in the text, and agrees with ECMA-262 (JSON Schema's regex
dialect) where Python does not: `$` is the end of the text, never "before a trailing
newline", and `\\d`, `\\w` are ASCII. Where RE2 and ECMA-262 differ, the pattern is rewritten
to ECMA's meaning before compiling (`.` stops at `\\r`, U+2028 and U+2029 too; `\\s` takes
Unicode spaces) or refused (syntax ECMA-262 lacks: inline flags, `(?P<...>`, `\\A`, `\\z`,
POSIX classes). Patterns RE2 cannot run in linear time (backreferences, lookaround) are
refused when the spec is read.

>>> matches("^[A-Z]{2}$", "JP"), matches("^[A-Z]{2}$", "JP\\n"), matches("[0-9]", "Zone 9")
(True, False, True)
>>> matches("^a.b$", "a\\rb"), matches("^a\\\\sb$", "a\\u00a0b"), matches("^a\\\\Sb$", "a\\u3000b")
(False, True, False)
>>> compile_pattern("(a)\\\\1")
Traceback (most recent call last):
...
mcpgen.spec.patterns.PatternError: pattern is not a valid regular expression for linear-time matching (RE2 syntax: no backreferences or lookaround): invalid escape sequence: \\1
"""

from __future__ import annotations

from functools import lru_cache

from ..errors import MCPGenError


class PatternError(MCPGenError, ValueError):
    """A `pattern` RE2 cannot compile."""


# ECMA-262's \s: these, where RE2's is [\t\n\f\r ]; and its `.` stops at every line terminator.
_SPACES = r"\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}"
_DOT = r"[^\n\r\x{2028}\x{2029}]"
_NOT_ECMA = {"A": "\\A", "z": "\\z", "Z": "\\Z", "Q": "\\Q", "E": "\\E", "C": "\\C", "pN": "\\pN"}


def ecma_to_re2(pattern: str) -> str:
    r"""`pattern` (ECMA-262, as JSON Schema reads it) in RE2 syntax with the same meaning.

    >>> ecma_to_re2("^a.b$")
    '^a[^\\n\\r\\x{2028}\\x{2029}]b$'
    """
    out, i, in_class = [], 0, False
    while i < len(pattern):
        if pattern[i] == "\\":
            out.append(_escape(pattern[i + 1 : i + 2], pattern[i : i + 2], in_class))
            i += 2
            continue
        text, in_class = _character(pattern, i, in_class)
        out.append(text)
        i += 1
    return "".join(out)


def _escape(escape: str, written: str, in_class: bool) -> str:
    """A backslash escape (`written`, e.g. `\\s`) in RE2 syntax."""
    if escape in _NOT_ECMA:
        raise PatternError(f"pattern uses {_NOT_ECMA[escape]}, which JSON Schema's regular expressions (ECMA-262) lack")
    if escape == "s":
        return _SPACES if in_class else f"[{_SPACES}]"
    if escape == "S":
        if in_class:
            raise PatternError("pattern uses \\S inside [...]: write it outside the brackets")
        return f"[^{_SPACES}]"
    return written


def _character(pattern: str, i: int, in_class: bool) -> tuple[str, bool]:
    """The RE2 text for the character at `i`, and whether a [...] class is open after it."""
    c = pattern[i]
    if in_class:
        if pattern.startswith("[:", i):
            raise PatternError("pattern uses a POSIX class like [:alpha:], which ECMA-262 lacks")
        return c, c != "]"
    if c == "[":
        if pattern.startswith("[^]", i) or pattern.startswith("[]", i):
            raise PatternError("pattern has an empty or negated-empty class, which RE2 reads differently")
        return c, True
    if c == ".":
        return _DOT, False
    if pattern.startswith("(?", i) and pattern[i + 2 : i + 3] not in (":", "=", "!", "<"):
        raise PatternError("pattern uses inline flags or (?P<...>), which ECMA-262 lacks")
    return c, False


@lru_cache(maxsize=1024)
def compile_pattern(pattern: str):
    """The compiled RE2 pattern (ECMA-262's meaning), or PatternError saying why not."""
    import re2  # here, not at the top: projects without patterns start without it

    options = re2.Options()
    options.log_errors = False  # RE2 would print its own line on stderr for every bad pattern
    try:
        return re2.compile(ecma_to_re2(pattern), options=options)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise PatternError(
            "pattern is not a valid regular expression for linear-time matching "
            f"(RE2 syntax: no backreferences or lookaround): {reason}"
        ) from None


def matches(pattern: str, text: str) -> bool:
    """JSON Schema's `pattern`: found anywhere in `text` unless anchored."""
    return compile_pattern(pattern).search(text) is not None
