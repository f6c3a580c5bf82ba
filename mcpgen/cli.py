"""The command line: a thin layer over mcpgen's Python API.

mcpgen serve specs/             serve every tool over stdio
mcpgen call top_cities -a n=3   run one tool and print its answer
mcpgen list specs/              the tools, their parameters and connections
mcpgen validate specs/          static checks (--live: against the database), exit 1 on problems
mcpgen test specs/              run the specs' tests: against the real connections
mcpgen schema                   JSON Schema of spec files, for editors
mcpgen preview specs/           a local web page showing each answer as the gateway would
mcpgen build-app                fetch the pinned Chart.js that the MCP App inlines
mcpgen config vscode specs/     the configuration that makes a client start the server (--write)
mcpgen bundle specs/            an MCP Bundle (.mcpb) for desktop hosts (--server-json: for the MCP registry)
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import sys
from pathlib import Path

import click

from .limits import MAX_BODY_BYTES
from .text import plural


class _SpecsDir(click.Path):
    """A specs folder; a spec file given for it, or the folder named from inside it, is refused with the
    folder meant."""

    def convert(self, value, param, ctx):
        path = Path(value)
        if path.is_file():
            self.fail(f"{value} is a file: give the folder that holds it ({path.parent})", param, ctx)
        if not path.exists() and path.name == Path.cwd().name and any(Path().glob("*.y*ml")):  # run from inside it
            self.fail(
                f"there is no folder {value} here, in {value} itself: give it as ., or run from its parent", param, ctx
            )
        return super().convert(value, param, ctx)


SPECS_DIR = _SpecsDir(exists=True, file_okay=False, path_type=Path)
VERBOSE = click.option("-v", "--verbose", is_flag=True, help="Log debug detail on stderr.")


def _setup_logging(verbose: bool = False) -> None:
    """Logs on stderr, secrets redacted, without the per-call lines that `serve` writes."""
    from . import logs

    logs.setup(verbose=verbose, calls=False)


def _load(specs_dir: Path):
    """The project read (not opened), or None when it cannot be read at all (`_open` then says why)."""
    from .errors import SpecError
    from .load.project import load_project

    try:
        return load_project(specs_dir)
    except SpecError:
        return None


def _load_for_call(specs_dir: Path, tool: str):
    """The project as `call TOOL` needs it, or None when it cannot be read at all (`_open` then says
    why). When exactly one spec defines TOOL, only that spec is kept, and no Python file: no other
    spec is compiled or described and no other connection is opened. The record of which file
    defines which tool (`load.tools`) finds that spec without reading the others; without a current
    record the whole project is read (and recorded), as `serve` reads it."""
    from .errors import SpecError
    from .load import tools

    try:
        loaded = tools.load_defining(specs_dir, tool)
        if loaded is not None:
            return loaded
        loaded = tools.load_whole(specs_dir)
    except SpecError:
        return None
    mine = [s for s in loaded.specs if s.name == tool]
    if len(mine) == 1:
        loaded.specs = mine
        loaded.python_files = []
    return loaded


def _open(specs_dir: Path, loaded=None, needed=None, local_cursors: bool = False, positions: bool = True):
    from .errors import SpecError
    from .serve.project import left_out_warning, open_project

    try:
        project = open_project(
            specs_dir, loaded=loaded, needed=needed, local_cursors=local_cursors, positions=positions
        )
    except SpecError as exc:
        for problem in exc.problems:
            click.echo(str(problem), err=True)
        raise click.exceptions.Exit(1) from None
    for problem in project.loaded.left_out:
        click.echo(str(left_out_warning(problem)), err=True)
    if project.loaded.python_files:  # Python runs with mcpgen's rights: say which files ran
        names = ", ".join(p.name for p in project.loaded.python_files)
        click.echo(f"mcpgen: imported Python tools from {names}", err=True)
    return project


class _Commands(click.Group):
    """mcpgen's commands: Ctrl-C ends one with a sentence and status 130."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:  # where SIGINT cannot be waited for (`_end_on_ctrl_c`)
            _interrupted()


def _interrupted() -> None:
    click.echo("mcpgen: interrupted (Ctrl-C)", err=True)
    atexit._run_exitfuncs()  # a local Spark cluster stopped, queued log lines written
    # Not the interpreter's own exit: a DuckDB thread still at work when it finalizes aborts the process.
    os._exit(130)


# Commands that stop cleanly on Ctrl-C themselves (their event loops take SIGINT).
_OWN_CTRL_C = ("serve", "preview")


def _end_on_ctrl_c() -> None:
    """Ctrl-C ends the command at once, whatever its main thread is in: a DuckDB statement does not
    return to Python to see a KeyboardInterrupt. SIGINT is blocked in this thread and in every thread
    started after it, and taken by one thread that waits for it."""
    import signal
    import threading

    if not hasattr(signal, "pthread_sigmask"):  # Windows: the KeyboardInterrupt (`_Commands`)
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})

    def wait() -> None:
        signal.sigwait({signal.SIGINT})
        _interrupted()

    threading.Thread(target=wait, name="mcpgen-ctrl-c", daemon=True).start()


@click.group(cls=_Commands)
@click.version_option(package_name="mcpgen")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Turn YAML specs (parameters, one SQL query, sources, a prose template) into MCP tools."""
    if ctx.obj is _PROGRAM and ctx.invoked_subcommand not in _OWN_CTRL_C:
        _end_on_ctrl_c()


_PROGRAM = object()  # `run`'s context object: the signals are the program's to take


def run() -> None:
    """The `mcpgen` program (its script, `python -m mcpgen`): `main`, with Ctrl-C ending a one-shot command at
    once (`_end_on_ctrl_c`). `main` called inside another program (a test, click's CliRunner) leaves that
    program's signals alone: a SIGINT blocked there would be blocked in every process it starts."""
    main(obj=_PROGRAM)


@main.command()
@click.argument("specs_dir", type=SPECS_DIR)
@VERBOSE
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="One line per call on stderr, as text or JSON.",
)
@click.option("--reload", "reload_", is_flag=True, help="Watch SPECS_DIR and mcpgen.yaml; serve valid changes.")
@click.option("--http", "http_", is_flag=True, help="Serve streamable HTTP (stateless) instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP: address to bind.")
@click.option("--port", default=8000, show_default=True, type=int, help="HTTP: port to bind.")
@click.option(
    "--auth-token-env",
    "token_envs",
    multiple=True,
    metavar="VAR",
    help="HTTP: require the bearer token held in environment variable VAR (repeatable).",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="HOST[:PORT]",
    help="HTTP: another Host header value to accept (repeatable).",
)
@click.option(
    "--allow-origin",
    "allow_origins",
    multiple=True,
    metavar="ORIGIN",
    help="HTTP: another browser Origin to accept, e.g. https://app.example.com (repeatable).",
)
@click.option(
    "--max-body-bytes",
    default=MAX_BODY_BYTES,
    show_default=True,
    type=int,
    help="HTTP: largest request body accepted (413 above it).",
)
@click.option(
    "--header-timeout", default=10.0, show_default=True, type=float, help="HTTP: seconds to send a request's headers."
)
@click.option(
    "--body-timeout", default=30.0, show_default=True, type=float, help="HTTP: seconds to send a request's body."
)
@click.option(
    "--max-connections",
    default=1000,
    show_default=True,
    type=int,
    help="HTTP: open connections; past it, the oldest one still sending its request (or idle) is closed; one caller may use half.",
)
@click.option(
    "--listen-timeout",
    default=300.0,
    show_default=True,
    type=float,
    help="HTTP: seconds a subscriptions/listen event stream stays open (the client listens again).",
)
@click.option("--insecure-no-auth", is_flag=True, help="HTTP: allow a non-loopback bind without a token.")
@click.option("--tags", "tags", metavar="A,B", help="Serve only the tools tagged with one of these tags.")
@click.option("--toolset", metavar="NAME", help="Serve only the tools of this toolset of mcpgen.yaml's toolsets:.")
def serve(
    specs_dir: Path,
    verbose: bool,
    log_format: str,
    reload_: bool,
    http_: bool,
    host: str,
    port: int,
    token_envs: tuple[str, ...],
    allow_hosts: tuple[str, ...],
    allow_origins: tuple[str, ...],
    max_body_bytes: int,
    header_timeout: float,
    body_timeout: float,
    max_connections: int,
    listen_timeout: float,
    insecure_no_auth: bool,
    tags: str | None,
    toolset: str | None,
) -> None:
    """Serve the tools in SPECS_DIR over stdio (stdout carries only the protocol), or HTTP with --http.

    Refuses to start on an invalid spec and names it (file:line:col: message). Also imports the
    visible SPECS_DIR/*.py files (not _x.py or .x.py) that register tools with @registry.tool(),
    and names them on stderr.
    """
    import gc

    # Start-up builds only long-lived objects, so collections would find nothing (they cost ~15% of
    # start-up); afterwards the frozen start-up objects stay out of every later collection.
    gc.disable()
    try:  # a refusal to start leaves the collector as it found it, too
        import anyio

        from . import logs

        logs.setup(log_format, verbose)
        specs_dir = specs_dir.resolve()  # opening the project changes the working directory
        options = loaded = None
        if http_:  # the project is read once: its `http:` settings first, then it is opened
            from .http.connections import ConnectionLimits

            loaded = _load(specs_dir)
            limits = ConnectionLimits(header_timeout, body_timeout, max_connections, listen_timeout)
            options = _http_options(
                loaded, host, port, token_envs, allow_hosts, allow_origins, max_body_bytes, insecure_no_auth, limits
            )
        project = _open(specs_dir, loaded, positions=False)  # a server holds no YAML positions past its start
        from .serve.server import ToolServer  # the SDK (a second of imports) once the project opened: not for a refusal

        gc.freeze()
    finally:
        gc.enable()
    server = ToolServer(project.registry, tags=_start_serving(project, tags, toolset))
    _say_chartjs_fallback(project)
    reloader = None
    if reload_:
        from .serve.reload import Reloader

        reloader = Reloader(server, project, specs_dir)
    try:
        if options is not None:
            from .http.app import serve_http
            from .http.options import HTTPSetupError

            try:
                anyio.run(serve_http, server, options, reloader)
            except HTTPSetupError as exc:
                click.echo(f"mcpgen: error: {exc}", err=True)
                raise click.exceptions.Exit(2) from None
        else:
            from .identity import local_user

            click.echo(_serving_line(server.served_count(), specs_dir, sys.stdin.isatty()), err=True)
            with local_user(project.loaded.config.stdio_claims):  # the one local user
                anyio.run(server.run_stdio, reloader)
            click.echo(STDIN_CLOSED, err=True)
    except KeyboardInterrupt:
        pass
    finally:
        (reloader or project).close()
        from .serve import telemetry

        telemetry.shutdown()


def _say_chartjs_fallback(project) -> None:
    """One sentence on stderr when the project's MCP App must load Chart.js from the CDN. Only whether
    a copy exists is looked at: the app is built (and a copy checked) on its first read, not at start."""
    from .serve.mcp_app import chartjs_candidates, find_chartjs

    root = project.loaded.root
    if project.registry.apps and not any(path.is_file() for path in chartjs_candidates(root)):
        click.echo(f"mcpgen: {find_chartjs(root)[1]}.", err=True)


STDIN_CLOSED = "mcpgen: stdin closed (the client went away, or none was connected), so serving stopped"


def _serving_line(tools: int, specs_dir: Path, terminal: bool) -> str:
    """What `serve` says on stderr; on a terminal, also that it waits for a client (it has not hung).

    >>> _serving_line(1, Path("specs"), True)
    'mcpgen: serving 1 tool from specs over stdio; waiting for an MCP client on stdin (Ctrl-C to stop)'
    """
    line = f"mcpgen: serving {plural(tools, 'tool')} from {specs_dir} over stdio"
    return line + "; waiting for an MCP client on stdin (Ctrl-C to stop)" if terminal else line


def _start_serving(project, tags: str | None, toolset: str | None) -> frozenset[str] | None:
    """The tags to serve; the audit log and telemetry started per mcpgen.yaml. Exit 2 on bad settings."""
    from .errors import MCPGenError
    from .serve import audit, telemetry
    from .serve.server import ToolsetError, served_tags

    config = project.loaded.config
    try:
        served = served_tags(config.toolsets, tags, toolset)
        audit.setup(config.audit)
        telemetry.setup(config.telemetry)
    except MCPGenError as exc:
        project.close()
        if isinstance(exc, ToolsetError):
            raise click.BadParameter(str(exc), param_hint="--toolset") from None
        click.echo(f"mcpgen: error: {exc}", err=True)
        raise click.exceptions.Exit(2) from None
    return served


def _http_options(loaded, host, port, token_envs, allow_hosts, allow_origins, max_body, insecure, limits):
    """HTTP options from the flags plus mcpgen.yaml's `http:` section; exit 2 when unsafe."""
    from .errors import MCPGenError
    from .http.options import HTTPOptions, check_options, read_tokens
    from .spec.config import HTTPSettings

    if loaded is not None:
        settings, auth, root = loaded.config.http, loaded.config.auth, str(loaded.root)
    else:
        settings, auth, root = HTTPSettings(), None, "."  # opening the project reports the problems
    try:
        options = HTTPOptions(
            host=host,
            port=port,
            tokens=read_tokens([*token_envs, *settings.tokens_env]),
            allow_hosts=[*allow_hosts, *settings.allowed_hosts],
            allow_origins=[*allow_origins, *settings.allowed_origins],
            insecure_no_auth=insecure,
            max_body=max_body,
            limits=limits,
            auth=auth,
            root=root,
        )
        check_options(options)
    except MCPGenError as exc:
        click.echo(f"mcpgen: error: {exc}", err=True)
        raise click.exceptions.Exit(2) from None
    return options


@main.command()
@click.argument("tool")
@click.option(
    "-a",
    "--arg",
    "args",
    multiple=True,
    metavar="KEY=VALUE",
    help="An argument; repeat for more. Numbers, booleans and arrays are read as JSON (-a n=3, "
    '-a ids=\'["a","b"]\'); repeating an array\'s KEY adds one item each time (-a ids=a -a ids=b).',
)
@click.option(
    "-s", "--specs", "specs_dir", type=SPECS_DIR, default="specs", show_default=True, help="The specs folder."
)
@click.option("--json", "as_json", is_flag=True, help="Print the raw result as JSON.")
@click.option(
    "--download",
    "download_to",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    metavar="FILE",
    help="Also write the whole result (the tool's download: link) to FILE: .parquet for Parquet, else CSV.",
)
def call(tool: str, args: tuple[str, ...], specs_dir: Path, as_json: bool, download_to: Path | None) -> None:
    """Run TOOL once, without a client, and print its answer. Only TOOL's spec is compiled and only
    its connection opened (the other specs are read, or, while unchanged since the last call,
    remembered, and their errors are warnings); a tool that no spec defines is looked for in the
    Python files, which then run."""
    # One short call: its objects go when their counts fall to zero, and the cycle collector, which
    # walks every object the imports made again and again, waits till it ends; at the exit that
    # follows, the interpreter's last collections pass over what is left (frozen) rather than walk it.
    collecting = gc.isenabled()
    gc.disable()
    atexit.unregister(gc.freeze)  # once, however many calls a process makes
    atexit.register(gc.freeze)
    try:
        _call(tool, args, specs_dir, as_json, download_to)
    finally:
        if collecting:
            gc.enable()


def _call(tool: str, args: tuple[str, ...], specs_dir: Path, as_json: bool, download_to: Path | None) -> None:
    from .load.tools import defines

    _setup_logging()
    loaded = _load_for_call(specs_dir, tool)
    # A spec file defines TOOL by its name, or, for a file too broken to name one, by its stem: the
    # errors of the others are warnings here.
    needed = defines({str(s.path): s.name for s in loaded.specs}, tool) if loaded is not None else None
    project = _open(specs_dir, loaded, needed=needed, local_cursors=True)  # the next call continues a cursor
    if project.loaded.python_files and project.loaded.specs:  # the whole project: its Python tools are known
        from .load.tools import record_python_tools

        spec_tools = {s.name for s in project.loaded.specs}
        record_python_tools(specs_dir, [name for name in project.registry.names() if name not in spec_tools])
    try:
        if tool not in project.registry:
            from .text import did_you_mean

            names = project.registry.names()
            raise click.UsageError(
                f"no tool named '{tool}' in {specs_dir} (tools: {', '.join(names)}){did_you_mean(tool, names)}"
            )
        arguments = _parse_args(args, project.registry.get(tool).input_schema)
        from .identity import local_user

        if download_to is not None and project.registry.get(tool).download is None:
            raise click.UsageError(f"--download: tool '{tool}' offers no download (its spec sets no download:)")
        with local_user(project.loaded.config.stdio_claims):  # the one local user, as over stdio
            result = project.registry.call_sync(tool, arguments)
            written = _download(project.registry, tool, result, download_to) if download_to is not None else None
    finally:
        project.close()
    if as_json:
        from .commands.terminal import json_text

        dumped = json.dumps(
            result.to_mcp().model_dump(mode="json", by_alias=True, exclude_none=True), indent=2, ensure_ascii=False
        )
        click.echo(json_text(dumped))
    else:
        from .commands.terminal import print_result

        print_result(result)
    if written:
        click.echo(written, err=True)
    if result.is_error or (written is None and download_to is not None):
        raise click.exceptions.Exit(1)


def _download(registry, tool: str, result, path: Path) -> str | None:
    """Write the download that `result` links to (Parquet for a .parquet FILE, else CSV) to `path`; what
    happened, in one line on stderr (None: nothing was written, and why was said)."""
    import base64

    import anyio

    from .errors import MCPGenError

    wanted = "application/vnd.apache.parquet" if path.suffix.lower() in (".parquet", ".pq") else "text/csv"
    links = {c.mime_type: c.uri for c in result.content if c.type == "resource_link"}
    if result.is_error or not links:
        click.echo(
            f"mcpgen: {path} not written: the answer {'is an error' if result.is_error else 'has no rows'}", err=True
        )
        return None
    uri = links.get(wanted)
    if uri is None:
        click.echo(f"mcpgen: {path} not written: tool '{tool}' offers {', '.join(links)}, not {wanted}", err=True)
        return None
    try:
        contents = anyio.run(registry.download, tool, uri)
    except MCPGenError as exc:
        click.echo(f"mcpgen: {path} not written: {exc}", err=True)
        return None
    data = base64.b64decode(contents.blob) if hasattr(contents, "blob") else contents.text.encode("utf-8")
    path.write_bytes(data)
    return f"mcpgen: wrote {path} ({len(data):,} bytes, {wanted})"


def _parse_args(pairs: tuple[str, ...], schema: dict) -> dict:
    """KEY=VALUE pairs; values of non-string parameters are read as JSON (3, true, ["a","b"]); an
    array parameter also takes one item per repeated KEY.

    >>> schema = {"properties": {"ids": {"type": "array", "items": {"type": "integer"}}, "q": {"type": "string"}}}
    >>> _parse_args(("ids=1", "ids=2", "q=a,b"), schema), _parse_args(('ids=[1, 2]',), schema)
    ({'ids': [1, 2], 'q': 'a,b'}, {'ids': [1, 2]})
    >>> _parse_args(('ids=["a,b", "c"]', "ids=d"), {"properties": {"ids": {"type": "array", "items": {"type": "string"}}}})
    {'ids': ['a,b', 'c', 'd']}
    """
    out: dict = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise click.BadParameter(f"'{pair}' is not KEY=VALUE", param_hint="-a")
        prop = schema.get("properties", {}).get(key, {})
        if prop.get("type") == "array":
            whole = _read_value(value, prop) if value.lstrip().startswith("[") else None
            items = whole if isinstance(whole, list) else [_read_value(value, prop.get("items", {}))]
            out[key] = [*out.get(key, []), *items]
            continue
        if key in out:
            raise click.BadParameter(f"{key} is given twice (only an array parameter takes several)", param_hint="-a")
        out[key] = _read_value(value, prop)
    return out


def _read_value(text: str, schema: dict):
    """The text itself for a string parameter, else the JSON it holds (else the text)."""
    if schema.get("type") == "string":
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


@main.command(name="list")
@click.argument("specs_dir", type=SPECS_DIR)
def list_tools(specs_dir: Path) -> None:
    """List the tools in SPECS_DIR with their parameters."""
    from rich.console import Console

    from .commands.terminal import tool_table

    _setup_logging()
    project = _open(specs_dir)
    table = tool_table(project.registry)
    project.close()
    Console().print(table)


@main.command()
@click.argument("specs_dir", type=SPECS_DIR)
@click.option(
    "--live",
    is_flag=True,
    help="Also describe the queries of SQLAlchemy connections (nothing runs, nothing is written).",
)
@click.option("--static", is_flag=True, help="Open no connection: skip describing DuckDB queries and their columns.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "grouped", "json", "github"]),
    default="text",
    show_default=True,
    help="text: one path:line:col: severity: message line per problem; grouped: by file; "
    "json for programs; github for Actions annotations.",
)
@click.option("--strict", is_flag=True, help="Warnings fail too.")
@click.option(
    "--timeout", type=float, default=10.0, show_default=True, help="Seconds per connection and query description."
)
@click.option("--show-sql", is_flag=True, help="Print the statement each spec runs on its connection (translated).")
def validate(specs_dir: Path, live: bool, static: bool, fmt: str, strict: bool, timeout: float, show_sql: bool) -> None:
    """Check every spec in SPECS_DIR. Exit 0 clean, 1 problems found, 2 could not run.

    Queries on DuckDB connections are described (not run) so that every column a chart, table or
    template names is checked; --live does the same on SQLAlchemy connections.
    """
    from .commands.reports import FORMATS, format_statements
    from .commands.validate import run_validate
    from .errors import SpecError
    from .serve.mcp_app import find_chartjs

    if live and static:
        raise click.UsageError("--live and --static contradict each other; give one")
    try:
        loaded = None
        if show_sql:  # read once: the statements are printed, then the same project is checked
            from .load.project import load_project

            loaded = load_project(specs_dir)
            click.echo(format_statements(loaded))
        report = run_validate(specs_dir, live=live, timeout=timeout, columns=not static, loaded=loaded)
    except SpecError as exc:
        for problem in exc.problems:
            click.echo(str(problem), err=True)
        raise click.exceptions.Exit(2) from None
    found, sentence = find_chartjs(specs_dir.resolve().parent)
    if found is None:  # the MCP App falls back to the CDN: say so
        report.notes.append(sentence + ".")
    kwargs = {"color": sys.stdout.isatty()} if fmt in ("text", "grouped") else {}
    click.echo(FORMATS[fmt](report, strict, **kwargs), color=kwargs.get("color"))
    raise click.exceptions.Exit(report.exit_code(strict))


@main.command()
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path), default=".")
def init(folder: Path) -> None:
    """Start a project in FOLDER (default: here): mcpgen.yaml, a small data file and one spec with
    tests, which validate, test and serve at once; prints the client configuration to use it."""
    from .commands.clients import CLIENTS, server_launch, server_name
    from .commands.starter import StarterError, create_project

    try:
        written = create_project(folder)
    except (StarterError, OSError) as exc:
        click.echo(f"mcpgen: error: {exc}", err=True)
        raise click.exceptions.Exit(1) from None
    specs = folder / "specs"
    for path in written:
        click.echo(f"wrote {path}")
    click.echo(f"\nNext: mcpgen validate {specs} && mcpgen test {specs} && mcpgen call largest_cities --specs {specs}")
    click.echo(
        f"To use it from an MCP client, run mcpgen config claude|vscode|cursor {specs} --write, "
        "or add this to the client's configuration:\n"
    )
    document = CLIENTS["claude"].document(server_name(folder), server_launch(specs), {})
    click.echo(json.dumps(document, indent=2))


@main.command(name="config")
@click.argument("client", type=click.Choice(["claude", "cursor", "vscode"]))
@click.argument("specs_dir", type=SPECS_DIR)
@click.option(
    "--write", is_flag=True, help="Merge it into the client's file: other servers are kept, the old file is FILE.bak."
)
@click.option(
    "--file",
    "file_",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The client's file [default: Claude Desktop's claude_desktop_config.json, the project's "
    ".vscode/mcp.json or .cursor/mcp.json].",
)
@click.option(
    "--name", "server", metavar="NAME", default=None, help="The server's name [default: the project folder's]."
)
@click.option(
    "--http", "url", metavar="URL", default=None, help="Reach a running `mcpgen serve --http` at URL instead."
)
def client_config(
    client: str, specs_dir: Path, write: bool, file_: Path | None, server: str | None, url: str | None
) -> None:
    """Print the configuration that makes CLIENT (claude, vscode or cursor) start `mcpgen serve
    SPECS_DIR`, in the client's format with absolute paths and the environment variables the project
    needs by name; --write merges it into the client's file."""
    from .commands.clients import ClientConfigError, set_up_client
    from .spec.config import ProjectConfig

    loaded = _load(specs_dir)
    if loaded is None or loaded.errors:
        click.echo(
            f"mcpgen: warning: {specs_dir} has errors (see mcpgen validate {specs_dir}); "
            "serve refuses to start until they are fixed",
            err=True,
        )
    config = loaded.config if loaded is not None else ProjectConfig()
    if url is not None and not url.startswith(("http://", "https://")):
        raise click.BadParameter(f"'{url}' is not an http:// or https:// URL", param_hint="--http")
    try:
        out, notes = set_up_client(client, specs_dir, config, write=write, path=file_, server=server, url=url)
    except (ClientConfigError, OSError) as exc:
        click.echo(f"mcpgen: error: {exc}", err=True)
        raise click.exceptions.Exit(1) from None
    click.echo(out)
    for note in notes:
        click.echo(f"mcpgen: {note}", err=True)


@main.command()
@click.argument("specs_dir", type=SPECS_DIR)
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None, help="[default: NAME.mcpb here]"
)
@click.option("--name", metavar="NAME", default=None, help="The bundle's name [default: the project folder's].")
@click.option("--version", "version", default="0.1.0", show_default=True, help="The bundle's version.")
@click.option("--author", default=None, help="The author the host shows [default: your login name].")
@click.option("--description", default=None, help="What the host shows [default: the tools' names].")
@click.option("--include", multiple=True, metavar="GLOB", help="More files to pack, relative to the project folder.")
@click.option("--force", is_flag=True, help="Replace the bundle (and server.json) if they exist.")
@click.option("--server-json", is_flag=True, help="Also write server.json for the MCP registry beside the bundle.")
@click.option("--registry-name", metavar="NS/NAME", default=None, help="server.json's name, e.g. io.github.ana/sales.")
@click.option("--url", metavar="URL", default=None, help="server.json: the https:// URL the bundle is published at.")
def bundle(
    specs_dir: Path,
    output: Path | None,
    name: str | None,
    version: str,
    author: str | None,
    description: str | None,
    include: tuple[str, ...],
    force: bool,
    server_json: bool,
    registry_name: str | None,
    url: str | None,
) -> None:
    """Pack SPECS_DIR's project (mcpgen.yaml, the specs, the data files its SQL names) into an MCP
    Bundle (.mcpb) that a desktop host installs in one step, asking for the variables the project
    needs; --server-json also writes the MCP registry's server.json for it."""
    import getpass

    from .commands.bundle import BundleError, BundleOptions, make_bundle
    from .commands.clients import server_name

    loaded = _load(specs_dir)
    if loaded is None or loaded.errors:
        for problem in loaded.errors if loaded is not None else []:
            click.echo(str(problem), err=True)
        click.echo(
            f"mcpgen: error: {specs_dir} has errors (see mcpgen validate {specs_dir}); nothing was packed", err=True
        )
        raise click.exceptions.Exit(1)
    name = name or server_name(loaded.root)
    options = BundleOptions(
        name, version, author or getpass.getuser(), description, include, registry_name if server_json else None, url
    )
    out = output or Path(f"{name}.mcpb")
    try:
        document, digest, json_path = make_bundle(loaded, out, options, server_json=server_json, force=force)
    except (BundleError, OSError) as exc:
        click.echo(f"mcpgen: error: {exc}", err=True)
        raise click.exceptions.Exit(1) from None
    asked = ", ".join(document.get("user_config", {})) or "nothing"
    click.echo(f"wrote {out} ({plural(len(document['tools']), 'tool')}; the host asks for {asked}; sha256 {digest})")
    if json_path is not None:
        click.echo(f"wrote {json_path} (publish the bundle at {url} first: the registry checks its sha256)")


@main.command()
@click.argument("source", required=False)
@click.option("--table", metavar="TABLE", help="The table to draft from (of SOURCE, else of --connection).")
@click.option("--sql", metavar="QUERY", help="A query to draft from instead of a table (the project's SQL dialect).")
@click.option(
    "--connection",
    metavar="NAME",
    help="The connection of mcpgen.yaml to read (or to add for SOURCE) [default: default].",
)
@click.option(
    "--password-env", metavar="VAR", help="The environment variable holding SOURCE URL's password (never printed)."
)
@click.option("--name", metavar="NAME", help="The tool's name [default: from the table or file].")
@click.option("--source", "sources", metavar="URL", multiple=True, help="Where the data comes from (repeatable).")
@click.option(
    "-s",
    "--specs",
    "specs_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default="specs",
    show_default=True,
    help="The specs folder to write NAME.yaml into.",
)
@click.option("--print", "to_stdout", is_flag=True, help="Print the spec on stdout instead of writing it.")
@click.option("--force", is_flag=True, help="Replace a spec (or mcpgen.yaml) that exists.")
def draft(
    source: str | None,
    table: str | None,
    sql: str | None,
    connection: str | None,
    password_env: str | None,
    name: str | None,
    sources: tuple[str, ...],
    specs_dir: Path,
    to_stdout: bool,
    force: bool,
) -> None:
    """Draft a spec from SOURCE (a CSV, TSV, Parquet or JSON file, a DuckDB or SQLite file, or a database
    URL) or from --table/--sql on a connection of mcpgen.yaml: parameters, query, prose, chart and tests
    read from the data; sources from --source, else a placeholder that validate points at."""
    from .commands.draft import DraftError, write
    from .commands.draft import draft as make_draft

    _setup_logging()
    try:
        drafted = make_draft(specs_dir, source, table, sql, connection, name, sources, password_env)
        written = [] if to_stdout else write(drafted, force)
    except DraftError as exc:
        click.echo(f"mcpgen: error: {exc}", err=True)
        raise click.exceptions.Exit(1) from None
    if to_stdout:
        click.echo(drafted.text, nl=False)
        if drafted.config_text:
            click.echo(f"mcpgen: the spec needs this mcpgen.yaml beside {specs_dir}:\n{drafted.config_text}", err=True)
    for path in written:
        click.echo(f"wrote {path}")
    if drafted.placeholder_line is not None:
        where = (
            f"line {drafted.placeholder_line} of the spec"
            if to_stdout
            else f"{drafted.path}:{drafted.placeholder_line}"
        )
        click.echo(
            f"{where}: write where the data comes from there (sources:); "
            "until then the tool is not served (or draft again with --source URL)",
            err=True,
        )
    if written:
        click.echo(f"Next: mcpgen validate {specs_dir} && mcpgen test {specs_dir}")


@main.command(name="test")
@click.argument("specs_dir", type=SPECS_DIR)
@click.option("-k", "select", metavar="NAME", help="Only tests whose tool name or test name contains NAME.")
def test_specs(specs_dir: Path, select: str | None) -> None:
    """Run the `tests:` of every spec in SPECS_DIR against the real connections; exit 1 on any failure."""
    from .commands.spectest import run_tests, summary
    from .errors import SpecError

    _setup_logging()
    try:
        results = run_tests(specs_dir, select, warn=lambda problem: click.echo(str(problem), err=True))
    except SpecError as exc:
        for problem in exc.problems:
            click.echo(str(problem), err=True)
        raise click.exceptions.Exit(2) from None
    from .commands.terminal import plain

    for result in results:
        click.echo(plain(result.line()))  # a reason may quote a database error or a value
    click.echo(summary(results, select))
    if any(not r.passed for r in results):
        raise click.exceptions.Exit(1)


@main.command(name="build-app")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder to write Chart.js into [default: mcpgen/vendor/ in the installed package].",
)
def build_app(out: Path | None) -> None:
    """Fetch the pinned Chart.js for the MCP App to inline, checked, as the install does: for an install
    that could not reach npm."""
    from .children import sigint_unblocked
    from .serve.mcp_app import build_html
    from .spec.models import AppSettings
    from .vendored import CHARTJS, VENDOR, VendorError, fetch

    try:
        with sigint_unblocked():  # npm, which it runs, ends on the Ctrl-C that ends mcpgen
            path = fetch(out or VENDOR)
    except VendorError as exc:
        raise click.ClickException(str(exc)) from None
    size = len(build_html(AppSettings(), path)[0].encode())
    click.echo(f"Chart.js {CHARTJS.version} (SHA-256 checked) is in {path}; the app resource is {size:,} bytes.")
    if out is not None and out.resolve() != VENDOR.resolve():
        click.echo(f"Point MCPGEN_CHARTJS at {path} for `mcpgen serve` to inline it.")


@main.command()
@click.option("--config", "of_config", is_flag=True, help="The schema of mcpgen.yaml instead of spec files.")
def schema(of_config: bool) -> None:
    """Print the JSON Schema of spec files (or of mcpgen.yaml) for editors."""
    from .spec.schema import config_schema, dumps, spec_schema

    click.echo(dumps(config_schema() if of_config else spec_schema()), nl=False)


@main.command()
@click.argument("specs_dir", type=SPECS_DIR)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="Port on 127.0.0.1 (0: any free port).",
)
@click.option(
    "--chartjs",
    metavar="PATH",
    default=None,
    help="A local copy of the pinned Chart.js (chart.umd.min.js) for the app to inline "
    "[default: as `mcpgen serve` finds it, else the CDN].",
)
@VERBOSE
def preview(specs_dir: Path, port: int, chartjs: str | None, verbose: bool) -> None:
    """Preview the tools in SPECS_DIR in a browser, drawn by their MCP App as hosts show them (loopback only)."""
    from .commands.preview import PreviewError, chartjs_file, run

    _setup_logging(verbose)
    try:
        chartjs_file(chartjs)
    except ValueError as exc:
        raise click.BadParameter(str(exc).removeprefix("--chartjs: "), param_hint="--chartjs") from None
    try:
        run(specs_dir, port=port, chartjs=chartjs, announce=lambda line: click.echo(line, err=True))
    except PreviewError as exc:
        raise click.ClickException(str(exc)) from None
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    run()
