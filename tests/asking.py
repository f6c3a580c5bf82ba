"""The project of docs/asking.md, whose tools ask the person, for the asking tests: `life` has two
required arguments (a form asks for the missing ones), `everything` needs confirmation (`confirm:`),
`greet` is a hand-written tool that asks with `mcpgen.ask`, and a prompt; and `Person`, an
elicitation callback for the official client that answers from a script and records what it was asked."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mcp.types import ElicitResult

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "asking.md"


def guide_files() -> dict[str, str]:
    """The files docs/asking.md shows, by the path each block names on its first line (`# specs/life.yaml`)."""
    text = GUIDE.read_text(encoding="utf-8")
    return {m[1]: m[2] for m in re.finditer(r"```(?:yaml|python)\n# (\S+)\n(.*?)```", text, re.S)}


PROMPT = """\
description: Compare a country's life expectancy since a year.
tools: [life]
arguments:
  country: {description: the country's ISO code}
template: "How has life expectancy in {{ country }} changed? Use life."
"""


def write_asking_project(root: Path) -> Path:
    """The guide's project under `root`, and a prompt; returns its specs folder."""
    (root / "specs").mkdir()
    for path, text in guide_files().items():
        (root / path).write_text(text)
    (root / "specs" / "compare.prompt.yaml").write_text(PROMPT)
    return root / "specs"


class Person:
    """An elicitation callback: answers each form from `values` (the fields it asks for), or with
    `action` (decline, cancel); records every form it was shown."""

    def __init__(self, values: dict[str, Any] | None = None, action: str = "accept"):
        self.values, self.action = values or {}, action
        self.asked: list[Any] = []

    async def __call__(self, context, params) -> ElicitResult:
        self.asked.append(params)
        if self.action != "accept":
            return ElicitResult(action=self.action)
        fields = params.requested_schema["properties"]
        return ElicitResult(action="accept", content={k: v for k, v in self.values.items() if k in fields})
