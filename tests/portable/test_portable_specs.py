"""The shipped specs, written once in DuckDB SQL, give the same tables on DuckDB, SQLite, PostgreSQL,
MariaDB and Spark (a local two-executor cluster, tests/conftest.py; more Spark tests in
tests/engines/test_spark.py).

Per engine a project of its own in a temporary folder: an mcpgen.yaml with one `default`
connection and a copy of every shipped spec, which mcpgen translates to the engine's dialect
when it loads them. Every engine holds the same data: cities,
countries, gapminder, airlines and airports from examples/data, and the flights of days 1-3
of every month (33,055 rows, a deterministic sample that keeps loading fast). The rows come
out of DuckDB once and go into every other engine as they are, with column types mapped from
DuckDB's DESCRIBE; the DuckDB project reads the same sample from a Parquet file, and Spark
reads Parquet files DuckDB wrote.

Each spec is called through `project.registry.call_sync` with no arguments (when it has no
required parameter) and with the arguments of each of its `tests:` entries that does not
expect an error; `structuredContent["table"]` and `sources` must equal DuckDB's.

PostgreSQL gets a schema of this session's own (reached through `search_path`), MariaDB and
Spark a database of their own; PostgreSQL's and MariaDB's are dropped at the end (Spark's goes
with the cluster). They skip when the service is absent
(fail under MCPGEN_REQUIRE_SERVICES=1).
"""

from __future__ import annotations

import datetime as dt
import math
import secrets
import shutil
import sqlite3
from pathlib import Path

import duckdb
import pytest
import services
import yaml
from sqlalchemy.engine import make_url

from mcpgen.serve.project import open_project

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "examples" / "data"
pytestmark = pytest.mark.slow

TABLES = {  # name -> how DuckDB reads it
    "cities": f"read_csv('{DATA / 'cities.csv'}')",
    "countries": f"read_csv('{DATA / 'countries.csv'}')",
    "gapminder": f"read_csv('{DATA / 'gapminder.csv'}')",
    "airlines": f"read_csv('{DATA / 'airlines.csv'}')",
    "airports": f"read_csv('{DATA / 'airports.csv'}')",
}
FLIGHTS_SAMPLE = f"SELECT * FROM read_parquet('{DATA / 'flights.parquet'}') WHERE day <= 3 ORDER BY year, month, day, sched_dep_time, carrier, flight"

# The natural keys, made primary keys on every server engine as a real database would have them
# (MariaDB joins unindexed tables with nested loops: 33,055 flights x 1,458 airports per call).
# The loader checks each is unique in the data.
KEYS = {"cities": "geonameid", "countries": "iso", "airlines": "carrier", "airports": "faa"}

# DuckDB's DESCRIBE type -> the column type per engine.
TYPES = {
    "BIGINT": {"postgresql": "BIGINT", "mariadb": "BIGINT", "sqlite": "INTEGER"},
    "DOUBLE": {"postgresql": "DOUBLE PRECISION", "mariadb": "DOUBLE", "sqlite": "REAL"},
    "VARCHAR": {"postgresql": "TEXT", "mariadb": "VARCHAR({n})", "sqlite": "TEXT"},
    # time_hour: kept in UTC; no portable spec reads it.
    "TIMESTAMP WITH TIME ZONE": {"postgresql": "TIMESTAMPTZ", "mariadb": "DATETIME", "sqlite": "TEXT"},
}

# Numbers must agree to 1 part in 10^6, relatively, or by 0.0001 absolutely. Why not exactly:
# floating-point sums and averages may be added up in a different order on each engine (the
# last bits differ), and MariaDB computes a DECIMAL division with div_precision_increment = 4
# extra digits by default, so 1.0 * a / b there is exact only to 4 decimal places. Values a
# spec rounds (ROUND(x, 1)) must still match up to that noise: 5.9 against 6.0 fails. (On the
# shipped data every number is in fact equal on all four engines.) An integer and a float of
# the same value count as equal here; test_integer_cells_stay_integers checks the JSON type.
REL_TOL = 1e-6
ABS_TOL = 1e-4


# -- the data, once per session --------------------------------------------------------------


class Data:
    def __init__(self, folder: Path):
        con = duckdb.connect()
        self.flights_parquet = folder / "flights_sample.parquet"
        con.execute(f"COPY ({FLIGHTS_SAMPLE}) TO '{self.flights_parquet}' (FORMAT parquet)")
        sources = {
            **{name: f"SELECT * FROM {reader}" for name, reader in TABLES.items()},
            "flights": f"SELECT * FROM read_parquet('{self.flights_parquet}')",
        }
        self.columns: dict[str, list[tuple[str, str]]] = {}
        self.rows: dict[str, list[tuple]] = {}
        for name, select in sources.items():
            self.columns[name] = [(r[0], r[1]) for r in con.execute(f"DESCRIBE {select}").fetchall()]
            self.rows[name] = con.execute(select).fetchall()
        for table, key in KEYS.items():
            i = [c for c, _ in self.columns[table]].index(key)
            values = [r[i] for r in self.rows[table]]
            assert None not in values and len(set(values)) == len(values), f"{table}.{key} is not a key"
        con.close()
        assert len(self.rows["flights"]) == 33055

    def create_table(self, table: str, engine: str, qualified: str, quote: str = "") -> str:
        cols = [f"{quote}{c}{quote} {t}" for c, t in self.column_types(table, engine)]
        if table in KEYS:
            cols.append(f"PRIMARY KEY ({KEYS[table]})")
        return f"CREATE TABLE {qualified} ({', '.join(cols)})"

    def column_types(self, table: str, engine: str) -> list[tuple[str, str]]:
        """(column name, type) for `engine`; lower-case names on PostgreSQL, which folds unquoted
        identifiers (a spec's `lifeExp` reaches PostgreSQL as lifeexp)."""
        out = []
        for i, (name, duck_type) in enumerate(self.columns[table]):
            assert duck_type in TYPES, f"{table}.{name}: no mapping for DuckDB type {duck_type}"
            type_ = TYPES[duck_type][engine]
            if "{n}" in type_:
                longest = max((len(r[i]) for r in self.rows[table] if r[i] is not None), default=1)
                type_ = type_.format(n=max(longest, 1))
            out.append((name.lower() if engine == "postgresql" else name, type_))
        return out

    def rows_for(self, table: str, engine: str) -> list[tuple]:
        kinds = [t for _, t in self.columns[table]]
        if "TIMESTAMP WITH TIME ZONE" not in kinds:
            return self.rows[table]
        at = [i for i, t in enumerate(kinds) if t == "TIMESTAMP WITH TIME ZONE"]

        def convert(value):
            if value is None or engine == "postgresql":
                return value
            utc = value.astimezone(dt.UTC).replace(tzinfo=None)
            return utc if engine == "mariadb" else utc.isoformat(" ")

        return [tuple(convert(v) if i in at else v for i, v in enumerate(row)) for row in self.rows[table]]


@pytest.fixture(scope="session")
def data(tmp_path_factory) -> Data:
    return Data(tmp_path_factory.mktemp("portable_data"))


# -- loading per engine ----------------------------------------------------------------------


def load_sqlite(data: Data, path: Path) -> None:
    con = sqlite3.connect(path)
    with con:
        for table in data.rows:
            cols = data.column_types(table, "sqlite")
            con.execute(data.create_table(table, "sqlite", table))
            con.executemany(
                f"INSERT INTO {table} VALUES ({', '.join('?' * len(cols))})", data.rows_for(table, "sqlite")
            )
    con.close()


def load_postgresql(data: Data, schema: str) -> None:
    with services.connect("postgresql") as con:
        cur = con.cursor()
        cur.execute(f"CREATE SCHEMA {schema}")
        for table in data.rows:
            cols = data.column_types(table, "postgresql")
            cur.execute(data.create_table(table, "postgresql", f"{schema}.{table}"))
            with cur.copy(f"COPY {schema}.{table} ({', '.join(c for c, _ in cols)}) FROM STDIN") as copy:
                for row in data.rows_for(table, "postgresql"):
                    copy.write_row(row)
            cur.execute(f"ANALYZE {schema}.{table}")


def load_mariadb(data: Data, database: str) -> None:
    with services.connect("mariadb") as con:
        cur = con.cursor()
        cur.execute(f"CREATE DATABASE {database} CHARACTER SET utf8mb4")
        for table in data.rows:
            cols = data.column_types(table, "mariadb")
            cur.execute(data.create_table(table, "mariadb", f"{database}.{table}", quote="`"))
            # pymysql sends an INSERT ... VALUES with many rows per statement for executemany.
            cur.executemany(
                f"INSERT INTO {database}.{table} VALUES ({', '.join(['%s'] * len(cols))})",
                data.rows_for(table, "mariadb"),
            )


def shipped_spec_files() -> list[Path]:
    return sorted((REPO / "specs").glob("*.yaml"))


def write_project(folder: Path, connection: dict) -> Path:
    """folder/mcpgen.yaml with `connection` as `default` and the repo's defaults, and folder/specs."""
    shipped = yaml.safe_load((REPO / "mcpgen.yaml").read_text())
    config = {"connections": {"default": connection}, "defaults": shipped.get("defaults", {})}
    (folder / "mcpgen.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    specs = folder / "specs"
    specs.mkdir()
    for path in shipped_spec_files():
        shutil.copyfile(path, specs / path.name)
    return specs


def _open(specs: Path):
    with pytest.MonkeyPatch.context() as mp:  # open_project chdirs to the project root
        mp.chdir(specs.parent)
        return open_project(specs)


@pytest.fixture(scope="session")
def duckdb_project(data, tmp_path_factory):
    folder = tmp_path_factory.mktemp("portable_duckdb")
    # DuckDB reads only files inside the project: copy the data in, and name it relative to the project.
    (folder / "data").mkdir()
    for path in [*(DATA / f"{name}.csv" for name in TABLES), data.flights_parquet]:
        shutil.copyfile(path, folder / "data" / path.name)
    init = [f"CREATE TABLE {name} AS SELECT * FROM read_csv('data/{name}.csv')" for name in TABLES]
    # A table, not a view as in the shipped mcpgen.yaml: the sample is small, and file access ends after init.
    init.append(f"CREATE TABLE flights AS SELECT * FROM read_parquet('data/{data.flights_parquet.name}')")
    project = _open(write_project(folder, {"duckdb": ":memory:", "init": init}))
    yield project
    project.close()


@pytest.fixture(scope="session")
def sqlite_project(data, tmp_path_factory):
    folder = tmp_path_factory.mktemp("portable_sqlite")
    load_sqlite(data, folder / "flights.db")
    project = _open(write_project(folder, {"url": f"sqlite:///{folder / 'flights.db'}"}))
    yield project
    project.close()


@pytest.fixture(scope="session")
def postgresql_project(data, postgres_url, tmp_path_factory):
    schema = f"mcpgen_portable_{secrets.token_hex(4)}"
    folder = tmp_path_factory.mktemp("portable_postgresql")
    try:
        load_postgresql(data, schema)
        project = _open(
            write_project(folder, {"url": postgres_url, "connect_args": {"options": f"-csearch_path={schema}"}})
        )
        yield project
        project.close()
    finally:
        with services.connect("postgresql") as con:
            con.cursor().execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@pytest.fixture(scope="session")
def mariadb_project(data, mariadb_url, tmp_path_factory):
    database = f"mcpgen_portable_{secrets.token_hex(4)}"
    folder = tmp_path_factory.mktemp("portable_mariadb")
    try:
        load_mariadb(data, database)
        url = make_url(mariadb_url).set(database=database).render_as_string(hide_password=False)
        project = _open(write_project(folder, {"url": url}))
        yield project
        project.close()
    finally:
        with services.connect("mariadb") as con:
            con.cursor().execute(f"DROP DATABASE IF EXISTS {database}")


@pytest.fixture(scope="session")
def spark_project(data, spark_cluster, tmp_path_factory):
    """The same rows as Parquet tables of a database of this session's own on the local Spark cluster."""
    folder = tmp_path_factory.mktemp("portable_spark")
    con = duckdb.connect()
    tables = {"flights": data.flights_parquet}
    for name, reader in TABLES.items():
        tables[name] = folder / f"{name}.parquet"
        con.execute(f"COPY (SELECT * FROM {reader}) TO '{tables[name]}' (FORMAT parquet)")
    con.close()
    database = f"mcpgen_portable_{secrets.token_hex(4)}"
    spark_cluster.load_tables(tables, database)
    project = _open(write_project(folder, {"spark": spark_cluster.remote, "database": database}))
    yield project
    project.close()


# -- the calls -------------------------------------------------------------------------------


def calls() -> list[tuple[str, dict, str]]:
    """(spec, args, label) for every shipped spec: {} when nothing is required, then each
    `tests:` entry that does not expect an error."""
    out = []
    for path in shipped_spec_files():
        spec = yaml.safe_load(path.read_text())
        name = spec.get("name", path.stem)
        params = spec.get("parameters") or {}
        required = [p for p, d in params.items() if d.get("required", "default" not in d)]
        if not required:
            out.append((name, {}, "no arguments"))
        for i, case in enumerate(spec.get("tests") or []):
            expect = case.get("expect") or {}
            if "error_contains" in expect:
                continue
            out.append((name, case.get("args") or {}, case.get("name") or f"test {i + 1}"))
    return out


CALLS = calls()
_duckdb_answers: dict = {}
_answers: dict = {}


def answer(engine: str, project, name: str, args: dict):
    """The CallToolResult of one call on `engine`, made once per session."""
    key = (engine, name, repr(sorted(args.items())))
    if key not in _answers:
        _answers[key] = project.registry.call_sync(name, dict(args))
    return _answers[key]


def duckdb_answer(duckdb_project, name: str, args: dict):
    key = (name, repr(sorted(args.items())))
    if key not in _duckdb_answers:
        result = duckdb_project.registry.call_sync(name, dict(args))
        assert not result.is_error, f"DuckDB: {name} {args}: {result.content[0].text}"
        _duckdb_answers[key] = result.structured_content
    return _duckdb_answers[key]


def duckdb_text(duckdb_project, name: str, args: dict) -> str:
    return duckdb_project.registry.call_sync(name, dict(args)).content[0].text


def same_cell(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    return a == b


def assert_same_table(got: list, want: list, where: str) -> None:
    assert got is not None and want is not None, f"{where}: no table"
    assert got[0] == want[0], f"{where}: header {got[0]} != {want[0]}"
    assert len(got) == len(want), f"{where}: {len(got) - 1} rows, DuckDB has {len(want) - 1}"
    for i, (g, w) in enumerate(zip(got[1:], want[1:]), start=1):
        assert len(g) == len(w) and all(same_cell(x, y) for x, y in zip(g, w)), (
            f"{where}: row {i} is {g}, DuckDB's is {w}"
        )


def test_every_shipped_spec_is_written_in_duckdb_sql():
    """The shipped specs take the project's default dialect (DuckDB) and say so in their leading comment."""
    for path in shipped_spec_files():
        spec = yaml.safe_load(path.read_text())
        assert "dialect" not in spec, f"{path.name} names a dialect"
        head = path.read_text().splitlines()[0]
        assert head.startswith("# DuckDB SQL; mcpgen translates it"), f"{path.name}: {head}"


def test_translated_on_load(sqlite_project, duckdb_project):
    """SQLite runs its own spelling of make_date(), made once when the project loads."""
    sql = {s.name: s.sql for s in sqlite_project.loaded.specs}
    assert "DATE(PRINTF('%04d-%02d-%02d', f.year, f.month, f.day))" in sql["carrier_performance"]
    assert (
        "make_date(f.year, f.month, f.day)"
        in {s.name: s.sql for s in duckdb_project.loaded.specs}["carrier_performance"]
    )


@pytest.mark.parametrize(
    "engine",
    ["sqlite", "postgresql", "mariadb", pytest.param("spark", marks=[pytest.mark.spark, pytest.mark.timeout(900)])],
)
def test_shipped_specs_give_duckdbs_tables(engine, request, duckdb_project):
    project = request.getfixturevalue(f"{engine}_project")
    assert sorted(project.registry.names()) == sorted(duckdb_project.registry.names())
    failures = []
    # Every spec orders by a unique key (or returns one row), so rows are compared in order.
    for name, args, label in CALLS:
        where = f"{engine}: {name} ({label}, args {args})"
        want = duckdb_answer(duckdb_project, name, args)
        result = answer(engine, project, name, args)
        if result.is_error:
            failures.append(f"{where}: isError: {result.content[0].text}")
            continue
        got = result.structured_content
        try:
            assert got["sources"] == want["sources"], f"{where}: sources {got['sources']} != {want['sources']}"
            if want.get("table") is None:
                # `table: false` (country_profile): the prose, built from every column, stands in.
                assert got.get("table") is None, f"{where}: a table where DuckDB has none"
                text, want_text = result.content[0].text, duckdb_text(duckdb_project, name, args)
                assert text == want_text, f"{where}: content {text!r} != DuckDB's {want_text!r}"
            else:
                assert_same_table(got.get("table"), want["table"], where)
        except AssertionError as exc:
            failures.append(str(exc))
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize(
    "engine", ["postgresql", "mariadb", pytest.param("spark", marks=[pytest.mark.spark, pytest.mark.timeout(900)])]
)
def test_integer_cells_stay_integers(engine, request, duckdb_project):
    """A cell that is a JSON integer on DuckDB is a JSON integer on every engine."""
    project = request.getfixturevalue(f"{engine}_project")
    floats = []
    for name, args, label in CALLS:
        want = duckdb_answer(duckdb_project, name, args).get("table")
        result = answer(engine, project, name, args)
        if result.is_error:
            continue  # reported by test_portable_specs_give_duckdbs_tables
        got = result.structured_content.get("table")
        if want is None or got is None:
            continue
        for w_row, g_row in zip(want[1:], got[1:]):
            for header, w, g in zip(want[0], w_row, g_row):
                if type(w) is int and type(g) is not int:
                    floats.append(f"{name} ({label}): {header} = {g!r}, DuckDB {w!r}")
    assert not floats, "\n".join(floats[:10])
