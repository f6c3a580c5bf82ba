"""PostgreSQL row-level security: the caller's claims as transaction-local settings.

A connection with `claim_settings: {app.email: email}` runs each call as

    BEGIN READ ONLY;
    SET LOCAL statement_timeout = <ms>;
    SELECT set_config('app.email', <the caller's email claim, bound by the server>, true);
    <the query>;
    ROLLBACK;

(the first four in one pipeline, see `PostgreSQL.begin`), so a policy such as
`USING (email = current_setting('app.email', true))` picks the caller's rows, and nothing of the
caller stays on the pooled connection. A caller without a named claim is refused before any
connection is taken (`claim_settings`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ...identity import Caller, current


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
