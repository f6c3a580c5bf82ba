"""Asking the person, in process: the official client with an elicitation callback against ToolServer,
on both wires (`auto`: 2026-07-28, asked with input_required results the client answers and retries;
`legacy`: 2025-11-25, asked with elicitation/create mid-call). Every answer is compared with the same
call made with those values as arguments. Over the real `mcpgen serve`: tests/e2e/test_asking.py."""

import dataclasses

import anyio
import pytest
from asking import Person, write_asking_project
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult, InputRequiredResult

from mcpgen.serve.project import open_project
from mcpgen.serve.server import ToolServer

WIRES = ["auto", "legacy"]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("asking")
    specs = write_asking_project(root)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        project = open_project(specs)
        yield project
        project.close()


@pytest.fixture
def runs(project, monkeypatch):
    """How many times each spec tool's query was run (its handler called)."""
    counts = {"life": 0, "everything": 0}
    for name in counts:
        tool = project.registry.get(name)

        def counted(arguments, handler=tool.handler, name=name):
            counts[name] += 1
            return handler(arguments)

        monkeypatch.setattr(tool, "handler", counted)
    return counts


def direct(project, name, arguments):
    """The same call made with the values as arguments, straight to the registry (nobody asked)."""
    return project.registry.call_sync(name, arguments).to_mcp()


def session(project, check, person=None, mode="auto"):
    async def main():
        async with Client(ToolServer(project.registry).server, mode=mode, elicitation_callback=person) as client:
            with anyio.fail_after(60):
                await check(client)

    anyio.run(main)


@pytest.mark.parametrize("mode", WIRES)
def test_missing_required_arguments_are_asked_in_one_form_and_the_answer_runs_the_call(project, mode):
    person, out = Person({"country": "FR", "since": 2005}), {}

    async def check(client):
        out["both"] = await client.call_tool("life", {})
        out["one"] = await client.call_tool("life", {"country": "DE"})  # only what is missing is asked

    session(project, check, person, mode)
    assert out["both"].content[0].text == "2 years for FR since 2005."
    assert (
        out["both"].structured_content == direct(project, "life", {"country": "FR", "since": 2005}).structured_content
    )
    assert out["one"].content[0].text == "1 years for DE since 2005."
    first, second = person.asked
    assert first.message == "life needs country and since." and second.message == "life needs since."
    assert first.requested_schema == {
        "type": "object",
        "properties": {
            "country": {"type": "string", "description": "the country's ISO code", "enum": ["FR", "DE"]},
            "since": {"type": "integer", "description": "the first year", "minimum": 1950, "maximum": 2030},
        },
        "required": ["country", "since"],
    }
    assert list(second.requested_schema["properties"]) == ["since"]


@pytest.mark.parametrize("mode", WIRES)
def test_an_answer_is_checked_exactly_like_an_argument(project, runs, mode):
    out = {}

    async def check(client):
        out["early"] = await client.call_tool("life", {"country": "FR"})

    session(project, check, Person({"since": 1800}), mode)
    expected = direct(project, "life", {"country": "FR", "since": 1800})
    assert out["early"].is_error and expected.is_error
    assert (
        out["early"].content[0].text
        == expected.content[0].text
        == ("Invalid argument 'since': 1800 is less than the minimum of 1950.")
    )


@pytest.mark.parametrize("mode", WIRES)
@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_a_decline_or_cancel_is_one_sentence_and_no_query_runs(project, runs, mode, action):
    out = {}

    async def check(client):
        out["life"] = await client.call_tool("life", {})
        out["everything"] = await client.call_tool("everything", {})

    session(project, check, Person(action=action), mode)
    verb = "declined" if action == "decline" else "cancelled"
    assert (
        out["life"].is_error and out["life"].content[0].text == f"Not run: the person {verb} the question 'arguments'."
    )
    assert out["everything"].is_error
    assert out["everything"].content[0].text == f"Not run: the person {verb} the question 'confirm'."
    assert runs == {"life": 0, "everything": 0}


@pytest.mark.parametrize("mode", WIRES)
def test_a_spec_that_asks_for_confirmation_runs_its_query_only_once_confirmed(project, runs, mode):
    seen_before, out = [], {}

    class Confirming(Person):
        async def __call__(self, context, params):
            seen_before.append(dict(runs))
            return await super().__call__(context, params)

    yes, no = Confirming({"confirm": True}), Confirming({"confirm": False})

    async def check(client):
        out["yes"] = await client.call_tool("everything", {})

    session(project, check, yes, mode)

    async def check_no(client):
        out["no"] = await client.call_tool("everything", {})

    session(project, check_no, no, mode)
    assert out["yes"].content[0].text == "5 rows." and not out["yes"].is_error
    assert out["yes"].structured_content == direct(project, "everything", {}).structured_content
    assert seen_before == [{"life": 0, "everything": 0}, {"life": 0, "everything": 1}]
    assert yes.asked[0].message == "This reads every row of the table. Run it?"
    assert yes.asked[0].requested_schema["properties"]["confirm"]["type"] == "boolean"
    assert out["no"].is_error and out["no"].content[0].text == "Not run: the person did not confirm it."
    assert runs["everything"] == 2  # the direct call above, and the confirmed one


@pytest.fixture
def counted(project, monkeypatch):
    """`since` (confirm when_rows_over: 3): how often its rows were counted and its query run."""
    tool, counts = project.registry.get("since"), {"counted": 0, "run": 0}
    check = tool.confirm_rows

    def over(arguments, threshold, over=check.over):
        counts["counted"] += 1
        return over(arguments, threshold)

    def run(arguments, handler=tool.handler):
        counts["run"] += 1
        return handler(arguments)

    monkeypatch.setattr(tool, "confirm_rows", dataclasses.replace(check, over=over))
    monkeypatch.setattr(tool, "handler", run)
    return counts


@pytest.mark.parametrize("mode", WIRES)
def test_when_rows_over_asks_only_for_a_call_with_more_rows(project, counted, mode):
    yes, no, out = Person({"confirm": True}), Person({"confirm": False}), {}

    async def check(client):
        out["few"] = await client.call_tool("since", {"since": 2010})  # three rows: not asked
        out["many"] = await client.call_tool("since", {"since": 2000})  # five: asked
        out["bad"] = await client.call_tool("since", {"since": 1800})  # refused by the call, in its sentence

    session(project, check, yes, mode)
    assert [q.message for q in yes.asked] == ["This reads more than three rows. Run it?"]
    for key, since in (("few", 2010), ("many", 2000)):
        assert out[key].structured_content == direct(project, "since", {"since": since}).structured_content
    assert out["many"].content[0].text == "5 rows since 2000."
    assert out["bad"].content[0].text == direct(project, "since", {"since": 1800}).content[0].text
    assert out["bad"].content[0].text.startswith("Invalid argument 'since'")
    # three calls and three direct ones ran; direct calls are not counted (nobody to ask), nor is the retry
    # that carries the answer
    assert counted == {"counted": 3, "run": 6}

    async def check_no(client):
        out["no"] = await client.call_tool("since", {"since": 2000})

    session(project, check_no, no, mode)
    assert out["no"].is_error and out["no"].content[0].text == "Not run: the person did not confirm it."
    assert counted == {"counted": 4, "run": 6}  # counted, asked, refused: the query never ran


@pytest.mark.parametrize("mode", WIRES)
def test_when_rows_over_counts_nothing_for_a_client_that_cannot_ask(project, counted, mode):
    out = {}

    async def check(client):
        out["many"] = await client.call_tool("since", {"since": 2000})

    session(project, check, None, mode)
    assert out["many"].content[0].text == "5 rows since 2000." and counted == {"counted": 0, "run": 1}


@pytest.mark.parametrize("mode", WIRES)
def test_a_hand_written_tool_asks_with_mcpgen_ask(project, mode):
    person, out = Person({"name": "Ada"}), {}

    async def check(client):
        out["greet"] = await client.call_tool("greet", {})

    session(project, check, person, mode)
    assert out["greet"].content[0].text == "Hello, Ada!"
    assert person.asked[0].message == "What is your name?"


@pytest.mark.parametrize("mode", WIRES)
def test_a_prompt_asks_for_its_missing_arguments(project, mode):
    out = {}

    async def check(client):
        out["prompt"] = await client.get_prompt("compare", {})

    session(project, check, Person({"country": "FR"}), mode)
    assert out["prompt"].messages[0].content.text == "How has life expectancy in FR changed? Use life."


@pytest.mark.parametrize("mode", WIRES)
def test_a_form_accepted_without_its_fields_is_refused_once_not_asked_again(project, runs, counted, mode):
    person, out = Person({"unasked": 1}), {}  # every form accepted, each field left out

    async def check(client):
        for name, arguments in (("life", {"country": "DE"}), ("everything", {}), ("since", {"since": 2000})):
            out[name] = await client.call_tool(name, arguments)
        out["greet"] = await client.call_tool("greet", {})
        with pytest.raises(MCPError) as refused:
            await client.get_prompt("compare", {})
        out["prompt"] = refused.value.error
        out["after"] = await client.call_tool("life", {"country": "DE", "since": 2005})

    session(project, check, person, mode)
    assert {name: (r.is_error, r.content[0].text) for name, r in out.items() if name != "prompt"} == {
        "life": (True, "Missing required argument 'since'."),
        "everything": (True, "Not run: the person did not confirm it."),
        "since": (True, "Not run: the person did not confirm it."),
        "greet": (True, "The person's answer to 'user_name' left out name."),
        "after": (False, "1 years for DE since 2005."),
    }
    assert (out["prompt"].code, out["prompt"].message) == (-32602, "Missing required argument 'country'.")
    assert len(person.asked) == 5  # once each
    assert runs["everything"] == 0 and counted["run"] == 0


@pytest.mark.parametrize("mode", WIRES)
def test_a_client_without_elicitation_is_answered_exactly_as_before(project, runs, mode):
    out = {}

    async def check(client):
        out["life"] = await client.call_tool("life", {"country": "FR"})
        out["everything"] = await client.call_tool("everything", {})
        out["greet"] = await client.call_tool("greet", {})
        with pytest.raises(MCPError) as err:
            await client.get_prompt("compare", {})
        out["prompt"] = err.value.error

    session(project, check, None, mode)
    expected = direct(project, "life", {"country": "FR"})
    assert out["life"].model_dump(exclude={"meta"}) == expected.model_dump(exclude={"meta"})
    assert out["life"].content[0].text == "Missing required argument 'since'."
    assert out["everything"].content[0].text == "5 rows."  # nobody to ask: it runs, as it always did
    assert out["greet"].is_error and out["greet"].content[0].text == (
        "Tool 'greet' needs an answer from the person (What is your name?), and this client cannot ask for it."
    )
    assert out["prompt"].code == -32602 and "country" in out["prompt"].message


def test_a_changed_request_state_or_other_arguments_are_refused_before_anything_runs(project, runs):
    out = {}

    async def check(client):
        first = await client.session.call_tool("life", {"country": "FR"}, allow_input_required=True)
        assert isinstance(first, InputRequiredResult) and list(first.input_requests) == ["arguments"]
        answer = {"arguments": ElicitResult(action="accept", content={"since": 2000})}
        for arguments, state in (
            ({"country": "FR"}, first.request_state + "x"),
            ({"country": "DE"}, first.request_state),
        ):
            with pytest.raises(MCPError) as err:
                await client.session.call_tool(
                    arguments=arguments, name="life", input_responses=answer, request_state=state
                )
            out.setdefault("refused", []).append((err.value.error.code, err.value.error.message))
        out["kept"] = await client.session.call_tool(
            "life", {"country": "FR"}, input_responses=answer, request_state=first.request_state
        )

    session(project, check, Person(), "auto")
    assert out["refused"] == [(-32602, "Invalid or expired requestState")] * 2
    assert out["kept"].content[0].text == "3 years for FR since 2000."
    assert runs["life"] == 1
