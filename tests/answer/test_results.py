import datetime as dt
import enum
import ipaddress
import json
import math
import uuid
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from mcpgen.answer.results import DataToolPayload, build_table, json_size_bound, to_cell
from mcpgen.spec.models import TableSpec


def test_cells_are_json_scalars_without_precision_loss():
    assert to_cell(2**53) == 2**53 and to_cell(2**63 - 1) == str(2**63 - 1)
    assert to_cell(math.nan) is None and to_cell(-math.inf) is None
    assert (
        to_cell(Decimal("1.5")) == 1.5
        and to_cell(Decimal("12345678901234567890.1234567890")) == "12345678901234567890.1234567890"
    )
    assert to_cell(dt.datetime(2020, 1, 2, 3, 4, tzinfo=dt.UTC)) == "2020-01-02T03:04:00+00:00"
    assert to_cell(b"\x00\x01") == "AAE=" and to_cell([1, {"a": None}]) == '[1, {"a": null}]'


def test_table_columns_and_headers():
    table = build_table(["a", "b", "c"], [(1, "x", None)], TableSpec(columns=["c", "a"], headers={"a": "A"}))
    assert table.rows() == [["c", "A"], [None, 1]] and table.rows(0) == [["c", "A"]]
    assert build_table(["a"], [(1,)], False) is None and build_table(["a", "b"], [], True).rows() == [["a", "b"]]
    DataToolPayload.model_validate({"sources": ["https://x.org/"], "table": build_table(["a"], [(1,)], True).rows()})


def test_whole_decimals_stay_integers_and_cells_publish_one_type_list():
    assert to_cell(Decimal("4542820771.000")) == 4542820771
    assert to_cell(Decimal("1E+30")) == str(10**30)
    from mcpgen.answer.results import output_schema

    cell = output_schema()["properties"]["table"]["items"]["items"]
    assert cell == {"type": ["string", "number", "boolean", "null"]}


def test_the_published_schema_promises_the_same_shape_without_re_checking_cells():
    import jsonschema

    from mcpgen.answer.results import output_schema, published_schema

    good = {"sources": ["https://example.org/"], "table": [["a", "b"], [1, None], ["x", True]]}
    jsonschema.validate(good, output_schema())
    jsonschema.validate(good, published_schema())  # all the full schema accepts, the published one does
    for bad in ({"table": [["a"]]}, {"sources": ["ftp://x"]}, {"sources": ["https://x/"], "table": [1]}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, published_schema())
    cells = {"sources": ["https://x/"], "table": [["a"], [{"nested": 1}]]}
    jsonschema.validate(cells, published_schema())  # cells are the server's check (DataToolPayload) ...
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(cells, output_schema())  # ... which holds them to the full schema


def test_a_column_is_converted_as_a_whole_only_when_every_value_allows():
    rows = [
        (1, 0.5, "a", Decimal("1.5"), True),
        (2**60, math.nan, None, None, None),
        (None, 2, "b", Decimal(3), False),
        ("mixed", None, "c", None, 1),  # SQLite lets a column hold any type
    ]
    table = build_table(["i", "f", "s", "d", "b"], rows, True).rows()
    assert table[1:] == [[to_cell(v) for v in row] for row in rows]
    assert table[1:] == [
        [1, 0.5, "a", 1.5, True],
        ["1152921504606846976", None, None, None, None],
        [None, 2, "b", 3, False],
        ["mixed", None, "c", None, 1],
    ]


NEW_YORK = ZoneInfo("America/New_York")
# (value, its exact cell): the text of each temporal and exact type, as a column converts it and as one cell does
EXACT_CELLS = [
    (dt.datetime(2013, 1, 1, 5, tzinfo=ZoneInfo("Etc/UTC")), "2013-01-01T05:00:00+00:00"),  # DuckDB's TIMESTAMPTZ
    (dt.datetime(2021, 11, 7, 1, 30, tzinfo=NEW_YORK), "2021-11-07T01:30:00-04:00"),  # before the clocks go back
    (dt.datetime(2021, 11, 7, 1, 30, tzinfo=NEW_YORK, fold=1), "2021-11-07T01:30:00-05:00"),  # the same hour again
    (
        dt.datetime(2020, 2, 29, 23, 59, 59, 250000, tzinfo=dt.timezone(dt.timedelta(hours=5, minutes=30))),
        "2020-02-29T23:59:59.250000+05:30",
    ),
    (dt.datetime(2020, 1, 2, 3, 4, 5), "2020-01-02T03:04:05"),  # naive
    (dt.datetime(2020, 1, 2, 3, 4, 5, 6), "2020-01-02T03:04:05.000006"),
    (dt.date(2020, 1, 2), "2020-01-02"),
    (dt.time(23, 59, 1, 500), "23:59:01.000500"),
    (dt.time(8, 0, tzinfo=dt.UTC), "08:00:00+00:00"),
    (dt.timedelta(days=1, seconds=5), "1 day, 0:00:05"),
    (Decimal("1.50"), 1.5),
    (Decimal("4542820771.000"), 4542820771),
    (Decimal("12345678901234567890.1234567890"), "12345678901234567890.1234567890"),
    (Decimal("-1E+30"), str(-(10**30))),
    (Decimal("NaN"), None),
    (Decimal("-Infinity"), None),
    (math.nan, None),
    (math.inf, None),
    (-(2**60), str(-(2**60))),
    (uuid.UUID(int=1), "00000000-0000-0000-0000-000000000001"),
    (b"\x00\x01", "AAE="),
    (None, None),
]


@pytest.mark.parametrize(("value", "cell"), EXACT_CELLS, ids=lambda v: repr(v)[:40])
def test_a_column_of_one_type_gives_the_same_exact_cells_as_each_value_alone(value, cell):
    assert to_cell(value) == cell and type(to_cell(value)) is type(cell)
    for column in ((value, value), (value, None, value), (None, value)):
        cells = build_table(["x"], [(v,) for v in column], True).columns[0]
        assert list(cells) == [None if v is None else cell for v in column]


def test_a_subclass_is_converted_by_its_nearest_class_with_a_rule():
    class Code(enum.IntEnum):
        OK = 200

    class Stamp(dt.datetime):
        def isoformat(self, sep="T", timespec="auto"):
            return "its own text"

    assert to_cell(Code.OK) == 200 and to_cell(Stamp(2020, 1, 1)) == "its own text"
    assert list(build_table(["s"], [(Stamp(2020, 1, 1),), (None,)], True).columns[0]) == ["its own text", None]
    assert to_cell(ipaddress.ip_address("10.0.0.1")) == "10.0.0.1"  # no rule: its text


def test_every_cell_a_table_is_built_from_is_a_json_scalar_the_output_schema_accepts():
    """What lets the server check only the header of a table it built (`check_result(built=True)`)."""
    values = [v for v, _ in EXACT_CELLS] + [True, "text", 2**53, 0.1, [1, {"a": math.nan}], bytearray(b"ab")]
    rows = [(v, v, values[(i + 1) % len(values)]) for i, v in enumerate(values)]  # one type per column, and mixed
    table = build_table(["a", "b", "c"], rows, True).rows()
    DataToolPayload.model_validate({"sources": ["https://x.org/"], "table": table})  # strict: no NaN, no other type


def test_the_size_bound_holds_for_text_numbers_and_mixed_columns():
    class Name(str):
        pass

    rows = [("Oslo", 709037, None, Name("x" * 50)), ('say "hi"', None, "\x01\U0001f600", 1.5), ("", 2**60, True, "é")]
    table = build_table(["city", "n", "mixed", "subclass"], rows, True)
    assert json_size_bound(table) >= len(json.dumps(table.rows(), ensure_ascii=False).encode())
    assert json_size_bound(None) == len("null")
