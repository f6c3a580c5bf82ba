"""Who is calling: the verified claims and scopes behind one tool call.

Over HTTP the caller is the access token the SDK's bearer middleware verified (see
mcpgen.http.auth); over stdio it is the one local user, whose claims come from mcpgen.yaml's
`stdio_claims`. Claim-bound parameters, per-tool scopes, the audit log and PostgreSQL
row-level security (mcpgen.engines.sqlalchemy.rls) all read `current()`.

>>> alice = Caller(subject="alice", claims={"email": "alice@example.com", "org": {"id": 7}})
>>> alice.claim("email"), alice.claim("org.id")
('alice@example.com', 7)
>>> alice.claim("team")
Traceback (most recent call last):
...
mcpgen.identity.MissingClaim: This tool needs the caller's 'team' claim, and the access token does not carry it.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from .errors import ArgumentError

_VOLATILE_CLAIMS = frozenset({"exp", "iat", "nbf", "jti", "auth_time"})  # differ between two tokens of one caller


class MissingClaim(ArgumentError):
    """The call needs a claim the caller does not have."""


class ScopeCheck(Protocol):
    """A tool's scope rule (`mcpgen.spec.models.ScopeRule`): whether granted scopes pass it."""

    def allows(self, granted: frozenset[str]) -> bool: ...


@dataclass(frozen=True)
class Caller:
    subject: str | None = None
    client_id: str | None = None
    scopes: frozenset[str] = frozenset()
    claims: Mapping[str, Any] = field(default_factory=dict)
    local: bool = False  # the one local user over stdio: may call every tool
    shared: bool = False  # a shared static token: no identity, so no tool with scopes of its own

    def may_use(self, rule: ScopeCheck | None) -> bool:
        """Whether a tool with this scope rule is shown to, and callable by, this caller. A shared
        token carries the server-wide `auth.scopes` only to pass the server's gate: those are what
        every request must have, not what this caller was granted, so tools with `scopes:` stay hidden."""
        return rule is None or self.local or (not self.shared and rule.allows(self.scopes))

    @functools.cached_property
    def identity(self) -> str | None:
        """`caller_identity()` of this caller, made once: the local user's serves every call of a session."""
        if self.subject is None and self.client_id is None and not self.claims:
            return None
        claims = {k: v for k, v in self.claims.items() if k not in _VOLATILE_CLAIMS}
        return repr((self.subject, self.client_id, sorted(self.scopes), sorted(claims.items(), key=str)))

    def claim(self, name: str) -> Any:
        """A claim's value (`a.b` reaches into an object claim); MissingClaim if it is absent or null."""
        value: Any = self.claims.get(name)
        if value is None and "." in name:
            value = self.claims
            for part in name.split("."):
                value = value.get(part) if isinstance(value, Mapping) else None
        if value is None:
            where = "mcpgen.yaml's stdio_claims does not set it" if self.local else "the access token does not carry it"
            raise MissingClaim(f"This tool needs the caller's '{name}' claim, and {where}.")
        return value


ANONYMOUS = Caller()
_local: contextvars.ContextVar[Caller | None] = contextvars.ContextVar("mcpgen_local_caller", default=None)


@contextlib.contextmanager
def local_user(claims: Mapping[str, Any]):
    """Within the block, the caller is the local user (stdio, `mcpgen call`, `mcpgen test`) with `claims`."""
    caller = Caller(subject=str(claims.get("sub", "local")), client_id="local", claims=dict(claims), local=True)
    token = _local.set(caller)
    try:
        yield caller
    finally:
        _local.reset(token)


def current() -> Caller:
    """The caller of the call in progress: the verified token's, else the local user, else anonymous."""
    # The SDK keeps the verified token in a context variable of its auth middleware's module: if
    # nothing has imported that module, no request was authenticated, and importing it (the SDK's
    # whole server package) would cost `mcpgen call` and `validate` ~1 s they never need.
    auth_context = sys.modules.get("mcp.server.auth.middleware.auth_context")
    token = auth_context.get_access_token() if auth_context is not None else None
    if token is not None:
        return Caller(
            subject=token.subject,
            client_id=token.client_id,
            scopes=frozenset(token.scopes),
            claims=token.claims or {},
            shared=bool(getattr(token, "shared", False)),
        )
    return _local.get() or ANONYMOUS


def caller_identity() -> str | None:
    """Who is calling, as text: part of every cache key and page cursor, so two callers never
    share an answer or a cursor. The subject, client and every claim but the token's own
    times are in it, since identity-bound parameters and row-level security read claims.
    None for an anonymous caller.

    >>> caller_identity() is None
    True
    >>> with local_user({"sub": "alice", "iat": 1}):
    ...     caller_identity()
    "('alice', 'local', [], [('sub', 'alice')])"
    """
    return current().identity
