import contextlib
import csv
import gc
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpgen import cli
from mcpgen.cli import main

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def runner(monkeypatch):
    monkeypatch.chdir(REPO)  # open_project changes directory; restore it after each test
    return CliRunner()


def test_call_prints_prose_table_and_sources(runner):
    result = runner.invoke(main, ["call", "top_cities", "-a", "top_n=2"])
    assert result.exit_code == 0, result.output
    assert "Shanghai" in result.output and "Beijing" in result.output
    assert "source: https://www.geonames.org/" in result.output


def test_a_call_runs_no_cycle_collection_and_leaves_the_collector_on(runner):
    """The collector would walk every object the imports made, again and again: a call runs without it."""
    started: list[int] = []  # collections that started inside the call (click's parsing around it may collect)

    def seen(phase: str, info: dict) -> None:
        frame = sys._getframe()
        while phase == "start" and frame is not None:
            if frame.f_code is cli._call.__code__:
                started.append(info["generation"])
            frame = frame.f_back

    gc.callbacks.append(seen)
    try:
        result = runner.invoke(main, ["call", "top_cities", "-a", "top_n=2"])
    finally:
        gc.callbacks.remove(seen)
    assert result.exit_code == 0, result.output
    assert started == [] and gc.isenabled()


FROZEN_AT_EXIT = """
import atexit, gc, sys
atexit.register(lambda: sys.stderr.write(f"frozen {gc.get_freeze_count()}"))  # runs after mcpgen's handlers
sys.argv = ["mcpgen", "call", "top_cities", "-a", "top_n=2"]
from mcpgen.cli import main
main()
"""


def test_what_a_call_leaves_is_frozen_before_the_interpreter_exits(tmp_path):
    """The interpreter's last collections pass over it rather than walk each object once more."""
    env = {**os.environ, "MCPGEN_CACHE_DIR": str(tmp_path / "cache")}
    run = subprocess.run(
        [sys.executable, "-c", FROZEN_AT_EXIT], capture_output=True, text=True, timeout=60, env=env, cwd=REPO
    )
    assert run.returncode == 0, run.stderr
    assert "Shanghai" in run.stdout and int(run.stderr.rsplit("frozen ", 1)[1]) > 10_000


def test_call_json_is_the_raw_result(runner):
    result = runner.invoke(main, ["call", "country_profile", "-a", "country=NO", "--json"])
    data = json.loads(result.stdout)
    assert data["structuredContent"]["sources"][0] == "https://www.geonames.org/countries/NO/"
    assert "force" in data["structuredContent"]


def test_call_prints_the_prose_exactly_as_the_model_reads_it(runner):
    """Not re-wrapped at 80 columns when piped: the same text as the JSON result's."""
    raw = json.loads(runner.invoke(main, ["call", "country_profile", "-a", "country=JP", "--json"]).stdout)
    prose = raw["content"][0]["text"]
    assert max(len(line) for line in prose.splitlines()) > 80  # long enough that wrapping would show
    printed = runner.invoke(main, ["call", "country_profile", "-a", "country=JP"], env={"COLUMNS": "80"}).stdout
    assert prose in printed
    assert printed.startswith(raw["structuredContent"]["force"] + "\n\n" + prose)


def test_call_takes_arrays_as_json_or_one_item_per_repeated_key(runner):
    def call(*args):
        result = runner.invoke(main, ["call", "continent_population", *args, "--json"])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)["structuredContent"]["table"]

    as_json = call("-a", 'continents=["EU","AS"]')
    assert call("-a", "continents=EU", "-a", "continents=AS") == as_json
    assert {row[0] for row in as_json[1:]} == {"Europe", "Asia"}
    twice = runner.invoke(main, ["call", "top_cities", "-a", "top_n=2", "-a", "top_n=3"])
    assert twice.exit_code == 2 and "top_n is given twice" in twice.output
    assert "-a ids=a -a ids=b" in " ".join(runner.invoke(main, ["call", "--help"]).output.split())


def test_call_with_a_bad_argument_exits_1_with_the_sentence(runner):
    result = runner.invoke(main, ["call", "top_cities", "-a", "top_n=0"])
    assert result.exit_code == 1
    assert "Invalid argument 'top_n': 0 is less than the minimum of 1." in result.output


@pytest.mark.parametrize(("typed", "meant"), [("top_citys", "top_cities"), ("Country_Profile", "country_profile")])
def test_call_of_a_misspelt_tool_names_the_nearest(typed, meant, runner):
    result = runner.invoke(main, ["call", typed])
    assert result.exit_code == 2 and f"no tool named '{typed}' in specs (tools: " in result.output, result.output
    assert result.output.rstrip().endswith(f"; did you mean '{meant}'?"), result.output


def test_list_prints_every_tool_with_its_parameters(runner):
    listed = runner.invoke(main, ["list", "specs"], env={"COLUMNS": "300"})  # wide enough for one line a row
    assert listed.exit_code == 0, listed.output
    rows = [
        [cell.strip() for cell in line.split("│")[1:-1]] for line in listed.stdout.splitlines() if line.startswith("│")
    ]
    assert {tool: (parameters, source) for tool, _title, parameters, source in rows} == {
        "busiest_routes": (
            "origin?: string, month?: integer, top_n?: integer",
            "busiest_routes.yaml",
        ),
        "carrier_performance": (
            "start?: date, end?: date, origins?: string[], late_after_minutes?: integer",
            "carrier_performance.yaml",
        ),
        "continent_population": ("continents?: string[]", "continent_population.yaml"),
        "country_profile": ("country: string", "country_profile.yaml"),
        "daily_traffic": ("month: integer, origin?: string", "daily_traffic.yaml"),
        "late_departures": (
            "since: date-time, until?: date-time, origin?: string, min_delay_minutes?: integer",
            "late_departures.yaml",
        ),
        "life_expectancy_trend": (
            "from_year?: integer, to_year?: integer, weighted?: boolean",
            "life_expectancy_trend.yaml",
        ),
        "top_cities": ("top_n?: integer, country?: string", "top_cities.yaml"),
        "wealth_vs_health": (
            "year?: integer, continent?: string, min_gdp_per_capita?: number",
            "wealth_vs_health.yaml",
        ),
        "airline_lookup": ("query?: string", "python_tools.py"),
    }
    assert rows[0][1] == "Busiest routes out of New York City"
    # the Python tool without a DataToolOutput annotation is named on stderr, not listed
    assert "miles_to_km is not registered" in listed.stderr


@pytest.mark.parametrize(
    ("command", "expected"),
    [(["--help"], "Usage: python -m mcpgen"), (["call", "top_cities", "-a", "top_n=2"], "Shanghai")],
)
def test_python_dash_m_mcpgen_is_the_command_line(command, expected, tmp_path):
    """`python -m mcpgen ...`, the form MCP client configurations often use, runs the same commands."""
    env = {**os.environ, "MCPGEN_CACHE_DIR": str(tmp_path / "cache")}
    run = subprocess.run(
        [sys.executable, "-m", "mcpgen", *command], capture_output=True, text=True, timeout=120, env=env, cwd=REPO
    )
    assert run.returncode == 0, run.stderr
    assert expected in run.stdout


def test_validate_passes_on_the_shipped_specs(runner):
    checked = runner.invoke(main, ["validate", "specs"])
    assert checked.exit_code == 0, checked.output


def test_serve_refuses_an_invalid_spec_and_names_it(tmp_path):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "bad.yaml").write_text("description: d\nsql: DROP TABLE t\nsources: [https://x.org/]\ncontent: x\n")
    proc = subprocess.run(
        [sys.executable, "-m", "mcpgen.cli", "serve", str(specs)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 1
    assert f"{specs / 'bad.yaml'}:2:1:" in proc.stderr and "DROP" in proc.stderr
    assert proc.stdout == ""


@pytest.mark.slow
def test_serve_refuses_a_column_the_query_does_not_return(tmp_path):
    specs = tmp_path / "specs"
    specs.mkdir()
    spec = "description: d\nsql: SELECT 1 AS n\nsources: [https://x.org/]\ncontent: '{{ rows[0].m }}'\n"
    (specs / "one.yaml").write_text(spec)
    proc = subprocess.run(
        [sys.executable, "-m", "mcpgen.cli", "serve", str(specs)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 1 and proc.stdout == ""
    assert f"{specs / 'one.yaml'}:4:22: content: the template reads column 'm' of a row" in proc.stderr


def _serve_first_line(specs: Path, stdin) -> str:
    """The first line `mcpgen serve` writes on stderr, then stop it."""
    import select

    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpgen.cli", "serve", str(specs)],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        ready, _, _ = select.select([proc.stderr], [], [], 60)
        assert ready, "serve said nothing within 60 s"
        return proc.stderr.readline().decode().rstrip("\n")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.slow
def test_serve_on_a_terminal_says_it_waits_for_a_client_and_counts_in_words(tmp_path):
    import os
    import pty

    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "one.yaml").write_text("description: d\nsql: SELECT 1 AS n\nsources: [https://x.org/]\ncontent: x\n")
    terminal, other_end = pty.openpty()
    try:
        line = _serve_first_line(specs, other_end)
    finally:
        os.close(terminal)
        os.close(other_end)
    assert line == (
        f"mcpgen: serving 1 tool from {specs} over stdio; waiting for an MCP client on stdin (Ctrl-C to stop)"
    )
    assert _serve_first_line(specs, subprocess.PIPE) == f"mcpgen: serving 1 tool from {specs} over stdio"


@pytest.fixture
def loads(monkeypatch):
    """How many times a command reads a project from its files."""
    import mcpgen.load.project
    import mcpgen.serve.project

    count = []
    real = mcpgen.load.project.load_project

    def counted(*args, **kwargs):
        count.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(mcpgen.load.project, "load_project", counted)
    monkeypatch.setattr(mcpgen.serve.project, "load_project", counted)
    return count


def test_validate_show_sql_reads_the_project_once(runner, loads):
    result = runner.invoke(main, ["validate", "--show-sql", "specs"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("-- busiest_routes (busiest_routes.yaml): connection 'default', duckdb\n")
    assert len(loads) == 1


def test_serve_http_reads_the_project_once(runner, loads, monkeypatch):
    import mcpgen.http.app

    served = []

    async def serve_http(server, options, reloader=None):
        served.append((server.served_count(), options.port))

    monkeypatch.setattr(mcpgen.http.app, "serve_http", serve_http)
    result = runner.invoke(main, ["serve", "specs", "--http", "--port", "8123"])
    assert result.exit_code == 0, result.output
    assert served == [(10, 8123)] and len(loads) == 1


def _folder_project(tmp_path: Path) -> Path:
    """A project of its own: the spec `numbers`, a spec whose column error only describing its query
    finds, a spec named by `name:`, and a Python file that leaves a mark when it runs."""
    specs = tmp_path / "specs"
    specs.mkdir()
    good = (
        "description: Numbers.\nparameters:\n  n:\n    type: integer\n    description: how many\n    default: 2\n"
        "sql: SELECT range AS x FROM range(:n)\nsources: [https://example.org/]\n"
        "content: '{{ row_count }} numbers'\n"
    )
    (specs / "numbers.yaml").write_text(good)
    (specs / "renamed_file.yaml").write_text("name: renamed\n" + good)
    (specs / "columns.yaml").write_text(good.replace("{{ row_count }} numbers", "{{ rows[0].nope }}"))
    (specs / "tools.py").write_text("from pathlib import Path\nPath(__file__).with_name('ran.txt').write_text('ran')\n")
    return specs


def test_call_compiles_only_the_tools_own_spec(runner, tmp_path):
    """`call numbers` compiles numbers.yaml alone: the spec whose query would be described (and
    refused) is not, and the folder's Python file does not run (`serve` would refuse the folder and run it)."""
    specs = _folder_project(tmp_path)
    result = runner.invoke(main, ["call", "numbers", "-s", str(specs), "-a", "n=3", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["content"][0]["text"] == "3 numbers"
    assert "columns.yaml" not in result.stderr and "imported Python tools" not in result.stderr
    assert not (specs / "ran.txt").exists()
    renamed = runner.invoke(main, ["call", "renamed", "-s", str(specs), "--json"])
    assert renamed.exit_code == 0 and json.loads(renamed.stdout)["content"][0]["text"] == "2 numbers"
    own = runner.invoke(main, ["call", "columns", "-s", str(specs)])
    assert own.exit_code == 1 and "nope" in own.stderr


def test_call_of_a_tool_no_spec_defines_runs_the_python_files(runner, tmp_path):
    specs = _folder_project(tmp_path)
    result = runner.invoke(main, ["call", "renamed_file", "-s", str(specs)])
    assert result.exit_code != 0 and "no tool named 'renamed_file'" in result.output
    assert (specs / "ran.txt").exists()


PAGED_SPEC = """\
description: Japan's cities, largest first, five at a time.
sql: SELECT name, population FROM read_csv('cities.csv') WHERE country_code = 'JP' ORDER BY population DESC, name
page_size: 5
sources: ["https://www.geonames.org/"]
content: "{% for r in rows %}{{ r.name }}; {% endfor %}"
"""


def _japan_csv(path: Path) -> None:
    """The header and Japan's rows of examples/data/cities.csv: all that PAGED_SPEC reads, not 34,000 cities."""
    with (REPO / "examples/data/cities.csv").open(newline="") as source, path.open("w", newline="") as out:
        rows = csv.reader(source)
        csv.writer(out).writerows([next(rows), *(row for row in rows if row[2] == "JP")])


def _call(project: Path, state: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "XDG_STATE_HOME": str(state)}
    command = [sys.executable, "-m", "mcpgen.cli", "call", "japan", "--specs", str(project / "specs"), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env=env, cwd=project)


def test_one_mcpgen_call_continues_the_cursor_another_printed(tmp_path):
    """Each `mcpgen call` is a process of its own: the project's cursor key is kept for the user (mode
    0600, outside the project, so no repository holds it) and the next page comes from a second call."""
    project, state = tmp_path / "project", tmp_path / "state"
    (project / "specs").mkdir(parents=True)
    _japan_csv(project / "cities.csv")
    (project / "specs" / "japan.yaml").write_text(PAGED_SPEC)
    first = _call(project, state)
    assert first.returncode == 0, first.stderr
    cursor = re.search(r'cursor="([^"]+)"', first.stdout)
    assert cursor and "Rows 1 to 5; more remain" in first.stdout, first.stdout
    second = _call(project, state, "-a", f"cursor={cursor[1]}")
    assert second.returncode == 0, second.stdout + second.stderr
    assert "Rows 6 to 10" in second.stdout and "Tokyo" not in second.stdout, second.stdout
    (key,) = (state / "mcpgen" / "cursor-keys").iterdir()
    assert key.stat().st_mode & 0o777 == 0o600 and (state / "mcpgen" / "cursor-keys").stat().st_mode & 0o777 == 0o700
    assert not list(project.rglob("*.key"))


def test_a_cursor_from_another_key_is_refused_saying_why(tmp_path, monkeypatch):
    """In process (the key is read from its file at each call): another user's key refuses the cursor."""
    project = tmp_path / "project"
    (project / "specs").mkdir(parents=True)
    _japan_csv(project / "cities.csv")
    (project / "specs" / "japan.yaml").write_text(PAGED_SPEC)
    monkeypatch.chdir(project)

    def call(state: str, *args: str):
        return CliRunner().invoke(main, ["call", "japan", "--specs", "specs", *args], env={"XDG_STATE_HOME": state})

    cursor = re.search(r'cursor="([^"]+)"', call(str(tmp_path / "one")).stdout)
    assert cursor
    other = call(str(tmp_path / "two"), "-a", f"cursor={cursor[1]}")  # another user's key
    assert other.exit_code == 1
    said = " ".join(other.stderr.split())
    assert "it was signed with another key than this project's: mcpgen call keeps one per project and user" in said
    assert "set cursors.secret_env in mcpgen.yaml for one key everywhere" in said and "Traceback" not in said


SLOW_INIT = """connections:
  default:
    duckdb: ":memory:"
    init:
      - CREATE TABLE t AS SELECT max(hash(i)) AS s FROM range(1000000000000) r(i)
"""


def _as_from_a_terminal() -> None:
    """SIGINT handled and delivered as in a terminal's child: pytest-xdist's workers ignore it (a child
    inherits that), and the thread that starts the child may block it (a child inherits the mask too)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])


@pytest.mark.parametrize("command", [["validate", "specs"], ["call", "x"], ["test", "specs"]])
def test_ctrl_c_ends_a_command_with_one_sentence_and_status_130(command, tmp_path):
    """Ctrl-C while DuckDB works (a long `init`) ends the command at once: one line, status 130, no
    traceback and no abort of the process (the interpreter's exit used to meet DuckDB's threads)."""
    import signal

    import psutil

    (tmp_path / "specs").mkdir()
    (tmp_path / "mcpgen.yaml").write_text(SLOW_INIT)
    (tmp_path / "specs" / "x.yaml").write_text((REPO / "specs" / "top_cities.yaml").read_text())
    env = {**os.environ, "MCPGEN_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpgen", *command],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # As from a terminal: pytest-xdist's workers ignore SIGINT, and a child would inherit that.
        preexec_fn=_as_from_a_terminal,
    )
    try:
        watched = psutil.Process(proc.pid)
        for _ in range(600):  # until DuckDB's worker threads run the init (at most 60 s)
            if proc.poll() is not None or watched.num_threads() > 2:
                break
            psutil.wait_procs([watched], timeout=0.1)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait(timeout=10)
    assert (proc.returncode, err) == (130, "mcpgen: interrupted (Ctrl-C)\n"), (out, err)


def test_main_called_inside_another_program_leaves_its_signals_alone():
    """Only the program (`run`) takes SIGINT with a thread of its own: `main` run by another program (here
    CliRunner) must not block SIGINT there, or every process that program starts would ignore Ctrl-C."""
    import signal

    result = CliRunner().invoke(main, ["schema"])
    assert result.exit_code == 0, result.output
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    assert not [t for t in threading.enumerate() if t.name == "mcpgen-ctrl-c"]


FAKE_NPM = """#!{python}
import os, signal, sys, time
mark = os.environ["FAKE_NPM_MARK"]
def say(text):
    with open(mark, "w") as f:
        f.write(f"{{os.getpid()}} {{text}}")
signal.signal(signal.SIGINT, lambda *_: (say("SIGINT"), sys.exit(1)))
say("blocked" if signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []) else "ready")
time.sleep(60)
"""


def test_ctrl_c_reaches_the_child_a_one_shot_command_runs(tmp_path):
    """`build-app` runs npm: the terminal's Ctrl-C (SIGINT to the foreground process group) ends mcpgen with
    status 130 and reaches npm too, which a child started from a thread that blocks SIGINT would never see."""
    import signal

    bin_dir, mark = tmp_path / "bin", tmp_path / "mark"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text(FAKE_NPM.format(python=sys.executable))
    (bin_dir / "npm").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_NPM_MARK": str(mark)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpgen", "build-app", "--out", str(tmp_path / "out")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a process group of its own, as a terminal's foreground job
        preexec_fn=_as_from_a_terminal,
    )
    child = None
    try:
        for _ in range(600):  # until npm runs (at most 60 s)
            if proc.poll() is not None or (mark.exists() and " " in mark.read_text()):
                break
            threading.Event().wait(0.1)
        child, said = mark.read_text().split(" ")
        assert said == "ready", "npm started with SIGINT blocked"
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130 and err.endswith("mcpgen: interrupted (Ctrl-C)\n"), (out, err)
        for _ in range(100):  # npm's handler writes the mark (at most 10 s)
            if mark.read_text().endswith("SIGINT"):
                break
            threading.Event().wait(0.1)
        assert mark.read_text() == f"{child} SIGINT"
    finally:
        proc.kill()
        proc.wait(timeout=10)
        if child is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(child), signal.SIGKILL)


@pytest.mark.parametrize(
    ("args", "folder", "sentence"),
    [  # a spec file for its folder; the default --specs, and the folder named, from inside the specs folder
        (["validate", "specs/a.yaml"], ".", "specs/a.yaml is a file: give the folder that holds it (specs)"),
        (["list", "a.yaml"], "specs", "a.yaml is a file: give the folder that holds it (.)"),
        (
            ["call", "a"],
            "specs",
            "there is no folder specs here, in specs itself: give it as ., or run from its parent",
        ),
        (
            ["serve", "specs"],
            "specs",
            "there is no folder specs here, in specs itself: give it as ., or run from its parent",
        ),
    ],
)
def test_a_specs_folder_given_wrongly_names_the_folder_meant(tmp_path, monkeypatch, args, folder, sentence):
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "a.yaml").write_text(
        "description: d\nsql: SELECT 1 AS x\nsources: [https://x.org/]\ncontent: x\n"
    )
    monkeypatch.chdir(tmp_path / folder)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert sentence in " ".join(result.output.split()), result.output
