"""create_engine: the engine for a connection's kind, each driver imported only when used."""

import subprocess
import sys

from mcpgen.engines.duckdb import DuckDBEngine
from mcpgen.engines.factory import create_engine
from mcpgen.engines.sqlalchemy.engine import SQLAlchemyEngine
from mcpgen.spec.config import DuckDBConnection, URLConnection


def test_each_connection_kind_gets_its_engine(tmp_path):
    duck = create_engine("default", DuckDBConnection(duckdb=":memory:", threads=1), tmp_path)
    lite = create_engine("local", URLConnection(url="sqlite://"), tmp_path)
    try:
        assert isinstance(duck, DuckDBEngine) and duck.dialect == "duckdb"
        assert isinstance(lite, SQLAlchemyEngine) and lite.name == "local"
        assert duck.run(duck.prepare("SELECT 41 + :n AS x", {"n": "integer"}), {"n": 1}, 10, 5).rows == [(42,)]
        assert lite.run(lite.prepare("SELECT 41 + :n AS x", {"n": "integer"}), {"n": 1}, 10, 5).rows == [(42,)]
    finally:
        duck.close()
        lite.close()


def test_a_duckdb_project_never_imports_sqlalchemy_or_pyspark():
    code = (
        "import sys\nfrom mcpgen.engines.factory import create_engine\nfrom mcpgen.spec.config import DuckDBConnection\n"
        "create_engine('default', DuckDBConnection(), '.').close()\n"
        "print(sorted(m for m in ('sqlalchemy', 'pyspark') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


def test_an_invalid_spark_url_is_said_at_its_place_before_connecting(tmp_path, monkeypatch):
    """The URL is read when the engine is made, without a cluster: validate --live and call say where it is,
    and not the URL itself (it may hold a token)."""
    import pytest
    from click.testing import CliRunner

    from mcpgen.cli import main

    pytest.importorskip("pyspark")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mcpgen.yaml").write_text("connections:\n  default:\n    spark: http://127.0.0.1:1/;token=s3cret\n")
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "one.yaml").write_text(
        "description: d\nsources: [https://example.org/]\ncontent: '{{ row_count }}'\nsql: SELECT 1 AS one\n"
    )
    for command in (["validate", "--live", "--timeout", "60", "specs"], ["call", "one", "--specs", "specs"]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code != 0
        said = result.output.replace("error: ", "")  # validate says the severity, call does not
        assert "mcpgen.yaml:3:5: connection 'default': spark: the Spark Connect URL is not valid" in said
        assert "s3cret" not in result.output and "Traceback" not in result.output
