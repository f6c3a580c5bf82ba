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


@pytest.mark.parametrize(
    ("type_", "label_axis", "value_axis"),
    [("bar", "x", "y"), ("line", "x", "y"), ("horizontal_bar", "y", "x"), ("stacked_bar", "x", "y")],
)
def test_axis_titles_come_from_x_title_and_y_title(type_, label_axis, value_axis):
    chart = Chart(type=type_, x="city", y="pop", x_title="City", y_title="People")
    scales = build_chart(chart, ["city", "pop"], [("Tokyo", 37)])["options"]["scales"]
    assert scales[label_axis]["title"] == {"display": True, "text": "City"}
    assert scales[value_axis]["title"] == {"display": True, "text": "People"}
    if type_ == "stacked_bar":  # the stacking stays
        assert scales["x"]["stacked"] is True and scales["y"]["stacked"] is True


def test_options_still_win_over_axis_titles_and_pies_have_no_axes():
    chart = Chart(type="bar", x="city", y="pop", y_title="People", options={"scales": {"y": {"title": {"text": "N"}}}})
    assert build_chart(chart, ["city", "pop"], [("Tokyo", 37)])["options"]["scales"]["y"]["title"] == {
        "display": True,
        "text": "N",
    }
    with pytest.raises(ValidationError, match="a pie chart has no axes, so x_title and y_title do not apply"):
        Chart(type="pie", x="city", y="pop", x_title="City")
    assert (
        "scales" not in build_chart(Chart(type="bar", x="city", y="pop"), ["city", "pop"], [("Tokyo", 37)])["options"]
    )
