"""One number format per column: the decimals the column needs, thousands grouping, and the text
`mcpgen call` writes (what Intl.NumberFormat("en-US") writes; tests/browser checks it there)."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest

from mcpgen.answer.numbers import MAX_DECIMALS, column_formats, format_number, formats_of
from mcpgen.answer.results import build_table


def fmt(decimals: int, grouping: bool = True) -> dict:
    return {"decimals": decimals, "grouping": grouping}


def formats(header: str, *values) -> dict | None:
    """The format of one column of `values` under `header`."""
    return (column_formats([[header], *([v] for v in values)]) or [None])[0]


def test_a_column_takes_the_most_decimals_any_of_its_numbers_needs():
    assert formats("x", 50, 52.2) == fmt(1)
    assert [format_number(v, fmt(1)) for v in (50, 52.2)] == ["50.0", "52.2"]
    assert formats("x", 1.5, 2.25, 3.125) == fmt(3)
    assert formats("x", 0.1234567, 2) == fmt(MAX_DECIMALS)  # capped
    assert formats("x", 0.30000000000000004) == fmt(1)  # what it needs once rounded to the cap
    assert formats("x", 2.0005) == fmt(3)  # 2.001: rounded half away from zero, as Intl does


def test_integers_stored_as_float_need_no_decimals():
    assert formats("x", 50.0, 1e15, -3.0) == fmt(0)
    assert format_number(1e15, fmt(0)) == "1,000,000,000,000,000"


def test_negatives():
    assert formats("x", -1234.5, 10) == fmt(1)
    assert format_number(-1234.5, fmt(0)) == "-1,235"  # half away from zero, as Intl's halfExpand
    assert format_number(-1234.5, fmt(2)) == "-1,234.50"
    assert format_number(-0.0, fmt(0)) == "-0" and format_number(-0.0001, fmt(3)) == "-0.000"  # Intl keeps the sign


def test_missing_and_not_numbers():
    assert column_formats([["a", "b"], [None, "x"], [None, True]]) is None  # no number anywhere
    assert column_formats([["a"]]) is None and column_formats(None) is None
    assert formats("x", None, 1.5, None) == fmt(1)
    assert format_number(None, fmt(2)) == ""
    assert format_number(math.nan, fmt(2)) == "NaN" and format_number(-math.inf, fmt(0)) == "-∞"
    assert formats("x", math.nan, 2.5) == fmt(1)  # not a number needs nothing
    assert format_number(True, fmt(0)) == "True" and format_number("12", fmt(2)) == "12"  # only numbers change
    # a column of numbers and text (an integer past 2**53 is sent as a string): the numbers share one format
    assert column_formats([["n"], [5], ["1152921504606846976"], [7.25]]) == [fmt(2)]


def test_huge_and_tiny():
    assert formats("x", 1e300, 1.7976931348623157e308) == fmt(0)
    assert format_number(1e21, fmt(0)) == "1,000,000,000,000,000,000,000"
    assert format_number(1.7976931348623157e308, fmt(0)).startswith("179,769,313,486,231,570,000,000,")
    assert format_number(1.2345678901234568e17, fmt(1)) == "123,456,789,012,345,680.0"  # the shortest form's digits
    assert formats("x", 1e-7) == fmt(MAX_DECIMALS)  # 0.000, not 0: the number is not zero
    assert formats("x", 5e-324, 0.0) == fmt(MAX_DECIMALS)
    assert format_number(1e-7, fmt(3)) == "0.000" and format_number(0.0005, fmt(3)) == "0.001"


def test_decimals():
    assert formats("x", Decimal("1.50"), Decimal("2")) == fmt(1)
    assert formats("x", Decimal("1E+3")) == fmt(0)
    assert format_number(Decimal("12345678901234567890.125"), fmt(2)) == "12,345,678,901,234,567,890.13"
    assert format_number(Decimal("NaN"), fmt(0)) == "NaN"
    # the table cells of Decimals (SUM on PostgreSQL) are what the formats are computed from
    table = build_table(["total"], [(Decimal("4542820771.000"),), (Decimal("0.5"),)], True)
    assert table.rows() == [["total"], [4542820771], [0.5]] and column_formats(table.rows()) == [fmt(1)]
    assert formats_of(table.header, table.columns) == column_formats(table.rows())  # the same, column by column


@pytest.mark.parametrize("header", ["year", "Year", "id", "city_id", "country code", "zip_code"])
def test_years_ids_and_codes_keep_their_digits(header):
    assert formats(header, 2024, 10452) == fmt(0, grouping=False)
    assert format_number(2024, fmt(0, grouping=False)) == "2024"
    assert formats(header, 2024.5) == fmt(1)  # not a whole number: grouped like any other


def test_grouping_for_other_headers():
    assert formats("population", 709037) == fmt(0) and format_number(709037, fmt(0)) == "709,037"
    assert formats("idle", 5000) == fmt(0)  # "id" as a word only
