"""Parameter patterns on RE2, with ECMA-262's meaning (JSON Schema's) where Python's differs."""

import time

import pytest

from mcpgen.spec.patterns import PatternError, compile_pattern, ecma_to_re2, matches


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [
        ("^[A-Z]{2}$", "JP", True),
        ("^[A-Z]{2}$", "JP\n", False),  # `$` is the end of the text
        ("^\\d+$", "١٢٣", False),  # \d is ASCII
        ("^\\w+$", "café", False),  # \w too
        ("^a.b$", "a\u2028b", False),  # `.` stops at every line terminator
        ("^a\\sb$", "a\u3000b", True),  # \s takes Unicode spaces
        ("[\\s]", "\u00a0", True),
        ("ab", "xxabxx", True),  # unanchored: anywhere
    ],
)
def test_ecma_meaning(pattern, text, found):
    assert matches(pattern, text) is found


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("(a)\\1", "no backreferences or lookaround"),
        ("a(?=b)", "no backreferences or lookaround"),
        ("(?i)abc", "inline flags or (?P<...>)"),
        ("\\Aabc", "\\A"),
        ("[[:alpha:]]", "POSIX class"),
        ("[^]", "empty or negated-empty class"),
        ("[\\S]", "\\S inside [...]"),
    ],
)
def test_what_ecma_lacks_or_re2_cannot_run_is_refused(pattern, why):
    with pytest.raises(PatternError) as err:
        compile_pattern(pattern)
    assert why in str(err.value) and isinstance(err.value, ValueError)


def test_the_translation_to_re2():
    assert ecma_to_re2("a.b") == "a[^\\n\\r\\x{2028}\\x{2029}]b"
    assert ecma_to_re2("[.]") == "[.]"  # a dot in a class is a dot
    assert ecma_to_re2("\\.") == "\\."


def test_a_backtracking_pattern_takes_linear_time():
    started = time.perf_counter()
    assert matches("^([A-Za-z]+ ?)*$", "a" * 5000 + "!") is False
    assert time.perf_counter() - started < 1  # Python's re takes exponential time here
