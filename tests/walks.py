"""Walking a paged tool's answer as a client does: every page, following the cursor each one gives."""

from __future__ import annotations

from mcpgen.answer.cursors import NEXT_CURSOR_META
from mcpgen.spec.models import CURSOR


def ok(result):
    assert not result.is_error, result.content[0].text
    return result


def follow(call, arguments: dict, size: int | None = None, bound: int = 10_000) -> list[list]:
    """Every row of every page, following the cursors in _meta (at most `bound` pages); also checks what the prose
    says and, given `size`, that every page but the last holds `size` rows."""
    rows, cursor = [], None
    for _ in range(bound):
        page = ok(call({**arguments, CURSOR: cursor} if cursor else arguments))
        header, *body = page.structured_content["table"]
        rows += body
        cursor = (page.meta or {}).get(NEXT_CURSOR_META)
        if cursor is None:
            assert size is None or 0 < len(body) <= size or not rows, f"a last page of {len(body)} rows"
            return [header, *rows]
        assert size is None or len(body) == size, f"a page of {len(body)} rows, not {size}, before the last"
        assert f'cursor="{cursor}"' in page.content[0].text
    raise AssertionError("the pages never ended")
