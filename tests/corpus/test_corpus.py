"""Analytic SQL that nobody here wrote, as specs, on every engine: TPC-H's 22 queries and the TPC-DS
queries that run at scale factor 0.01 (tests/corpus/README.md: where they come from and how they became
specs). Each spec is called through mcpgen (`registry.call_sync`, with its parameters' defaults, which
are the benchmarks' own substitution values) on DuckDB, SQLite, PostgreSQL, MariaDB and Spark, and its
table must equal what the same SQL gives run directly on DuckDB (the spec's own dialect).

The data comes from `tpcgen-cli` (TPC-H and TPC-DS data generators) at scale factor 0.01, once per
session, and goes into every engine as DuckDB reads it. TPC-DS's customer_demographics table, 1.9 million
rows at any scale, keeps only the rows the other tables point at (every query reaches it through a
join on those keys, so no result changes).

Each (engine, spec) is one of: the same table as DuckDB's; refused when the project loads, with a
sentence naming the construct and the engine (what `mcpgen validate` prints); different only where
`validate` warned (the header of an unnamed column); slower than QUERY_TIMEOUT on that engine (its
speed, not its answer: counted, not failed); or listed in KNOWN with what differs (counted in
docs/databases.md). Anything else fails, and so does a KNOWN entry that starts to agree (take it
out). TPC-H on DuckDB and SQLite runs in the default test run; the rest is `slow`, Spark also `spark`
(and of TPC-DS on Spark, SQLite and MariaDB every third spec, a different third on each, and of TPC-H on
Spark every other, unless MCPGEN_CORPUS_ALL=1: `chosen`).

The same specs are paged on every engine too ("pages" below): walking every page, following the cursors, gives
exactly the rows of the whole query on that engine, in its order.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import functools
import math
import os
import secrets
import shutil
import sqlite3
import subprocess
import time
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

import duckdb
import pytest
import services
import yaml
from sqlalchemy.engine import make_url
from walks import follow, ok

from mcpgen.answer.results import to_cell
from mcpgen.engines.duckdb import bind_text
from mcpgen.load.columns import page_plan
from mcpgen.load.project import load_project
from mcpgen.serve.project import open_project
from mcpgen.spec.params import param_types
from mcpgen.sql.pages import orders_rows

HERE = Path(__file__).resolve().parent
BENCHMARKS = ("tpch", "tpcds")
SCALE = "0.01"

# Numbers agree to 1 part in 10^9 relatively (sums of DOUBLE added in another order differ in the
# last bits); anything coarser is a difference (MariaDB's AVG rounded to 4 decimals is one).
# Seconds a corpus query may take on any engine (a query slower than that is an "error" here).
QUERY_TIMEOUT = 20
REL_TOL = 1e-9
ABS_TOL = 1e-9


def spec_files(benchmark: str) -> list[Path]:
    return sorted((HERE / benchmark).glob("*.yaml"))


# -- the data ---------------------------------------------------------------------------------------


@dataclass
class Data:
    folder: Path  # <benchmark>/<table>.parquet, as every engine gets it
    tables: dict[str, list[str]]  # benchmark -> table names

    def parquet(self, benchmark: str, table: str) -> Path:
        return self.folder / benchmark / f"{table}.parquet"


class LazyData(Data):
    """Each benchmark's data generated when a test first needs it, once per run: the pytest-xdist workers
    share the folder, and the first to need a benchmark generates it while the others wait."""

    def __init__(self, folder: Path):
        super().__init__(folder, {})
        self.tables = _Tables(self)


class _Tables(dict):
    def __init__(self, data: LazyData):
        super().__init__()
        self._data = data

    def __missing__(self, benchmark: str) -> list[str]:
        folder = self._data.folder
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / f"{benchmark}.lock", "w") as lock:
            deadline = time.monotonic() + 600  # generating one benchmark takes seconds
            while True:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        pytest.fail(f"another worker has been generating the {benchmark} data for 600 s")
                    time.sleep(0.2)
            names = folder / benchmark / "tables.txt"
            if not names.exists():
                names.write_text("\n".join(generate(folder, (benchmark,)).tables[benchmark]))
            self[benchmark] = names.read_text().split()
        return self[benchmark]


def generate(folder: Path, benchmarks: tuple[str, ...] = BENCHMARKS) -> Data:
    tpcgen = shutil.which("tpcgen-cli")
    if tpcgen is None:
        pytest.fail("tpcgen-cli is not installed: pip install -e '.[test]'")
    raw = folder / "raw"
    tables: dict[str, list[str]] = {}
    con = duckdb.connect()
    for benchmark in benchmarks:
        shutil.rmtree(raw / benchmark, ignore_errors=True)
        subprocess.run(
            [tpcgen, benchmark, "parquet", "-s", SCALE, "-o", str(raw / benchmark)],
            check=True,
            capture_output=True,
            timeout=300,
        )
        (folder / benchmark).mkdir(parents=True)
        names = sorted(p.stem for p in (raw / benchmark).glob("*.parquet") if p.stem != "dbgen_version")
        for name in names:
            con.execute(
                f"CREATE OR REPLACE VIEW {benchmark}_{name} AS SELECT * FROM '{raw / benchmark / name}.parquet'"
            )
        for name in names:
            select = f"SELECT * FROM {benchmark}_{name}"
            if (benchmark, name) == ("tpcds", "customer_demographics"):
                select += f" WHERE cd_demo_sk IN ({_demographics_keys()})"
            con.execute(f"COPY ({select}) TO '{folder / benchmark / name}.parquet' (FORMAT parquet)")
        tables[benchmark] = names
        shutil.rmtree(raw / benchmark, ignore_errors=True)
    con.close()
    return Data(folder, tables)


def _demographics_keys() -> str:
    columns = {
        "store_sales": "ss_cdemo_sk",
        "catalog_sales": "cs_bill_cdemo_sk",
        "web_sales": "ws_bill_cdemo_sk",
        "store_returns": "sr_cdemo_sk",
        "catalog_returns": "cr_refunded_cdemo_sk",
        "web_returns": "wr_refunded_cdemo_sk",
        "customer": "c_current_cdemo_sk",
    }
    more = {
        "catalog_sales": ["cs_ship_cdemo_sk"],
        "web_returns": ["wr_returning_cdemo_sk"],
        "web_sales": ["ws_ship_cdemo_sk"],
    }
    parts = []
    for table, column in columns.items():
        for c in [column, *more.get(table, [])]:
            parts.append(f"SELECT {c} FROM tpcds_{table}")
    parts.append("SELECT cr_returning_cdemo_sk FROM tpcds_catalog_returns")
    return " UNION ".join(parts)


@pytest.fixture(scope="session")
def data(tmp_path_factory, worker_id) -> Data:
    run = tmp_path_factory.getbasetemp()  # under pytest-xdist a worker's own folder, in the run's
    return LazyData((run if worker_id == "master" else run.parent) / "corpus_data")


def columns_of(data: Data, benchmark: str, table: str) -> list[tuple[str, str]]:
    con = duckdb.connect()
    try:
        return [
            (r[0], r[1]) for r in con.execute(f"DESCRIBE SELECT * FROM '{data.parquet(benchmark, table)}'").fetchall()
        ]
    finally:
        con.close()


def rows_of(data: Data, benchmark: str, table: str) -> list[tuple]:
    con = duckdb.connect()
    try:
        return con.execute(f"SELECT * FROM '{data.parquet(benchmark, table)}'").fetchall()
    finally:
        con.close()


def column_type(duck: str, engine: str) -> str:
    if duck.startswith("DECIMAL"):
        return {"postgresql": duck.replace("DECIMAL", "NUMERIC"), "mariadb": duck, "sqlite": "REAL"}[engine]
    return {
        "INTEGER": {"postgresql": "INTEGER", "mariadb": "INT", "sqlite": "INTEGER"},
        "BIGINT": {"postgresql": "BIGINT", "mariadb": "BIGINT", "sqlite": "INTEGER"},
        "VARCHAR": {"postgresql": "TEXT", "mariadb": "VARCHAR(200)", "sqlite": "TEXT"},
        "DATE": {"postgresql": "DATE", "mariadb": "DATE", "sqlite": "TEXT"},
    }[duck][engine]


# The surrogate and natural keys, made primary keys on the server engines as a warehouse has them.
KEYS = {
    "tpch": {
        "nation": "n_nationkey",
        "region": "r_regionkey",
        "part": "p_partkey",
        "supplier": "s_suppkey",
        "customer": "c_custkey",
        "orders": "o_orderkey",
        "partsupp": "ps_partkey, ps_suppkey",
        "lineitem": "l_orderkey, l_linenumber",
    },
    "tpcds": {
        t: f"{p}_sk"
        for t, p in {
            "date_dim": "d_date",
            "time_dim": "t_time",
            "item": "i_item",
            "customer": "c_customer",
            "customer_address": "ca_address",
            "customer_demographics": "cd_demo",
            "household_demographics": "hd_demo",
            "store": "s_store",
            "warehouse": "w_warehouse",
            "promotion": "p_promo",
            "web_site": "web_site",
            "web_page": "wp_web_page",
            "call_center": "cc_call_center",
            "catalog_page": "cp_catalog_page",
            "ship_mode": "sm_ship_mode",
            "reason": "r_reason",
            "income_band": "ib_income_band",
        }.items()
    },
}


def create_table(data: Data, benchmark: str, table: str, engine: str, qualified: str) -> tuple[str, list[str]]:
    cols = columns_of(data, benchmark, table)
    body = [f"{c} {column_type(t, engine)}" for c, t in cols]
    key = KEYS[benchmark].get(table)
    if key:
        body.append(f"PRIMARY KEY ({key})")
    return f"CREATE TABLE {qualified} ({', '.join(body)})", [c for c, _ in cols]


def sqlite_value(value):
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def load_sqlite(data: Data, benchmark: str, path: Path) -> None:
    con = sqlite3.connect(path)
    with con:
        for table in data.tables[benchmark]:
            statement, cols = create_table(data, benchmark, table, "sqlite", table)
            con.execute(statement)
            rows = [tuple(map(sqlite_value, r)) for r in rows_of(data, benchmark, table)]
            con.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(cols))})", rows)
    con.close()


def load_postgresql(data: Data, benchmark: str, schema: str) -> None:
    with services.connect("postgresql") as con:
        cur = con.cursor()
        cur.execute(f"CREATE SCHEMA {schema}")
        for table in data.tables[benchmark]:
            statement, cols = create_table(data, benchmark, table, "postgresql", f"{schema}.{table}")
            cur.execute(statement)
            with cur.copy(f"COPY {schema}.{table} ({', '.join(cols)}) FROM STDIN") as copy:
                for row in rows_of(data, benchmark, table):
                    copy.write_row(row)
            cur.execute(f"ANALYZE {schema}.{table}")


def load_mariadb(data: Data, benchmark: str, database: str) -> None:
    with services.connect("mariadb") as con:
        cur = con.cursor()
        cur.execute(f"CREATE DATABASE {database} CHARACTER SET utf8mb4")
        for table in data.tables[benchmark]:
            statement, cols = create_table(data, benchmark, table, "mariadb", f"{database}.{table}")
            cur.execute(statement)
            cur.executemany(
                f"INSERT INTO {database}.{table} VALUES ({', '.join(['%s'] * len(cols))})",
                rows_of(data, benchmark, table),
            )
        con.commit()


# -- projects per engine -------------------------------------------------------------------------------


@dataclass
class Opened:
    """A project of one benchmark's specs on one engine: the tools that loaded, and why the others did not."""

    project: object | None
    refused: dict[str, str]  # spec name -> the load problem (file:line:col: message)
    warned: dict[str, list[str]]  # spec name -> what validate warns of for it
    folder: Path | None = None  # the project's root (mcpgen.yaml, and the data a DuckDB project reads)
    paged: Paged | None = None  # the same specs paged, on the same connection (opened by the pages test)


def open_corpus(folder: Path, benchmark: str, connection: dict) -> Opened:
    config = {"connections": {"default": connection}, "defaults": {"timeout": f"{QUERY_TIMEOUT}s"}}
    (folder / "mcpgen.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    specs = folder / "specs"
    specs.mkdir()
    for path in spec_files(benchmark):
        shutil.copyfile(path, specs / path.name)
    with pytest.MonkeyPatch.context() as mp:  # open_project chdirs to the project root
        mp.chdir(folder)
        loaded = load_project(specs)
        project = open_project(specs, loaded=loaded, needed=lambda path: False)
    refused = {Path(p.path).stem: str(p) for p in project.loaded.left_out}
    warned: dict[str, list[str]] = {}
    for p in project.loaded.warnings:
        warned.setdefault(Path(p.path).stem, []).append(p.message)
    return Opened(project, refused, warned, folder)


def _duckdb_connection(data: Data, benchmark: str, folder: Path) -> dict:
    (folder / "data").mkdir(parents=True)
    for table in data.tables[benchmark]:
        shutil.copyfile(data.parquet(benchmark, table), folder / "data" / f"{table}.parquet")
    init = [f"CREATE TABLE {t} AS SELECT * FROM read_parquet('data/{t}.parquet')" for t in data.tables[benchmark]]
    return {"duckdb": ":memory:", "init": init}


class Lazy:
    """One engine's projects, opened per benchmark when first asked for, closed at the end."""

    def __init__(self, open_one):
        self._open_one, self._opened = open_one, {}

    def __getitem__(self, benchmark: str) -> Opened:
        if benchmark not in self._opened:
            self._opened[benchmark] = self._open_one(benchmark)
        return self._opened[benchmark]

    def close(self) -> None:
        for opened in self._opened.values():
            opened.project.close()
            if opened.paged is not None:
                opened.paged.project.close()


@pytest.fixture(scope="session")
def corpus_duckdb(data, tmp_path_factory):
    def one(benchmark):
        folder = tmp_path_factory.mktemp(f"corpus_duckdb_{benchmark}")
        return open_corpus(folder, benchmark, _duckdb_connection(data, benchmark, folder))

    corpora = Lazy(one)
    yield corpora
    corpora.close()


@pytest.fixture(scope="session")
def corpus_sqlite(data, tmp_path_factory):
    def one(benchmark):
        folder = tmp_path_factory.mktemp(f"corpus_sqlite_{benchmark}")
        load_sqlite(data, benchmark, folder / "corpus.db")
        return open_corpus(folder, benchmark, {"url": f"sqlite:///{folder / 'corpus.db'}"})

    corpora = Lazy(one)
    yield corpora
    corpora.close()


@pytest.fixture(scope="session")
def corpus_postgresql(data, postgres_url, tmp_path_factory):
    schemas = []

    def one(benchmark):
        schema = f"faithful_corpus_{benchmark}_{secrets.token_hex(3)}"
        schemas.append(schema)
        load_postgresql(data, benchmark, schema)
        connection = {"url": postgres_url, "connect_args": {"options": f"-csearch_path={schema}"}}
        return open_corpus(tmp_path_factory.mktemp(f"corpus_pg_{benchmark}"), benchmark, connection)

    corpora = Lazy(one)
    try:
        yield corpora
    finally:
        corpora.close()
        with services.connect("postgresql") as con:
            for schema in schemas:
                con.cursor().execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@pytest.fixture(scope="session")
def corpus_mariadb(data, mariadb_url, tmp_path_factory):
    databases = []

    def one(benchmark):
        database = f"faithful_corpus_{benchmark}_{secrets.token_hex(3)}"
        databases.append(database)
        load_mariadb(data, benchmark, database)
        url = make_url(mariadb_url).set(database=database).render_as_string(hide_password=False)
        return open_corpus(tmp_path_factory.mktemp(f"corpus_maria_{benchmark}"), benchmark, {"url": url})

    corpora = Lazy(one)
    try:
        yield corpora
    finally:
        corpora.close()
        with services.connect("mariadb") as con:
            for database in databases:
                con.cursor().execute(f"DROP DATABASE IF EXISTS {database}")


@pytest.fixture(scope="session")
def corpus_spark(data, spark_cluster, tmp_path_factory):
    def one(benchmark):
        database = f"corpus_{benchmark}_{secrets.token_hex(3)}"
        spark_cluster.load_tables({t: data.parquet(benchmark, t) for t in data.tables[benchmark]}, database)
        folder = tmp_path_factory.mktemp(f"corpus_spark_{benchmark}")
        return open_corpus(folder, benchmark, {"spark": spark_cluster.remote, "database": database})

    corpora = Lazy(one)
    yield corpora
    corpora.close()


# -- DuckDB's own answer ---------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def reference(data):
    """Each spec's SQL run directly on DuckDB with its parameters' defaults: the table every engine must give."""
    return Lazy(lambda benchmark: reference_tables(data, benchmark))


def reference_tables(data: Data, benchmark: str) -> dict[str, list]:
    from mcpgen.spec.models import Parameter

    out: dict[str, list] = {}
    con = duckdb.connect()
    for table in data.tables[benchmark]:
        con.execute(f"CREATE TABLE {table} AS SELECT * FROM '{data.parquet(benchmark, table)}'")
    for path in spec_files(benchmark):
        spec = yaml.safe_load(path.read_text())
        params = spec.get("parameters") or {}
        types = param_types({n: Parameter.model_validate(p) for n, p in params.items()})
        text, _ = bind_text(spec["sql"], types)
        cursor = con.execute(text, {n: _value(p) for n, p in params.items() if f"${n}" in text})
        header = [d[0] for d in cursor.description]
        out[path.stem] = [header, *([to_cell(v) for v in row] for row in cursor.fetchall())]
    con.close()
    return out


def _value(parameter: dict):
    value = parameter.get("default")
    if parameter["type"] == "date":
        return dt.date.fromisoformat(value)
    return value


# -- comparing -------------------------------------------------------------------------------------------


def _number(cell):
    if isinstance(cell, bool):
        return None
    if isinstance(cell, (int, float)):
        return cell
    if isinstance(cell, str):
        try:
            return float(Decimal(cell))
        except (InvalidOperation, ValueError):
            return None
    return None


def same_cell(a, b) -> bool:
    x, y = _number(a), _number(b)
    if x is not None and y is not None and not (isinstance(a, str) and isinstance(b, str)):
        return math.isclose(x, y, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    if isinstance(a, str) and isinstance(b, str) and a != b and x is not None and y is not None:
        return math.isclose(x, y, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    return a == b


def difference(got: list | None, want: list, order: list[int] | None) -> str | None:
    """Where two tables differ (None when they agree). Rows are compared in order. Rows that tie on the
    query's ORDER BY (`order`: the indexes of the result columns it sorts on) may come in any order on any
    engine, DuckDB included: the same rows with the same sequence of sort keys agree."""
    if got is None:
        return "no table"
    if [h.lower() for h in got[0]] != [h.lower() for h in want[0]]:
        return f"header {got[0]} != DuckDB's {want[0]}"
    if len(got) != len(want):
        return f"{len(got) - 1} rows, DuckDB has {len(want) - 1}"
    bad = [i for i, (g, w) in enumerate(zip(got[1:], want[1:]), 1) if not _same_row(g, w)]
    if not bad:
        return None
    key = lambda row: [repr(_number(c) if _number(c) is not None else c) for c in row]  # noqa: E731
    if all(_same_row(g, w) for g, w in zip(sorted(got[1:], key=key), sorted(want[1:], key=key))):
        keys = lambda rows: [[r[i] for i in order] for r in rows]  # noqa: E731
        if order and all(_same_row(g, w) for g, w in zip(keys(got[1:]), keys(want[1:]))):
            return None
        return "the same rows in another order"
    i = bad[0]
    return f"row {i} is {got[i]}, DuckDB's is {want[i]} ({len(bad)} rows differ)"


def sort_columns(sql: str, header: list[str]) -> list[int] | None:
    """The indexes in `header` of what the outermost ORDER BY sorts on, or None when one of its keys is
    not a result column (the order of ties cannot then be told from the table)."""
    import sqlglot
    from sqlglot import exp

    tree = sqlglot.parse_one(sql, read="duckdb")
    order = tree.args.get("order")
    if order is None:
        return None
    names = [h.lower() for h in header]
    out = []
    for ordered in order.expressions:
        key = ordered.this
        if isinstance(key, exp.Literal) and key.is_int:
            out.append(int(key.this) - 1)
        elif isinstance(key, exp.Column) and key.name.lower() in names:
            out.append(names.index(key.name.lower()))
        else:
            return None
    return out


def _same_row(g, w) -> bool:
    return len(g) == len(w) and all(same_cell(x, y) for x, y in zip(g, w))


def outcome(opened: Opened, name: str, want: list, order: list[int] | None) -> tuple[str, str]:
    """("same" | "refused" | "warned" | "slow" | "error" | "differs", detail) for one spec on one engine:
    "warned" when only what `validate` warned of differs (the header of a column the query does not
    name), "slow" when the engine took longer than QUERY_TIMEOUT."""
    if name in opened.refused:
        return "refused", opened.refused[name]
    result = opened.project.registry.call_sync(name, {})
    if result.is_error and "ran longer than" in result.content[0].text:
        return "slow", result.content[0].text  # the engine's speed, not its answer: counted, never failed
    if result.is_error:
        return "error", result.content[0].text
    got = (result.structured_content or {}).get("table")
    problem = difference(got, want, order)
    unnamed = any("has no name" in w for w in opened.warned.get(name, []))
    # Only the header of a column the query does not name differs, as validate warned:
    if problem and problem.startswith("header") and unnamed and difference([want[0], *got[1:]], want, order) is None:
        return "warned", problem
    return ("differs", problem) if problem else ("same", "")


# What differs, per engine, and why: each is either fixed (and taken out) or explained in docs/databases.md.
KNOWN: dict[str, dict[str, str]] = {
    "duckdb": {},
    "sqlite": {},
    "postgresql": {},
    "mariadb": {},
    "spark": {},
}


# TPC-DS on Spark, SQLite and MariaDB takes minutes per engine (all 72 on the local two-executor Spark
# cluster: 584 s on a loaded 2-core machine; SQLite 142 s and MariaDB 179 s on a quiet one, each with three
# queries cut off at QUERY_TIMEOUT), past what CI's 20 minutes leave. Unless MCPGEN_CORPUS_ALL=1, each of
# those engines runs every third spec (in the order of their names), each from a different start, so that
# together they still cover all 72 on a second engine beside PostgreSQL, which runs them all. TPC-H on
# Spark (104 s for 22 on a quiet machine; all 22 run on the three other engines) runs every other spec.
TPCDS_EVERY = 3
TPCDS_START = {"spark": 0, "mariadb": 1, "sqlite": 2}
SPARK_TPCH_EVERY = 2


def chosen(engine: str, benchmark: str) -> list[Path]:
    paths = spec_files(benchmark)
    if os.environ.get("MCPGEN_CORPUS_ALL") == "1":
        return paths
    if benchmark == "tpcds" and engine in TPCDS_START:
        return paths[TPCDS_START[engine] :: TPCDS_EVERY]
    if (engine, benchmark) == ("spark", "tpch"):
        return paths[::SPARK_TPCH_EVERY]
    return paths


def run_corpus(engine: str, benchmark: str, corpora: Lazy, reference: Lazy) -> dict[str, tuple[str, str]]:
    out = {}
    for path in chosen(engine, benchmark):
        want = reference[benchmark][path.stem]
        order = sort_columns(yaml.safe_load(path.read_text())["sql"], want[0])
        out[path.stem] = outcome(corpora[benchmark], path.stem, want, order)
    return out


def report(engine: str, results: dict[str, tuple[str, str]]) -> str:
    counts = {
        k: sum(1 for v in results.values() if v[0] == k) for k in ("same", "refused", "warned", "error", "differs")
    }
    lines = [
        f"{engine}: {counts['same']}/{len(results)} the same as DuckDB, "
        + ", ".join(f"{v} {k}" for k, v in counts.items() if k != "same")
    ]
    lines += [f"  {name}: {kind}: {detail}" for name, (kind, detail) in sorted(results.items()) if kind != "same"]
    return "\n".join(lines)


SLOW = pytest.mark.slow
CASES = [
    ("duckdb", "tpch", ()),
    ("duckdb", "tpcds", (SLOW,)),  # TPC-DS's data takes seconds to generate and load
    ("sqlite", "tpch", ()),
    ("sqlite", "tpcds", (SLOW,)),  # some TPC-DS joins take SQLite seconds each
    ("postgresql", "tpch", (SLOW,)),
    ("postgresql", "tpcds", (SLOW,)),
    ("mariadb", "tpch", (SLOW,)),
    ("mariadb", "tpcds", (SLOW,)),
    ("spark", "tpch", (SLOW, pytest.mark.spark, pytest.mark.timeout(1800))),
    ("spark", "tpcds", (SLOW, pytest.mark.spark, pytest.mark.timeout(1800))),
]


@pytest.mark.timeout(900)
@pytest.mark.parametrize(("engine", "suite"), [pytest.param(e, b, marks=m, id=f"{e}-{b}") for e, b, m in CASES])
def test_the_corpus_gives_duckdbs_tables(engine, suite, request, reference):
    corpora = request.getfixturevalue(f"corpus_{engine}")
    results = run_corpus(engine, suite, corpora, reference)
    request.node.user_properties.append(("summary", report(f"{engine} {suite}", results)))
    unexpected = {
        name: f"{kind}: {detail}"
        for name, (kind, detail) in results.items()
        if kind in ("error", "differs") and name not in KNOWN[engine]
    }
    fixed = sorted(
        name for name in KNOWN[engine] if name in results and results[name][0] in ("same", "refused", "warned")
    )
    assert not unexpected, "\n".join(f"{engine}: {n}: {d}" for n, d in sorted(unexpected.items()))
    assert not fixed, f"{engine}: these now agree with DuckDB; take them out of KNOWN: {fixed}"


def test_the_corpus_has_at_least_60_specs_nobody_here_wrote():
    names = [p.stem for b in BENCHMARKS for p in spec_files(b)]
    assert len(names) >= 60
    assert len([n for n in names if n.startswith("tpch_")]) == 22


def test_the_thirds_of_tpcds_cover_every_spec_once(monkeypatch):
    monkeypatch.delenv("MCPGEN_CORPUS_ALL", raising=False)
    thirds = [p.stem for engine in TPCDS_START for p in chosen(engine, "tpcds")]
    assert sorted(thirds) == sorted(p.stem for p in spec_files("tpcds"))
    assert [p.stem for p in chosen("postgresql", "tpcds")] == [p.stem for p in spec_files("tpcds")]
    assert len(chosen("spark", "tpch")) == 11 and chosen("mariadb", "tpch") == spec_files("tpch")
    monkeypatch.setenv("MCPGEN_CORPUS_ALL", "1")
    assert chosen("sqlite", "tpcds") == spec_files("tpcds")
    assert chosen("spark", "tpch") == spec_files("tpch")


@pytest.mark.parametrize("suite", ["tpch", pytest.param("tpcds", marks=SLOW)])
def test_every_corpus_spec_passes_validate_on_duckdb(corpus_duckdb, suite):
    assert corpus_duckdb[suite].refused == {}
    assert [w for ws in corpus_duckdb[suite].warned.values() for w in ws] == []


# -- pages: every page walked gives the whole query ------------------------------------------------------
#
# Each spec is also served paged (docs/spec-format.md, "Pages"), on the same connection and data, as four
# specs: NAME_whole (unpaged), NAME_one (paged, one page holding every row: the whole in mcpgen's total
# order, read at once), NAME_p3 and NAME_p7 (pages of 3 and 7 rows). An outermost LIMIT, which a paged
# query may not have, is taken out of all four, and the spec as written is paged too (NAME_limited), to
# see `validate` refuse it. Walking the cursors of NAME_p3 (read-ahead off: every page seeks from its
# cursor, up to SEEKING rows) and NAME_p7 (read-ahead on, as served) must give NAME_one's rows exactly, in order, every page but the
# last full, and those are
# NAME_whole's rows, in the order its ORDER BY defines.

PAGE_SIZES = (3, 7)
# Every page on SQLite is an OFFSET page, and on Spark most are (a decimal column): one size, read ahead, shows
# them (and keeps the default run cheap, and Spark's from hundreds of queries of a second or so).
WALKED = {"sqlite": (7,), "spark": (7,)}
# The key types each engine's pages use OFFSET for, as docs/spec-format.md says (SQLite's results carry no types;
# a MariaDB DECIMAL or Spark decimal is not bound back exactly): anywhere else the corpus pages seek by key.
OFFSET_KEYS = {
    "duckdb": (),
    "postgresql": (),
    "sqlite": ("unknown",),
    "mariadb": ("newdecimal",),
    "spark": ("decimal",),
}
ALL_ROWS = 100_000  # more rows than any corpus query returns without its LIMIT at this scale
# Pages of 3 rows each read alone, past this many rows, are hundreds of runs of the whole query (TPC-DS's without
# their LIMIT, thousands of rows on PostgreSQL): past it they read ahead too, seeking at every read's end.
SEEKING = 450
ALL_BYTES = 500_000_000


@dataclass
class Paged:
    project: object
    problems: dict[str, list[tuple[str, str]]]  # spec name -> (severity, message) from `validate --live`


def without_limit(sql: str) -> str:
    """`sql` without its outermost LIMIT (or OFFSET/FETCH) clause: the query a paged spec may page."""
    from sqlglot.tokens import TokenType

    from mcpgen.sql.statements import tokenize

    depth = 0
    for token in tokenize(sql, "duckdb"):
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0 and token.token_type in (TokenType.LIMIT, TokenType.OFFSET, TokenType.FETCH):
            return sql[: token.start].rstrip() + "\n"
    return sql


def open_paged(opened: Opened, benchmark: str, paths: list[Path]) -> Paged:
    """The specs of `paths` paged, in a specs folder of their own beside `opened`'s (the same mcpgen.yaml,
    connection and data), checked by `validate --live` (its warnings and errors, by spec) and opened."""
    from mcpgen.commands.validate import run_validate

    assert opened.folder is not None
    specs = opened.folder / "paged"
    specs.mkdir()
    for path in paths:
        spec = yaml.safe_load(path.read_text())
        spec.pop("max_rows", None)
        sql = without_limit(spec["sql"])
        variants = {"whole": {"max_rows": ALL_ROWS}, "one": {"page_size": ALL_ROWS}}
        variants |= {f"p{n}": {"page_size": n} for n in PAGE_SIZES}
        for suffix, settings in variants.items():
            text = yaml.safe_dump({**spec, "sql": sql, **settings, "max_bytes": ALL_BYTES}, sort_keys=False)
            (specs / f"{path.stem}_{suffix}.yaml").write_text(text)
        if sql != spec["sql"]:
            text = yaml.safe_dump({**spec, "page_size": PAGE_SIZES[0]}, sort_keys=False)
            (specs / f"{path.stem}_limited.yaml").write_text(text)
    checked = sorted(p for p in specs.glob("*.yaml") if p.stem.endswith((f"_p{PAGE_SIZES[0]}", "_limited")))
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(opened.folder)
        report = run_validate(specs, live=True, loaded=load_project(specs, paths=checked))
        problems: dict[str, list[tuple[str, str]]] = {}
        for p in report.problems:
            problems.setdefault(Path(p.path).stem, []).append((p.severity, p.message))
        project = open_project(specs, columns=False, needed=lambda path: False)  # validate has described them
    return Paged(project, problems)


def page_outcome(paged: Paged, name: str, sql: str, sizes: tuple[int, ...]) -> tuple[str, str]:
    """("keyset" | "offset" | "refused" | "slow", detail) for one spec paged on one engine; AssertionError for
    pages that are not the whole query. "slow" when a query took longer than QUERY_TIMEOUT (its speed: the
    whole query without its LIMIT, or an OFFSET page deep into it)."""
    try:
        return _page_outcome(paged, name, sql, sizes)
    except AssertionError as exc:
        if "ran longer than" in str(exc):
            return "slow", str(exc).splitlines()[0]
        raise


def _page_outcome(paged: Paged, name: str, sql: str, sizes: tuple[int, ...]) -> tuple[str, str]:
    from mcpgen.answer import pages
    from mcpgen.answer.readahead import ReadAhead

    problems = paged.problems
    errors = [m for severity, m in problems.get(f"{name}_p3", []) if severity == "error"]
    if not orders_rows(sql, "duckdb"):  # one row, or rows in no order: no pages
        assert errors and all("page_size needs the query to end with ORDER BY" in m for m in errors), errors
        assert f"{name}_p3" in {Path(p.path).stem for p in paged.project.loaded.left_out}
        return "refused", errors[0]
    assert not errors, errors
    warned = [m for severity, m in problems.get(f"{name}_p3", []) if severity == "warning" and "page_size" in m]
    registry = paged.project.registry
    spec = next(s for s in paged.project.loaded.specs if s.name == f"{name}_p3")
    plan = page_plan(paged.project.engines["default"], spec)
    assert bool(warned) != plan.keyset, (name, warned, plan.reason)  # validate says so where pages use OFFSET
    want = ok(registry.call_sync(f"{name}_whole", {})).structured_content["table"]
    assert len(want) - 1 < ALL_ROWS
    one = follow(functools.partial(registry.call_sync, f"{name}_one"), {}, bound=1)
    assert one[0] == want[0], name
    key = lambda row: repr(row)  # noqa: E731  (the same engine: the same values, exactly)
    assert sorted(one[1:], key=key) == sorted(want[1:], key=key), f"{name}: the pages' rows are not the query's"
    order = sort_columns(sql, want[0])
    if order is not None:
        keys = lambda rows: [[r[i] for i in order] for r in rows]  # noqa: E731
        assert keys(one[1:]) == keys(want[1:]), f"{name}: the pages are not in the query's ORDER BY"
    for size in sizes:
        with pytest.MonkeyPatch.context() as mp:
            if size == PAGE_SIZES[0] and len(one) - 1 <= SEEKING:  # every page seeks from its cursor
                mp.setattr(pages, "READ_AHEAD", ReadAhead(budget=0))
            walked = follow(functools.partial(registry.call_sync, f"{name}_p{size}"), {}, size, len(one))
        assert walked == one, f"{name}: the pages of {size} rows, walked, are not the whole query in its order"
    return ("offset", warned[0]) if warned else ("keyset", f"{len(one) - 1} rows")


# TPC-DS paged on DuckDB and PostgreSQL, which the corpus test runs whole: a third each (another third on each of
# the others), so that CI's run stays in its time; MCPGEN_CORPUS_ALL=1 pages every spec everywhere.
PAGED_TPCDS_START = {"duckdb": 0, "postgresql": 1}


def paged_chosen(engine: str, benchmark: str) -> list[Path]:
    paths = chosen(engine, benchmark)
    if benchmark == "tpcds" and engine in PAGED_TPCDS_START and os.environ.get("MCPGEN_CORPUS_ALL") != "1":
        return paths[PAGED_TPCDS_START[engine] :: TPCDS_EVERY]
    return paths


def run_pages(engine: str, benchmark: str, corpora: Lazy) -> dict[str, tuple[str, str]]:
    opened = corpora[benchmark]
    paths = paged_chosen(engine, benchmark)
    if opened.paged is None:
        opened.paged = open_paged(opened, benchmark, paths)
    out = {}
    for path in paths:
        if path.stem in opened.refused:  # not on this engine at all (counted by the corpus test)
            continue
        sql = yaml.safe_load(path.read_text())["sql"]
        if without_limit(sql) != sql:  # as written, with its LIMIT: validate refuses to page it
            limited = [m for s, m in opened.paged.problems.get(f"{path.stem}_limited", []) if s == "error"]
            assert limited and "LIMIT" in limited[0], (path.stem, limited)
        out[path.stem] = page_outcome(opened.paged, path.stem, without_limit(sql), WALKED.get(engine, PAGE_SIZES))
    return out


# Spark's TPC-DS is paged only under MCPGEN_CORPUS_ALL=1: its pages are mostly OFFSET pages of queries that take
# Spark a second or more each, hundreds of them for a third of the suite; its TPC-H is paged in every CI run.
PAGED = [c for c in CASES if c[:2] != ("spark", "tpcds") or os.environ.get("MCPGEN_CORPUS_ALL") == "1"]


@pytest.mark.timeout(1800)
@pytest.mark.parametrize(("engine", "suite"), [pytest.param(e, b, marks=m, id=f"{e}-{b}") for e, b, m in PAGED])
def test_walking_every_page_of_a_corpus_spec_gives_its_whole_result(engine, suite, request):
    corpora = request.getfixturevalue(f"corpus_{engine}")
    results = run_pages(engine, suite, corpora)
    counts = {k: sum(1 for v in results.values() if v[0] == k) for k in ("keyset", "offset", "refused", "slow")}
    lines = [f"{engine} {suite} paged: " + ", ".join(f"{v} {k}" for k, v in counts.items())]
    lines += [f"  {name}: {kind}: {detail}" for name, (kind, detail) in sorted(results.items()) if kind != "keyset"]
    request.node.user_properties.append(("summary", "\n".join(lines)))
    offset = {name: detail for name, (kind, detail) in results.items() if kind == "offset"}
    unexpected = {name: d for name, d in offset.items() if not any(f" is {t}" in d for t in OFFSET_KEYS[engine])}
    assert not unexpected, f"{engine}: pages use OFFSET where they could seek by key: {unexpected}"
