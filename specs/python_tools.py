"""Hand-written Python tools for the example project.

`mcpgen serve specs/` loads this file next to the YAML specs. A function becomes
a tool only when it is decorated with `@registry.tool()` AND annotated
`-> DataToolOutput`: that annotation is the promise that it returns prose plus
`sources` (and here a `table`), like every YAML tool.

Everything here is deterministic and reads only files inside this repository.
"""

import csv
from pathlib import Path

from mcp_types import CallToolResult, TextContent

from mcpgen import DataToolOutput, registry

AIRLINES_CSV = Path(__file__).parent.parent / "examples/data/airlines.csv"
SOURCES = ["https://www.transtats.bts.gov/", "https://github.com/tidyverse/nycflights13"]


def _airlines() -> list[tuple[str, str]]:
    with AIRLINES_CSV.open(newline="", encoding="utf-8") as f:
        return [(row["carrier"].strip(), row["name"].strip()) for row in csv.DictReader(f)]


@registry.tool()
def airline_lookup(query: str = "") -> DataToolOutput:
    """Look up the airlines that flew from New York City in 2013 (the carriers in
    the flights data) by two-letter carrier code or by part of the name,
    case-insensitively: "UA", "delta", "air". An empty query lists all 16.
    Use it to turn the carrier codes returned by the flight tools into names,
    or to find the code to filter on."""
    needle = query.strip().casefold()
    airlines = _airlines()
    if needle:
        exact = [a for a in airlines if a[0].casefold() == needle]
        matches = exact or [a for a in airlines if needle in a[0].casefold() or needle in a[1].casefold()]
    else:
        matches = airlines
    matches.sort(key=lambda a: a[0])

    if not matches:
        text = (
            f"No airline in the 2013 New York City flights data matches {query.strip()!r}; "
            f"call airline_lookup with an empty query to list all {len(airlines)}."
        )
    elif len(matches) == 1:
        code, name = matches[0]
        text = f"{code} is {name}" + ("" if name.endswith(".") else ".")
    else:
        listed = [f"{code} ({name})" for code, name in matches]
        what = f"match {query.strip()!r}" if needle else "flew from New York City in 2013"
        text = f"{len(matches)} airlines {what}: " + ", ".join(listed[:-1]) + " and " + listed[-1] + "."

    table = [["carrier", "name"], *[[code, name] for code, name in matches]]
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content={"sources": SOURCES, "table": table},
    )


# Deliberately left unregistered: no `-> DataToolOutput` annotation, so
# @registry.tool() logs a warning and returns the function unchanged; no client
# ever sees it. It shows the rule: a tool must promise sourced data output.
@registry.tool()
def miles_to_km(miles: float) -> float:
    """Convert statute miles (the unit of the flights `distance` column) to kilometres."""
    return round(miles * 1.609344, 3)
