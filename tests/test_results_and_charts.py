import datetime as dt
import math
from decimal import Decimal

from mcpgen.charts import build_chart
from mcpgen.results import DataToolPayload, build_table, to_cell
from mcpgen.spec import Chart, TableSpec


def test_cells_are_json_scalars_without_precision_loss():
    assert to_cell(2**53) == 2**53 and to_cell(2**63 - 1) == str(2**63 - 1)
    assert to_cell(math.nan) is None and to_cell(-math.inf) is None
    assert to_cell(Decimal("1.5")) == 1.5 and to_cell(Decimal("12345678901234567890.1234567890")) == \
        "12345678901234567890.1234567890"
    assert to_cell(dt.datetime(2020, 1, 2, 3, 4, tzinfo=dt.timezone.utc)) == "2020-01-02T03:04:00+00:00"
    assert to_cell(b"\x00\x01") == "AAE=" and to_cell([1, {"a": None}]) == '[1, {"a": null}]'


def test_table_columns_and_headers():
    table = build_table(["a", "b", "c"], [(1, "x", None)], TableSpec(columns=["c", "a"], headers={"a": "A"}))
    assert table == [["c", "A"], [None, 1]]
    assert build_table(["a"], [(1,)], False) is None
    DataToolPayload.model_validate({"sources": ["https://x.org/"], "table": build_table(["a"], [(1,)], True)})


ROWS = [("1952", "Asia", 40.0), ("1952", "Europe", 64.0), ("1957", "Asia", 42.0)]


def test_series_pivots_long_data_into_one_dataset_per_value():
    config = build_chart(Chart(type="line", x="year", y="life", series="continent"), ["year", "continent", "life"],
                         ROWS)
    assert config["data"]["labels"] == ["1952", "1957"]
    assert config["data"]["datasets"] == [{"label": "Asia", "data": [40.0, 42.0]},
                                          {"label": "Europe", "data": [64.0, None]}]


def test_each_chart_type_becomes_chart_js_4():
    cols, rows = ["k", "a", "b"], [("x", 1, 2), ("y", 3, 4)]
    made = {t: build_chart(Chart(type=t, x="k", y="a" if t in ("pie", "doughnut") else ["a", "b"]), cols, rows)
            for t in ["bar", "line", "area", "pie", "doughnut", "scatter", "horizontal_bar", "stacked_bar"]}
    assert made["horizontal_bar"]["type"] == "bar" and made["horizontal_bar"]["options"]["indexAxis"] == "y"
    assert made["stacked_bar"]["options"]["scales"] == {"x": {"stacked": True}, "y": {"stacked": True}}
    assert made["area"]["type"] == "line" and made["area"]["data"]["datasets"][0]["fill"] == "origin"
    assert made["scatter"]["data"]["datasets"][0]["data"] == [{"x": "x", "y": 1}, {"x": "y", "y": 3}]
    assert made["pie"]["data"] == {"labels": ["x", "y"], "datasets": [{"label": "a", "data": [1, 3]}]}
    assert made["bar"]["data"]["datasets"][1] == {"label": "b", "data": [2, 4]}


def test_title_and_options_merge():
    config = build_chart(Chart(type="bar", x="k", y="a", title="T", options={"plugins": {"legend": {"display": False}}}),
                         ["k", "a"], [("x", 1)])
    assert config["options"]["plugins"] == {"title": {"display": True, "text": "T"}, "legend": {"display": False}}


def test_whole_decimals_stay_integers_and_cells_publish_one_type_list():
    assert to_cell(Decimal("4542820771.000")) == 4542820771
    assert to_cell(Decimal("1E+30")) == str(10**30)
    from mcpgen.results import OUTPUT_SCHEMA

    cell = OUTPUT_SCHEMA["properties"]["table"]["items"]["items"]
    assert cell == {"type": ["string", "number", "boolean", "null"]}
