"""docs/benchmarks.md shows figures only from the benchmarks' last runs: every marked block is the
rendering of its record in bench/results/, and the prose around the blocks quotes no current figure."""

import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import results  # noqa: E402  (bench/results.py)

DOC = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")
HISTORY = "\n## History\n"
# A current figure: a ratio (`0.90x`, `ratio 1.02`) or a timing (`12 ms`, `350 us`).
FIGURE = re.compile(r"\b\d[\d,]*(\.\d+)?\s?x\b|\bratios? (of )?\d|\b\d[\d,]*(\.\d+)?\s?(ms|us|µs)\b")


def prose(doc: str) -> str:
    """The doc without its marked blocks and without its History section."""
    current = doc.split(HISTORY)[0]
    return results.BLOCK.sub("", current)


def test_every_block_is_the_rendering_of_its_record():
    found, records = results.blocks(DOC), results.records()
    assert found, "docs/benchmarks.md has no generated block"
    assert sorted(set(found) - set(records)) == [], "blocks without a record in bench/results/"
    assert sorted(set(records) - set(found)) == [], "records in bench/results/ that the doc does not show"
    for key, body in found.items():
        assert body == results.render(records[key]), f"{key}: run `python bench/results.py` (or the benchmark)"


def test_every_record_says_where_and_when_it_was_measured():
    for key, record in results.records().items():
        assert {"command", "date", "load_average", "rounds", "versions", "figures"} <= set(record), key
        assert record["rounds"] >= 3, f"{key}: fewer than 3 rounds"
        assert {"mcpgen", "python"} <= set(record["versions"]), key


def test_the_prose_quotes_no_current_figure():
    quoted = [m.group(0) for m in FIGURE.finditer(prose(DOC))]
    assert quoted == [], "figures outside the generated blocks (move them into a block, or into ## History)"


@pytest.mark.parametrize(
    ("text", "caught"),
    [
        ("it gave 0.90x against", True),
        ("a ratio 1.02 at 10 rows", True),
        ("p50 2.49 ms here", True),
        ("about 350 us a call", True),
        ("10,000 calls over 2 vCPUs", False),
        ("see the block below", False),
    ],
)
def test_the_figure_pattern(text, caught):
    assert bool(FIGURE.search(text)) is caught


def test_blocks_and_history_are_left_out_of_the_prose():
    begin, end = results.markers("bench_x")
    doc = f"intro\n{begin}\n| 0.90x |\n{end}\nmore\n## History\n\nit was 1.02x\n"
    assert prose(doc) == "intro\n\nmore"
