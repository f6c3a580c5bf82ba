import pytest
from pydantic import ValidationError

from mcpgen.spec.config import DuckDBConnection, ProjectConfig, URLConnection, expand_env


def test_env_expansion():
    env = {"HOST": "db", "EMPTY": ""}
    assert expand_env("pg://u@${HOST}/x", env) == "pg://u@db/x"
    assert expand_env("${MISSING:-fallback}", env) == "fallback"
    assert expand_env("${EMPTY:-fallback}", env) == ""
    with pytest.raises(ValueError, match="MISSING is not set"):
        expand_env("${MISSING}", env)


def test_without_a_file_the_default_is_one_embedded_duckdb():
    config = ProjectConfig()
    assert list(config.connections) == ["default"]
    assert config.connections["default"] == DuckDBConnection(duckdb=":memory:")
    assert (config.defaults.max_rows, config.defaults.timeout) == (1000, 30.0)


def test_a_connection_is_a_url_or_a_duckdb_and_errors_name_its_fields():
    config = ProjectConfig.model_validate(
        {
            "connections": {
                "w": {"url": "postgresql://u@h/db", "password": "${PW}", "pool_timeout": "2s"},
                "d": {"duckdb": "x.duckdb", "init": ["SELECT 1"]},
            }
        }
    )
    assert isinstance(config.connections["w"], URLConnection) and config.connections["w"].pool_timeout == 2.0
    assert isinstance(config.connections["d"], DuckDBConnection)
    with pytest.raises(ValidationError) as info:
        ProjectConfig.model_validate({"connections": {"w": {"url": "x", "passwrd": "oops"}}})
    assert [e["loc"][-1] for e in info.value.errors()] == ["passwrd"]


@pytest.mark.parametrize(
    "model",
    [
        "config.DuckDBConnection",
        "config.Defaults",
        "config.HTTPSettings",
        "config.CursorSettings",
        "models.Annotations",
        "models.DownloadSettings",
    ],
)
def test_a_default_built_without_validation_equals_one_validated(model):
    """Defaults are made with model_construct (no validator built at import): each must be what validation
    would give, or a default that a validator rewrites would reach users unchecked."""
    import importlib

    module, name = model.split(".")
    cls = getattr(importlib.import_module(f"mcpgen.spec.{module}"), name)
    assert cls.model_construct().model_dump() == cls().model_dump()
