"""A project whose queries take long, for the progress, cancellation and task tests: `big` holds
ROWS integers; `scan` reads it once (DuckDB reports progress), `forever` joins it with itself
(minutes of work unless cancelled), `quick` answers at once. One slot: a query left running would
hold up every later call, so a call answering at once proves the cancelled query stopped."""

from __future__ import annotations

from pathlib import Path

ROWS = 20_000_000

CONFIG = f"""\
connections:
  default:
    duckdb: ":memory:"
    max_concurrent: 1
    queue_timeout: 30
    init:
      - CREATE TABLE big AS SELECT range AS x FROM range({ROWS})
"""

SPECS = {
    "scan": """\
description: Counts the multiples of k among the big numbers, reading every one of them.
parameters:
  k: {type: integer, description: the divisor, default: 7, minimum: 1}
sql: |
  SELECT count(*) AS n, sum(hash(x)) AS h FROM big
  WHERE x % :k = 0 AND x < (SELECT max(x) FROM big b WHERE b.x % 3 = 0)
sources: [https://example.org/big]
content: "{{ rows[0].n }} multiples of {{ k }}."
timeout: 60s
""",
    "forever": """\
description: A join of the big numbers with themselves; runs for minutes.
parameters:
  h: {type: integer, description: the hash to look for, default: 7}
sql: SELECT count(*) AS n FROM big a, big b WHERE hash(a.x + b.x) = :h
sources: [https://example.org/big]
content: "{{ rows[0].n }} pairs."
timeout: 300s
""",
    "quick": """\
description: How many big numbers there are.
sql: SELECT count(*) AS n FROM big
sources: [https://example.org/big]
content: "{{ rows[0].n }} numbers."
""",
}


def write_long_project(root: Path, extra: dict[str, str] | None = None) -> Path:
    """The project under `root`; returns its specs folder."""
    (root / "mcpgen.yaml").write_text(CONFIG)
    specs = root / "specs"
    specs.mkdir()
    for name, text in {**SPECS, **(extra or {})}.items():
        (specs / f"{name}.yaml").write_text(text)
    return specs
