"""Reading a folder of specs: every problem of every file, each with file:line:col."""

from mcpgen.loading import load_project

SPEC = """\
description: Broken on purpose.
parameters:
  n: {type: integer, description: how many, minimum: 1}
  unused: {type: string, description: never used, required: false}
sql: |
  SELECT name FROM t
  WHERE population > :m
  LIMIT :n
sources: [example.org]
content: "{{ rowz | length }} cities"
chart: {type: pie, x: name, y: [population, name]}
"""


def test_a_broken_optional_field_does_not_hide_the_other_problems(tmp_path):
    (tmp_path / "specs").mkdir()
    path = tmp_path / "specs" / "bad.yaml"
    path.write_text(SPEC)
    loaded = load_project(tmp_path / "specs")
    found = sorted((p.line, p.col, p.severity, p.message.split(":")[0]) for p in loaded.problems)
    assert found == [
        (4, 3, "warning", "parameter 'unused' is declared but the SQL never uses "),
        (7, 20, "error", "the SQL uses "),
        (9, 11, "error", "sources[0]"),
        (10, 10, "error", "content"),
        (11, 1, "error", "chart"),
    ]
    assert all(p.path == str(path) for p in loaded.problems)
    assert loaded.specs == []  # a spec with errors is never compiled


def test_a_broken_required_field_stops_the_checks_that_need_it(tmp_path):
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "bad.yaml").write_text(SPEC.replace("content:", "contnt:"))
    messages = [p.message for p in load_project(tmp_path / "specs").problems]
    assert sorted(messages) == [
        "chart: a pie chart shows one y column and no series",
        "missing required field 'content'",
        "unknown key 'contnt'",
    ]


def test_a_value_of_the_wrong_shape_is_named_where_it_is_written(tmp_path):
    """Unions are chosen by the shape of what was written, so errors point at the key itself
    and never name pydantic's internal branches."""
    head = "description: d\nsql: SELECT 1 AS x\nsources: [https://example.org/]\ncontent: x\n"
    cases = {
        "chart: 3\n": (5, 1, "chart: Input should be a chart (a mapping with type, x and y) or a list of charts"),
        "chart: {type: bar, x: a, y: b, zz: 1}\n": (5, 32, "unknown key 'zz' in chart"),
        "table: [a]\n": (5, 1, "table: Input should be true, false or a mapping with columns and headers"),
        "table: {cols: [a]}\n": (5, 9, "unknown key 'cols' in table"),
        "chart: {type: bar, x: a, y: {a: 1}}\n": (5, 26, "chart.y: Input should be a string or a list of strings"),
        "parameters: {n: {type: integer, description: d, minimum: true}}\n": (
            5,
            49,
            "parameters.n.minimum: Input should be a valid integer",
        ),
    }
    (tmp_path / "specs").mkdir()
    for tail, expected in cases.items():
        (tmp_path / "specs" / "s.yaml").write_text(head + tail)
        problems = load_project(tmp_path / "specs").problems
        assert (problems[0].line, problems[0].col, problems[0].message) == expected, tail
