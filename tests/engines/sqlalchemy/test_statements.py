"""The SQL as SQLAlchemy's text() takes it, and the types values bind as."""

import datetime as dt
from decimal import Decimal

import pytest
import sqlalchemy as sa

from mcpgen.engines.sqlalchemy.statements import (
    Statement,
    bindparam,
    empty_lists_as_arrays,
    sa_text,
    strip_semicolon,
    type_key,
)
from mcpgen.sql.statements import find_placeholders


def text_of(sql, dialect=None):
    return sa_text(sql, find_placeholders(sql, dialect))


@pytest.mark.parametrize(
    ("sql", "shown"),
    [
        ("SELECT :n", "SELECT :n"),
        ("SELECT ':x' AS s WHERE n = :n", "SELECT '\\:x' AS s WHERE n = :n"),
        ("SELECT 1 -- :y\n", "SELECT 1 -- \\:y\n"),
        ("SELECT :d::date", "SELECT :d ::date"),  # a cast right after a placeholder
        ("SELECT a FROM t WHERE a IN:ids", "SELECT a FROM t WHERE a IN :ids"),
    ],
)
def test_text_escapes_every_colon_that_is_not_a_parameter(sql, shown):
    assert text_of(sql, "postgres") == shown
    assert sa.text(text_of(sql, "postgres")).compile().params.keys() == {
        p.name for p in find_placeholders(sql, "postgres")
    }


def test_an_empty_in_list_becomes_an_empty_postgresql_array():
    sql = "SELECT a FROM t WHERE a IN :ids AND b NOT IN :bs AND c = :c"
    statement = Statement(
        text=text_of(sql),
        lists=frozenset({"ids", "bs"}),
        types=(),
        source=sql,
        placeholders=find_placeholders(sql, None),
    )
    assert (
        empty_lists_as_arrays(statement, {"ids", "bs"})
        == "SELECT a FROM t WHERE a  = ANY('{}') AND b  <> ALL('{}') AND c = :c"
    )
    assert (
        empty_lists_as_arrays(statement, {"ids"}) == "SELECT a FROM t WHERE a  = ANY('{}') AND b NOT IN :bs AND c = :c"
    )


def test_strip_semicolon_only_at_the_end_of_the_statement():
    assert strip_semicolon("SELECT 1 ;  ", "postgres") == "SELECT 1"
    assert strip_semicolon("SELECT ';' AS s", "postgres") == "SELECT ';' AS s"


@pytest.mark.parametrize(
    ("value", "declared", "is_list", "key"),
    [
        (3, {}, False, "integer"),
        (True, {}, False, "boolean"),
        (Decimal("1.5"), {}, False, "number"),
        (dt.date(2024, 1, 1), {}, False, "date"),
        (dt.datetime(2024, 1, 1), {}, False, "datetime"),
        (dt.datetime(2024, 1, 1, tzinfo=dt.UTC), {}, False, "datetimetz"),
        ("x", {}, False, "string"),
        (None, {}, False, "null"),
        ([None, 2], {}, True, "integer"),
        ([], {}, True, "null"),
        (None, {"v": "number"}, False, "null"),  # psycopg renders no cast for a float NULL
        (3, {"v": "number"}, False, "number"),
        ([dt.datetime(2024, 1, 1, tzinfo=dt.UTC)], {"v": "datetime[]"}, True, "datetimetz"),
    ],
)
def test_type_key(value, declared, is_list, key):
    assert type_key("v", value, declared, is_list) == key


def test_bind_parameters_by_type():
    assert isinstance(bindparam("n", "integer", False).type, sa.BigInteger)
    assert bindparam("ids", "string", True).expanding
    untyped = bindparam("x", "null", False)
    assert untyped.literal_execute and not untyped.expanding


def test_a_statement_is_hashed_once_and_pickled_without_its_hash():
    """Engines look a statement up on every call, so its hash is kept; a pickled statement (the
    project's cache of described queries) leaves it out, since strings hash differently in the
    next process, and it stays equal to the statement it was."""
    import pickle

    sql = "SELECT * FROM t WHERE a = :a AND b IN :bs"
    placeholders = find_placeholders(sql, None)
    statement = Statement(sa_text(sql, placeholders), frozenset({"bs"}), (("a", "integer"),), sql, placeholders)
    assert {statement: 1}[
        Statement(
            **{f: getattr(statement, f) for f in ("text", "lists", "types")}, source=sql, placeholders=placeholders
        )
    ] == 1
    loaded = pickle.loads(pickle.dumps(statement))
    assert "_hash" not in vars(loaded) and loaded == statement and hash(loaded) == hash(statement)
