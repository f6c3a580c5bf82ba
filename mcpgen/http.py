"""Streamable HTTP: `mcpgen serve SPECS_DIR --http`.

Stateless with JSON responses, so any number of processes can sit behind one load
balancer: no session lives in a process. Every request to /mcp passes, in order:

1. the body cap (413), 2. the bearer token when tokens or `auth:` are configured (401, or 403
`insufficient_scope`; with `auth:` the token is a JWT from the issuer, see mcpgen.auth),
3. the Host and Origin checks against DNS rebinding (421, 403), 4. JSON-RPC parsing
(400 with a JSON-RPC error). Only then can a tool run. `GET /healthz` answers load
balancers with `{"status": "ok", "tools": N}` and needs no token; `GET /mcp` is 405 (no event
stream). Slow, half-sent and surplus connections are handled in http_limits.py.

A bind to anything but a loopback address refuses to start without a token,
unless the user passes `--insecure-no-auth`.

>>> allowed_hosts("127.0.0.1", 8000, ["mcp.example.com"])[:3]
['127.0.0.1:8000', 'localhost:8000', '[::1]:8000']
>>> is_loopback("0.0.0.0"), is_loopback("::1"), is_loopback("localhost")
(False, True, True)
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import socket
from dataclasses import dataclass, field, replace

from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import AnyHttpUrl
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from .errors import MCPGenError
from .http_limits import BACKLOG, ConnectionLimits, NoEventStream, protocol_class, quiet_floods, usable_connections
from .limits import MAX_BODY_BYTES
from .spec.config import AuthConfig
from .text import plural

logger = logging.getLogger("mcpgen")

MIN_TOKEN_LENGTH = 16
ROOT_METADATA = "/.well-known/oauth-protected-resource"
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


class HTTPSetupError(MCPGenError):
    """The HTTP options cannot be served safely (the message says what to change)."""


@dataclass
class HTTPOptions:
    host: str = "127.0.0.1"
    port: int = 8000
    tokens: list[str] = field(default_factory=list, repr=False)
    allow_hosts: list[str] = field(default_factory=list)
    allow_origins: list[str] = field(default_factory=list)
    insecure_no_auth: bool = False
    max_body: int = MAX_BODY_BYTES
    path: str = "/mcp"
    limits: ConnectionLimits = field(default_factory=ConnectionLimits)
    auth: AuthConfig | None = None  # OAuth: JWT access tokens (mcpgen.yaml's `auth:`)
    root: str = "."  # the project root, for auth.jwks_file


def is_loopback(host: str) -> bool:
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_header(host: str) -> str:
    """A bind address as it appears in a Host header (IPv6 in brackets)."""
    bare = host.strip("[]")
    try:
        return f"[{bare}]" if ipaddress.ip_address(bare).version == 6 else bare
    except ValueError:
        return bare


def allowed_hosts(host: str, port: int, extra: list[str]) -> list[str]:
    """Host header values accepted: loopback names on our port, the bind address, and `extra`.

    An `extra` name without a port is accepted on any port and with no port at all."""
    out = [f"{name}:{port}" for name in _LOOPBACK_NAMES]
    wildcard = host in ("0.0.0.0", "::", "[::]", "")
    if not wildcard and not is_loopback(host):
        out.append(f"{_host_header(host)}:{port}")
    for name in extra:
        name = name.strip()
        if not name:
            continue
        if (name.startswith("[") and "]:" in name) or (not name.startswith("[") and ":" in name):
            out.append(name)  # already has a port (or a :* wildcard)
        else:
            out += [name, f"{name}:*"]
    return list(dict.fromkeys(out))


def allowed_origins(host: str, port: int, extra: list[str]) -> list[str]:
    """Origin header values accepted (requests without Origin, i.e. not from a browser, always pass)."""
    hosts = [f"{name}:{port}" for name in _LOOPBACK_NAMES]
    if host not in ("0.0.0.0", "::", "[::]", "") and not is_loopback(host):
        hosts.append(f"{_host_header(host)}:{port}")
    out = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
    out += [o.strip().rstrip("/") for o in extra if o.strip()]
    return list(dict.fromkeys(out))


def read_tokens(env_names: list[str], environ=None) -> list[str]:
    """Token values from environment variables; a named variable that is unset or empty is an error."""
    environ = os.environ if environ is None else environ
    tokens = []
    for name in env_names:
        value = environ.get(name, "").strip()
        if not value:
            raise HTTPSetupError(f"environment variable {name} (named for a bearer token) is not set or empty")
        if len(value) < MIN_TOKEN_LENGTH:
            logger.warning(
                "the token in %s is shorter than %d characters; use a long random value", name, MIN_TOKEN_LENGTH
            )
        tokens.append(value)
    return tokens


def check_options(options: HTTPOptions) -> None:
    """Refuse settings that would expose the tools to anyone who can reach the port."""
    if not 0 < options.port < 65536:
        raise HTTPSetupError(f"port {options.port} is not between 1 and 65535")
    if options.max_body <= 0:
        raise HTTPSetupError("the request body cap must be a positive number of bytes")
    if min(options.limits.header_timeout, options.limits.body_timeout) <= 0 or options.limits.max_connections < 1:
        raise HTTPSetupError("the header and body timeouts and the connection limit must be positive")
    if not is_loopback(options.host) and not options.tokens and not options.auth and not options.insecure_no_auth:
        raise HTTPSetupError(
            f"refusing to serve on {options.host} (not a loopback address) without a bearer token: "
            "set --auth-token-env VAR (or http.tokens_env in mcpgen.yaml), or pass --insecure-no-auth "
            "if something in front of mcpgen already authenticates every request"
        )


class StaticTokenVerifier:
    """Accepts exactly the configured tokens, compared in constant time; they carry `scopes`."""

    def __init__(self, tokens: list[str], scopes: list[str] | None = None):
        self._tokens = [t.encode() for t in tokens]
        self._scopes = list(scopes or [])

    async def verify_token(self, token: str) -> AccessToken | None:
        given = token.encode()
        match = None
        for index, known in enumerate(self._tokens):  # no early exit: timing says nothing
            if hmac.compare_digest(given, known):
                match = index
        if match is None:
            return None
        return AccessToken(token="", client_id=f"token-{match + 1}", scopes=self._scopes)


def build_app(tool_server, options: HTTPOptions):
    """The Starlette app: /mcp (the MCP endpoint) and /healthz."""
    check_options(options)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=allowed_hosts(options.host, options.port, options.allow_hosts),
        allowed_origins=allowed_origins(options.host, options.port, options.allow_origins),
    )

    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse(
            {"status": "ok", "tools": tool_server.served_count()}, headers={"Cache-Control": "no-store"}
        )

    routes = [Route("/healthz", healthz, methods=["GET", "HEAD"])]
    auth = verifier = None
    if options.tokens:
        # Next to OAuth, a shared token passes the server-wide scopes, and no tool's own.
        verifier = StaticTokenVerifier(options.tokens, options.auth.scopes if options.auth else None)
        auth = AuthSettings(issuer_url="http://localhost", resource_server_url=None)
    if options.auth is not None:
        verifier = oauth_verifier(options.auth, options.root, verifier)
        auth = AuthSettings(
            issuer_url=AnyHttpUrl(options.auth.issuer),
            resource_server_url=AnyHttpUrl(options.auth.audience),
            required_scopes=options.auth.scopes or None,
            validate_token_resource=False,  # the verifier checks `aud` itself
        )
        routes += root_metadata_route(options.auth)
    app = tool_server.server.streamable_http_app(
        streamable_http_path=options.path,
        stateless_http=True,
        json_response=True,
        max_request_body_size=options.max_body,
        transport_security=security,
        host=options.host,
        auth=auth,
        token_verifier=verifier,
        custom_starlette_routes=routes,
    )
    app.add_middleware(NoEventStream, path=options.path)
    return app


def oauth_verifier(settings: AuthConfig, root: str, static: StaticTokenVerifier | None):
    """JWTs from the issuer; static tokens, when configured too, are tried first."""
    from .auth import FirstOf, jwt_verifier

    verifier = jwt_verifier(settings, root)
    return verifier if static is None else FirstOf(static, verifier)


def root_metadata_route(settings: AuthConfig) -> list[Route]:
    """RFC 9728 metadata also at the root, `/.well-known/oauth-protected-resource`, for clients that
    look there (the SDK serves it under the resource's path, e.g. `.../oauth-protected-resource/mcp`)."""
    from mcp.server.auth.routes import create_protected_resource_routes

    route = create_protected_resource_routes(
        AnyHttpUrl(settings.audience), [AnyHttpUrl(settings.issuer)], settings.scopes or None
    )[0]
    if route.path == ROOT_METADATA:
        return []
    return [Route(ROOT_METADATA, endpoint=route.endpoint, methods=["GET", "OPTIONS"])]


async def serve_http(tool_server, options: HTTPOptions, reloader=None) -> None:
    """Serve until SIGINT/SIGTERM; with a reloader, watch the specs meanwhile."""
    import anyio
    import uvicorn

    app = build_app(tool_server, options)
    sock = _listen(options.host, options.port)
    limits = replace(options.limits, max_connections=usable_connections(options.limits.max_connections))
    quiet_floods()
    config = uvicorn.Config(
        app,
        host=options.host,
        port=options.port,
        http=protocol_class(limits),
        backlog=BACKLOG,
        log_config=None,
        access_log=False,
        server_header=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)
    tool_server.raise_thread_limit()
    shown = _host_header(options.host)
    logger.info(
        "serving %s on http://%s:%d%s (%s)",
        plural(tool_server.served_count(), "tool"),
        shown,
        options.port,
        options.path,
        "OAuth access token required" if options.auth else "bearer token required" if options.tokens else "no token",
    )
    async with anyio.create_task_group() as tg:
        if reloader is not None:
            tg.start_soon(reloader.run)
        try:
            await server.serve(sockets=[sock])
        finally:
            tool_server.listen.close()
            tg.cancel_scope.cancel()
            sock.close()


def _listen(host: str, port: int) -> socket.socket:
    """Bind here, so a taken port is one clear sentence rather than a traceback from uvicorn."""
    bare = host.strip("[]")
    family = socket.AF_INET6 if ":" in bare else socket.AF_INET
    try:
        sock = socket.create_server((bare, port), family=family, backlog=BACKLOG)
    except OSError as exc:
        raise HTTPSetupError(f"cannot listen on {_host_header(host)}:{port}: {exc.strerror or exc}") from None
    # asyncio sets TCP_NODELAY only on sockets made with proto=IPPROTO_TCP, and create_server's is 0.
    # Accepted connections inherit it from here; without it, every response after the first on a
    # kept-alive connection waits ~40 ms for the client's delayed ACK (headers and body are two writes).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock
