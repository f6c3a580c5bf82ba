"""End to end: long work on the real `mcpgen serve` over stdio, with the official client (HTTP answers
plain JSON, with no stream to carry notifications: docs/long-work.md).
Progress notifications arrive while DuckDB scans; a cancelled call stops its query (the project has
one slot, so the next call answering at once proves the join is no longer running)."""

import os
import sys

import anyio
import pytest
from longwork import write_long_project
from mcp import Client, StdioServerParameters

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    return write_long_project(tmp_path_factory.mktemp("long"))


async def _progress_then_cancel(session: Client) -> None:
    seen = []

    async def on_progress(progress, total, message):
        seen.append(progress)

    with anyio.fail_after(60):
        result = await session.call_tool("scan", {"k": 7}, progress_callback=on_progress)
    assert not result.is_error and result.content[0].text.endswith("multiples of 7.")
    assert seen and seen == sorted(set(seen)) and all(0 <= p <= 100 for p in seen), seen
    with anyio.move_on_after(1.0) as scope:
        await session.call_tool("forever", {})
    assert scope.cancelled_caught
    with anyio.fail_after(15):
        quick = await session.call_tool("quick", {})
    assert quick.content[0].text == "20000000 numbers."


def test_over_stdio(specs):
    async def main():
        command = ["-m", "mcpgen.cli", "serve", str(specs)]  # this checkout's mcpgen, whatever is installed
        params = StdioServerParameters(command=sys.executable, args=command, env=dict(os.environ))
        async with Client(params) as session:
            await _progress_then_cancel(session)

    anyio.run(main)
