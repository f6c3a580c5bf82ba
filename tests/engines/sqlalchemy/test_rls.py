"""PostgreSQL row-level security: the caller's claims as transaction-local settings, on the engine itself."""

from __future__ import annotations

import pytest
from callers import as_token
from mcp.server.auth.middleware.auth_context import auth_context_var

from mcpgen.errors import ArgumentError


def test_claim_settings_are_transaction_local_and_keep_the_timeout(rls_table):
    import services
    from sqlalchemy.engine import make_url

    from mcpgen.engines.sqlalchemy.engine import SQLAlchemyEngine
    from mcpgen.spec.config import URLConnection

    table, role = rls_table
    url = make_url(services.POSTGRES_URL).set(username=role).render_as_string(hide_password=False)
    engine = SQLAlchemyEngine(
        "pg", URLConnection(url=url, pool_size=1, max_overflow=0, claim_settings={"app.email": "email"})
    )
    try:
        query = engine.prepare(f"SELECT id, current_setting('statement_timeout') AS limit_ FROM {table} ORDER BY id")
        seen = {}
        for email in ("alice@example.com", "bob@example.com", "alice@example.com"):
            token = as_token([], {"email": email})
            try:
                seen[email] = engine.run(query, {}, max_rows=10, timeout=7).rows
            finally:
                auth_context_var.reset(token)
        assert [r[0] for r in seen["alice@example.com"]] == [1, 2]
        assert [r[0] for r in seen["bob@example.com"]] == [3]
        assert {r[1] for rows in seen.values() for r in rows} == {"7s"}  # the ROLLBACK did not undo the timeout
        con = engine._connect()  # the same pooled connection, held between calls: nothing of the caller is left
        try:
            assert con.exec_driver_sql("SELECT current_setting('app.email', true)").scalar() in ("", None)
            assert con.exec_driver_sql(f"SELECT count(*) FROM {table}").scalar() == 0
        finally:
            engine._hold.give(con)
        with pytest.raises(ArgumentError, match="'email' claim"):  # no claim: refused before any query
            engine.run(query, {}, max_rows=10, timeout=7)
    finally:
        engine.close()
