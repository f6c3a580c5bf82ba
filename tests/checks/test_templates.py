"""Template constructs the sandbox refuses or that would blow its limits, each with its line."""

import pytest

from mcpgen.checks.templates import template_hazards
from mcpgen.limits import MAX_POWER, MAX_RANGE
from mcpgen.templates.render import PROSE


def hazards(source):
    return template_hazards(PROSE.parse(source))


@pytest.mark.parametrize(
    ("source", "what"),
    [
        ("{{ x.__class__ }}", "reads the internal attribute '__class__', which the sandbox refuses"),
        ("{{ f.func_globals }}", "reads the internal attribute 'func_globals', which the sandbox refuses"),
        ("{{ x['_secret'] }}", "reads the internal item '_secret', which the sandbox refuses"),
        (
            "{{ r | attr('x') }}",
            "uses the attr filter, which reaches attributes by name; write r.column or r['column'] instead",
        ),
        (
            "{{ r.fmt | format(1) }}",
            "uses the format filter, but its format string is not a literal (values must never act as templates); write e.g. '%s km' | format(r.distance)",
        ),
        (
            "{{ '{}'.format(x) }}",
            "calls .format(), which can reach into objects; use the format filter ('%s' | format(x)), ~ or the thousands/round filters",
        ),
        (
            f"{{% for i in range({MAX_RANGE + 1}) %}}{{% endfor %}}",
            f"calls range() with {MAX_RANGE + 1:,} items; the sandbox allows {MAX_RANGE:,}",
        ),
        (
            f"{{{{ 2 ** {MAX_POWER + 1} }}}}",
            f"raises to the power {MAX_POWER + 1:,}; templates may not go above {MAX_POWER:,}",
        ),
        ("{{ 'ab' * 60000 }}", "builds a sequence of 120,000 items with *; templates may not build more than 100,000"),
        (
            "{{ [1] * 10 ** 40 }}",
            "builds a sequence of an astronomical number of items with *; templates may not build more than 100,000",
        ),
        ("{% include 'x' %}", "uses {% include %}; spec templates cannot load other templates"),
        ("{% from 'x' import y %}", "uses {% from ... import %}; spec templates cannot load other templates"),
        ("{% extends 'x' %}", "uses {% extends %}; spec templates cannot load other templates"),
    ],
)
def test_each_hazard_in_one_sentence(source, what):
    assert hazards(source) == [(1, what)]


@pytest.mark.parametrize(
    "source",
    [
        "{{ r.city }} {{ '%s km' | format(r.d) }}",
        "{{ 'ab' * 3 }} {{ 2 ** 10 }}",
        "{% for i in range(10) %}{% endfor %}",
    ],
)
def test_ordinary_templates_have_none(source):
    assert hazards(source) == []


def test_a_hazard_is_reported_once_per_line():
    assert hazards("{{ x.__class__ }}{{ x.__class__ }}\n{{ y.__class__ }}") == [
        (1, "reads the internal attribute '__class__', which the sandbox refuses"),
        (2, "reads the internal attribute '__class__', which the sandbox refuses"),
    ]
