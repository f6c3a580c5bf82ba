"""Chart settings to Chart.js 4 configurations.

>>> from mcpgen.spec.models import Chart
>>> build_chart(Chart(type="bar", x="city", y="pop"), ["city", "pop"], [("Tokyo", 37), ("Delhi", 30)],
...             headers={"pop": "Population"})
{'type': 'bar', 'data': {'labels': ['Tokyo', 'Delhi'], 'datasets': [{'label': 'Population', 'data': [37, 30]}]}, 'options': {}}
"""

from __future__ import annotations

import copy
from typing import Any

from ..spec.models import Chart
from .results import to_cell

_JS_TYPE = {
    "bar": "bar",
    "horizontal_bar": "bar",
    "stacked_bar": "bar",
    "line": "line",
    "area": "line",
    "pie": "pie",
    "doughnut": "doughnut",
    "scatter": "scatter",
}


def build_chart(
    chart: Chart, columns: list[str], rows: list[tuple], headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """One Chart.js config from the result rows. Every column the chart names must be in `columns`.

    Datasets are labelled by the chart's `label:`, else by the table's `headers`, else by column name."""
    index = {name: i for i, name in enumerate(columns)}
    assert chart.x is not None  # Chart requires x
    headers = headers or {}
    x = index[chart.x]
    if chart.series:
        labels, datasets = _pivot(chart, x, index[chart.series], index, rows)
    elif chart.type == "scatter":
        labels = None
        datasets = [
            {
                "label": chart.dataset_label(y, headers),
                "data": [{"x": to_cell(r[x]), "y": to_cell(r[index[y]])} for r in rows],
            }
            for y in chart.y_columns
        ]
    else:
        labels = [to_cell(r[x]) for r in rows]
        datasets = [
            {"label": chart.dataset_label(y, headers), "data": [to_cell(r[index[y]]) for r in rows]}
            for y in chart.y_columns
        ]
    if chart.type == "area":
        for ds in datasets:
            ds["fill"] = "origin"
    data: dict[str, Any] = {"datasets": datasets} if labels is None else {"labels": labels, "datasets": datasets}
    return {"type": _JS_TYPE[chart.type], "data": data, "options": _options(chart)}


def _pivot(chart: Chart, x: int, s: int, index: dict[str, int], rows: list[tuple]):
    """Long data (x, series, y: column positions) to one dataset per series value, aligned on the x labels."""
    y = index[chart.y_columns[0]]
    if chart.type == "scatter":
        groups: dict[Any, list] = {}
        for r in rows:
            groups.setdefault(to_cell(r[s]), []).append({"x": to_cell(r[x]), "y": to_cell(r[y])})
        return None, [{"label": str(k), "data": v} for k, v in groups.items()]
    labels = list(dict.fromkeys(to_cell(r[x]) for r in rows))
    position = {label: i for i, label in enumerate(labels)}
    values: dict[Any, list] = {}
    for r in rows:
        values.setdefault(to_cell(r[s]), [None] * len(labels))[position[to_cell(r[x])]] = to_cell(r[y])
    return labels, [{"label": str(k), "data": v} for k, v in values.items()]


def _options(chart: Chart) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if chart.type == "horizontal_bar":
        options["indexAxis"] = "y"
    if chart.type == "stacked_bar":
        options["scales"] = {"x": {"stacked": True}, "y": {"stacked": True}}
    if chart.type == "area":
        options["plugins"] = {"filler": {"propagate": False}}
    if chart.title:
        options.setdefault("plugins", {})["title"] = {"display": True, "text": chart.title}
    # x_title names the axis of the x column: Chart.js's y axis when the bars lie (horizontal_bar).
    label_axis, value_axis = ("y", "x") if chart.type == "horizontal_bar" else ("x", "y")
    for axis, title in ((label_axis, chart.x_title), (value_axis, chart.y_title)):
        if title:
            options.setdefault("scales", {}).setdefault(axis, {})["title"] = {"display": True, "text": title}
    return _merge(options, chart.options)


def _merge(base: dict, extra: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in extra.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out
