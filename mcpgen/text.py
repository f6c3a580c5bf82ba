r"""Small text helpers shared by the loaders, checks and engines.

>>> line_col("SELECT 1\nFROM t", 11)
(2, 3)
>>> first_line(ValueError("  bad value\nmore detail")), first_line(KeyError())
('bad value', 'KeyError')
>>> first_line(""), first_line("one\ntwo")
('', 'one')
"""

from __future__ import annotations


def line_col(text: str | bytes, index: int) -> tuple[int, int]:
    """The 1-based (line, column) of offset `index` in `text`."""
    newline = b"\n" if isinstance(text, bytes) else "\n"
    return text.count(newline, 0, index) + 1, index - (text.rfind(newline, 0, index) + 1) + 1  # type: ignore[arg-type]


def first_line(error: BaseException | str) -> str:
    """The first line of a message, stripped; for an exception without one, its class name."""
    text = str(error).strip()
    line = text.splitlines()[0].strip() if text else ""
    return line or ("" if isinstance(error, str) else type(error).__name__)
