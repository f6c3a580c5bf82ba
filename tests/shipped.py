"""The shipped specs (specs/*.yaml), and their queries run straight on DuckDB with no mcpgen code, to
compare answers with."""

from __future__ import annotations

import datetime as dt
import functools
import re
from pathlib import Path

import duckdb
import pytest
import yaml

from mcpgen.answer.results import to_cell

REPO = Path(__file__).resolve().parent.parent
SPECS = REPO / "specs"


def shipped_specs():
    out = {}
    for path in sorted((REPO / "specs").glob("*.yaml")):
        spec = yaml.safe_load(path.read_text())
        out[spec.get("name", path.stem)] = spec
    return out


def good_args(spec):
    for case in spec.get("tests", []):
        if "error_contains" not in case.get("expect", {}):
            return case.get("args", {})
    return {}


@functools.cache
def _shipped_duckdb() -> duckdb.DuckDBPyConnection:
    """A DuckDB of this process's own holding the project's init statements' tables, loaded once."""
    config = yaml.safe_load((REPO / "mcpgen.yaml").read_text())
    con = duckdb.connect()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(REPO)
        for statement in config["connections"]["default"]["init"]:
            con.execute(statement)
    return con


def direct_table(spec, args):
    """The spec's SQL run straight on DuckDB with the project's init statements: no mcpgen code."""
    con = _shipped_duckdb().cursor()
    values = {}
    for name, p in (spec.get("parameters") or {}).items():
        value = args.get(name, p.get("default"))
        if value is not None and p["type"] == "date":
            value = dt.date.fromisoformat(value)
        if value is not None and p["type"] == "datetime":
            value = dt.datetime.fromisoformat(value)
        values[name] = value
    sql = re.sub(r"\bIN\s+:([A-Za-z_]\w*)", r"IN (SELECT unnest($\1))", spec["sql"])
    sql = re.sub(r"(?<![:\w]):([A-Za-z_]\w*)", r"$\1", sql)
    used = set(re.findall(r"\$([A-Za-z_]\w*)", sql))
    cur = con.execute(sql, {k: v for k, v in values.items() if k in used})
    columns = [d[0] for d in cur.description]
    rows = cur.fetchmany(spec.get("max_rows", 1000))
    table = spec.get("table", True)
    if table is False:
        return None
    chosen = table["columns"] if isinstance(table, dict) and table.get("columns") else columns
    headers = table.get("headers", {}) if isinstance(table, dict) else {}
    return [[headers.get(c, c) for c in chosen]] + [[to_cell(r[columns.index(c)]) for c in chosen] for r in rows]
