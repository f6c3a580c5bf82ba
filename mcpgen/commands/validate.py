"""`mcpgen validate`: run the static checks over a folder (in parallel when much of a big one is not in
the cache of checked specs), and the column checks: open each connection, describe every query
without running its work, and check every column that charts, `table:` and templates name (`load.columns`). DuckDB
connections (in process, local files) are described by default; SQLAlchemy connections
only with `--live`.

The static checks themselves are in `load` and `checks`; the text, JSON and GitHub forms of
the report in `reports`. Exit codes: 0 clean, 1 problems found, 2 could not run.

    report = run_validate("specs")       # Report: problems, files, connections, seconds
    report.exit_code()                   # 0 clean, 1 problems found
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import cachefile
from ..errors import Findings, Problem
from ..load import checked
from ..load.columns import LIVE_TIMEOUT, check_spec_live, checked_by_default
from ..load.project import connection_where
from ..redaction import redact, secrets_of
from ..spec.params import param_types
from ..text import first_line

if TYPE_CHECKING:
    from ..engines.protocol import Engine
    from ..load.specs import LoadedProject, LoadedSpec

PARALLEL_MIN = 200  # static validation forks workers from this many spec files on


# --------------------------------------------------------------------------------------------
# Running the checks


@dataclass
class Report(Findings):
    """What one `validate` run found."""

    specs_dir: str
    files: int  # spec files read
    problems: list[Problem]
    live: bool = False
    seconds: float = 0.0
    connections: dict[str, str] = field(default_factory=dict)  # name -> "ok", "unreachable", "refused" or "not checked"
    notes: list[str] = field(default_factory=list)  # facts that pass or fail nothing (e.g. the app's Chart.js)

    def exit_code(self, strict: bool = False) -> int:
        return 1 if self.errors or (strict and self.warnings) else 0


def run_validate(
    specs_dir: str | Path,
    live: bool = False,
    timeout: float = LIVE_TIMEOUT,
    jobs: int | None = None,
    columns: bool = True,
    loaded: LoadedProject | None = None,
) -> Report:
    """Check a project. Raises SpecError when it cannot run at all (no such folder).

    `columns`: describe the queries of DuckDB connections (in process, nothing to reach);
    `live`: describe those of every connection. `loaded`: the project already read from
    `specs_dir` (`--show-sql` prints its statements first), checked here rather than read again."""
    import gc

    start = time.perf_counter()
    collecting = gc.isenabled()
    gc.disable()  # loading makes many small objects and no garbage worth a collection (20% faster)
    try:
        return _run_validate(specs_dir, live, timeout, jobs, start, columns, loaded)
    finally:
        if collecting:
            gc.enable()


def _run_validate(specs_dir, live, timeout, jobs, start, columns=True, loaded=None) -> Report:
    from ..load.discovery import spec_paths
    from ..load.project import load_project, unchecked

    specs_dir = Path(specs_dir)
    paths = spec_paths(specs_dir)  # raises SpecError for a missing folder
    if jobs is None:
        jobs = _jobs(len(paths))
        if jobs > 1:  # what the cache holds is read faster here than workers start: they check the rest
            jobs = _jobs(unchecked(specs_dir, paths, described=columns))
    if live or jobs <= 1 or loaded is not None:
        loaded = loaded or load_project(specs_dir)
        problems = list(loaded.problems)
        problems += _python_syntax(loaded.python_files, specs_dir)
        report = Report(str(specs_dir), len(paths), problems, live)
        if live or columns:
            _live(loaded, report, timeout, everywhere=live)
    else:
        try:
            problems, connections = _static_parallel(specs_dir, paths, jobs, columns, timeout)
        except Exception:  # a worker died (or fork is unavailable): do it here instead
            return _run_validate(specs_dir, live, timeout, 1, start, columns)
        report = Report(str(specs_dir), len(paths), problems, live, connections=connections)
    report.problems = _sorted(report.problems)
    report.seconds = time.perf_counter() - start
    return report


def _jobs(files: int) -> int:
    if files < PARALLEL_MIN or not hasattr(os, "fork"):
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8, files // 100))


def _static_parallel(
    specs_dir: Path, paths: list[Path], jobs: int, columns: bool, timeout: float = LIVE_TIMEOUT
) -> tuple[list[Problem], dict[str, str]]:
    """The checks of a big project in `jobs` forked workers (each opens its own DuckDB connections
    for the column checks); names are checked for uniqueness here."""
    import multiprocessing

    from ..load.discovery import python_paths
    from ..load.project import check_unique_names
    from ..load.prompts import load_prompts

    # Warm up here (lazy imports: the SQL dialect, ...), not once per worker.
    _static_chunk(specs_dir, paths[:1], False, timeout)  # what it used of the cache is kept by a worker too
    if columns:
        from ..engines import duckdb as _  # noqa: F401  imported once here, not once per worker (no connection yet)
    chunks = [paths[i::jobs] for i in range(jobs)]
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        results = pool.starmap(_static_chunk, [(specs_dir, chunk, columns, timeout) for chunk in chunks])
    cachefile.save([result[3] for result in results])  # the project's cache files, as one process reads them
    problems: list[Problem] = []
    named: list[_Named] = []
    connections: dict[str, str] = {}
    for i, (chunk_problems, chunk_names, chunk_connections, _kept) in enumerate(results):
        problems += [p for p in chunk_problems if i == 0 or not p.path.endswith("mcpgen.yaml")]
        named += chunk_names
        for name, state in chunk_connections.items():
            connections[name] = state if connections.get(name) in (None, "ok") else connections[name]
    named.sort(key=lambda n: str(n.path))
    check_unique_names(named, problems)
    python_files = python_paths(specs_dir)
    load_prompts(specs_dir, None if python_files else {n.name for n in named}, problems)
    return problems + _python_syntax(python_files, specs_dir), connections


@dataclass
class _Named:
    """What the unique-name check needs of a spec, cheap to send between processes."""

    name: str
    path: Path
    line: int | None
    col: int | None

    def where(self, key: str) -> tuple[int | None, int | None]:
        return self.line, self.col


def _static_chunk(specs_dir: Path, chunk: list[Path], columns: bool, timeout: float) -> tuple:
    """(the problems, names and connections of a part of a project, and what it used of the project's cache)."""
    from ..load.project import load_project

    with cachefile.collecting() as kept:
        loaded = load_project(specs_dir, paths=chunk, unique_names=False, scope=())
        report = Report(str(specs_dir), len(chunk), list(loaded.problems))
        if columns:
            _live(loaded, report, timeout, everywhere=False)
    names = [_Named(s.name, s.path, *s.where("name")) for s in loaded.specs]
    return report.problems, names, report.connections, kept


def _python_syntax(files: list[Path], specs_dir: Path) -> list[Problem]:
    """Syntax errors in specs/*.py, found by compiling (never running) them."""
    out = []
    for path in files:
        shown = str(specs_dir / path.name)
        try:
            compile(path.read_bytes(), shown, "exec", dont_inherit=True)
        except SyntaxError as exc:
            out.append(Problem(shown, exc.lineno, exc.offset, f"syntax error: {exc.msg}"))
        except (OSError, ValueError) as exc:
            out.append(Problem(shown, None, None, f"cannot read the file: {exc}"))
    return out


def _sorted(problems: list[Problem]) -> list[Problem]:
    unique = list(dict.fromkeys(problems))
    return sorted(unique, key=lambda p: (p.path, p.line or 0, p.col or 0))


# --------------------------------------------------------------------------------------------
# Live checks


def _live(loaded: LoadedProject, report: Report, timeout: float, everywhere: bool = True) -> None:
    """Open each connection the specs use, describe every query, and check the columns they name.

    `everywhere=False` leaves out the connections that are not `checked_by_default`."""
    from ..engines.factory import create_engine

    secrets = secrets_of(loaded.config)
    config_path = str(loaded.config_path) if loaded.config_path else str(loaded.specs_dir)
    waiting = [p for s in loaded.specs for p in s.untyped]  # for their database's column types
    failed_names = {p.path for p in loaded.errors if p not in waiting}
    if loaded.config_path is not None and str(loaded.config_path) in failed_names:
        return  # connections cannot be trusted until mcpgen.yaml itself is right
    specs = [s for s in loaded.specs if str(s.path) not in failed_names]
    cwd = os.getcwd()
    config_file = Path(cwd, loaded.config_path) if loaded.config_path else None
    engines: dict[str, Engine] = {}
    try:
        os.chdir(loaded.root)  # DuckDB reads relative paths from the working directory
        for name in dict.fromkeys(s.spec.connection for s in specs):
            conn = loaded.config.connections[name]
            if not everywhere and not checked_by_default(conn):
                report.connections[name] = "not checked"
                continue
            try:
                engine = _bounded(
                    lambda name=name, conn=conn: create_engine(name, conn, loaded.root),
                    timeout,
                    f"connection '{name}' did not open within {timeout:g} s",
                )
                engines[name] = engine
                role = _bounded(
                    lambda engine=engine: _role(engine, timeout),
                    timeout + 1,
                    f"connection '{name}' did not answer within {timeout:g} s",
                )
                if role is not None:
                    line, col = connection_where(config_file, name)
                    report.problems.append(Problem(config_path, line, col, redact(role[1], secrets), role[0]))
                    if role[0] == "error":  # its queries would all be refused: nothing more to check
                        report.connections[name] = "refused"
                        _close(engines.pop(name))
                        continue
                _bounded(
                    lambda engine=engine: _probe(engine, timeout),
                    timeout + 1,
                    f"connection '{name}' did not answer within {timeout:g} s",
                )
                report.connections[name] = "ok"
            except Exception as exc:  # one clear error per connection, whatever went wrong
                report.connections[name] = "unreachable"
                broken = engines.pop(name, None)
                if broken is not None:
                    _close(broken)
                line, col = connection_where(config_file, name, getattr(exc, "setting", ()))
                message = first_line(exc)
                if not message.startswith(f"connection '{name}'"):
                    message = f"connection '{name}' could not be opened: {message}"
                report.problems.append(Problem(config_path, line, col, redact(message, secrets)))
        if waiting:
            _learn_column_types(loaded, engines, timeout, report)
            failed_names = {p.path for p in loaded.errors}
            specs = [s for s in specs if str(s.path) not in failed_names]
        _describe_all(loaded, specs, engines, timeout, report)
    finally:
        os.chdir(cwd)
        for engine in engines.values():
            _close(engine)


def _learn_column_types(loaded: LoadedProject, engines: dict[str, Engine], timeout: float, report: Report) -> None:
    """The specs waiting for their database's column types checked again with them (those of the
    connections opened here), and the report told what that changed."""
    from ..load.spec_checks import learn_column_types

    def columns_of(name: str):
        read = getattr(engines.get(name), "column_types", None)
        return read(timeout) if callable(read) else None

    before = list(loaded.problems)
    learn_column_types(loaded, columns_of)
    gone = [p for p in before if p not in loaded.problems]
    report.problems = [p for p in report.problems if p not in gone] + [p for p in loaded.problems if p not in before]


def _describe_all(
    loaded: LoadedProject,
    specs: list[LoadedSpec],
    engines: dict[str, Engine],
    timeout: float,
    report: Report,
) -> None:
    """Describe every query whose connection is open; what describing found on a DuckDB connection is
    kept with the state of the data (`load.checked`: its data is the project's files), and that state."""
    secrets = secrets_of(loaded.config)
    state = checked.data_state(loaded.root, loaded.config)
    with cachefile.session(loaded.root, loaded.specs_dir.resolve(), "described"):
        if state is not None and cachefile.get(checked.state_key(state)) is None:
            cachefile.put(checked.state_key(state), b"described")
        for spec in specs:
            engine = engines.get(spec.spec.connection)
            if engine is None:
                continue
            duckdb = checked_by_default(loaded.config.connections[spec.spec.connection])
            report.problems += [
                Problem(p.path, p.line, p.col, redact(p.message, secrets), p.severity)
                for p in _described(spec, engine, timeout, state if duckdb else None)
            ]


def _described(spec: LoadedSpec, engine: Engine, timeout: float, state: str | None) -> list[Problem]:
    """`check_spec_live`, or what it found before in this `state` of the data (None: not kept); what it
    finds is kept with the statement it described, which serving and calling the spec then run."""
    name = checked.described_key(spec, state) if state is not None else None
    kept = checked.described(name, spec.sql) if name is not None else None
    if kept is not None:
        return kept[0]
    try:
        statement = engine.prepare(spec.sql, param_types(spec.spec.parameters))
    except Exception:  # check_spec_live says why, at its place in the spec
        return check_spec_live(spec, engine, timeout)
    found = check_spec_live(spec, engine, timeout, statement)
    if name is not None:
        checked.keep_described(name, found, spec.sql, statement)
    return found


def _role(engine: Engine, timeout: float) -> tuple[str, str] | None:
    """What the connection's database role may do beyond reading, where the engine can tell."""
    check = getattr(engine, "check_role", None)
    return check(timeout) if callable(check) else None


def _probe(engine: Engine, timeout: float) -> None:
    """Reach the database once (engines that connect lazily would otherwise fail once per spec)."""
    engine.describe(engine.prepare("SELECT 1 AS ok"), timeout=timeout)


def _close(engine: Any) -> None:
    try:
        engine.close()
    except Exception:
        pass


def _bounded(fn, timeout: float, message: str):
    """fn() in a daemon thread, given up on after `timeout` seconds."""
    box: dict[str, Any] = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True, name="mcpgen-validate")
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise TimeoutError(message)
    if "error" in box:
        raise box["error"]
    return box["value"]
