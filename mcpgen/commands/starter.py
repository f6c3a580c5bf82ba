"""`mcpgen init [DIR]`: a working project to start from, which validates, tests and serves at once.

It writes `mcpgen.yaml` (one in-process DuckDB connection, filled from the data file), a small
real data file (the 300 most populated cities of GeoNames, CC BY 4.0) and one spec with a `tests:`
block; `mcpgen init` then prints the client configuration that starts `mcpgen serve` with absolute
paths (`commands.clients`). Nothing that exists is overwritten.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as folder:
...     [p.relative_to(folder).as_posix() for p in create_project(Path(folder) / "new")]
['new/mcpgen.yaml', 'new/data/cities.csv', 'new/specs/largest_cities.yaml']
"""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

CONFIG = """\
# mcpgen project file: where the data comes from, and defaults for every spec.
# One in-process DuckDB database, filled at start-up from data/ (paths relative to this folder).
connections:
  default:
    duckdb: ":memory:"
    init:
      - CREATE TABLE cities AS SELECT * FROM read_csv('data/cities.csv')
defaults:
  max_rows: 100
  timeout: 30s
"""

SPEC = """\
# One tool: its name is this file's name. Edit it, then: mcpgen validate specs && mcpgen test specs
title: Largest cities
description: >
  The most populated cities, optionally within one country (GeoNames, the 300 largest).
parameters:
  country:
    type: string
    description: ISO 3166-1 alpha-2 country code in capitals, e.g. JP; leave it out for the world
    required: false
    pattern: "^[A-Z]{2}$"
  top_n:
    type: integer
    description: How many cities to return
    default: 5
    minimum: 1
    maximum: 50
sql: |
  SELECT name AS city, country_code, population
  FROM cities
  WHERE :country IS NULL OR country_code = :country
  ORDER BY population DESC, name
  LIMIT :top_n
sources:
  - https://www.geonames.org/
content: |
  The {{ row_count }} most populated cities{% if country %} in {{ country }}{% endif %}:
  {% for r in rows %}{{ r.city }} ({{ r.population | thousands }}){{ ", " if not loop.last else "." }}{% endfor %}
empty: No city of the 300 largest is in {{ country }}.
chart:
  type: horizontal_bar
  x: city
  y: population
  x_title: City
  y_title: People
tests:
  - name: the three largest in Japan
    args: {country: JP, top_n: 3}
    expect:
      rows:
        - {city: Tokyo, country_code: JP, population: 9733276}
        - {city: Yokohama, country_code: JP, population: 3777491}
        - {city: Osaka, country_code: JP, population: 2753862}
  - name: a country with none of them
    args: {country: IS}
    expect: {row_count: 0}
"""


class StarterError(Exception):
    """The project cannot be written (a file is in the way): one sentence."""


def create_project(folder: Path) -> list[Path]:
    """Write the starter project into `folder` (created if missing); the files written."""
    files = {
        folder / "mcpgen.yaml": CONFIG,
        folder / "data" / "cities.csv": None,  # copied from the package
        folder / "specs" / "largest_cities.yaml": SPEC,
    }
    in_the_way = [p for p in files if p.exists()]
    if in_the_way:
        raise StarterError(f"{in_the_way[0]} exists already; init writes only into a new or empty project folder")
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if text is None:
            with resources.as_file(resources.files("mcpgen") / "starter" / "cities.csv") as data:
                shutil.copyfile(data, path)
        else:
            path.write_text(text, encoding="utf-8")
    return list(files)
