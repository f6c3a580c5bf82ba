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
