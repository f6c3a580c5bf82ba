"""The filters mcpgen adds, listed once for Jinja and for the plain-Python renderer."""

import datetime as dt
from decimal import Decimal

import pytest

from mcpgen.templates.filters import FILTERS, date, join_names, percent, round_, thousands
from mcpgen.templates.render import PROSE, URL, Template


def test_thousands():
    assert [thousands(1234567), thousands(1234.5), thousands(Decimal("1234.50")), thousands(Decimal("1000"))] == [
        "1,234,567",
        "1,234.5",
        "1,234.5",
        "1,000",
    ]
    assert thousands(1234567, sep=".") == "1.234.567" and thousands(None) == "" and thousands("n/a") == "n/a"


def test_round_percent_date_and_join_names():
    assert (round_(2.567), round_(2.567, 2), round_(None)) == (3, 2.57, None)
    assert (percent(0.1234), percent(0.5, 0), percent(None)) == ("12.3%", "50%", "")
    assert date(dt.date(2024, 3, 1)) == "2024-03-01" and date("2024-03-01T10:00", "%d %b") == "01 Mar"
    assert [join_names(["a"]), join_names(["a", "b", "c"]), join_names([])] == ["a", "a, b and c", ""]


def test_one_list_serves_both_environments_and_the_fast_renderer():
    assert sorted(FILTERS) == ["date", "join_names", "percent", "round", "thousands"]
    for env in (PROSE, URL):
        assert set(FILTERS) <= set(env.filters)
    context = {"n": 1234567, "p": 0.25, "names": ["Oslo", "Bergen"]}
    source = "{{ n | thousands }} {{ p | percent(0) }} {{ names | join_names }} {{ 2.5 | round }}"
    fast = Template(source)
    assert fast.render(context) == "1,234,567 25% Oslo and Bergen 2"  # the plain-Python renderer
    assert PROSE.from_string(source).render(context) == fast.render(context)  # Jinja agrees


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_each_filter_survives_none(name):
    value = [] if name == "join_names" else None
    FILTERS[name](value)  # no exception: a NULL cell renders as nothing
