"""The columns of a result row a template reads: through loops, filters, items, groups and set names."""

import pytest

from mcpgen.checks.row_references import row_references
from mcpgen.templates.render import PROSE


@pytest.mark.parametrize(
    ("source", "columns"),
    [
        ("{% for r in rows %}{{ r.city }}{% endfor %}", ["city"]),
        ("{{ rows[0].city }} {{ rows[-1]['country'] }}", ["city", "country"]),
        ("{{ (rows | first).city }} {{ (rows | last)['pop'] }}", ["city", "pop"]),
        ("{% for r in rows | sort(attribute='pop') %}{{ r.name }}{% endfor %}", ["pop", "name"]),
        ("{{ rows | sum(attribute='pop') }} {{ rows | map(attribute='city.name') | join }}", ["pop", "city"]),
        ("{% for r in rows | selectattr('big') %}{{ r.x }}{% endfor %}", ["big", "x"]),
        (
            "{% for key, items in rows | groupby('country') %}{% for r in items %}{{ r.city }}{% endfor %}{% endfor %}",
            ["country", "city"],
        ),
        ("{% for g in rows | groupby('c') %}{% for r in g.list %}{{ r.n }}{% endfor %}{% endfor %}", ["c", "n"]),
        ("{% set top = rows[0] %}{{ top.city }}", ["city"]),
        ("{% for r in rows[:3] %}{{ r.a }}{% endfor %}", ["a"]),
        ("{{ (rows[0] if row_count else rows[1]).a }}", ["a"]),
    ],
)
def test_the_columns_a_template_reads(source, columns):
    assert [column for _, column in row_references(PROSE.parse(source))] == columns


@pytest.mark.parametrize(
    "source",
    [
        "{{ row_count }} {{ columns[0] }}",  # not rows
        "{% for r in rows %}{{ r.get('city') }}{{ r.items() }}{% endfor %}",  # dict methods called, not columns
        "{% for r in other %}{{ r.city }}{% endfor %}",  # a loop over something else
        "{% macro m(r) %}{{ r.city }}{% endmacro %}",  # a macro's own scope is not followed
        "{% for r in rows %}{% endfor %}{{ r.city }}",  # the loop variable ends with the loop
    ],
)
def test_what_is_not_a_row_column(source):
    assert row_references(PROSE.parse(source)) == []


def test_each_reference_has_its_line():
    assert row_references(PROSE.parse("one\n{% for r in rows %}\n{{ r.a }}{% endfor %}")) == [(3, "a")]
