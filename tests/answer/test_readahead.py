"""Read-ahead of paged answers (mcpgen.answer.readahead): a walk reads its later pages several at once, the
pages still equal the whole query, the held rows stay within their byte budget, and a held page shows the
rows as they were read, for at most READ_AHEAD_AGE seconds."""

from __future__ import annotations

import textwrap
import time

import pytest

from mcpgen.answer import pages
from mcpgen.answer.cursors import NEXT_CURSOR_META, Position
from mcpgen.answer.readahead import BATCH_SHARE, READ_AHEAD_AGE, Batch, ReadAhead, rows_size
from mcpgen.serve.project import open_project
from mcpgen.spec.models import CURSOR

ROWS, PAGE = 10_000, 100


def _config(init: str) -> str:
    return f'connections:\n  default:\n    duckdb: ":memory:"\n    init: ["{init}"]\n'


TABLE = _config(f"CREATE TABLE nums AS SELECT range AS n, 'row ' || range AS label FROM range({ROWS})")
VIEW = _config("CREATE VIEW nums AS SELECT * FROM read_csv('nums.csv', header=true)")
SPEC = f"""\
description: Numbers, in pages.
sql: SELECT n, label FROM nums ORDER BY n
sources: [https://example.org/]
content: "{{{{ row_count }}}} numbers"
page_size: {PAGE}
"""


@pytest.fixture
def held(monkeypatch) -> ReadAhead:
    """The read-ahead of the projects a test opens: its own, empty."""
    fresh = ReadAhead()
    monkeypatch.setattr(pages, "READ_AHEAD", fresh)
    return fresh


@pytest.fixture
def project(tmp_path, monkeypatch, held):
    """A project of one paged spec (`nums`) over `config`; its engine's queries counted."""
    monkeypatch.chdir(tmp_path)
    opened = []

    def build(config: str = TABLE):
        (tmp_path / "mcpgen.yaml").write_text(config)
        (tmp_path / "specs").mkdir(exist_ok=True)
        (tmp_path / "specs" / "nums.yaml").write_text(textwrap.dedent(SPEC))
        opened.append(open_project(tmp_path / "specs"))
        engine = opened[-1].engines["default"]
        run = engine.run
        engine.queries = 0

        def counted(*args, **kwargs):
            engine.queries += 1
            return run(*args, **kwargs)

        monkeypatch.setattr(engine, "run", counted)
        return opened[-1].registry, engine

    yield build
    for p in opened:
        p.close()


def _page(registry, cursor: str | None) -> tuple[list[list], str | None]:
    page = registry.call_sync("nums", {CURSOR: cursor} if cursor else {})
    assert not page.is_error, page.content[0].text
    return page.structured_content["table"][1:], (page.meta or {}).get(NEXT_CURSOR_META)


def _walk(registry, check=lambda: None) -> list[list]:
    rows, cursor = [], None
    for _ in range(ROWS):
        page, cursor = _page(registry, cursor)
        rows += page
        check()
        if cursor is None:
            return rows
    raise AssertionError("the pages never ended")


EVERY_ROW = [[n, f"row {n}"] for n in range(ROWS)]


def test_a_walk_reads_its_later_pages_in_doubling_batches(project, held):
    registry, engine = project()
    assert _walk(registry) == EVERY_ROW
    # pages 1 and 2 alone, then 2, 4, 8, 16, 32 pages and the last 36: 8 queries for 100 pages
    assert engine.queries == 8
    assert held.used <= held.budget


def test_without_room_to_hold_a_batch_every_page_is_read_on_its_own(project, held):
    held.budget = 0
    registry, engine = project()
    assert _walk(registry) == EVERY_ROW
    assert engine.queries == ROWS // PAGE


def test_the_held_rows_stay_within_the_byte_budget(project, held):
    held.budget = 200_000  # a few thousand of these rows in all
    registry, engine = project()
    walks = [registry, project()[0]]  # two walks at once, taking turns
    cursors: list = [None, None]
    rows: list[list] = [[], []]
    for _ in range(ROWS):
        for i, walk in enumerate(walks):
            if cursors[i] != "done":
                page, cursors[i] = _page(walk, cursors[i])
                rows[i] += page
                cursors[i] = cursors[i] or "done"
                assert held.used <= held.budget
        if cursors == ["done", "done"]:
            break
    assert rows == [EVERY_ROW, EVERY_ROW]
    assert 8 < engine.queries < ROWS // PAGE  # batches, kept small by the budget


def _write_csv(path, label: str, first: int = 0, kept: tuple = ()) -> None:
    """Rows `first` to ROWS, labelled `label n`, but those in `kept` labelled `row n`."""
    path.write_text("n,label\n" + "".join(f"{n},{'row' if n in kept else label} {n}\n" for n in range(first, ROWS)))


def _expected(numbers: range, label: str, kept: tuple = ()) -> list[list]:
    return [[n, f"{'row' if n in kept else label} {n}"] for n in numbers]


def test_a_held_page_shows_the_rows_as_they_were_read_and_the_next_read_continues_after_it(
    project, tmp_path, monkeypatch
):
    _write_csv(tmp_path / "nums.csv", "row")
    registry, engine = project(VIEW)
    cursor = None
    for _ in range(2):
        _, cursor = _page(registry, cursor)
    third, cursor = _page(registry, cursor)  # pages 3 and 4 in one read
    assert third[0] == [200, "row 200"] and engine.queries == 3
    # Rows 0-149 gone, every label changed but those of the rows the cursors continue after.
    kept = (299, 399)
    _write_csv(tmp_path / "nums.csv", "new", first=150, kept=kept)
    fourth_cursor = cursor
    fourth, cursor = _page(registry, cursor)
    assert fourth == _expected(range(300, 400), "row") and engine.queries == 3  # as read with page 3
    fifth, _ = _page(registry, cursor)
    assert fifth == _expected(range(400, 500), "new") and engine.queries == 4  # read now, after the last row given
    real = time.monotonic
    monkeypatch.setattr(time, "monotonic", lambda: real() + READ_AHEAD_AGE + 1)
    again, _ = _page(registry, fourth_cursor)  # held no longer: read again, from the cursor's key
    assert again == _expected(range(300, 400), "new", kept) and engine.queries == 5


def test_the_least_recently_used_batch_is_evicted_first():
    rows = [(n, f"row {n}") for n in range(1000)]
    held = ReadAhead(budget=BATCH_SHARE * rows_size(rows))  # room for BATCH_SHARE batches of these rows

    def keep():
        return held.keep("caller", Batch(Position(0), ["n", "label"], list(rows), more=True)).name

    names = [keep() for _ in range(BATCH_SHARE)]
    assert held.find("caller", Position(0, batch=names[0]), 1000) is not None  # used last: the second is now the oldest
    names.append(keep())
    assert [held.find("caller", Position(0, batch=name), 1000) is not None for name in names] == [True, False] + [
        True
    ] * (BATCH_SHARE - 1)
    assert held.used <= held.budget
    assert held.find("another caller", Position(0, batch=names[0]), 1000) is None


def test_a_cursor_followed_again_reuses_what_it_read_and_one_whose_batch_is_gone_reads_its_page_alone(
    project, held, monkeypatch
):
    registry, engine = project()
    cursors = [None]
    for _ in range(4):
        cursors.append(_page(registry, cursors[-1])[1])
    assert engine.queries == 3  # pages 1, 2, then 3-4 in one read
    again, _ = _page(registry, cursors[2])  # page 3's cursor once more: the read it made is held
    assert again == EVERY_ROW[200:300] and engine.queries == 3
    fifth, _ = _page(registry, cursors[4])  # reads pages 5-8
    assert fifth == EVERY_ROW[400:500] and engine.queries == 4
    sixth_cursor = _page(registry, cursors[4])[1]  # names the batch of pages 5-8
    real = time.monotonic
    monkeypatch.setattr(time, "monotonic", lambda: real() + READ_AHEAD_AGE + 1)
    for _ in range(2):  # held no longer: one page, read alone each time, nothing held for it
        sixth, _ = _page(registry, sixth_cursor)
        assert sixth == EVERY_ROW[500:600]
    assert engine.queries == 6 and held.used == 0


def test_a_twin_spec_under_another_name_reads_its_own(project, tmp_path):
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "twin.yaml").write_text(textwrap.dedent(SPEC))  # the same spec, another tool
    registry, engine = project()
    for tool in ("nums", "twin"):
        cursor = None
        for _ in range(3):
            page = registry.call_sync(tool, {CURSOR: cursor} if cursor else {})
            cursor = page.meta[NEXT_CURSOR_META]
    assert page.structured_content["table"][1] == [200, "row 200"] and engine.queries == 6
