"""Paged SQL at load time: the query of one page, and what the outermost query limits and orders."""

import pytest

from mcpgen.spec.models import Parameter
from mcpgen.sql.pages import limits_rows, orders_rows, row_bound


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


# --- the pages' SQL: the order made total, keys the query does not select, the seek past a cursor ---

import duckdb  # noqa: E402

from mcpgen.sql.pages import AFTER, PagingError, plan_pages  # noqa: E402

ROWS = "SELECT * FROM (VALUES (1, 'a', 2), (2, 'b', NULL), (3, NULL, 2), (4, 'a', NULL), (5, 'b', 1)) t(id, s, v)"


def _plan(sql: str, dialect: str = "duckdb"):
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t AS {ROWS}")
    relation = con.sql(sql)
    plan = plan_pages(sql, dialect, list(zip(relation.columns, map(str, relation.types))))
    core = con.sql(plan.core)
    plan.choose([str(t) for t in core.types], dialect)
    return con, plan


@pytest.mark.parametrize(
    ("sql", "order"),
    [
        ("SELECT s, v FROM t ORDER BY v", 'mcpgen_page."v", mcpgen_page."s" COLLATE "binary"'),
        (
            "SELECT s, v FROM t ORDER BY 2 DESC NULLS FIRST",
            'mcpgen_page."v" DESC NULLS FIRST, mcpgen_page."s" COLLATE "binary"',
        ),
        (  # text is tied by its bytes too: a collation (NOCASE) may find 'a' and 'A' equal
            "SELECT s AS label, v FROM t ORDER BY LABEL",
            'mcpgen_page."label", mcpgen_page."label" COLLATE "binary", mcpgen_page."v"',
        ),
        ("SELECT s, v FROM t ORDER BY ALL", 'mcpgen_page."s", mcpgen_page."v", mcpgen_page."s" COLLATE "binary"'),
        ("SELECT s FROM t ORDER BY id DESC", 'mcpgen_page.mcpgen_page_key_0 DESC, mcpgen_page."s" COLLATE "binary"'),
        ("SELECT s FROM t ORDER BY lower(s)", 'LOWER(mcpgen_page."s"), mcpgen_page."s" COLLATE "binary"'),
        (
            "SELECT s, count(*) AS n FROM t GROUP BY s ORDER BY count(*)",
            'mcpgen_page.mcpgen_page_key_0, mcpgen_page."s" COLLATE "binary", mcpgen_page."n"',
        ),
        (  # the select list ends in a comment: the keys mcpgen selects go on lines of their own
            "SELECT s -- the label\nFROM t ORDER BY v DESC, id",
            'mcpgen_page.mcpgen_page_key_0 DESC, mcpgen_page.mcpgen_page_key_1, mcpgen_page."s" COLLATE "binary"',
        ),
        (  # a result column named as a column of the table it is not: in an expression, the name is the table's
            "SELECT v AS id, s FROM t ORDER BY id + 0",
            'mcpgen_page.mcpgen_page_key_0, mcpgen_page."id", mcpgen_page."s" COLLATE "binary"',
        ),
        (  # only the outermost ORDER BY and LIMIT count; a trailing semicolon is no key
            "WITH u AS (SELECT * FROM t ORDER BY id LIMIT 4) SELECT s FROM u ORDER BY id;",
            'mcpgen_page.mcpgen_page_key_0, mcpgen_page."s" COLLATE "binary"',
        ),
    ],
)
def test_the_order_is_the_query_s_own_then_every_result_column(sql, order):
    con, plan = _plan(sql)
    assert plan.order == order and plan.keyset
    whole = con.execute(sql).fetchall()
    first = con.execute(plan.first().replace(":mcpgen_page_limit", "100")).fetchall()
    assert sorted(map(repr, (r[: plan.width] for r in first))) == sorted(map(repr, whole))


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT DISTINCT s FROM t ORDER BY id", "of a SELECT DISTINCT must be one of its result columns"),
        ("SELECT s FROM t UNION SELECT s FROM t ORDER BY t.id", "of a UNION, INTERSECT or EXCEPT must name"),
        ("SELECT s FROM t", "has no ORDER BY"),
    ],
)
def test_an_order_that_cannot_be_made_total_is_refused(sql, message):
    with pytest.raises(PagingError, match=message):
        plan_pages(sql, "duckdb", [("s", "VARCHAR")])


@pytest.mark.parametrize(
    "order", ["v", "v DESC", "v NULLS FIRST", "v DESC NULLS FIRST", "s DESC, v", "v, s NULLS FIRST"]
)
def test_the_seek_gives_exactly_the_rows_after_each_row_nulls_wherever_the_order_puts_them(order):
    sql = f"SELECT id, s, v FROM t ORDER BY {order}"
    con, plan = _plan(sql)
    ordered = con.execute(plan.first().replace(":mcpgen_page_limit", "100")).fetchall()
    for n, last in enumerate(ordered):
        key = tuple(last[k.index] for k in plan.keys)
        nulls = tuple(v is None for v in key)
        params = {f"{AFTER}{i}": v for i, v in enumerate(key) if v is not None}
        text = plan.after(nulls).replace(":mcpgen_page_limit", "100")
        for name in params:
            text = text.replace(f":{name}", f"${name}")
        assert con.execute(text, params).fetchall() == ordered[n + 1 :], (order, last)


def test_a_page_that_ends_among_copies_gives_the_copies_left_then_the_rows_after_them():
    """Rows equal on every key are identical: the next page counts off the copies given among those copies
    alone, so when some of them have gone since, it gives the rows after them, skipping none."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (1, 'a'), (2, 'b'), (2, 'b'), (2, 'b'), (3, 'c')) v(g, s)")
    sql = "SELECT g, s FROM t ORDER BY g"
    plan = plan_pages(sql, "duckdb", [("g", "INTEGER"), ("s", "VARCHAR")])
    plan.choose([str(t) for t in con.sql(plan.core).types], "duckdb")
    assert plan.keyset and len(plan.keys) == 2  # g, then s by its bytes: s's own value, not selected again
    assert plan.keys[1].index == 1 and plan.core.startswith("SELECT mcpgen_page.* FROM")
    text = plan.after((False, False), copies=True).replace(":mcpgen_page_limit", "10")
    params = {f"{AFTER}0": 2, f"{AFTER}1": "b"}
    for name in params:
        text = text.replace(f":{name}", f"${name}")

    def rows(given: int) -> list[tuple]:
        return [r[:2] for r in con.execute(text.replace(":mcpgen_page_offset", str(given)), params).fetchall()]

    assert rows(1) == [(2, "b"), (2, "b"), (3, "c")]
    assert rows(3) == [(3, "c")]
    con.execute("DELETE FROM t WHERE g = 2")  # every copy gone, as the last row given was: nothing skipped
    assert rows(2) == [(3, "c")]


def test_four_byte_floats_bind_back_exactly_or_page_by_offset():
    """PostgreSQL's driver reads a `real` as the shortest decimal naming it (0.1, not the float 0.100000001):
    bound as text and cast back to REAL it is the stored value. MariaDB's reads six digits: OFFSET."""
    plan = plan_pages("SELECT a FROM t ORDER BY a", "postgres", [("a", "real")])
    plan.choose(["real"], "postgres")
    assert plan.kinds == ("string",) and plan.values == ("CAST(:mcpgen_page_after_0 AS REAL)",)
    plan = plan_pages("SELECT a FROM t ORDER BY a", "mysql", [("a", "float")])
    plan.choose(["float"], "mysql")
    assert not plan.keyset and "its sort key a is float" in plan.reason
    for dialect, type_ in [("duckdb", "FLOAT"), ("spark", "float"), ("mysql", "double")]:
        plan = plan_pages("SELECT a FROM t ORDER BY a", dialect, [("a", type_)])
        plan.choose([type_], dialect)
        assert plan.keyset and plan.kinds == ("number",), dialect


def test_postgres_decimals_seek_by_their_text_and_unknown_dialects_use_offset():
    plan = plan_pages("SELECT a FROM t ORDER BY a", "postgres", [("a", "numeric")])
    plan.choose(["numeric"], "postgres")
    assert plan.keyset and plan.kinds == ("string",) and "CAST(:mcpgen_page_after_0 AS NUMERIC)" in plan.after((False,))
    plan = plan_pages("SELECT a FROM t ORDER BY a", "mysql", [("a", "newdecimal")])
    plan.choose(["newdecimal"], "mysql")
    assert not plan.keyset and "its sort key a is newdecimal" in plan.reason
    plan = plan_pages("SELECT a FROM t ORDER BY a", None, [("a", "INTEGER")])
    plan.choose(["INTEGER"], None)
    assert not plan.keyset and "dialect is unknown" in plan.reason


def test_mysql_ties_text_by_its_bytes_and_postgres_orders_json_by_its_text():
    plan = plan_pages("SELECT name FROM t ORDER BY name", "mysql", [("name", "var_string")])
    assert plan.order == "mcpgen_page.`name`, CAST(mcpgen_page.`name` AS BINARY)"
    plan = plan_pages("SELECT id, doc FROM t ORDER BY id", "postgres", [("id", "bigint"), ("doc", "json")])
    assert plan.order == 'mcpgen_page."id", CAST(mcpgen_page."doc" AS TEXT)'


@pytest.mark.parametrize(("order", "required"), [("id % 2, id", {0, 1}), ("id DESC, s", {0}), ("s, id", {1})])
def test_keys_that_hold_no_null_seek_as_one_row_comparison(order, required):
    con, plan = _plan(f"SELECT id, s, v FROM t ORDER BY {order}")
    plan.required = frozenset(required)
    ordered = con.execute(plan.first().replace(":mcpgen_page_limit", "100")).fetchall()
    for n, last in enumerate(ordered):
        key = tuple(last[k.index] for k in plan.keys)
        params = {f"{AFTER}{i}": v for i, v in enumerate(key) if v is not None}
        text = plan.after(tuple(v is None for v in key))
        if 0 in required:
            assert " <> " in text
        text = text.replace(":mcpgen_page_limit", "100")
        for name in params:
            text = text.replace(f":{name}", f"${name}")
        assert con.execute(text, params).fetchall() == ordered[n + 1 :], (order, last)


@pytest.mark.parametrize("type_", ["HUGEINT", "UHUGEINT", "UBIGINT"])
def test_integers_past_64_bits_seek_by_their_text(type_):
    """DuckDB's sum of BIGINTs is a HUGEINT: a key past a 64-bit parameter is bound as its text, cast back."""
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t AS SELECT i::{type_} * 3000000000000000000 + i % 2 AS x FROM range(6) r(i)")
    sql = "SELECT x FROM t ORDER BY x DESC"
    plan = plan_pages(sql, "duckdb", [("x", type_)])
    plan.choose([type_], "duckdb")
    assert plan.keyset and plan.kinds == ("string",) and plan.values == (f"CAST(:{AFTER}0 AS {type_})",)
    ordered = con.execute(plan.first().replace(":mcpgen_page_limit", "100")).fetchall()
    assert ordered[0][0] > 2**63
    for n, (last,) in enumerate(ordered):
        text = plan.after((False,)).replace(":mcpgen_page_limit", "100").replace(f":{AFTER}0", f"${AFTER}0")
        assert con.execute(text, {f"{AFTER}0": str(last)}).fetchall() == ordered[n + 1 :]
