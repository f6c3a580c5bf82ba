"""One caller must not stall everyone: patterns that backtrack, templates that grow inside
filters, and HTTP requests left half-open. Each class has several shapes; each test failed
before the fix that it names.
"""

from __future__ import annotations

import time
import tracemalloc

import pytest

from mcpgen.errors import ArgumentError, RenderError
from mcpgen.params import Arguments
from mcpgen.render import Template
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


# Templates: every string a filter, method or operator builds is bounded, not only the output ------

GROWTH = [
    "{{ ('x\\n' * 20000) | indent(2000) }}",
    "{{ ('x\\n' * 20000) | indent('y' * 2000) | length }}",
    "{{ range(20000) | map('center', 3000) | join }}",
    "{{ range(20000) | map('center', 3000) | list | length }}",
    "{% set ns = namespace(s='x' * 100000) %}{% for i in range(8) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}",
    "{% set ns = namespace(s='x' * 100000) %}{% for i in range(8) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s | length }}",
    "{% set ns = namespace(l=[0] * 100000) %}{% for i in range(5) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l | length }}",
    "{% set ns = namespace(s='x' * 50000) %}{% for i in range(8) %}{% set b %}{{ ns.s }}{{ ns.s }}{% endset %}{% set ns.s = b %}{% endfor %}{{ ns.s | length }}",
    "{{ ('%s' * 150) | format(*(['x' * 100000] * 150)) | length }}",
    "{{ ([[0] * 1000] * 1000) | sum(start=[]) | length }}",
    "{{ ('\\t' * 1000).expandtabs(20000) | length }}",
    "{{ ('x' * 20000).translate({120: 'y' * 1000}) | length }}",
    "{{ lipsum(2000, false, 100, 100) | length }}",
    "{{ [[0] * 3000] * 3000 }}",
]


@pytest.mark.parametrize("source", GROWTH, ids=range(len(GROWTH)))
def test_filters_and_operators_cannot_build_huge_values(source):
    tracemalloc.start()
    start = time.monotonic()
    try:
        with pytest.raises(RenderError) as caught:
            Template(source).render({})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.monotonic() - start < 2
    assert peak < 15 * 2**20, f"{peak / 2**20:.0f} MiB allocated before it was refused"
    assert "Traceback" not in str(caught.value) and len(str(caught.value)) < 200


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    "source",
    [
        "{% macro m(n) %}{% if n %}{{ m(n - 1) }}{{ m(n - 1) }}{% endif %}{% endmacro %}{{ m(40) }}",
        "{% macro m(n) %}{% if n %}{{ m(n - 1) ~ m(n - 1) }}{% endif %}{% endmacro %}{{ m(40) }}",
        "{% macro m(n) %}{{ [n] | select('>', 0) | map('abs') | list }}{{ m(n - 1) if n }}{{ m(n - 1) if n }}{% endmacro %}{{ m(40) }}",
    ],
)
def test_the_clock_is_checked_outside_loops_too(source):
    start = time.monotonic()
    with pytest.raises(RenderError, match="longer than|more than"):
        Template(source).render({})
    assert time.monotonic() - start < 2


def test_ordinary_templates_over_many_rows_still_render():
    rows = [{"name": f"City {i}", "population": i * 1000, "note": "x" * 50} for i in range(1000)]
    source = (
        "{{ row_count }} cities, {{ rows | sum(attribute='population') | thousands }} people. "
        "{% for r in rows | sort(attribute='population', reverse=true) %}{{ loop.index }}. "
        "{{ r.name | upper }} ({{ r.population | thousands }}){{ ', ' if not loop.last }}{% endfor %} "
        "{{ rows | map(attribute='name') | list | join_names }} {{ 'Busiest: ' ~ rows[-1].name }}"
        "{{ ('-' * 20) | center(40) }}"
    )
    text = Template(source).render({"rows": rows, "row_count": len(rows)})
    assert text.startswith("1000 cities, 499,500,000 people. 1. CITY 999 (999,000), ")
    assert "Busiest: City 999" in text
