import pytest

from mcpgen.errors import UnsafeSQL
from mcpgen.sql.statements import check_read_only, find_placeholders, rewrite


def test_placeholders_skip_casts_strings_and_comments():
    sql = "SELECT a::int, ':x', $$:z$$ FROM t -- :y\nWHERE b = :b /* :q */ AND c IN :ids AND d = :b"
    found = find_placeholders(sql, "postgres")
    assert [(p.name, p.line, p.after_in) for p in found] == [("b", 2, False), ("ids", 2, True), ("b", 2, False)]


def test_rewrite_for_duckdb_turns_arrays_into_a_subquery():
    assert (
        rewrite("SELECT * FROM t WHERE a IN :ids AND n < :n::int", "$")
        == "SELECT * FROM t WHERE a IN (SELECT unnest($ids)) AND n < $n::int"
    )


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1",
        "WITH x AS (SELECT 1 AS a) SELECT a FROM x",
        "VALUES (1), (2)",
        "TABLE cities",
        "FROM cities SELECT name",
        "SELECT 'a;b' -- ; DROP\n",
    ],
)
def test_reads_are_accepted(sql):
    assert check_read_only(sql) is None  # raises UnsafeSQL otherwise


@pytest.mark.parametrize(
    "sql, words",
    [
        ("SELECT 1; DROP TABLE t", "exactly one statement, found 2"),
        ("DROP TABLE t; SELECT 1", "exactly one statement, found 2"),
        ("WITH gone AS (DELETE FROM t RETURNING *) SELECT count(*) FROM gone", "DELETE"),
        ("SELECT * INTO copy FROM t", "SELECT ... INTO"),
        ("INSERT INTO t VALUES (1)", "INSERT"),
        ("UPDATE t SET a = 1", "UPDATE"),
        ("CREATE TEMP TABLE x AS SELECT 1", "CREATE"),
        ("COPY t TO 'x.csv'", "COPY"),
        ("ATTACH 'x.db'", "ATTACH"),
        ("INSTALL httpfs", "INSTALL"),
        ("LOAD httpfs", "LOAD"),
        ("PRAGMA version", "PRAGMA"),
        ("SET enable_external_access = true", "SET"),
        ("RESET lock_configuration", "RESET"),
        ("CALL f()", "CALL"),
        ("EXPORT DATABASE 'x'", "EXPORT"),
        ("SELECT * FROM t FOR UPDATE", "FOR UPDATE"),
    ],
)
def test_writes_and_stacked_statements_are_rejected(sql, words):
    with pytest.raises(UnsafeSQL) as info:
        check_read_only(sql)
    assert words in str(info.value)
