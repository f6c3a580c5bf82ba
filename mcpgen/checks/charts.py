"""Chart settings that make no sense for the chart's type.

>>> from mcpgen.spec.models import Chart
>>> chart_sense(Chart(type="bar", x="city", y="city"))
[('error', 'y', "column 'city' is both x and y")]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..spec.models import Chart


CHART_JS_OPTIONS = frozenset(
    {
        "responsive",
        "maintainAspectRatio",
        "aspectRatio",
        "onResize",
        "resizeDelay",
        "devicePixelRatio",
        "locale",
        "interaction",
        "events",
        "onHover",
        "onClick",
        "layout",
        "plugins",
        "scales",
        "indexAxis",
        "elements",
        "animation",
        "animations",
        "transitions",
        "datasets",
        "parsing",
        "normalized",
        "clip",
        "spanGaps",
        "hover",
        "cutout",
        "radius",
        "rotation",
        "circumference",
        "showLine",
        "borderColor",
        "backgroundColor",
        "color",
        "font",
    }
)
_BAR_TYPES = ("bar", "horizontal_bar", "stacked_bar")


def chart_sense(chart: Chart) -> list[tuple[str, str, str]]:
    """(severity, key, message) for chart settings that make no sense for the chart's type."""
    out = []
    ys = chart.y_columns
    twice = sorted({y for y in ys if ys.count(y) > 1})
    if twice:
        out.append(("error", "y", f"y names {', '.join(twice)} more than once"))
    if chart.x in ys:
        out.append(("error", "y", f"column '{chart.x}' is both x and y"))
    if chart.series and (chart.series == chart.x or chart.series in ys):
        out.append(
            (
                "error",
                "series",
                f"series '{chart.series}' is also the chart's {'x' if chart.series == chart.x else 'y'} column",
            )
        )
    if chart.type == "stacked_bar" and len(ys) == 1 and not chart.series:
        out.append(
            (
                "warning",
                "type",
                "a stacked_bar with one y column and no series has nothing to stack; "
                "use bar, or give several y columns or a series",
            )
        )
    options = chart.options or {}
    for key in options:
        if key not in CHART_JS_OPTIONS:
            out.append(("warning", "options", f"options.{key} is not a Chart.js 4 option"))
    if chart.type in ("pie", "doughnut") and "scales" in options:
        out.append(("warning", "options", f"a {chart.type} chart has no axes: options.scales has no effect"))
    if "indexAxis" in options and chart.type not in _BAR_TYPES:
        out.append(("warning", "options", f"options.indexAxis only applies to bar charts, not {chart.type}"))
    if chart.type == "horizontal_bar" and options.get("indexAxis") == "x":
        out.append(
            (
                "warning",
                "options",
                "options.indexAxis: x turns a horizontal_bar back into a vertical bar; use type: bar",
            )
        )
    return out
