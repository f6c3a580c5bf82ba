"""JSON Schema of spec files and mcpgen.yaml: generated from the loader's models, valid, in sync with docs/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from mcpgen.cli import main
from mcpgen.spec.schema import config_schema, dumps, spec_schema
from mcpgen.spec.yamlload import load_yaml

REPO = Path(__file__).resolve().parents[2]
SHIPPED = sorted((REPO / "specs").glob("*.yaml"))
BROKEN = Path(__file__).resolve().parents[1] / "broken"


def _load(path: Path):
    return load_yaml(path.read_text(encoding="utf-8"), str(path))


@pytest.fixture(scope="module")
def spec_validator():
    schema = spec_schema()
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def test_both_schemas_are_valid_draft_2020_12():
    for schema in (spec_schema(), config_schema()):
        Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_every_shipped_spec_validates_against_the_schema(spec_validator, path):
    errors = [e.message for e in spec_validator.iter_errors(_load(path))]
    assert errors == []


def test_the_shipped_project_file_validates_against_the_config_schema():
    validator = Draft202012Validator(config_schema())
    for path in [REPO / "mcpgen.yaml", BROKEN / "mcpgen.yaml"]:
        assert [e.message for e in validator.iter_errors(_load(path))] == [], path


@pytest.mark.parametrize(
    "case",
    [
        "unknown_key",
        "missing_description",
        "chart_unknown_type",
        "sql_and_sql_file",
        "param_bad_name",
        "param_reserved_name",
        "invalid_tool_name",
        "bad_timeout",
    ],
)
def test_schema_catches_what_editors_can_see(spec_validator, case):
    assert list(spec_validator.iter_errors(_load(BROKEN / case / "spec.yaml")))


def test_config_schema_catches_an_unknown_key():
    validator = Draft202012Validator(config_schema())
    assert list(validator.iter_errors(_load(BROKEN / "config_unknown_key" / "mcpgen.yaml")))


def test_docs_copies_are_up_to_date():
    """docs/*.schema.json are what `mcpgen schema` prints; regenerate with `python -m mcpgen.spec.schema`."""
    assert (REPO / "docs" / "spec.schema.json").read_text(encoding="utf-8") == dumps(spec_schema())
    assert (REPO / "docs" / "config.schema.json").read_text(encoding="utf-8") == dumps(config_schema())


def test_cli_prints_the_schemas():
    runner = CliRunner()
    assert json.loads(runner.invoke(main, ["schema"]).output) == spec_schema()
    assert json.loads(runner.invoke(main, ["schema", "--config"]).output) == config_schema()
