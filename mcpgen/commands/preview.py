"""The gateway preview: a local web page that shows each tool's answer the way the gateway renders it.

    mcpgen preview specs/ [--port 8765] [--chartjs PATH]

A Starlette app served by uvicorn on 127.0.0.1 only:

    GET  /                 the page (mcpgen/static/preview.html, preview.js, preview.css)
    GET  /api/version      {"version": n}; n grows each time the specs are reloaded
    GET  /api/tools        the tools as tools/list gives them, plus errors/warnings with file:line
    POST /api/call/{name}  JSON arguments -> {"result": CallToolResult JSON, "elapsed_ms": ...}
    POST /api/download/{name}  {"uri": a download link of the answer} -> the file (CSV or Parquet)
    POST /api/ask/{name}   {"arguments", "answers"} -> NDJSON: the questions to ask the person, or
                           progress lines while the query runs, then what /api/call answers
    GET  /app/{name}       the tool's MCP App (the HTML resources/read gives), under the CSP a host builds

The page draws each answer with the tool's MCP App in a sandboxed iframe, talking to it as
an MCP Apps host does (ui/initialize, tool-input, tool-result, size-changed, open-link), so
what the analyst previews is what Apps-capable hosts show.

Calls go through `Registry.call`, the code path `mcpgen serve` uses, so arguments
are checked by the server again whatever the browser let through. The specs
folder (and mcpgen.yaml) are watched: every change re-runs `open_project`. A broken
spec is listed with its problems and the other tools still load; when the project
itself does not (mcpgen.yaml, a connection), or no tool loads at all, the page keeps
the last tool set that loaded, marked as stale.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..answer import downloads
from ..answer.asking import ANSWERS, NeedsInput, Question, questions_for
from ..answer.tool import error_result
from ..errors import ArgumentError, MCPGenError, Problem, SpecError
from ..identity import local_user
from ..limits import MAX_BODY_BYTES
from ..serve.mcp_app import APP_URI, App, build_html, check_chartjs, find_chartjs, host_csp
from ..serve.project import Project, open_project
from ..serve.reload import LiveProject, watch_project
from ..serve.server import instructions_for
from ..spec.models import AppSettings
from ..text import plural

logger = logging.getLogger("mcpgen")

HOST = "127.0.0.1"  # loopback only: the preview has no authentication
DEFAULT_PORT = 8765
STATIC = Path(__file__).parent.parent / "static"


class PreviewError(MCPGenError):
    """The preview cannot start (e.g. its port is taken)."""


def chartjs_file(value: str | None) -> Path | None:
    """`--chartjs PATH`: the pinned Chart.js file the previewed app inlines (else the usual lookup)."""
    if not value:
        return None
    try:
        return check_chartjs(Path(value).expanduser().resolve())
    except ValueError as exc:
        raise ValueError(f"--chartjs: {exc}") from None


class _Collect(logging.Handler):
    """Keeps the warnings logged while a project loads (e.g. a Python tool left unregistered)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@dataclass
class PreviewState:
    """The current project, the problems of the last load, and a version that grows on each reload."""

    specs_dir: Path
    shown_from: Path = field(default_factory=Path.cwd)  # problem paths are shown relative to this folder
    version: int = 0
    errors: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    loaded_at: float | None = None  # when `project` was loaded
    checked_at: float | None = None  # when the specs were last read
    _lock: anyio.Lock | None = None
    _live: LiveProject = field(default_factory=lambda: LiveProject(None))

    def __post_init__(self) -> None:
        self.specs_dir = Path(self.specs_dir).resolve()  # open_project changes the working directory

    @property
    def project(self) -> Project | None:
        """The last project that loaded without errors."""
        return self._live.project

    def _load(self) -> tuple[Project | None, list[Problem], list[Problem]]:
        collect = _Collect()
        logger.addHandler(collect)
        try:
            # Every tool is shown on its own: a broken spec is a warning on the page, the rest still load.
            project = open_project(self.specs_dir, needed=lambda path: False)
        except SpecError as exc:
            return None, list(exc.problems), []
        except Exception as exc:  # a broken project must show on the page, not kill the preview
            logger.exception("loading %s failed", self.specs_dir)
            return (
                None,
                [Problem(str(self.specs_dir), None, None, f"loading the project failed: {type(exc).__name__}: {exc}")],
                [],
            )
        finally:
            logger.removeHandler(collect)
        warnings = list(project.loaded.warnings)
        warnings += [Problem(str(self.specs_dir), None, None, m, "warning") for m in collect.messages]
        return project, list(project.loaded.left_out), warnings  # the tools that loaded, and why others did not

    async def reload(self) -> None:
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            project, errors, warnings = await anyio.to_thread.run_sync(self._load)
            if project is not None and errors and not len(project.registry) and self._has_tools():
                project.close()  # nothing loaded: keep showing the last tools that did, marked as stale
                project = None
            self.errors, self.warnings, self.checked_at = errors, warnings, time.time()
            if project is not None:
                self._live.replace(project)
                self.loaded_at = self.checked_at
            self.version += 1
        if errors:
            logger.warning(
                "the specs have %s:\n%s", plural(len(errors), "error"), "\n".join(self.shown(p) for p in errors)
            )
        elif self.project is not None:
            logger.info("loaded %s (version %d)", plural(len(self.project.registry), "tool"), self.version)

    def _has_tools(self) -> bool:
        return self.project is not None and len(self.project.registry) > 0

    @contextlib.asynccontextmanager
    async def using(self):
        """The current project. A reload may replace it meanwhile: the old one closes only once
        the calls running on it have returned (see `LiveProject`)."""
        try:
            yield self.project
        finally:
            self._live.close_idle()

    def close(self) -> None:
        self._live.close()

    def relative(self, path: str) -> str:
        with contextlib.suppress(ValueError):
            return str(Path(path).resolve().relative_to(self.shown_from))
        return path

    def shown(self, problem: Problem) -> str:
        return str(Problem(self.relative(problem.path), problem.line, problem.col, problem.message, problem.severity))

    def problem_json(self, problem: Problem) -> dict[str, Any]:
        return {
            "path": self.relative(problem.path),
            "line": problem.line,
            "col": problem.col,
            "message": problem.message,
            "severity": problem.severity,
            "text": self.shown(problem),
        }

    def tools_json(self) -> dict[str, Any]:
        tools = []
        if self.project is not None:
            for tool in self.project.registry:
                item = tool.to_mcp().model_dump(mode="json", by_alias=True, exclude_none=True)
                item.pop("outputSchema", None)  # the same for every tool
                item["source"] = self.relative(tool.source) if tool.source else None
                item["long_running"] = tool.long_running  # offers tasks to clients of the tasks extension
                if tool.confirm is not None or tool.confirm_rows is not None:
                    rows = tool.confirm_rows
                    message = rows.message if rows is not None else tool.confirm
                    item["confirm"] = {"message": message, "when_rows_over": rows.threshold if rows else None}
                tools.append(item)
        server, prompts = None, []
        if self.project is not None:  # what a client reads at connection: instructions, icons
            registry = self.project.registry
            server = {"instructions": instructions_for(registry), "icons": registry.icons}
            prompts = [
                {
                    **p.to_mcp().model_dump(mode="json", by_alias=True, exclude_none=True),
                    "tools": p.tools,
                    "source": self.relative(p.source) if p.source else None,
                }
                for p in registry.prompts.values()
            ]
        return {
            "version": self.version,
            "specs_dir": self.relative(str(self.specs_dir)),
            "server": server,
            "tools": tools,
            "prompts": prompts,
            "errors": [self.problem_json(p) for p in self.errors],
            "warnings": [self.problem_json(p) for p in self.warnings],
            # Stale: the specs no longer load, and the page still shows the tools that last did.
            "stale": self.project is not None and self.loaded_at != self.checked_at,
            "loaded_at": self.loaded_at,
            "checked_at": self.checked_at,
        }

    async def watch(self, stop: anyio.Event, on_change: Callable[[], Any] | None = None) -> None:
        """Reload whenever a file in the specs folder, or the project's mcpgen.yaml, changes."""

        async def changed() -> None:
            await self.reload()
            if on_change is not None:
                on_change()

        await watch_project(self.specs_dir, changed, stop)


def preview_app(
    specs_dir: str | Path, chartjs: str | None = None, watch: bool = True, state: PreviewState | None = None
) -> Starlette:
    """The preview app. `chartjs`: a local copy of the pinned Chart.js for the app to inline."""
    chartjs_path = chartjs_file(chartjs)
    state = state or PreviewState(Path(specs_dir))
    page = (STATIC / "preview.html").read_text(encoding="utf-8")
    csp = (
        "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
        "script-src 'self'; connect-src 'self'; frame-src 'self'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    )
    no_store = {"Cache-Control": "no-store"}

    async def index(request: Request) -> Response:
        return HTMLResponse(
            page,
            headers={
                **no_store,
                "Content-Security-Policy": csp,
                "X-Content-Type-Options": "nosniff",
                "Referrer-Policy": "no-referrer",
            },
        )

    @_on_named(state, "tool", posted=False)
    async def app_page(project, tool, body) -> Response:
        """The tool's app as resources/read gives it, under the CSP a host builds from its _meta.ui.csp."""
        # A tool with `app: false` is shown with the default app (hosts show none for it).
        app = project.registry.apps.get(tool.app) or App(APP_URI, AppSettings(), project.loaded.root)
        found = chartjs_path or find_chartjs(app.root)[0]
        document, ui = await anyio.to_thread.run_sync(build_html, app.settings, found)
        headers = {**no_store, "Content-Security-Policy": host_csp(ui.get("csp")), "X-Content-Type-Options": "nosniff"}
        return HTMLResponse(document, headers=headers)

    async def version(request: Request) -> Response:
        return JSONResponse({"version": state.version}, headers=no_store)

    async def tools(request: Request) -> Response:
        return JSONResponse(state.tools_json(), headers=no_store)

    @_on_named(state, "tool")
    async def call(project, tool, arguments) -> Response:
        started = time.perf_counter()
        with local_user(project.loaded.config.stdio_claims):  # the person previewing, as over stdio
            result = await project.registry.call(tool.name, arguments)
        elapsed = (time.perf_counter() - started) * 1000
        return JSONResponse(
            {
                "tool": tool.name,
                "arguments": arguments,
                "elapsed_ms": round(elapsed, 1),
                "version": state.version,
                "result": result.to_mcp().model_dump(mode="json", by_alias=True, exclude_none=True),
            },
            headers=no_store,
        )

    @_on_named(state, "tool")
    async def download(project, tool, body) -> Response:
        """One of the answer's download links, read as resources/read reads it, as a file to save."""
        uri = body.get("uri")
        try:
            if not isinstance(uri, str) or tool.download is None or downloads.parse(uri).tool != tool.name:
                raise downloads.DownloadError(downloads.NOT_OURS)
            with local_user(project.loaded.config.stdio_claims):  # the same caller as the call that made it
                contents = await project.registry.download(tool.name, uri)
        except MCPGenError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400, headers=no_store)
        link = downloads.parse(uri)
        data = base64.b64decode(contents.blob) if hasattr(contents, "blob") else contents.text.encode("utf-8")
        disposition = f'attachment; filename="{tool.name}.{link.format}"'
        return Response(data, media_type=contents.mime_type, headers={**no_store, "Content-Disposition": disposition})

    prompt = _prompt_endpoint(state, no_store)
    complete = _complete_endpoint(state, no_store)
    ask = _ask_endpoint(state, no_store)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        await state.reload()
        stop = anyio.Event()
        async with anyio.create_task_group() as tg:
            if watch:
                tg.start_soon(state.watch, stop)
            try:
                yield
            finally:
                stop.set()
                tg.cancel_scope.cancel()
        state.close()

    async def favicon(request: Request) -> Response:
        return Response(status_code=204)

    routes = [
        Route("/", index),
        Route("/favicon.ico", favicon),
        Route("/app/{name:path}", app_page),
        Route("/api/version", version),
        Route("/api/tools", tools),
        Route("/api/call/{name:path}", call, methods=["POST"]),
        Route("/api/download/{name:path}", download, methods=["POST"]),
        Route("/api/ask/{name:path}", ask, methods=["POST"]),
        Route("/api/prompt/{name:path}", prompt, methods=["POST"]),
        Route("/api/complete/{name:path}", complete, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    # Refuse other Host names, so a web page cannot reach the preview by DNS rebinding.
    middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=["127.0.0.1", "localhost"])]
    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
    app.state.preview = state
    return app


def _on_named(state: PreviewState, kind: str, posted: bool = True):
    """An endpoint on the tool or prompt named in its path: the JSON object posted to it is read (or
    refused), the project is held while the endpoint runs, and a name it does not have is a 404."""

    def wrap(endpoint: Callable[[Any, Any, dict], Awaitable[Response]]):
        async def named(request: Request) -> Response:
            name = request.path_params["name"]
            body = await _arguments(request) if posted else {}
            if isinstance(body, Response):
                return body
            async with state.using() as project:
                if project is None:
                    found = None
                elif kind == "tool":
                    found = project.registry.get(name) if name in project.registry else None
                else:
                    found = project.registry.prompts.get(name)
                if found is None:
                    return JSONResponse({"error": f"no {kind} named '{name}'"}, status_code=404)
                return await endpoint(project, found, body)

        return named

    return wrap


def _ask_endpoint(state: PreviewState, no_store: dict[str, str]):
    """POST /api/ask/{name} `{"arguments": {...}, "answers": {key: {field: value}}}`: the call as a client
    that can ask the person makes it (docs/asking.md), answered in NDJSON lines. First what is still to
    ask (`{"questions": [{key, message, schema}]}`, the last line: the page shows the forms and posts
    again with the answers); else `{"progress", "total", "message"}` lines while the query runs, where
    the engine can say, and last what /api/call answers."""

    async def ask(request: Request) -> Response:
        body = await _arguments(request)
        if isinstance(body, Response):
            return body
        arguments, answers = body.get("arguments", {}), body.get("answers", {})
        if not isinstance(arguments, dict) or not isinstance(answers, dict):
            return JSONResponse({"error": 'post {"arguments": {...}, "answers": {...}}'}, status_code=400)
        answers = {k: v for k, v in answers.items() if isinstance(v, dict)}
        name = request.path_params["name"]
        async with state.using() as project:
            if project is None or name not in project.registry:
                return JSONResponse({"error": f"no tool named '{name}'"}, status_code=404)
        return StreamingResponse(
            _asked_call(state, name, arguments, answers), media_type="application/x-ndjson", headers=no_store
        )

    return ask


def _questions(questions: list[Question]) -> str:
    return json.dumps({"questions": [{"key": q.key, "message": q.message, "schema": q.schema()} for q in questions]})


async def _asked_call(state: PreviewState, name: str, arguments: dict, answers: dict):
    """The NDJSON lines of one asked call (see _ask_endpoint)."""
    async with state.using() as project:
        if project is None or name not in project.registry:
            yield json.dumps({"error": f"no tool named '{name}'"}) + "\n"
            return
        tool = project.registry.get(name)
        filled, pending = questions_for(tool.input_schema, tool.name, arguments, answers, tool.confirm)
        if isinstance(pending, list) and pending:
            yield _questions(pending) + "\n"
            return
        send, receive = anyio.create_memory_object_stream[dict](100)
        outcome: dict[str, Any] = {}

        async def progress(done: float, total: float | None, message: str | None) -> None:
            with contextlib.suppress(anyio.WouldBlock):
                send.send_nowait({"progress": done, "total": total, "message": message})

        async def run() -> None:
            token = ANSWERS.set(answers)
            started = time.perf_counter()
            try:
                with local_user(project.loaded.config.stdio_claims):
                    if isinstance(pending, str):  # the person said no
                        outcome["result"] = error_result(pending)
                    else:
                        outcome["result"] = await project.registry.call(tool.name, filled, progress)
            except NeedsInput as exc:  # asked while it ran: a hand-written tool, or confirm when_rows_over
                outcome["questions"] = exc.questions
            finally:
                ANSWERS.reset(token)
                outcome["elapsed_ms"] = round((time.perf_counter() - started) * 1000, 1)
                send.close()

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            async with receive:
                async for line in receive:
                    yield json.dumps(line) + "\n"
        if "questions" in outcome:
            yield _questions(outcome["questions"]) + "\n"
            return
        result = outcome["result"].to_mcp().model_dump(mode="json", by_alias=True, exclude_none=True)
        answer = {"tool": name, "arguments": filled, "elapsed_ms": outcome["elapsed_ms"], "version": state.version}
        yield json.dumps({**answer, "result": result}) + "\n"


def _prompt_endpoint(state: PreviewState, no_store: dict[str, str]):
    """POST /api/prompt/NAME: the prompt's messages for the posted arguments, or the sentence that refuses them."""

    @_on_named(state, "prompt")
    async def prompt(project, found, arguments) -> Response:
        try:
            result = found.get(arguments)
        except ArgumentError as exc:  # what a client is told (-32602), as one sentence
            return JSONResponse({"prompt": found.name, "error": str(exc)}, headers=no_store)
        return JSONResponse(
            {"prompt": found.name, "result": result.model_dump(mode="json", by_alias=True, exclude_none=True)},
            headers=no_store,
        )

    return prompt


def _complete_endpoint(state: PreviewState, no_store: dict[str, str]):
    """POST /api/complete/PROMPT {argument, value, context}: what completion/complete would suggest."""

    @_on_named(state, "prompt")
    async def complete(project, found, body) -> Response:
        context = {k: str(v) for k, v in (body.get("context") or {}).items()}
        try:
            with local_user(project.loaded.config.stdio_claims):
                values, more = await anyio.to_thread.run_sync(
                    found.complete,
                    str(body.get("argument", "")),
                    str(body.get("value", "")),
                    context,
                    project.registry.get,
                )
        except ArgumentError as exc:
            return JSONResponse({"values": [], "error": str(exc)}, headers=no_store)
        return JSONResponse({"values": values[:100], "hasMore": more}, headers=no_store)

    return complete


async def _arguments(request: Request) -> dict | Response:
    """The JSON object a call posts, or the error response that refuses it."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        # Also keeps other web sites out: a cross-site JSON POST needs a CORS preflight we never answer.
        return JSONResponse({"error": "send the arguments as application/json"}, status_code=415)
    declared = request.headers.get("content-length", "0")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return JSONResponse({"error": "the arguments are larger than 1 MiB"}, status_code=413)
    body = await request.body()
    if len(body) > MAX_BODY_BYTES:
        return JSONResponse({"error": "the arguments are larger than 1 MiB"}, status_code=413)
    try:
        arguments = json.loads(body or b"{}")
    except (ValueError, RecursionError):  # RecursionError: arrays or objects nested too deep
        return JSONResponse({"error": "the body is not valid JSON"}, status_code=400)
    if not isinstance(arguments, dict):
        return JSONResponse({"error": "the arguments must be a JSON object"}, status_code=400)
    return arguments


def listen(port: int):
    """A socket bound to 127.0.0.1:`port` (0: any free port), or a PreviewError saying why not."""
    import socket

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        raise PreviewError(
            f"cannot listen on {HOST}:{port} ({exc.strerror or exc}); "
            "choose another --port, or --port 0 for any free one"
        ) from None
    return sock


def run(
    specs_dir: str | Path, port: int = DEFAULT_PORT, chartjs: str | None = None, announce: Callable[[str], Any] = print
) -> None:
    """Serve the preview on 127.0.0.1:`port` (0: any free port) until interrupted."""
    import asyncio

    import uvicorn

    logging.getLogger("watchfiles").setLevel(logging.WARNING)  # "1 change detected": the reload line says it
    sock = listen(port)
    port = sock.getsockname()[1]  # read now: a Ctrl-C as the server starts closes the socket
    app = preview_app(specs_dir, chartjs)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))

    async def main() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not task.done():
            await asyncio.sleep(0.05)
        if server.started and not server.should_exit:
            state: PreviewState = app.state.preview
            count = len(state.project.registry) if state.project else 0
            broken = f" (the specs have {plural(len(state.errors), 'error')}: see the page)" if state.errors else ""
            announce(
                f"mcpgen: previewing {plural(count, 'tool')} from {state.relative(str(state.specs_dir))}{broken} "
                f"at http://{HOST}:{port}/ (Ctrl-C to stop)"
            )
        await task

    try:
        asyncio.run(main())
    finally:
        sock.close()
    if not server.started:
        raise PreviewError("the preview server did not start")
