"""Streamable HTTP: `mcpgen serve SPECS_DIR --http`.

Stateless with JSON responses, so any number of processes can sit behind one load
balancer: no session lives in a process (a 2026-07-28 call that asks for progress may get an event
stream inside its own POST: `streams`). Every request to /mcp passes, in order:

1. the body cap (413), 2. the bearer token when tokens or `auth:` are configured (401, or 403
`insufficient_scope`; with `auth:` the token is a JWT from the issuer, see mcpgen.http.auth),
3. the Host and Origin checks against DNS rebinding (421, 403), 4. JSON-RPC parsing
(400 with a JSON-RPC error). Only then can a tool run. `GET /healthz` answers load
balancers with `{"status": "ok", "tools": N}` and needs no token; `GET /mcp` is 405 (no event
stream). Slow, half-sent and surplus connections are handled in `connections`; the options and
what makes them safe are in `options`.


>>> app = build_app(None, HTTPOptions(host="0.0.0.0"))
Traceback (most recent call last):
...
mcpgen.http.options.HTTPSetupError: refusing to serve on 0.0.0.0 (not a loopback address) without a bearer token: set --auth-token-env VAR (or http.tokens_env in mcpgen.yaml), or pass --insecure-no-auth if something in front of mcpgen already authenticates every request
"""

from __future__ import annotations

import hmac
import json
import logging
import socket
from dataclasses import replace

from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import AnyHttpUrl
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ..serve.frames import NOT_ONE_MESSAGE, error_answer, refusal
from ..serve.listen import LISTEN_PER_CALLER
from ..spec.config import AuthConfig
from ..text import plural
from .connections import BACKLOG, NoEventStream, PerCaller, protocol_class, quiet_floods, usable_connections
from .options import HTTPOptions, HTTPSetupError, allowed_hosts, allowed_origins, check_options, host_header
from .streams import ProgressStreams

logger = logging.getLogger("mcpgen")

ROOT_METADATA = "/.well-known/oauth-protected-resource"


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
        return SharedToken(token="", client_id=f"token-{match + 1}", scopes=self._scopes)


class SharedToken(AccessToken):
    """A static token's answer: it passes the server-wide `auth.scopes`, and no tool's own `scopes:`."""

    shared: bool = True


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
    ProgressStreams(tool_server.server.session_manager)  # a call that asks for progress may stream it
    app.add_middleware(NoEventStream, path=options.path)
    app.add_middleware(PlainRefusals)
    app.add_middleware(PerCaller, limit=options.limits.per_caller)  # outermost: before any other work
    limits = options.limits
    tool_server.listen.bound(LISTEN_PER_CALLER, limits.max_connections // 4, limits.listen_timeout)
    return app


# The SDK's 400s for a body it cannot read or take for one message, on the 2025-era wire (its parser's words,
# pydantic's report) and on 2026-07-28's (sentences of its own)
SDK_REPORTS = (
    b'"message":"Validation error: ',
    b'"message":"Parse error',
    b'"message":"Body must be a single JSON-RPC',
)


class PlainRefusals:
    """ASGI middleware: the SDK's 2025-era transport answers a body that is JSON but no JSON-RPC message (a batch,
    no "jsonrpc") with pydantic's whole report, the input echoed, and one it cannot parse (an id of 5,000 digits,
    nested too deep) with its parser's own words; here each gets `frames.refusal`'s sentence, the id when it can
    be read, as over stdio. A request whose id is an object, a fraction or null, which the SDK takes for a
    notification (202, no answer), gets the same 400. Other answers pass untouched."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        start: dict | None = None
        chunks: list[bytes] = []  # the body as the SDK read it, under its size cap

        async def teed() -> dict:
            message = await receive()
            if message["type"] == "http.request":
                chunks.append(message.get("body", b""))
            return message

        async def refuse(held: dict, message: dict, answer: dict) -> None:
            body = json.dumps(answer).encode()
            kept = [(k, v) for k, v in held["headers"] if k.lower() not in (b"content-length", b"content-type")]
            headers = [*kept, (b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
            await send({**held, "status": 400, "headers": headers})
            await send({**message, "body": body, "more_body": False})

        async def plain(message) -> None:
            nonlocal start
            if message["type"] == "http.response.start" and message["status"] in (400, 202):
                start = message  # held until the body shows whether it is the report, or the request one
                return
            if start is None or message["type"] != "http.response.body":
                return await send(message)
            held, start, body = start, None, message.get("body", b"")
            answer = None
            if held["status"] == 202 and not message.get("more_body"):
                answer = refusal(b"".join(chunks))
            elif not message.get("more_body") and any(report in body for report in SDK_REPORTS):
                answer = refusal(b"".join(chunks)) or error_answer(-32600, NOT_ONE_MESSAGE)
            if answer is None:
                await send(held)
                return await send(message)
            await refuse(held, message, answer)

        await self.app(scope, teed, plain)


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

    limits = replace(options.limits, max_connections=usable_connections(options.limits.max_connections))
    options = replace(options, limits=limits)  # the caps per caller follow the connections really usable
    app = build_app(tool_server, options)
    sock = _listen(options.host, options.port)
    quiet_floods()
    server = uvicorn.Server(uvicorn_config(app, options))
    tool_server.raise_thread_limit()
    shown = host_header(options.host)
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


def uvicorn_config(app, options: HTTPOptions):
    """uvicorn's settings for `app`. A caller is its connection's own address: X-Forwarded-For and
    X-Forwarded-Proto are not read (uvicorn trusts them from loopback by default, so any local client could
    name itself another caller and pass the per-caller cap)."""
    import uvicorn

    return uvicorn.Config(
        app,
        host=options.host,
        port=options.port,
        http=protocol_class(options.limits),
        backlog=BACKLOG,
        log_config=None,
        access_log=False,
        server_header=False,
        proxy_headers=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
    )


def _listen(host: str, port: int) -> socket.socket:
    """Bind here, so a taken port is one clear sentence rather than a traceback from uvicorn."""
    bare = host.strip("[]")
    family = socket.AF_INET6 if ":" in bare else socket.AF_INET
    try:
        sock = socket.create_server((bare, port), family=family, backlog=BACKLOG)
    except OSError as exc:
        raise HTTPSetupError(f"cannot listen on {host_header(host)}:{port}: {exc.strerror or exc}") from None
    # asyncio sets TCP_NODELAY only on sockets made with proto=IPPROTO_TCP, and create_server's is 0.
    # Accepted connections inherit it from here; without it, every response after the first on a
    # kept-alive connection waits ~40 ms for the client's delayed ACK (headers and body are two writes).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock
