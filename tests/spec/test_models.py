import pytest
from pydantic import ValidationError

from mcpgen.spec.models import Chart, Parameter, Spec, parse_duration

BASE = {"description": "d", "sql": "SELECT 1", "sources": ["https://x.org/"], "content": "x"}


def test_defaults_of_the_contract():
    spec = Spec.model_validate(BASE)
    assert spec.connection == "default" and spec.table is True and spec.charts == []
    assert spec.annotations.readOnlyHint and spec.annotations.idempotentHint and not spec.annotations.openWorldHint


@pytest.mark.parametrize("text, seconds", [("5s", 5.0), ("500ms", 0.5), ("2m", 120.0), (3, 3.0), ("1.5h", 5400.0)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["soon", "0s", -1, "5 parsecs"])
def test_bad_durations(bad):
    with pytest.raises(ValueError):
        parse_duration(bad)


@pytest.mark.parametrize(
    "spec, words",
    [
        ({**BASE, "sql_file": "q.sql"}, "exactly one of sql and sql_file"),
        ({**BASE, "titel": "x"}, "Extra inputs"),
        ({**BASE, "sources": []}, "at least 1"),
        ({**BASE, "parameters": {"rows": {"type": "integer", "description": "d"}}}, "reserved"),
        ({**BASE, "parameters": {"_x": {"type": "integer", "description": "d"}}}, "must be a letter"),
        ({**BASE, "max_rows": 0}, "greater than or equal to 1"),
    ],
)
def test_spec_errors(spec, words):
    with pytest.raises(ValidationError, match=words):
        Spec.model_validate(spec)


@pytest.mark.parametrize(
    "param, words",
    [
        ({"type": "string", "description": "d", "minimum": 1}, "minimum/maximum apply to"),
        ({"type": "integer", "description": "d", "pattern": "x"}, "apply to strings"),
        ({"type": "array", "description": "d"}, "needs items"),
        ({"type": "integer", "description": "d", "minimum": 5, "maximum": 1}, "greater than maximum"),
        ({"type": "integer", "description": "d", "default": 1, "required": True}, "cannot be required"),
        ({"type": "string", "description": "d", "pattern": "("}, "not a valid regular expression"),
        ({"type": "date", "description": "d", "minimum": 3}, "ISO 8601 string"),
    ],
)
def test_parameter_errors(param, words):
    with pytest.raises(ValidationError, match=words):
        Parameter.model_validate(param)


def test_required_follows_the_default():
    assert Parameter(type="integer", description="d").is_required
    assert not Parameter(type="integer", description="d", default=3).is_required
    assert not Parameter(type="integer", description="d", required=False).is_required


def test_chart_columns_and_rules():
    chart = Chart(type="line", x="year", y="life", series="continent")
    assert chart.columns == ["year", "life", "continent"]
    with pytest.raises(ValidationError, match="a pie chart shows one y column"):
        Chart(type="pie", x="a", y=["b", "c"])
    with pytest.raises(ValidationError, match="needs x"):
        Chart(type="bar", y="b")
