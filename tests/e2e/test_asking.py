"""End to end: asking the person on the real `mcpgen serve`, with the official client and its
elicitation callback. Over stdio both wires ask (2026-07-28 with input_required, 2025-11-25 with
elicitation/create on the pipe); over HTTP a 2026-07-28 client is asked with input_required, while a
2025-11-25 client, which stateless HTTP cannot send a request to, is answered as before. `since`
(confirm when_rows_over: 3) asks only for the call with five rows."""

import os
import sys

import anyio
import pytest
from asking import Person, write_asking_project
from mcp import Client, StdioServerParameters
from servers import client, serving

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    return write_asking_project(tmp_path_factory.mktemp("asking"))


@pytest.fixture(scope="module")
def http_url(specs):
    with serving(specs) as url:
        yield url


def _stdio(specs, person, mode) -> Client:
    command = ["-m", "mcpgen.cli", "serve", str(specs)]  # this checkout's mcpgen, whatever is installed
    params = StdioServerParameters(command=sys.executable, args=command, env=dict(os.environ))
    return Client(params, mode=mode, elicitation_callback=person)


async def _asked(session: Client) -> dict:
    with anyio.fail_after(60):
        return {
            "life": (await session.call_tool("life", {"country": "DE"})).content[0].text,
            "everything": (await session.call_tool("everything", {})).content[0].text,
            "few": (await session.call_tool("since", {"since": 2010})).content[0].text,  # 3 rows: not asked
            "many": (await session.call_tool("since", {"since": 2000})).content[0].text,  # 5 rows: asked
            "greet": (await session.call_tool("greet", {})).content[0].text,
            "prompt": (await session.get_prompt("compare", {})).messages[0].content.text,
        }


ANSWERED = {
    "life": "1 years for DE since 2005.",
    "everything": "5 rows.",
    "few": "3 rows since 2010.",
    "many": "5 rows since 2000.",
    "greet": "Hello, Ada!",
    "prompt": "How has life expectancy in FR changed? Use life.",
}
VALUES = {"country": "FR", "since": 2005, "confirm": True, "name": "Ada"}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_over_stdio_both_wires_ask_and_run_the_call_with_the_answers(specs, mode):
    person, out = Person(VALUES), {}

    async def main():
        async with _stdio(specs, person, mode) as session:
            out.update(await _asked(session))

    anyio.run(main)
    assert out == ANSWERED
    assert [p.message for p in person.asked] == [
        "life needs since.",
        "This reads every row of the table. Run it?",
        "This reads more than three rows. Run it?",
        "What is your name?",
        "compare needs country.",
    ]


def test_over_http_a_2026_client_is_asked_and_a_decline_runs_nothing(http_url):
    person, out = Person(VALUES), {}

    async def main():
        async with client(http_url, elicitation_callback=person) as session:
            out.update(await _asked(session))
        async with client(http_url, elicitation_callback=Person(action="decline")) as session:
            out["declined"] = (await session.call_tool("everything", {})).content[0].text

    anyio.run(main)
    assert {k: out[k] for k in ANSWERED} == ANSWERED
    assert out["declined"] == "Not run: the person declined the question 'confirm'."


def test_over_http_a_2025_client_is_answered_as_before(http_url):
    out = {}

    async def main():
        async with client(http_url, mode="legacy", elicitation_callback=Person(VALUES)) as session:
            out["life"] = (await session.call_tool("life", {"country": "DE"})).content[0].text
            out["everything"] = (await session.call_tool("everything", {})).content[0].text

    anyio.run(main)
    assert out == {"life": "Missing required argument 'since'.", "everything": "5 rows."}
