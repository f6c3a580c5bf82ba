"""Paged SQL at load time: the query of one page, and what the outermost query limits and orders."""

import pytest

from mcpgen.spec.models import Parameter
from mcpgen.sql.pages import LIMIT, OFFSET, limits_rows, orders_rows, paged_sql, row_bound


def test_a_page_appends_limit_and_offset_to_the_query_itself():
    assert (
        paged_sql("SELECT a FROM t ORDER BY a ;  \n") == f"SELECT a FROM t ORDER BY a\nLIMIT :{LIMIT} OFFSET :{OFFSET}"
    )


@pytest.mark.parametrize(
    ("sql", "limited", "ordered"),
    [
        ("SELECT a FROM t ORDER BY a", False, True),
        ("SELECT a FROM t ORDER BY a LIMIT 5", True, True),
        ("SELECT a FROM t ORDER BY a OFFSET 5", True, True),
        ("SELECT a FROM t ORDER BY a FETCH FIRST 5 ROWS ONLY", True, True),
        ("SELECT a FROM (SELECT a FROM t ORDER BY a LIMIT 5) s", False, False),
        ("WITH x AS (SELECT a FROM t LIMIT 3) SELECT a FROM x ORDER BY a", False, True),
        ("SELECT a, row_number() OVER (ORDER BY a) FROM t", False, False),
        ("SELECT 'ORDER BY' AS words FROM t", False, False),
        ("not sql at all (((", False, False),  # unreadable: the read-only check reports it
    ],
)
def test_only_the_outermost_query_counts(sql, limited, ordered):
    assert (limits_rows(sql, "duckdb"), orders_rows(sql, "duckdb")) == (limited, ordered)


def test_row_bound_takes_the_outermost_limit_when_it_is_known():
    n = Parameter(type="integer", description="n", maximum=50)
    free = Parameter(type="integer", description="n")
    params = {"n": n, "free": free}
    assert row_bound("SELECT a FROM t LIMIT 20", "duckdb", params, 1000) == 20
    assert row_bound("SELECT a FROM t LIMIT 5000", "duckdb", params, 1000) == 1000
    assert row_bound("SELECT a FROM t LIMIT :n", "duckdb", params, 1000) == 50
    assert row_bound("SELECT a FROM t LIMIT :free", "duckdb", params, 1000) == 1000
    assert row_bound("SELECT a FROM (SELECT a FROM t LIMIT 3) s", "duckdb", params, 1000) == 1000
