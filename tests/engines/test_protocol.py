"""The Engine protocol: every engine implements it, and its result types hold what the call log reads."""

import inspect

from mcpgen.engines.duckdb import DuckDBEngine
from mcpgen.engines.protocol import Engine, Prepared, QueryResult
from mcpgen.engines.spark import SparkEngine
from mcpgen.engines.sqlalchemy.engine import SQLAlchemyEngine


def test_every_engine_has_the_protocols_methods_with_its_parameters():
    for engine in (DuckDBEngine, SQLAlchemyEngine, SparkEngine):
        for name in ("prepare", "run", "describe", "close"):
            wanted = list(inspect.signature(getattr(Engine, name)).parameters)
            got = list(inspect.signature(getattr(engine, name)).parameters)
            assert got[: len(wanted)] == wanted, (engine.__name__, name)


def test_result_and_prepared_statement():
    result = QueryResult(columns=["a"], rows=[(1,), (2,)], truncated=True)
    assert (result.seconds, result.truncated, len(result.rows)) == (0.0, True, 2)
    prepared = Prepared(sql="SELECT ?", names=frozenset({"n"}))
    assert prepared == Prepared(sql="SELECT ?", names=frozenset({"n"})) and hash(prepared)
