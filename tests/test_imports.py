"""What `import mcpgen`, `mcpgen serve specs/` and `mcpgen validate specs/` load, pinned (as click's
tests/test_imports.py pins its own), so that the start-up budget cannot grow unnoticed.

Each runs in a fresh interpreter that writes `sys.modules` when it exits. mcpgen's own modules
must be exactly the listed ones (a module newly loaded at start is a decision: add it here); other
packages may be fewer than listed, never more. The standard library is not counted.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

DUMP = """
import atexit, json, sys
out = sys.argv[1]
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
if len(sys.argv) > 2:
    sys.argv = ["mcpgen", *sys.argv[2:]]
    from mcpgen.cli import main
    main()
else:
    import mcpgen
"""

SDK = {"mcp", "mcp_types", "anyio", "sniffio", "httpx2", "certifi", "idna", "starlette", "sse_starlette", "uvicorn"}
SDK |= {"python_multipart", "cryptography", "opentelemetry", "jwt", "h11", "typing_inspection", "annotated_types"}
CORE = {"pydantic", "pydantic_core", "typing_extensions", "yaml", "click", "jinja2", "markupsafe", "sqlglot", "re2"}
CORE |= {"duckdb", "mypy_extensions", "cython_runtime", "annotated_types", "typing_inspection"}

CHECKS = [f"checks.{m}" for m in ("charts", "duckdb_functions", "filters", "init_statements", "passwords")]
CHECKS += ["checks.row_references"]
CHECKS += ["checks", "checks.sql_paths", "checks.templates", "checks.urls"]
LOADING = ["version", "errors", "identity", "keys", "limits", "text", "redaction", "cachefile", "cli", *CHECKS]
LOADING += ["spec", "spec.config", "spec.models", "spec.params", "spec.patterns", "spec.prompts", "spec.yamlload"]
LOADING += ["sql", "sql.dialects", "sql.lexing", "sql.pages", "sql.statements", "sql.transpile"]
LOADING += [
    "templates",
    "templates.budget",
    "templates.fast",
    "templates.filters",
    "templates.render",
]
LOADING += [
    "engines",
    "engines.control",
    "engines.deadlines",
    "engines.duckdb",
    "engines.factory",
    "engines.file_reach",
    "engines.snapshots",
]
LOADING += ["engines.protocol", "engines.slots", "serve", "serve.mcp_app", "vendored"]
LOADING += ["load", "load.checked", "load.columns", "load.discovery", "load.icons", "load.messages", "load.project"]
LOADING += ["load.prompts", "load.spec_checks", "load.specs"]

SERVE = [*LOADING, "logs", "serve.audit", "serve.listen", "serve.project", "serve.registry", "serve.server"]
SERVE += ["serve.stdio", "serve.frames", "serve.telemetry", "answer", "answer.cache", "answer.charts", "answer.compile"]
SERVE += ["answer.completions", "answer.cursors", "answer.downloads"]
SERVE += ["serve.tasks", "serve.asking", "answer.asking"]
SERVE += ["answer.numbers", "answer.plain", "answer.prompts", "answer.results"]
SERVE += ["answer.tool"]
VALIDATE = [*LOADING, "commands", "commands.reports", "commands.validate"]
CALL = [
    m
    for m in [*SERVE, "commands", "commands.terminal", "load.tools"]
    if m not in ("serve.server", "serve.stdio", "serve.frames", "serve.listen", "serve.tasks", "serve.asking")
]
# A call of a spec kept checked, with its statement kept (`load.checked`): no SQL is read, so neither
# mcpgen's SQL modules nor the spec checks, and no sqlglot at all.
KEPT_CALL = [m for m in CALL if not m.startswith("sql") and m != "load.spec_checks"]
TERMINAL = {"anyio", "sniffio", "rich", "markdown_it", "mdurl", "pygments"}


def modules(tmp_path: Path, *command: str) -> list[str]:
    """sys.modules at the exit of an interpreter that ran `command` (none: `import mcpgen`), with a cache
    folder of the test's own: its first command finds nothing kept, the next what the first kept."""
    out = tmp_path / "modules.json"
    subprocess.run(
        [sys.executable, "-c", DUMP, str(out), *command],
        cwd=REPO,
        env={**os.environ, "MCPGEN_CACHE_DIR": str(tmp_path / "cache")},
        input=b"",  # a pipe closed at once: `serve` over stdio stops at the end of its input
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )
    return json.loads(out.read_text())


def loaded(tmp_path: Path, *command: str) -> tuple[set[str], set[str]]:
    """(mcpgen modules, other top-level packages) that running `command` loaded."""
    return split(modules(tmp_path, *command))


def split(names: list[str]) -> tuple[set[str], set[str]]:
    """(mcpgen modules, other top-level packages) of a `modules` answer."""
    ours = {n for n in names if n == "mcpgen" or n.startswith("mcpgen.")}
    tops = {n.split(".")[0] for n in names} - set(sys.stdlib_module_names) - {"mcpgen", "__main__"} - bare()
    return ours, {t for t in tops if not t.startswith("_")}


@functools.cache
def bare() -> frozenset[str]:
    """What the interpreter itself loads here before any mcpgen code (site hooks, .pth files)."""
    run = subprocess.run(
        [sys.executable, "-c", "import json, sys; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        timeout=60,
        check=True,
    )
    return frozenset(n.split(".")[0] for n in json.loads(run.stdout))


def mcpgen(names: list[str]) -> set[str]:
    return {"mcpgen", *(f"mcpgen.{n}" for n in names)}


def test_import_mcpgen_loads_nothing_else(tmp_path):
    ours, others = loaded(tmp_path)
    assert ours == mcpgen(["version"])
    assert others == set()


def test_serve_loads_its_budget(tmp_path):
    ours, others = loaded(tmp_path, "serve", "specs")
    assert ours == mcpgen(SERVE)
    assert others <= CORE | SDK | {"watchfiles"}, others - (CORE | SDK)
    assert not others & {"sqlalchemy", "pyspark", "rich", "jsonschema", "psycopg", "pymysql"}


def test_serve_refusing_a_project_loads_no_sdk(tmp_path):
    """A project that cannot start is refused before the SDK (a second of imports) is loaded."""
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "broken.yaml").write_text("description: [unclosed\n")
    ours, others = loaded(tmp_path, "serve", str(specs))
    assert "mcpgen.serve.project" in ours  # it got as far as opening the project
    assert not others & {"mcp", "mcp_types", "starlette"}, others


def test_validate_loads_neither_the_sdk_nor_serving(tmp_path):
    ours, others = loaded(tmp_path, "validate", "specs")
    assert ours == mcpgen(VALIDATE)
    assert others <= CORE, others - CORE
    assert not any(n.startswith(("mcpgen.answer", "mcpgen.serve.server", "mcpgen.http")) for n in ours)


@pytest.fixture(scope="module")
def top_cities_calls(tmp_path_factory) -> tuple[list[str], list[str]]:
    """The modules of a first `mcpgen call` of a DuckDB spec (a fresh cache folder) and of a second (the
    project recorded, the spec checked and kept, its statement prepared): three tests read them."""
    tmp_path = tmp_path_factory.mktemp("call")
    command = ("call", "top_cities", "-a", "top_n=2", "-s", "specs")
    return modules(tmp_path, *command), modules(tmp_path, *command)


def test_call_of_a_spec_loads_neither_the_sdk_nor_the_protocol_types(top_cities_calls):
    """`mcpgen call` of a spec builds mcpgen's own result (mcpgen.answer.plain) and prints it: neither
    the SDK (the `mcp` package, about a second of imports) nor the protocol types (`mcp_types`, a
    quarter of a second), which only a server's answer and a hand-written tool need, is loaded."""
    ours, others = split(top_cities_calls[0])
    assert ours == mcpgen(CALL), sorted(ours ^ mcpgen(CALL))
    assert others <= CORE | TERMINAL, others - (CORE | TERMINAL)
    assert not others & {"mcp", "mcp_types"}


NOT_FOR_CALL = {"mcp", "sqlalchemy", "pyspark", "psycopg", "psycopg2", "pymysql", "jsonschema", "starlette"}
NOT_FOR_CALL |= {"sse_starlette", "uvicorn", "httpx", "httpx2", "watchfiles", "opentelemetry", "cryptography", "jwt"}
NOT_OURS_FOR_CALL = ("mcpgen.http", "mcpgen.engines.sqlalchemy", "mcpgen.engines.spark", "mcpgen.spec.schema")
NOT_OURS_FOR_CALL += tuple(f"mcpgen.serve.{m}" for m in ("server", "stdio", "listen", "tasks", "asking", "reload"))
NOT_OURS_FOR_CALL += tuple(f"mcpgen.commands.{m}" for m in ("validate", "spectest", "preview", "draft", "bundle"))
NOT_OURS_FOR_CALL += ("mcpgen.commands.clients", "mcpgen.commands.profile", "mcpgen.commands.starter")
SQLGLOT_PER_DIALECT = ("sqlglot.dialects.", "sqlglot.generators.", "sqlglot.parsers.", "sqlglot.typing.")


def test_a_cached_call_of_a_duckdb_spec_loads_neither_servers_nor_other_dialects(top_cities_calls):
    """The second `mcpgen call` of a DuckDB spec (its project recorded, its spec checked and kept):
    no server stack (the SDK, HTTP, stdio), no protocol types, no other engine's driver, no command it does not run,
    and of sqlglot's per-dialect modules (each costs tens of milliseconds) DuckDB's alone."""
    names = top_cities_calls[1]
    assert "mcpgen.load.tools" in names  # the call did run
    assert not {n.split(".")[0] for n in names} & (NOT_FOR_CALL | {"mcp_types"})
    assert [n for n in names if n.startswith(NOT_OURS_FOR_CALL)] == []
    dialects = {n.split(".")[2] for n in names if n.startswith(SQLGLOT_PER_DIALECT)}
    assert dialects <= {"duckdb", "dialect", "base"}, dialects


def test_a_call_of_a_kept_spec_reads_no_sql(top_cities_calls):
    """Once a `mcpgen call` has kept the spec checked and its statement prepared (it read the whole
    project; the next reads the spec's own file, and what the whole's held), a call runs no SQL check:
    it loads no sqlglot (about a tenth of a second and 10 MiB) and none of mcpgen's SQL modules."""
    names = top_cities_calls[1]
    assert {n for n in names if n.startswith("mcpgen")} == mcpgen(KEPT_CALL)
    assert not {n.split(".")[0] for n in names} & {"sqlglot", "re2"}


def test_a_cached_call_of_the_shipped_python_tool_loads_no_sdk_and_no_spec_checks(tmp_path):
    """The shipped Python tool imports the protocol types alone (`mcp_types`), and a call of it
    whose project is recorded imports the Python files without reading a spec: no DuckDB either."""
    command = ("call", "airline_lookup", "-a", "query=UA", "-s", "specs")
    modules(tmp_path, *command)  # records the project and the Python files' tools
    names = modules(tmp_path, *command)
    tops = {n.split(".")[0] for n in names}
    assert "mcpgen.load.tools" in names and "mcp_types" in tops
    assert not tops & (NOT_FOR_CALL | {"duckdb"}), tops & (NOT_FOR_CALL | {"duckdb"})


BUILT = """
import atexit, json, sys
out = sys.argv[1]


def dump():
    from pydantic import BaseModel

    def below(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from below(sub)

    ours = {c for c in below(BaseModel) if c.__module__.startswith("mcpgen") and c.__pydantic_complete__}
    open(out, "w").write(json.dumps(sorted(f"{c.__module__}.{c.__qualname__}" for c in ours)))


atexit.register(dump)
sys.argv = ["mcpgen", *sys.argv[2:]]
from mcpgen.cli import main
main()
"""


def test_a_call_of_a_kept_project_builds_no_validator_but_the_answers(tmp_path):
    """A `mcpgen call` of an unchanged project reads mcpgen.yaml and the spec as kept (`load.checked`) and
    builds no validator of theirs (each tens of ms; the first one built also looks up pydantic's plugins):
    of mcpgen's models only the answer's, which holds every result to the output schema, is built."""
    out = tmp_path / "built.json"
    command = [sys.executable, "-c", BUILT, str(out), "call", "top_cities", "-a", "top_n=2", "-s", "specs"]
    env = {**os.environ, "MCPGEN_CACHE_DIR": str(tmp_path / "cache")}
    for _ in range(2):  # the first keeps the project; the second reads it as kept
        subprocess.run(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, timeout=120, check=True)
    assert json.loads(out.read_text()) == ["mcpgen.answer.results.DataToolPayload"]


def test_a_restart_of_serve_on_an_unchanged_project_reads_no_sql(tmp_path):
    """`serve` started again on a project whose specs and statements are kept (`load.checked`) checks no
    SQL: it loads no sqlglot (about 9 MiB of a server's idle memory) and none of mcpgen's SQL modules."""
    modules(tmp_path, "serve", "specs")  # keeps the specs checked and their statements prepared
    names = modules(tmp_path, "serve", "specs")
    assert "mcpgen.serve.stdio" in names  # it did serve
    assert not {n.split(".")[0] for n in names} & {"sqlglot", "re2"}
    assert [n for n in names if n.startswith(("mcpgen.sql", "mcpgen.load.spec_checks"))] == []
