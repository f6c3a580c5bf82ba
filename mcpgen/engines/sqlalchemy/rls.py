"""PostgreSQL row-level security: the caller's claims as transaction-local settings.

A connection with `claim_settings: {app.email: email}` runs each call as

    BEGIN READ ONLY;
    SELECT set_config('app.email', '<the caller's email claim>', true);  -- local to this transaction
    <the query>;
    ROLLBACK;

so a policy such as `USING (email = current_setting('app.email', true))` picks the caller's
rows, and nothing of the caller stays on the pooled connection. A caller without a named
claim is refused before any connection is taken (`claim_settings`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import sqlalchemy as sa

from ...identity import Caller, current


def with_claim_settings(conn, settings: list[tuple[str, str]], run):
    """Row-level security hook: `run()` after the caller's claims are set as transaction-local
    settings (`set_config(name, value, true)`) in the call's own read-only transaction, which the
    engine opens and rolls back (`Backend.begin` / `Backend.end`), so they end with it."""
    for name, value in settings:
        conn.execute(sa.text("SELECT set_config(:name, :value, true)"), {"name": name, "value": value})
    return run()


def claim_settings(settings: Mapping[str, str], caller: Caller | None = None) -> list[tuple[str, str]]:
    """(setting, value) pairs for `claim_settings: {app.email: email}`; a missing claim refuses the call.

    >>> bob = Caller(claims={"email": "bob@example.com", "groups": ["x", "y"]})
    >>> claim_settings({"app.email": "email", "app.groups": "groups"}, bob)
    [('app.email', 'bob@example.com'), ('app.groups', '["x", "y"]')]
    """
    caller = current() if caller is None else caller
    out = []
    for setting, claim in settings.items():
        value = caller.claim(claim)
        out.append((setting, value if isinstance(value, str) else json.dumps(value)))
    return out
