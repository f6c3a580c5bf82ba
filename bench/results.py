#!/usr/bin/env python3
"""The record of each benchmark's last run, and the tables docs/benchmarks.md shows from it.

A script run with `--write-docs` calls `publish()`: its raw figures go to
bench/results/SCRIPT[-NAME].json (with the command, the date, the load average, the rounds and the
versions), and the block of docs/benchmarks.md between that file's markers is rendered again from the
JSON by the script's own `render(figures)`. No figure in a block is copied by hand.

    python bench/results.py            # render every block again from bench/results/, running nothing
    python bench/results.py --check    # exit 1 and name the blocks that differ from their JSON
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"
DOC = REPO / "docs" / "benchmarks.md"
BLOCK = re.compile(
    r"<!-- bench/results/(?P<key>[\w.-]+)\.json -->\n(?P<body>.*?)<!-- end bench/results/(?P=key)\.json -->", re.S
)


def add_write_docs(parser: argparse.ArgumentParser) -> None:
    """The `--write-docs` option every benchmark script offers (it then calls `publish()`)."""
    parser.add_argument(
        "--write-docs", action="store_true", help="record this run in bench/results/ and docs/benchmarks.md"
    )


def key(script: str, name: str | None = None) -> str:
    """The record's file name without `.json`: the script's stem, then the configuration's name if any."""
    stem = Path(script).stem
    return stem if not name else f"{stem}-{re.sub(r'[^a-z0-9]+', '-', name.lower()).strip('-')}"


def markers(record_key: str) -> tuple[str, str]:
    return f"<!-- bench/results/{record_key}.json -->", f"<!-- end bench/results/{record_key}.json -->"


def versions() -> dict[str, str]:
    """mcpgen (as imported: PYTHONPATH decides which tree), its commit, Python and the libraries measured."""
    from importlib.metadata import PackageNotFoundError, version

    import mcpgen

    found = {"mcpgen": mcpgen.__version__, "python": platform.python_version()}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    if commit.returncode == 0:
        found["commit"] = commit.stdout.strip()
    for package in ("mcp", "duckdb", "sqlalchemy"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            pass
    return found


def publish(script: str, figures: dict, rounds: int, name: str | None = None) -> Path:
    """Store this run's figures as the script's last run and render its block into docs/benchmarks.md."""
    record = {
        "script": Path(script).name,
        "name": name,
        "command": " ".join(["python", f"bench/{Path(script).name}", *sys.argv[1:]]),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
        "rounds": rounds,
        "versions": versions(),
        "figures": figures,
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{key(script, name)}.json"
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    DOC.write_text(rendered_doc(DOC.read_text(encoding="utf-8"), {key(script, name): record}), encoding="utf-8")
    print(f"wrote {path.relative_to(REPO)} and its block in {DOC.relative_to(REPO)}")
    return path


def render(record: dict) -> str:
    """A record as its block shows it: where it comes from, then the script's own table."""
    module = importlib.import_module(Path(record["script"]).stem)
    v = record["versions"]
    load = " / ".join(f"{x:.2f}" for x in record["load_average"])
    built = ", ".join(f"{k} {v[k]}" for k in ("mcp", "duckdb", "sqlalchemy") if k in v)
    head = (
        f"Last run: `{record['command']}`, {record['date']}, {record['rounds']} rounds, load average {load} "
        f"(1/5/15 min, {record['cpus']} CPUs); mcpgen {v['mcpgen']} at {v.get('commit', '?')}, "
        f"Python {v['python']}, {built}."
    )
    return f"{head}\n\n{module.render(record['figures']).rstrip()}\n"


def records() -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(RESULTS.glob("*.json"))}


def blocks(doc: str) -> dict[str, str]:
    """The marked blocks of the doc: record key -> the text between its markers."""
    return {m["key"]: m["body"] for m in BLOCK.finditer(doc)}


def rendered_doc(doc: str, wanted: dict[str, dict]) -> str:
    """`doc` with the block of each record in `wanted` rendered again (a record without a block is
    added at the end of the doc, for its prose to be written around it)."""
    for record_key, record in wanted.items():
        begin, end = markers(record_key)
        block = f"{begin}\n{render(record)}{end}"
        if begin in doc:
            doc = doc[: doc.index(begin)] + block + doc[doc.index(end) + len(end) :]
        else:
            doc = doc.rstrip("\n") + f"\n\n{block}\n"
    return doc


# Formatting shared by the scripts' `render`.


def spread(values: Iterable[float], digits: int = 2, bold: bool = False) -> str:
    """The median of `values` and their range: `1.02 [0.98-1.10]`."""
    values = list(values)
    if not values:
        return "-"
    mid = f"{statistics.median(values):.{digits}f}"
    return f"{f'**{mid}**' if bold else mid} [{min(values):.{digits}f}-{max(values):.{digits}f}]"


def ratios(new: Iterable[float], old: Iterable[float]) -> list[float]:
    """Per-round ratios new / old of two paired lists."""
    return [n / o for n, o in zip(new, old)]


def verdict(value: float | None, target: float | None, below: bool = True) -> str:
    """`<= 1.10: met` or `missed`; empty without a target."""
    if target is None or value is None:
        return ""
    ok = value <= target if below else value >= target
    return f"{'<=' if below else '>='} {target:.2f}: {'met' if ok else 'missed'}"


def table(header: list[str], rows: Iterable[list[str]]) -> str:
    lines = [f"| {' | '.join(header)} |", f"|{'---|' * len(header)}"]
    lines += [f"| {' | '.join(row)} |" for row in rows]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a block differs from its JSON")
    opts = ap.parse_args()
    doc, found = DOC.read_text(encoding="utf-8"), records()
    missing = sorted(set(blocks(doc)) - set(found))
    if missing:
        print(f"docs/benchmarks.md has blocks with no record in bench/results/: {', '.join(missing)}")
        return 1
    new = rendered_doc(doc, found)
    if opts.check:
        stale = [k for k, body in blocks(doc).items() if body != blocks(new)[k]] + sorted(set(found) - set(blocks(doc)))
        if stale:
            print(f"blocks that differ from their record: {', '.join(stale)}")
            return 1
        return 0
    if new != doc:
        DOC.write_text(new, encoding="utf-8")
    print(f"rendered {len(found)} blocks of docs/benchmarks.md from bench/results/")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.exit(main())
