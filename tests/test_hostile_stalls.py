"""One caller must not stall everyone: patterns that backtrack, templates that grow inside
filters, and HTTP requests left half-open. Each class has several shapes; each test failed
before the fix that it names.
"""

from __future__ import annotations

import time

import pytest

from mcpgen.errors import ArgumentError
from mcpgen.params import Arguments
from mcpgen.spec import Parameter

# Patterns: linear time, and JSON Schema's (ECMA-262) meaning ------------------------------------

EVIL = [
    ("^([A-Za-z]+ ?)*$", "a" * 40 + "!"),
    ("^(a+)+$", "a" * 40 + "b"),
    ("^(a|a)*$", "a" * 40 + "b"),
    ("^(\\w+\\s?)*$", "word" * 12 + "!"),
    ("(x+x+)+y", "x" * 40),
]


@pytest.mark.timeout(20)
@pytest.mark.parametrize("pattern, value", EVIL)
def test_backtracking_patterns_answer_at_once(pattern, value):
    args = Arguments({"s": Parameter(type="string", description="s", pattern=pattern)})
    start = time.monotonic()
    with pytest.raises(ArgumentError, match="'s'.*does not match the pattern"):
        args.validate({"s": value})
    assert time.monotonic() - start < 0.5


@pytest.mark.parametrize(
    "pattern, value, ok",
    [
        ("^[A-Z]{2}$", "JP", True),
        ("^[A-Z]{2}$", "JP\n", False),  # Python's $ matches before a final newline; ECMA's does not
        ("^[a-z]+$", "abc\n", False),
        ("^\\d+$", "١٢٣", False),  # ECMA's \d is ASCII; Python's str \d takes Arabic-Indic digits
        ("^\\w+$", "ßø", False),  # ECMA's \w is ASCII too
        ("[0-9]", "Zone 9", True),  # unanchored: found anywhere, as in JSON Schema
        ("^a.c$", "a\nc", False),  # . stops at a line break
    ],
)
def test_patterns_have_the_json_schema_meaning(pattern, value, ok):
    args = Arguments({"s": Parameter(type="string", description="s", pattern=pattern)})
    if ok:
        assert args.validate({"s": value}) == {"s": value}
    else:
        with pytest.raises(ArgumentError, match="pattern"):
            args.validate({"s": value})
    assert args.schema["properties"]["s"]["pattern"] == pattern  # published as written: JSON Schema's meaning


@pytest.mark.parametrize("pattern", ["(a)\\1", "(?=a)b", "(?!a)b", "(?<=a)b", "(?<!a)b", "a++", "[z-a]"])
def test_patterns_that_need_backtracking_or_are_broken_fail_validate(tmp_path, pattern):
    import json
    import textwrap

    from test_hostile import SPECS, write_project

    from mcpgen.loading import load_project

    spec = textwrap.dedent(SPECS["find_city"]).replace('pattern: "^[A-Z]{2}$"', f"pattern: {json.dumps(pattern)}")
    assert f"pattern: {json.dumps(pattern)}" in spec
    problems = [str(p) for p in load_project(write_project(tmp_path, {"find_city": spec})).errors]
    assert problems and "find_city.yaml:" in problems[0] and "pattern" in problems[0], problems
    assert "Traceback" not in problems[0]
