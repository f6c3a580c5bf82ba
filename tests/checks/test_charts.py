"""Chart settings that make no sense for the chart's type."""

import pytest

from mcpgen.checks.charts import CHART_JS_OPTIONS, chart_sense
from mcpgen.spec.models import Chart


@pytest.mark.parametrize(
    ("chart", "found"),
    [
        (dict(type="bar", x="city", y="population"), []),
        (dict(type="bar", x="city", y=["a", "a"]), [("error", "y", "y names a more than once")]),
        (dict(type="line", x="d", y="v", series="d"), [("error", "series", "series 'd' is also the chart's x column")]),
        (dict(type="line", x="d", y="v", series="v"), [("error", "series", "series 'v' is also the chart's y column")]),
        (
            dict(type="pie", x="c", y="n", options={"scales": {}}),
            [("warning", "options", "a pie chart has no axes: options.scales has no effect")],
        ),
        (
            dict(type="line", x="d", y="v", options={"indexAxis": "y"}),
            [("warning", "options", "options.indexAxis only applies to bar charts, not line")],
        ),
        (
            dict(type="bar", x="c", y="n", options={"colour": "red"}),
            [("warning", "options", "options.colour is not a Chart.js 4 option")],
        ),
    ],
)
def test_chart_sense(chart, found):
    assert chart_sense(Chart(**chart)) == found


def test_a_stacked_bar_needs_something_to_stack():
    ((severity, key, message),) = chart_sense(Chart(type="stacked_bar", x="c", y="n"))
    assert (severity, key) == ("warning", "type") and message.startswith("a stacked_bar with one y column")
    assert chart_sense(Chart(type="stacked_bar", x="c", y=["a", "b"])) == []


def test_a_horizontal_bar_with_index_axis_x_is_a_vertical_bar():
    assert chart_sense(Chart(type="horizontal_bar", x="c", y="n", options={"indexAxis": "x"}))[0][2].startswith(
        "options.indexAxis: x turns a horizontal_bar back into a vertical bar"
    )
    assert {"plugins", "scales", "indexAxis"} <= CHART_JS_OPTIONS
