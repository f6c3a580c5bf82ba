import pytest
from pydantic import ValidationError

from mcpgen.answer.charts import build_chart
from mcpgen.spec.models import Chart

ROWS = [("1952", "Asia", 40.0), ("1952", "Europe", 64.0), ("1957", "Asia", 42.0)]


def test_series_pivots_long_data_into_one_dataset_per_value():
    config = build_chart(
        Chart(type="line", x="year", y="life", series="continent"), ["year", "continent", "life"], ROWS
    )
    assert config["data"]["labels"] == ["1952", "1957"]
    assert config["data"]["datasets"] == [
        {"label": "Asia", "data": [40.0, 42.0]},
        {"label": "Europe", "data": [64.0, None]},
    ]


def test_each_chart_type_becomes_chart_js_4():
    cols, rows = ["k", "a", "b"], [("x", 1, 2), ("y", 3, 4)]
    made = {
        t: build_chart(Chart(type=t, x="k", y="a" if t in ("pie", "doughnut") else ["a", "b"]), cols, rows)
        for t in ["bar", "line", "area", "pie", "doughnut", "scatter", "horizontal_bar", "stacked_bar"]
    }
    assert made["horizontal_bar"]["type"] == "bar" and made["horizontal_bar"]["options"]["indexAxis"] == "y"
    assert made["stacked_bar"]["options"]["scales"] == {"x": {"stacked": True}, "y": {"stacked": True}}
    assert made["area"]["type"] == "line" and made["area"]["data"]["datasets"][0]["fill"] == "origin"
    assert made["scatter"]["data"]["datasets"][0]["data"] == [{"x": "x", "y": 1}, {"x": "y", "y": 3}]
    assert made["pie"]["data"] == {"labels": ["x", "y"], "datasets": [{"label": "a", "data": [1, 3]}]}
    assert made["bar"]["data"]["datasets"][1] == {"label": "b", "data": [2, 4]}


def test_title_and_options_merge():
    config = build_chart(
        Chart(type="bar", x="k", y="a", title="T", options={"plugins": {"legend": {"display": False}}}),
        ["k", "a"],
        [("x", 1)],
    )
    assert config["options"]["plugins"] == {"title": {"display": True, "text": "T"}, "legend": {"display": False}}


def test_dataset_labels_come_from_label_then_table_headers_then_the_column():
    cols, rows = ["k", "a", "b"], [("x", 1, 2)]
    headers = {"a": "Apples", "b": "Bananas"}
    labels = lambda chart: [d["label"] for d in build_chart(chart, cols, rows, headers)["data"]["datasets"]]  # noqa: E731
    assert labels(Chart(type="bar", x="k", y=["a", "b"])) == ["Apples", "Bananas"]
    assert labels(Chart(type="bar", x="k", y=["a", "b"], label={"b": "Bs"})) == ["Apples", "Bs"]
    assert labels(Chart(type="line", x="k", y="a", label="Fruit")) == ["Fruit"]
    assert labels(Chart(type="scatter", x="k", y="b")) == ["Bananas"]
    assert labels(Chart(type="bar", x="k", y="a")) == ["Apples"]
    assert [d["label"] for d in build_chart(Chart(type="bar", x="k", y="a"), cols, rows)["data"]["datasets"]] == ["a"]


@pytest.mark.parametrize(
    ("chart", "message"),
    [
        ({"y": ["a", "b"], "label": "One"}, "with several y columns, label maps each column"),
        ({"y": "a", "label": {"zz": "Z"}}, "label names zz, which is not a y column"),
        ({"y": "a", "series": "b", "label": "S"}, "takes its dataset labels from the series values"),
    ],
)
def test_a_label_that_cannot_apply_is_refused(chart, message):
    with pytest.raises(ValidationError, match=message):
        Chart.model_validate({"type": "line", "x": "k", **chart})
