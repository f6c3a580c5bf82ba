import datetime as dt
import math
from decimal import Decimal

import pytest

from mcpgen.answer.results import DataToolPayload, build_table, to_cell
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
    assert table == [["c", "A"], [None, 1]]
    assert build_table(["a"], [(1,)], False) is None
    DataToolPayload.model_validate({"sources": ["https://x.org/"], "table": build_table(["a"], [(1,)], True)})


def test_whole_decimals_stay_integers_and_cells_publish_one_type_list():
    assert to_cell(Decimal("4542820771.000")) == 4542820771
    assert to_cell(Decimal("1E+30")) == str(10**30)
    from mcpgen.answer.results import OUTPUT_SCHEMA

    cell = OUTPUT_SCHEMA["properties"]["table"]["items"]["items"]
    assert cell == {"type": ["string", "number", "boolean", "null"]}


def test_the_published_schema_promises_the_same_shape_without_re_checking_cells():
    import jsonschema

    from mcpgen.answer.results import OUTPUT_SCHEMA, PUBLISHED_SCHEMA

    good = {"sources": ["https://example.org/"], "table": [["a", "b"], [1, None], ["x", True]]}
    jsonschema.validate(good, OUTPUT_SCHEMA)
    jsonschema.validate(good, PUBLISHED_SCHEMA)  # all the full schema accepts, the published one does
    for bad in ({"table": [["a"]]}, {"sources": ["ftp://x"]}, {"sources": ["https://x/"], "table": [1]}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, PUBLISHED_SCHEMA)
    cells = {"sources": ["https://x/"], "table": [["a"], [{"nested": 1}]]}
    jsonschema.validate(cells, PUBLISHED_SCHEMA)  # cells are the server's check (DataToolPayload) ...
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(cells, OUTPUT_SCHEMA)  # ... which holds them to the full schema


def test_a_column_is_converted_as_a_whole_only_when_every_value_allows():
    rows = [
        (1, 0.5, "a", Decimal("1.5"), True),
        (2**60, math.nan, None, None, None),
        (None, 2, "b", Decimal(3), False),
        ("mixed", None, "c", None, 1),  # SQLite lets a column hold any type
    ]
    table = build_table(["i", "f", "s", "d", "b"], rows, True)
    assert table[1:] == [[to_cell(v) for v in row] for row in rows]
    assert table[1:] == [
        [1, 0.5, "a", 1.5, True],
        ["1152921504606846976", None, None, None, None],
        [None, 2, "b", 3, False],
        ["mixed", None, "c", None, 1],
    ]
