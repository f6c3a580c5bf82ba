"""Reading a folder of specs: every problem of every file, each with file:line:col."""

import pytest

from mcpgen.load.project import load_project

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
        (7, 22, "error", "the SQL uses "),  # at :m itself, the block's indentation counted
        (9, 11, "error", "sources[0]"),
        (10, 14, "error", "content"),  # at rowz inside the quoted template
        (11, 1, "error", "chart"),
    ]
    assert all(p.path == str(path) for p in loaded.problems)
    assert loaded.specs == []  # a spec with errors is never compiled


def test_a_typo_in_a_required_key_is_one_problem_and_the_other_checks_still_run(tmp_path):
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "bad.yaml").write_text(SPEC.replace("content:", "contnt:"))
    found = sorted((p.line, p.col, p.message.split(",")[0]) for p in load_project(tmp_path / "specs").problems)
    assert found == [
        (4, 3, "parameter 'unused' is declared but the SQL never uses :unused"),
        (7, 22, "the SQL uses :m"),
        (9, 11, "sources[0]: 'example.org' is not an absolute http(s) URL (write it with https:// or http://)"),
        (10, 1, "unknown key 'contnt'; did you mean 'content'?"),  # not also "missing required field 'content'"
        (10, 13, "content: the template uses rowz"),  # the template was read as the content it was meant to be
        (11, 1, "chart: a pie chart shows one y column and no series"),
    ]


def test_a_broken_required_field_stops_the_checks_that_need_it(tmp_path):
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "bad.yaml").write_text(SPEC.replace("content:", "prose:"))
    messages = [p.message for p in load_project(tmp_path / "specs").problems]
    assert sorted(messages) == [
        "chart: a pie chart shows one y column and no series",
        "missing required field 'content'",
        "unknown key 'prose'",
    ]


def test_unknown_keys_and_enum_values_name_the_nearest_valid_one(tmp_path):
    head = "description: d\nsql: SELECT 1 AS x\nsources: [https://example.org/]\ncontent: x\n"
    cases = {
        "descripton: d\n": "unknown key 'descripton'; did you mean 'description'?",
        "parameters: {n: {type: integer, description: d, min: 1, default: 2}}\n": (
            "unknown key 'min' in parameters.n; did you mean 'minimum'?"
        ),
        "chart: {type: barr, x: x, y: x}\n": "did you mean 'bar'?",
        "parameters: {n: {type: int, description: d}}\n": "did you mean 'integer'?",
        "annotations: {readOnlyHnt: true}\n": "unknown key 'readOnlyHnt' in annotations; did you mean 'readOnlyHint'?",
    }
    (tmp_path / "specs").mkdir()
    for tail, expected in cases.items():
        text = head.replace("description: d\n", "") + tail if tail.startswith("descripton") else head + tail
        (tmp_path / "specs" / "s.yaml").write_text(text)
        messages = [p.message for p in load_project(tmp_path / "specs").errors]
        assert len(messages) == 1 and expected in messages[0], (tail, messages)


def test_a_typo_in_the_project_file_names_the_nearest_key(tmp_path):
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "s.yaml").write_text(
        "description: d\nsql: SELECT 1 AS x\nsources: [https://x.org/]\ncontent: x\n"
    )
    (tmp_path / "mcpgen.yaml").write_text("conections:\n  default: {duckdb: ':memory:'}\n")
    [problem] = load_project(tmp_path / "specs").errors
    assert (problem.line, problem.message) == (1, "unknown key 'conections'; did you mean 'connections'?")


def test_a_value_of_the_wrong_shape_is_named_where_it_is_written(tmp_path):
    """Unions are chosen by the shape of what was written, so errors point at the key itself
    and never name pydantic's internal branches."""
    head = "description: d\nsql: SELECT 1 AS x\nsources: [https://example.org/]\ncontent: x\n"
    cases = {
        "chart: 3\n": (
            5,
            1,
            "chart: Input should be a chart (a mapping with type, x and y) or a list of charts, got 3",
        ),
        "chart: {type: bar, x: a, y: b, zz: 1}\n": (5, 32, "unknown key 'zz' in chart"),
        "table: [a]\n": (5, 1, 'table: Input should be true, false or a mapping with columns and headers, got ["a"]'),
        "table: {cols: [a]}\n": (5, 9, "unknown key 'cols' in table; did you mean 'columns'?"),
        "chart: {type: bar, x: a, y: {a: 1}}\n": (
            5,
            26,
            'chart.y: Input should be a string or a list of strings, got {"a": 1}',
        ),
        "parameters: {n: {type: integer, description: d, minimum: true}}\n": (
            5,
            49,
            "parameters.n.minimum: Input should be a valid integer, got true",
        ),
    }
    (tmp_path / "specs").mkdir()
    for tail, expected in cases.items():
        (tmp_path / "specs" / "s.yaml").write_text(head + tail)
        problems = load_project(tmp_path / "specs").problems
        assert (problems[0].line, problems[0].col, problems[0].message) == expected, tail


@pytest.mark.parametrize("text", ["", "# only a comment\n", "---\n"])
def test_an_empty_mcpgen_yaml_means_the_defaults(tmp_path, text):
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "one.yaml").write_text(
        "description: One.\nsql: SELECT 1 AS n\nsources: ['https://example.org/']\ncontent: '{{ rows[0].n }}'\n"
    )
    (tmp_path / "mcpgen.yaml").write_text(text)
    loaded = load_project(tmp_path / "specs")
    assert loaded.errors == [] and loaded.config.defaults.max_rows == 1000


@pytest.mark.parametrize("where", [".", "specs"])
def test_a_project_file_named_mcpgen_yml_is_refused_rather_than_ignored_or_read_as_a_spec(tmp_path, where):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "a.yaml").write_text("description: d\nsql: SELECT 1 AS x\nsources: [https://x.org/]\ncontent: x\n")
    misnamed = tmp_path / where / "mcpgen.yml"
    misnamed.write_text("defaults:\n  max_rows: 5\n")
    loaded = load_project(specs)
    assert [(p.path, p.message) for p in loaded.problems] == [
        (str(misnamed), "is never read: the project file must be named mcpgen.yaml")
    ]
    assert [s.name for s in loaded.specs] == ["a"]
