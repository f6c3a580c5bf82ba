"""No command prints a Python warning or a traceback for a valid project: validate, list, call (every
tool, with its own test's arguments), test and schema, on the shipped project and on a project of
paged specs that use every mapping and list shape a spec takes (table, chart, charts, empty, app)."""

from __future__ import annotations

import logging
import shutil
import textwrap
import warnings
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from shipped import REPO, good_args

from mcpgen.cli import main

# Hidden under Python's default warning filters: a user never sees them.
HIDDEN = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)

PAGED = {
    "paged_cities": """
        description: Cities of one country, largest first, a page at a time.
        parameters:
          country: {type: string, description: ISO code, default: JP, pattern: "^[A-Z]{2}$"}
        sql: |
          SELECT name AS city, population FROM cities WHERE country_code = :country ORDER BY population DESC, name
        page_size: 5
        sources: ["https://www.geonames.org/"]
        content: "{% for r in rows %}{{ r.city }} {% endfor %}"
        empty:
          content: No city in {{ country }}.
          sources: ["https://www.geonames.org/"]
        table:
          columns: [city, population]
          headers: {city: City}
        chart: {type: bar, x: city, y: population, title: Population}
        app: {chart_height: 300}
        tests:
          - args: {country: FR}
            expect: {min_rows: 1}
    """,
    "paged_timezones": """
        description: Cities per time zone, a page at a time.
        sql: |
          SELECT timezone, count(*) AS cities, sum(population) AS people FROM cities GROUP BY timezone ORDER BY timezone
        page_size: 20
        sources: ["https://www.geonames.org/"]
        content: "{{ row_count }} time zones."
        empty: No time zone.
        table: true
        chart:
          - {type: line, x: timezone, y: [cities]}
          - {type: bar, x: timezone, y: people, label: People}
        app: true
    """,
}


def shipped_project(tmp_path: Path) -> Path:
    return REPO / "specs"


def paged_project(tmp_path: Path) -> Path:
    shutil.copy(REPO / "mcpgen.yaml", tmp_path)
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    (tmp_path / "specs").mkdir()
    for name, text in PAGED.items():
        (tmp_path / "specs" / f"{name}.yaml").write_text(textwrap.dedent(text))
    return tmp_path / "specs"


def commands(specs: Path) -> list[list[str]]:
    out = [["validate", str(specs)], ["list", str(specs)], ["test", str(specs)], ["schema"], ["schema", "--config"]]
    for path in sorted(specs.glob("*.yaml")):
        spec = yaml.safe_load(path.read_text())
        args = [f"{k}={v}" for k, v in good_args(spec).items() if not isinstance(v, list)]
        out.append(["call", path.stem, "--specs", str(specs), *(a for arg in args for a in ("-a", arg))])
    return out


@pytest.mark.parametrize("make", [shipped_project, paged_project], ids=["shipped", "paged"])
def test_no_command_prints_a_warning_or_a_traceback(make, tmp_path, monkeypatch, caplog):
    specs = make(tmp_path)
    monkeypatch.chdir(specs.parent)
    runner = CliRunner()
    for command in commands(specs):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = runner.invoke(main, command)
        shown = [f"{w.category.__name__}: {w.message}" for w in caught if not issubclass(w.category, HIDDEN)]
        assert not shown, f"mcpgen {' '.join(command)}: {shown}"
        assert result.exception is None or isinstance(result.exception, SystemExit), (command, result.exception)
        assert result.exit_code == 0, f"mcpgen {' '.join(command)}:\n{result.output}"
        for text in (result.stderr, result.stdout):
            assert "Traceback" not in text and "Warning:" not in text, f"mcpgen {' '.join(command)}:\n{text}"
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
