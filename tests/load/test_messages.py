"""Pydantic's errors as one sentence each, at the line and column where the value is written; one reader
for every YAML file of a project: a spec and a prompt file that are too large, not UTF-8 or not a
mapping are each refused with the same one sentence."""

from pathlib import Path

import pytest
from pydantic import ValidationError

from mcpgen.limits import MAX_FILE_BYTES
from mcpgen.load.messages import fields_at, not_utf8, typos, validation_problems
from mcpgen.load.project import load_project
from mcpgen.spec.config import ProjectConfig
from mcpgen.spec.models import Spec
from mcpgen.spec.yamlload import load_yaml

GOOD = "description: d\nsql: SELECT 1 AS x\nsources: [https://example.org/]\ncontent: c\n"


def problems(text, model=Spec):
    data = load_yaml(text, "s.yaml")
    try:
        model.model_validate(data)
    except ValidationError as exc:
        return [(p.line, p.col, p.message) for p in validation_problems(exc, data, Path("s.yaml"), model)]
    return []


def test_an_unknown_key_names_the_nearest_field():
    assert problems(GOOD + "titel: T\n") == [(5, 1, "unknown key 'titel'; did you mean 'title'?")]


def test_a_typo_of_a_missing_required_field_is_one_problem():
    assert problems(GOOD.replace("description:", "descripton:")) == [
        (1, 1, "unknown key 'descripton'; did you mean 'description'?")
    ]


def test_a_nested_value_is_named_by_its_path_and_a_choice_lists_the_choices():
    text = GOOD + "parameters:\n  n: {type: integr, description: n}\n"
    ((line, col, message),) = problems(text)
    assert (line, col) == (6, 7)  # at its key
    assert (
        message
        == "parameters.n.type: 'integr' is not one of string, integer, number, boolean, date, datetime, array; did you mean 'integer'?"
    )


def test_a_missing_field_and_the_config_model():
    assert problems("sql: SELECT 1\nsources: [https://x.org/]\ncontent: c\n") == [
        (1, 1, "missing required field 'description'")
    ]
    assert problems("connections:\n  default: {duckdb: ':memory:', thread: 2}\n", ProjectConfig) == [
        (2, 33, "unknown key 'thread' in connections.default; did you mean 'threads'?")
    ]


DUCKDB = "default: {duckdb: ':memory:'}"


@pytest.mark.parametrize(
    ("text", "got"),
    [
        (
            f"connections: {{{DUCKDB}}}\ndefaults: {{max_rows: lots}}",
            'max_rows: Input should be a valid integer, got "lots"',
        ),
        (
            f"connections: {{{DUCKDB}}}\ndefaults: {{max_rows: [1, 2]}}",
            "max_rows: Input should be a valid integer, got [1, 2]",
        ),
        (
            f"connections: {{{DUCKDB}}}\ndefaults: {{max_rows: -5}}",
            "max_rows: Input should be greater than or equal to 1, got -5",
        ),
        (f"connections: {{{DUCKDB}}}\ndefaults: {{max_rows: {'x' * 100}}}", 'valid integer, got "' + "x" * 36 + "..."),
        # a key named like a secret shows no value, nor does a URL its password
        (f"connections: {{{DUCKDB}, db: {{url: 'postgresql://u@h/x', password: [hunter2]}}}}", "a valid string"),
        (f"connections: {{{DUCKDB}, db: {{url: ['postgresql://u:hunter2@h/x']}}}}", 'got ["postgresql://u:***@h/x"]'),
        (
            f"connections: {{{DUCKDB}}}\ncursors: {{secret_env: [hunter2]}}",
            "secret_env: Input should be a valid string",
        ),
    ],
)
def test_a_value_of_the_wrong_type_is_shown_cut_and_never_a_secret(text, got):
    found = problems(text + "\n", ProjectConfig)
    assert [m for _, _, m in found if "hunter2" in m or m.endswith(got)] == [found[0][2]], found


def test_fields_at_a_location_and_the_typos_behind_missing_fields():
    assert {"type", "description", "default", "enum"} <= set(fields_at(Spec, ("parameters", "n")))
    assert "url" in fields_at(ProjectConfig, ("connections", "warehouse"))
    try:
        Spec.model_validate({"descripton": "d", "sql": "x", "sources": [], "content": "c"})
    except ValidationError as exc:
        assert typos(exc.errors(), Spec) == {("descripton",): ("description",)}


def test_a_file_that_is_not_utf8_is_one_problem_at_its_first_bad_byte():
    raw = "description: caf\u00e9".encode("latin-1")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        problem = not_utf8(Path("s.yaml"), exc)
    assert (problem.line, problem.col, problem.message) == (1, 17, "the file is not UTF-8 text (byte 0xe9)")


ONE_SPEC = 'description: Two.\nsql: SELECT 2 AS n\nsources: ["https://example.org/"]\ncontent: "{{ rows[0].n }}"\n'
BROKEN = {
    "too large": (b"# " + b"x" * MAX_FILE_BYTES + b"\n", ": the file is larger than 1024 KiB"),
    "not UTF-8": (b"description: caf\xe9\n", ":1:17: the file is not UTF-8 text (byte 0xe9)"),
}


@pytest.mark.parametrize("kind", ["spec", "prompt"])
@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_specs_and_prompts_are_read_alike(tmp_path, kind, broken):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "two.yaml").write_text(ONE_SPEC)
    name = "bad.yaml" if kind == "spec" else "bad.prompt.yaml"
    content, message = BROKEN[broken]
    (specs / name).write_bytes(content)
    problems = [str(p) for p in load_project(specs).problems]
    assert problems == [f"{specs / name}{message}"]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("bad.yaml", "a spec must be a YAML mapping of fields (name, description, sql, ...)"),
        ("bad.prompt.yaml", "a prompt must be a YAML mapping (description, arguments, template)"),
    ],
)
def test_a_file_that_is_not_a_mapping_says_what_it_must_be(tmp_path, name, message):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "two.yaml").write_text(ONE_SPEC)
    (specs / name).write_text("- one\n- two\n")
    assert [str(p) for p in load_project(specs).problems] == [f"{specs / name}:1:1: {message}"]


@pytest.mark.parametrize(
    ("text", "model", "expected"),
    [  # a shorthand value, and a key left empty because what belongs to it lost its indentation
        (
            GOOD + "parameters:\n  region: string\n",
            Spec,
            (6, 3, "parameters.region: expected its keys (type, description, "),
        ),
        (GOOD + "parameters:\n  region:\n", Spec, (6, 3, "parameters.region: expected its keys (type, description, ")),
        (
            "connections:\n  default:\n  duckdb: ':memory:'\n",
            ProjectConfig,
            (2, 3, "connections.default: expected its keys ("),
        ),
    ],
)
def test_a_value_that_should_be_a_mapping_says_so_without_pydantic_class_names(text, model, expected):
    found = problems(text, model)
    line, col, start = expected
    assert any((at, c) == (line, col) and m.startswith(start) for at, c, m in found), found
    assert not any("instance of" in m or "Input should be" in m for *_, m in found), found
    assert any(m.endswith(("got 'string'", "got nothing")) for *_, m in found), found
